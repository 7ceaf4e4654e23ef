"""Fuzzing the pcap/pcapng reader and ``disaggsim convert`` (issue 6, "Robustness").

Truncated, bit-flipped, spliced, empty and wrong-format files made from the real loopback
captures in tests/fixtures/traces/ must each end in a :class:`PacketTable` or a
:class:`TraceFormatError` that names the file and a byte offset; through the CLI, in exit
code 0 or a one-line error (exit 2) with no traceback and no output file left behind.

Hypothesis runs derandomized (a fixed seed) with a bounded number of examples. Inputs that
once broke the reader are kept in tests/fixtures/fuzz/pcap/ and replayed as plain tests.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from _fuzz_traces import FUZZ_SETTINGS
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.cli import main
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.pcap import PacketTable, TruncatedCaptureWarning, read_pcap

FIX = Path(__file__).parent / "fixtures" / "traces"
CORPUS = Path(__file__).parent / "fixtures" / "fuzz" / "pcap"
SEEDS = ["lo_us.pcap", "lo_ns.pcap", "lo_be.pcap", "lo.pcapng", "any_sll2.pcap", "lo_raw.pcap"]
SEED_BYTES = {name: (FIX / name).read_bytes() for name in SEEDS}
FUZZ = settings(FUZZ_SETTINGS, max_examples=400)


@st.composite
def mutated_captures(draw: st.DrawFn) -> bytes:
    """A capture mutated the ways a capture gets damaged (or is not a capture at all)."""
    kind = draw(st.sampled_from(["truncate", "flip", "splice", "empty", "other", "header"]))
    data = bytearray(SEED_BYTES[draw(st.sampled_from(SEEDS))])
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, len(data)))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    if kind == "splice":  # a chunk of another capture dropped in (a torn write)
        other = SEED_BYTES[draw(st.sampled_from(SEEDS))]
        at, start = draw(st.integers(0, len(data))), draw(st.integers(0, len(other) - 1))
        return bytes(data[:at]) + other[start : start + draw(st.integers(1, 200))]
    if kind == "header":  # a header field (first 64 bytes) set to an extreme value
        pos = draw(st.integers(0, 60))
        data[pos : pos + 4] = draw(
            st.sampled_from(
                [b"\xff\xff\xff\xff", b"\x00" * 4, b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"]
            )
        )
        return bytes(data)
    if kind == "empty":
        return b""
    return draw(
        st.sampled_from(
            [
                b"1 1.0 0 0 3 0 0 1 2\n",
                b"PK\x03\x04" + bytes(40),
                b"\x0a\x0d\x0d\x0a",
                b'{"nodes": []}',
            ]
        )
    )


_OFFSET = re.compile(r"^(?P<path>.+?):byte (?P<off>\d+): ")


def check_read(path: Path, *, allow_truncated_tail: bool = False) -> PacketTable | None:
    """The property: a consistent table, or a TraceFormatError naming file and offset."""
    size = path.stat().st_size
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncatedCaptureWarning)
            table = read_pcap(path, allow_truncated_tail=allow_truncated_tail)
    except TraceFormatError as exc:
        m = _OFFSET.match(str(exc))
        assert m is not None, f"no file:byte offset in {exc}"
        assert m["path"] == str(path) and int(m["off"]) <= size, str(exc)
        return None
    n = len(table)
    for name in (
        "src_ip",
        "dst_ip",
        "ip_proto",
        "src_port",
        "dst_port",
        "ip_total_len",
        "payload_bytes",
        "record_index",
    ):
        assert getattr(table, name).shape == (n,), name
    assert table.n_records == n + table.n_skipped
    assert (table.payload_bytes >= 0).all()
    assert np.all(np.diff(table.record_index) > 0)
    assert 0 <= table.truncated_tail_bytes < size or size == 0
    if not allow_truncated_tail:
        assert table.truncated_tail_bytes == 0
    return table


@FUZZ
@given(data=mutated_captures())
def test_reader_gives_a_table_or_names_the_offset(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.pcap"
    path.write_bytes(data)
    strict = check_read(path)
    lenient = check_read(path, allow_truncated_tail=True)
    if strict is not None:  # accepting a truncated tail never changes a whole file's result
        assert lenient is not None and lenient.ts_ns.tolist() == strict.ts_ns.tolist()


def _sample(tmp_path: Path, capture: bytes) -> Path:
    sample = tmp_path / "sample"
    sample.mkdir(exist_ok=True)
    (sample / "lo.pcap").write_bytes(capture)
    nodes = [{"node": 0, "ip": "127.0.0.1", "pcap": "lo.pcap"}, {"node": 1, "ip": "127.0.0.2"}]
    (sample / "meta.json").write_text(json.dumps({"sample": "s", "nodes": nodes}))
    return sample


def check_cli(tmp_path: Path, capture: bytes, capsys: pytest.CaptureFixture[str]) -> int:
    """``disaggsim convert``: exit 0 with both outputs, or exit 2, one error line naming the
    capture and a byte offset, and no output file."""
    sample = _sample(tmp_path, capture)
    out = tmp_path / "flows"
    for old in tmp_path.glob("flows*"):
        old.unlink()
    code = main(["convert", str(sample), "--out", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code == 0:
        assert (tmp_path / "flows.parquet").is_file() and (tmp_path / "flows.csv").is_file()
    else:
        assert code == 2, err
        assert err.startswith(f"disaggsim convert: error: {sample / 'lo.pcap'}:byte "), err
        assert len(err.strip().splitlines()) == 1, err
        assert list(tmp_path.glob("flows*")) == []
    return code


@settings(FUZZ, max_examples=40)
@given(data=mutated_captures())
def test_convert_cli_gives_outputs_or_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    check_cli(tmp_path, data, capsys)


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.bin")), ids=lambda p: p.name)
def test_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Path) -> None:
    """Inputs found by fuzzing that once broke the reader (see the corpus README)."""
    data = case.read_bytes()
    path = tmp_path / "f.pcap"
    path.write_bytes(data)
    check_read(path)
    check_read(path, allow_truncated_tail=True)
    assert check_cli(tmp_path, data, capsys) == 2  # every corpus case is malformed
