"""blk_io_trace parsing and per-CPU files (testbed/collect_blk.py); blkparse as the oracle."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.collect_blk import (
    BLK_IO_TRACE,
    BLK_IO_TRACE_MAGIC,
    BLK_IO_TRACE_VERSION,
    BLK_TA_COMPLETE,
    BLK_TA_ISSUE,
    BLK_TA_QUEUE,
    BLK_TC_WRITE,
    PerCpuWriter,
    kernel_dev,
    parse_blk_stream,
    read_blktrace,
)
from disaggsim.traces.blktrace import BLK_TC_READ

MAGIC = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
# Category bits: QUEUE = 1<<4, ISSUE = 1<<6, COMPLETE = 1<<7 (blktrace_api.h).
CAT = {BLK_TA_QUEUE: 1 << 4, BLK_TA_ISSUE: 1 << 6, BLK_TA_COMPLETE: 1 << 7}


def raw(
    t_ns: int, act: int, sector: int, nbytes: int, write: bool, cpu: int, pdu: bytes = b""
) -> bytes:
    cat = CAT[act] | (BLK_TC_WRITE if write else BLK_TC_READ)
    return (
        BLK_IO_TRACE.pack(
            MAGIC,
            0,
            t_ns,
            sector,
            nbytes,
            (cat << 16) | act,
            1234,
            kernel_dev(7, 3),
            cpu,
            0,
            len(pdu),
        )
        + pdu
    )


def test_parse_keeps_partial_tail_and_pdu() -> None:
    a = raw(10, BLK_TA_QUEUE, 8, 4096, True, 0, pdu=b"\x01" * 8)
    b = raw(20, BLK_TA_ISSUE, 8, 4096, True, 1)
    recs, used = parse_blk_stream(a + b[:30])
    assert used == len(a) and len(recs) == 1
    assert recs[0].pdu_len == 8 and recs[0].raw == a and recs[0].is_write
    assert recs[0].device == (7 << 20) | 3 and recs[0].act == BLK_TA_QUEUE


def test_parse_rejects_bad_magic_naming_offset() -> None:
    good = raw(10, BLK_TA_QUEUE, 8, 4096, False, 0)
    bad = b"\x00" * 48
    with pytest.raises(ValueError, match=r"x\.bin: byte 48: field magic"):
        parse_blk_stream(good + bad, "x.bin")


def test_read_blktrace_requires_cpu0(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="blktrace.0"):
        read_blktrace(tmp_path / "none")


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse (apt blktrace) missing")
def test_per_cpu_files_parse_with_blkparse(tmp_path: Path) -> None:
    # Two 4 KiB writes (Q, D, C each) on CPU 1 and one 8 KiB read on CPU 0.
    stream = b"".join(
        [
            raw(1_000, BLK_TA_QUEUE, 0, 4096, True, 1),
            raw(1_100, BLK_TA_ISSUE, 0, 4096, True, 1),
            raw(1_200, BLK_TA_QUEUE, 8, 4096, True, 1),
            raw(1_300, BLK_TA_ISSUE, 8, 4096, True, 1),
            raw(2_000, BLK_TA_QUEUE, 64, 8192, False, 0),
            raw(2_100, BLK_TA_ISSUE, 64, 8192, False, 0),
            raw(5_000, BLK_TA_COMPLETE, 0, 4096, True, 1),
            raw(5_100, BLK_TA_COMPLETE, 8, 4096, True, 1),
            raw(6_000, BLK_TA_COMPLETE, 64, 8192, False, 0),
        ]
    )
    recs, used = parse_blk_stream(stream)
    assert used == len(stream)
    writer = PerCpuWriter(tmp_path / "dev", n_cpus=3)  # CPU 2 logs nothing: empty file
    for r in recs:
        writer.write(r)
    writer.close()
    back = read_blktrace(tmp_path / "dev")
    assert sorted((r.cpu, r.sequence) for r in back) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (1, 5),
        (1, 6),
    ]
    out = subprocess.run(
        ["blkparse", "-i", "dev"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "Events (dev): 9 entries" in out
    assert "Skips: 0 forward" in out
    total = out.split("Total (dev):", 1)[1]
    assert "Reads Queued:           1,        8KiB" in total
    assert "Writes Queued:           2,        8KiB" in total
    assert "Reads Completed:        1,        8KiB" in total
