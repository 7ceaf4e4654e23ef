"""Fuzzing the binary blktrace reader and the wall-clock anchor.

Seeds: the first records of a real per-CPU file of traces/samples/dask-sort, with and
without a ``BLK_TN_TIMESTAMP`` anchor record in front (the form of the original
artifact's 2015 traces), in both byte orders. Each mutation (truncation, bit flip,
insertion, deletion, empty, junk) ends in a table within the documented limits or a
TraceFormatError naming the file and the byte offset. The corpus under
tests/fixtures/fuzz/blktrace replays as regular tests.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from _fuzz_traces import CORPUS, FUZZ_SETTINGS, assert_names_location, mutated
from hypothesis import given
from hypothesis import strategies as st

from disaggsim.traces.blktrace import (
    MAX_SECTOR,
    MAX_TRACE_TIME_NS,
    RECORD_DTYPE_BE,
    read_blktrace,
    read_records,
    wallclock_offset_ns,
)
from disaggsim.traces.errors import TraceFormatError

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "dask-sort"


def _head(n_records: int) -> bytes:
    f = SAMPLE / "node0.disk.blktrace.0"
    rec = read_records(f)
    data = f.read_bytes()
    end = int(rec["offset"][n_records]) if len(rec) > n_records else len(data)
    return data[:end]


def _anchor(time_ns: int, wall_ns: int, endian: str = "<") -> bytes:
    action = (1 << 10) << 16 | 1  # BLK_TC_NOTIFY category, __BLK_TN_TIMESTAMP
    head = struct.pack(endian + "IIQQIIIIIHH", 0x65617407, 0, time_ns, 0, 0, action, 0, 0, 0, 0, 8)
    return head + struct.pack(endian + "II", wall_ns // 10**9, wall_ns % 10**9)


def _big_endian(data: bytes) -> bytes:
    """The same records in big-endian order (payloads, process names here, copied)."""
    rec = read_records_bytes(data)
    out = bytearray()
    for r in rec:
        off, pdu = int(r["offset"]), int(r["pdu_len"])
        fields = np.array([tuple(r[list(RECORD_DTYPE_BE.names or ())])], dtype=RECORD_DTYPE_BE)
        out += fields.tobytes() + data[off + 48 : off + 48 + pdu]
    return bytes(out)


def read_records_bytes(data: bytes) -> np.ndarray:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".blktrace.0") as fh:
        fh.write(data)
        fh.flush()
        return read_records(fh.name)


PLAIN = _head(30)
ANCHORED = _anchor(1_000, 1_432_159_705_163_268_203) + PLAIN
ANCHORED_BE = _anchor(1_000, 1_432_159_705_163_268_203, ">") + _big_endian(PLAIN)
SEEDS = [PLAIN, ANCHORED, ANCHORED_BE]


@FUZZ_SETTINGS
@given(data=st.one_of(*(mutated(s) for s in SEEDS)))
def test_mutated_blktrace(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "m.blktrace.0"
    p.write_bytes(data)
    try:
        df = read_blktrace(p, actions="QD")
        anchor = wallclock_offset_ns(p)
    except TraceFormatError as exc:
        assert_names_location(exc, p, r":byte \d+")
        return
    assert (df["time_ns"] >= 0).all() and (df["time_ns"] < MAX_TRACE_TIME_NS).all()
    assert (df["sector"] >= 0).all() and (df["sector"] < MAX_SECTOR).all()
    assert (df["size_bytes"] > 0).all()
    if anchor is not None:
        assert abs(anchor[0]) < 2**63 and anchor[1] == p


def test_big_endian_seed_reads_like_the_little_endian_one(tmp_path: Path) -> None:
    (tmp_path / "le.blktrace.0").write_bytes(ANCHORED)
    (tmp_path / "be.blktrace.0").write_bytes(ANCHORED_BE)
    le, be = read_blktrace(tmp_path / "le"), read_blktrace(tmp_path / "be")
    assert len(le) > 0
    assert le.drop(columns="source_file").equals(be.drop(columns="source_file"))
    off = 1_432_159_705_163_268_203 - 1_000
    le_anchor, be_anchor = (
        wallclock_offset_ns(tmp_path / "le"),
        wallclock_offset_ns(tmp_path / "be"),
    )
    assert le_anchor is not None and be_anchor is not None
    assert le_anchor[0] == be_anchor[0] == off


@pytest.mark.parametrize("path", sorted((CORPUS / "blktrace").iterdir()), ids=lambda p: p.name)
def test_blktrace_corpus(path: Path) -> None:
    with pytest.raises(TraceFormatError) as info:
        read_blktrace(path, actions="QD")
        wallclock_offset_ns(path)
    assert_names_location(info.value, path, r":byte \d+")
