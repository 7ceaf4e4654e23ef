"""Swap request attribution, batching and rmem output (testbed/collect_paging.py), hand-made."""

from __future__ import annotations

from pathlib import Path

from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.collect_blk import (
    BLK_IO_TRACE,
    BLK_IO_TRACE_MAGIC,
    BLK_IO_TRACE_VERSION,
    BLK_TA_COMPLETE,
    BLK_TA_ISSUE,
    BLK_TA_QUEUE,
    BLK_TA_UNPLUG_IO,
    BLK_TC_QUEUE_BIT,
    BLK_TC_WRITE,
    BlkRecord,
    parse_blk_stream,
    read_blktrace,
)
from disaggsim.testbed.collect_paging import (
    UNATTRIBUTED,
    assign_batches,
    attribute_requests,
    group_requests,
    rmem_rows,
    write_node_paging,
)
from disaggsim.traces.blktrace import BLK_TC_READ
from disaggsim.traces.paging import read_rmem_meta, write_rmem

DEV = (7 << 20) | 0


def rec(
    t_ns: int,
    act: int,
    pid: int,
    sector: int = 0,
    nbytes: int = 4096,
    write: bool = False,
    cpu: int = 0,
) -> BlkRecord:
    cat = (BLK_TC_WRITE if write else BLK_TC_READ) | BLK_TC_QUEUE_BIT
    raw = BLK_IO_TRACE.pack(
        BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
        0,
        t_ns,
        sector,
        nbytes,
        (cat << 16) | act,
        pid,
        DEV,
        cpu,
        0,
        0,
    )
    return parse_blk_stream(raw)[0][0]


def test_attribution_by_pid_slot_and_none() -> None:
    records = [
        rec(1000, BLK_TA_QUEUE, pid=11, sector=80, write=True),  # node 0 swaps out page 10
        rec(2000, BLK_TA_QUEUE, pid=99, sector=80),  # kswapd-like: last owner 0
        rec(3000, BLK_TA_QUEUE, pid=99, sector=160, write=True),  # next owner: node 1 below
        rec(4000, BLK_TA_QUEUE, pid=22, sector=160),  # node 1 swaps page 20 in
        rec(5000, BLK_TA_QUEUE, pid=99, sector=800),  # page 100: nobody -> none
    ]
    reqs, loose = group_requests(records)
    assert loose == []
    attribute_requests(reqs, {11: 0, 22: 1})
    assert [(r.node, r.how) for r in reqs] == [
        (0, "pid"),
        (0, "slot"),
        (1, "slot"),
        (1, "pid"),
        (UNATTRIBUTED, "none"),
    ]
    assert [r.start_page for r in reqs] == [10, 10, 20, 20, 100]


def test_followup_records_join_their_queue_record() -> None:
    q = rec(1000, BLK_TA_QUEUE, pid=11, sector=64, nbytes=16384, write=True)
    d = rec(1500, BLK_TA_ISSUE, pid=0, sector=64, nbytes=16384, write=True)
    c = rec(9000, BLK_TA_COMPLETE, pid=0, sector=64, nbytes=16384, write=True)
    stray = rec(9500, BLK_TA_COMPLETE, pid=0, sector=4096)  # queued before the trace
    reqs, loose = group_requests([q, d, c, stray])
    assert len(reqs) == 1 and reqs[0].records == [q, d, c]
    assert reqs[0].npages == 4 and reqs[0].start_page == 8
    assert loose == [stray]


def test_batches_end_at_unplug_and_share_first_timestamp(tmp_path: Path) -> None:
    records = [
        rec(10_000, BLK_TA_QUEUE, pid=5, sector=0, write=True),
        rec(11_000, BLK_TA_QUEUE, pid=5, sector=8, write=True),
        rec(12_000, BLK_TA_UNPLUG_IO, pid=5),
        rec(13_000, BLK_TA_QUEUE, pid=5, sector=16, write=True),  # after unplug: new batch
        rec(14_000, BLK_TA_QUEUE, pid=6, sector=24),  # other pid: new batch
        rec(5_000_000, BLK_TA_QUEUE, pid=5, sector=32, write=True),  # > 1 ms gap: new batch
    ]
    reqs, loose = group_requests(records)
    attribute_requests(reqs, {5: 0, 6: 0})
    assign_batches(reqs, loose)
    assert [r.batch_id for r in reqs] == [0, 0, 1, 2, 3]
    rows = rmem_rows(reqs, t0_ns=10_000)
    # (batch, µs since t0, op, page, npages); pages 0 and 1 of batch 0 are contiguous: one
    # row of 2 pages.
    assert rows.to_records(index=False).tolist() == [
        (0, 0, "W", 0, 2),
        (1, 3, "W", 2, 1),
        (2, 4, "R", 3, 1),
        (3, 4990, "W", 4, 1),
    ]
    write_rmem(rows, tmp_path / "n.rmem")  # "<batch> <µs> <+out/-in><page> <npages>"
    assert (tmp_path / "n.rmem").read_text() == "0 0 +0 2\n1 3 +2 1\n2 4 -3 1\n3 4990 +4 1\n"


def test_write_node_paging_files(tmp_path: Path) -> None:
    records = [
        rec(2_000, BLK_TA_QUEUE, pid=11, sector=8, write=True, cpu=1),
        rec(3_000, BLK_TA_COMPLETE, pid=0, sector=8, write=True, cpu=0),
        rec(4_000, BLK_TA_QUEUE, pid=22, sector=8, cpu=0),
        rec(6_000, BLK_TA_QUEUE, pid=77, sector=8000, cpu=0),
    ]
    summary = write_node_paging(
        records,
        {11: 0, 22: 1},
        n_nodes=2,
        n_cpus=2,
        out_dir=tmp_path,
        t0_ns=1_000,
        start_time_us=1_700_000_000_000_000,
    )
    assert summary.swap_outs == {0: 1} and summary.swap_ins == {1: 1, UNATTRIBUTED: 1}
    assert (tmp_path / "node0.rmem").read_text() == "0 1 +1 1\n"
    assert (tmp_path / "node1.rmem").read_text() == "0 3 -1 1\n"
    assert (tmp_path / "unattributed.rmem").read_text() == "0 5 -1000 1\n"
    assert read_rmem_meta(tmp_path / "node0.rmem.meta") == 1_700_000_000_000_000
    node0 = read_blktrace(tmp_path / "node0.swap")
    assert [(r.act, r.cpu, r.sequence) for r in node0] == [
        (BLK_TA_QUEUE, 1, 1),
        (BLK_TA_COMPLETE, 0, 1),
    ]
    assert (tmp_path / "node1.swap.blktrace.1").stat().st_size == 0
