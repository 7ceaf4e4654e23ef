"""Binary blktrace reader vs. blkparse (Debian's blktrace package), record by record.

Fixture: tests/fixtures/traces/blk/loop.blktrace.{0,1}, a real trace of a loop device made
with the ftrace blk tracer by make_blktrace.py (README.md). The oracle is blkparse run on
the same files now (if installed) and the blkparse output stored when the fixture was made.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disaggsim.traces.blktrace import (
    read_blkparse_text,
    read_blktrace,
    read_records,
    split_ftrace_stream,
)
from disaggsim.traces.errors import TraceFormatError

BLK = Path(__file__).parent / "fixtures" / "traces" / "blk"
FMT = "%a %T.%9t %S %N %d %p %c %M %m\n"


def parse_custom(text: str) -> pd.DataFrame:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("CPU"):
            break  # blkparse's summary
        a, t, sector, nbytes, rwbs, pid, cpu, major, minor = line.split()
        sec, nsec = t.split(".")
        rows.append(
            (
                a,
                int(sec) * 10**9 + int(nsec),
                int(sector),
                int(nbytes),
                rwbs,
                int(pid),
                int(cpu),
                (int(major) << 20) | int(minor),
            )
        )
    return pd.DataFrame(rows, columns=["a", "t", "sector", "bytes", "rwbs", "pid", "cpu", "device"])


def blkparse_records(actions: str) -> pd.DataFrame:
    """blkparse's decoding of the fixture: live if blkparse is installed, else the stored one."""
    if shutil.which("blkparse") and actions == "issue":
        out = subprocess.run(
            ["blkparse", "-i", "loop", "-D", str(BLK), "-a", actions, "-f", FMT],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert out.startswith(open(BLK / "loop.issue.txt").read().split("\n", 1)[0])
        return parse_custom(out)
    return parse_custom((BLK / "loop.issue.txt").read_text())


def test_issue_records_match_blkparse() -> None:
    ours = read_blktrace(BLK / "loop")
    ref = blkparse_records("issue")
    ref = ref[(ref["a"] == "D") & (ref["bytes"] > 0)].reset_index(drop=True)
    assert len(ours) == len(ref) == 30  # 16 + 3 writes, 8 + 3 reads (make_blktrace.py)
    # blkparse prints times relative to the first record it read; compare deltas.
    assert np.array_equal(ours["time_ns"] - ours["time_ns"][0], ref["t"] - ref["t"][0])
    assert ours["sector"].tolist() == ref["sector"].tolist()
    assert ours["size_bytes"].tolist() == ref["bytes"].tolist()
    assert ours["op"].tolist() == [r[0] if r[0] in "RW" else r[1] for r in ref["rwbs"]]
    assert ours["pid"].tolist() == ref["pid"].tolist()
    assert ours["cpu"].tolist() == ref["cpu"].tolist()
    assert ours["device"].tolist() == ref["device"].tolist()


def test_issue_records_are_the_dd_commands() -> None:
    d = read_blktrace(BLK / "loop")
    w, r = d[d["op"] == "W"], d[d["op"] == "R"]
    assert w["size_bytes"].tolist() == [4096] * 16 + [65536] * 3
    assert w["sector"].tolist() == [8 * i for i in range(16)] + [1280, 1408, 1536]
    assert r["size_bytes"].tolist() == [8192] * 8 + [512] * 3
    assert r["sector"].tolist() == [16 * i for i in range(8)] + [1001, 1002, 1003]
    # taskset put the 4 KiB writes and 8 KiB reads on CPU 0, the others on CPU 1.
    assert w["cpu"].tolist() == [0] * 16 + [1] * 3
    assert d["time_ns"].is_monotonic_increasing  # merged across the per-CPU files


def test_blkparse_text_reader_agrees_with_binary_reader() -> None:
    text = read_blkparse_text(BLK / "loop.blkparse.txt")
    binary = read_blktrace(BLK / "loop")
    cols = ["sector", "size_bytes", "op", "pid", "device", "cpu"]
    assert text[cols].equals(binary[cols])
    assert np.array_equal(
        text["time_ns"] - text["time_ns"][0], binary["time_ns"] - binary["time_ns"][0]
    )


def test_other_actions() -> None:
    lines = (BLK / "loop.blkparse.txt").read_text().split("CPU0 (loop)")[0].splitlines()
    completes = [ln for ln in lines if ln.split()[5] == "C"]
    assert len(read_blktrace(BLK / "loop", actions="C")) == len(completes) == 30
    both = read_blktrace(BLK / "loop", actions="DC")
    assert len(both) == 60


def test_split_ftrace_stream_round_trip(tmp_path: Path) -> None:
    files = [BLK / "loop.blktrace.0", BLK / "loop.blktrace.1"]
    recs = [
        (r["time"], i, bytes(f.read_bytes()[r["offset"] : r["offset"] + 48 + r["pdu_len"]]))
        for i, f in enumerate(files)
        for r in read_records(f)
    ]
    stream = tmp_path / "stream"
    stream.write_bytes(b"".join(b for _, _, b in sorted(recs, key=lambda x: (x[0], x[1]))))
    written = split_ftrace_stream(stream, tmp_path / "again")
    assert [p.name for p in written] == ["again.blktrace.0", "again.blktrace.1"]
    for orig, new in zip(files, written, strict=True):
        assert new.read_bytes() == orig.read_bytes()
    assert split_ftrace_stream(stream, tmp_path / "none", device=123) and not (
        (tmp_path / "none.blktrace.0").read_bytes()
    )


def test_corrupt_magic_and_truncation(tmp_path: Path) -> None:
    data = bytearray((BLK / "loop.blktrace.1").read_bytes())
    offsets = read_records(BLK / "loop.blktrace.1")["offset"]
    bad = tmp_path / "x.blktrace.0"
    broken = bytearray(data)
    broken[int(offsets[2]) + 2] ^= 0xFF
    bad.write_bytes(bytes(broken))
    with pytest.raises(
        TraceFormatError, match=rf"x.blktrace.0:byte {offsets[2]} \(record 2\): field 'magic'"
    ):
        read_blktrace(bad)
    bad.write_bytes(bytes(data[:-7]))
    with pytest.raises(TraceFormatError, match="field 'record'"):
        read_blktrace(bad)
    bad.write_bytes(b"\0" * 48)
    with pytest.raises(TraceFormatError, match="byte 0: field 'magic'"):
        read_blktrace(bad)


def test_missing_files() -> None:
    with pytest.raises(FileNotFoundError, match="nope.blktrace"):
        read_blktrace(BLK / "nope")
    with pytest.raises(ValueError, match="unknown blkparse action"):
        read_blktrace(BLK / "loop", actions="Z")


def test_blkparse_text_bad_line(tmp_path: Path) -> None:
    lines = (BLK / "loop.blkparse.txt").read_text().splitlines()
    lines[3] = "  7,0    0  garbage"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=r"bad.txt:4: expected a blkparse record"):
        read_blkparse_text(bad)


def test_magic_bytes_inside_a_payload_do_not_fool_the_reader(tmp_path: Path) -> None:
    # The vectorised offset search treats every magic occurrence as a candidate record;
    # a pdu that contains the magic must send the reader to the header walk instead.
    src = BLK / "loop.blktrace.0"
    rec = read_records(src)
    i = int(np.flatnonzero(rec["pdu_len"] == 8)[0])  # an unplug record with an 8 B pdu
    data = bytearray(src.read_bytes())
    pdu_at = int(rec["offset"][i]) + 48
    data[pdu_at : pdu_at + 8] = b"\x07\x74\x61\x65\x07\x74\x61\x65"
    (tmp_path / "m.blktrace.0").write_bytes(bytes(data))
    again = read_records(tmp_path / "m.blktrace.0")
    assert np.array_equal(again, rec)
