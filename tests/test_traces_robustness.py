"""Regression tests for the malformed inputs found by fuzzing `disaggsim convert`.

``S`` is a scratch copy of the bundled real sample traces/samples/dask-sort. Each case
must end in a one-line error naming the file and the line / byte offset / field (exit
code 2, no traceback) and leave no output file behind.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from disaggsim.cli import main
from disaggsim.traces.blktrace import read_records
from disaggsim.traces.convert import convert, write_flow_table
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.paging import read_rmem

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "dask-sort"


@pytest.fixture
def S(tmp_path: Path) -> Path:  # noqa: N802 (the issue's name for the scratch copy)
    d = tmp_path / "S"
    shutil.copytree(SAMPLE, d, ignore=shutil.ignore_patterns("logs", "unattributed*"))
    return d


def _cli_fails(
    S: Path,
    capsys: pytest.CaptureFixture[str],
    *pattern: str,  # noqa: N803
) -> str:
    out = S.parent / "out" / "t"
    assert main(["convert", str(S), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for p in pattern:
        assert p in err, err
    assert not out.parent.exists() or not any(out.parent.iterdir())
    return err


def _replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


def test_huge_page_number(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _replace_line(S / "node0.rmem", 3, f"2 1123977 +{10**30} 24")
    _cli_fails(S, capsys, "node0.rmem:3: field 'start_page'", "at most 2147483647")


def test_three_byte_blktrace(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (S / "node1.disk.blktrace.0").write_bytes(b"\x07ta")
    _cli_fails(S, capsys, "node1.disk.blktrace.0:byte 0: field 'record'", "got '3 bytes'")


def test_directory_where_the_meta_file_should_be(
    S: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (S / "node2.rmem.meta").unlink()
    (S / "node2.rmem.meta").mkdir()
    _cli_fails(S, capsys, "node2.rmem.meta: expected a meta file", "got 'a directory'")


def test_meta_in_ns_is_rejected(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Was: a table spanning 4.2e18 ns.
    (S / "node1.rmem.meta").write_text("1795308431978523098\n")
    _cli_fails(S, capsys, "node1.rmem.meta:1: field 'start_time_us'", "looks like ns")


def test_blktrace_time_beyond_int64(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = S / "node0.disk.blktrace.0"
    rec = read_records(f)
    issue = rec[(rec["action"] & 0xFF) == 7][0]
    data = bytearray(f.read_bytes())
    struct.pack_into("<Q", data, int(issue["offset"]) + 8, 2**63 + 5)
    f.write_bytes(bytes(data))
    _cli_fails(S, capsys, f"node0.disk.blktrace.0:byte {int(issue['offset'])}", "time < 2**62")


@pytest.mark.parametrize("offset", [2**63 - 1, -(2**62), 10**19])
def test_huge_meta_json_offset(S: Path, capsys: pytest.CaptureFixture[str], offset: int) -> None:
    meta = json.loads((S / "meta.json").read_text())
    meta["trace_clock_offset_ns"] = offset
    (S / "meta.json").write_text(json.dumps(meta))
    _cli_fails(S, capsys, "meta.json: field 'trace_clock_offset_ns'", "below 2**62")


def test_offset_that_moves_blktrace_out_of_range(S: Path) -> None:
    meta = json.loads((S / "meta.json").read_text())
    meta["trace_clock_offset_ns"] = 2**62 - 1  # allowed magnitude, but past 2100
    (S / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"node0.disk: records .* fall outside 1970..2100"):
        convert(S)


def test_one_absolute_timestamp_does_not_make_the_file_absolute(
    S: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: a table spanning 57 years. Line 1 is the odd one out and is named.
    _replace_line(S / "node0.rmem", 1, "0 1795308431978523 +1 17")
    _cli_fails(S, capsys, "node0.rmem:1: field 'timestamp_us'", "all absolute or all relative")
    # The other way round: one relative line in an absolute file.
    p = S / "abs.rmem"
    p.write_text("0 1795308431978523 +1 1\n1 1795308431978600 +2 1\n2 77 +3 1\n")
    with pytest.raises(TraceFormatError, match=r"abs.rmem:3: field 'timestamp_us'"):
        read_rmem(p)


@pytest.mark.parametrize(
    ("line", "field"),
    [("0 10 +-5 1", "start_page"), ("0 10 0x10 1", "start_page"), ("0 ١٢ 5 1", "timestamp_us")],
)
def test_both_parsers_reject_odd_integers(tmp_path: Path, line: str, field: str) -> None:
    # The pyarrow path used to accept '+-5' and '0x10'; a file with no other oddity
    # takes that path, so the error comes from the line parser after it declined.
    p = tmp_path / "t.rmem"
    p.write_text(f"0 5 +1 1\n{line}\n")
    with pytest.raises(TraceFormatError, match=rf"t.rmem:2: (field '{field}'|expected)"):
        read_rmem(p, meta=1_700_000_000_000_000)


def test_duplicate_node_ips(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Was: 43 net flows instead of 182.
    meta = json.loads((S / "meta.json").read_text())
    meta["nodes"][2]["ip"] = meta["nodes"][1]["ip"]
    (S / "meta.json").write_text(json.dumps(meta))
    _cli_fails(S, capsys, "meta.json: field 'nodes[2].ip'", "nodes[1] has it")


def test_page_bytes_zero(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Was: silently 4096.
    meta = json.loads((S / "meta.json").read_text())
    meta["page_bytes"] = 0
    (S / "meta.json").write_text(json.dumps(meta))
    _cli_fails(S, capsys, "meta.json: field 'page_bytes'", "positive")


def test_directory_in_the_way_of_the_parquet(
    S: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o" / "t"
    (tmp_path / "o" / "t.parquet").mkdir(parents=True)
    assert main(["convert", str(S), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "t.parquet" in err and "none written" in err and "Traceback" not in err
    assert sorted(q.name for q in (tmp_path / "o").iterdir()) == ["t.parquet"]  # no csv


def test_write_keeps_the_old_outputs_when_the_second_cannot_be_written(
    tmp_path: Path,
) -> None:
    df = convert(SAMPLE)
    parquet, csv = write_flow_table(df, tmp_path / "t")
    before = (parquet.read_bytes(), csv.read_bytes())
    csv.unlink()
    csv.mkdir()
    with pytest.raises(IsADirectoryError, match="t.csv"):
        write_flow_table(df.iloc[:10].assign(flow_id=range(10)), tmp_path / "t")
    assert parquet.read_bytes() == before[0]  # old parquet untouched
    assert sorted(q.name for q in tmp_path.iterdir()) == ["t.csv", "t.parquet"]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("page_bytes", 2**40, "power of two in [512, 2**30]"),
        ("page_bytes", 4095, "power of two"),
        ("swap_bytes", 2**70, "below 2**62"),
        ("disk_bytes", 0, "positive"),
    ],
)
def test_sizes_that_would_overflow_or_make_no_sense(
    S: Path, capsys: pytest.CaptureFixture[str], key: str, value: int, expected: str
) -> None:
    meta = json.loads((S / "meta.json").read_text())
    meta[key] = value
    (S / "meta.json").write_text(json.dumps(meta))
    _cli_fails(S, capsys, f"meta.json: field '{key}'", expected)


def test_yaps_output_joins_the_all_or_nothing_group(
    S: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    (out / "t.yaps").mkdir(parents=True)  # the YAPS file cannot be written
    argv = ["convert", str(S), "--out", str(out / "t"), "--yaps-out", str(out / "t.yaps")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "t.yaps" in err and "none written" in err and "Traceback" not in err
    assert sorted(q.name for q in out.iterdir()) == ["t.yaps"]  # no parquet, no csv
    (out / "t.yaps").rmdir()
    assert main(argv) == 0
    assert sorted(q.name for q in out.iterdir()) == ["t.csv", "t.parquet", "t.yaps"]


def test_unreadable_input_is_a_one_line_error(S: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (S / "node1.rmem").unlink()
    (S / "node1.rmem").mkdir()
    _cli_fails(S, capsys, "node1.rmem", "a directory")
