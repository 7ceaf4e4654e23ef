"""Attribute the shared swap device's block records to nodes and write ``rmem`` paging traces.

Linux swap is global, so one swap area serves all emulated nodes. Each block-layer request
on it is attributed to a node in three steps (plain functions on record lists, no I/O except
the writers at the end):

1. by pid: the ``pid`` of a request's queue (``Q``) record is the submitting task, i.e. the
   faulting task for a swap-in and the reclaiming task for a memcg-limit direct reclaim
   swap-out (mm/memcontrol-v1.c charges reclaim to the task that hit the limit); the
   collector tracked the tasks of every node's memory cgroup during the run;
2. by swap slot: a request from a task of no node (kswapd, a kworker) takes the node of the
   last attributed request on the same swap slot (4 KiB page), else of the next one (the
   owner that later swaps the page back in);
3. otherwise it stays unattributed and is reported as such.

The other records of a request (merge, insert, issue, complete, which the loop device's
worker or an interrupt logs under another pid) follow their ``Q`` record: a record belongs to
the latest ``Q`` of the same direction whose sector range covers its sector.

Paging trace format (the original artifact's ``rmem`` traces of Gao et al., OSDI'16 §3):
one line ``<batch_id> <timestamp_us> <±start_page> <npages>`` per swap request, ``+`` a
swap-out (write), ``-`` a swap-in (read), page = swap-area offset in 4 KiB pages
(``sector * 512 / 4096``); all requests a task submitted under one block plug (``P`` ... ``U``)
form a batch and share the batch's first timestamp.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pandas as pd

from disaggsim.testbed.collect_blk import (
    BLK_TA_PLUG,
    BLK_TA_QUEUE,
    BLK_TA_UNPLUG_IO,
    BLK_TA_UNPLUG_TIMER,
    BlkRecord,
    PerCpuWriter,
)
from disaggsim.traces.blktrace import SECTOR_BYTES
from disaggsim.traces.paging import read_rmem, write_rmem

PAGE_BYTES: Final = 4096
SECTORS_PER_PAGE: Final = PAGE_BYTES // SECTOR_BYTES
#: Node value of requests that could not be attributed.
UNATTRIBUTED: Final = -1


@dataclass(slots=True)
class SwapRequest:
    """One swap request (a ``Q`` record) and the node it was attributed to.

    ``how`` is ``"pid"``, ``"slot"`` or ``"none"``; ``records`` are all its block records.
    """

    queue: BlkRecord
    node: int = UNATTRIBUTED
    how: str = "none"
    batch_id: int = -1
    batch_time_ns: int = 0
    records: list[BlkRecord] = field(default_factory=list)

    @property
    def start_page(self) -> int:
        """First swap page (4 KiB) of the request."""
        return self.queue.sector // SECTORS_PER_PAGE

    @property
    def npages(self) -> int:
        """Pages (4 KiB) the request covers, at least 1."""
        return max(1, -(-self.queue.size_bytes // PAGE_BYTES))


def group_requests(records: list[BlkRecord]) -> tuple[list[SwapRequest], list[BlkRecord]]:
    """Group time-ordered records of one device into requests keyed by their ``Q`` record.

    Returns ``(requests, loose)`` where ``loose`` holds plug/unplug records and records that
    follow no ``Q`` (e.g. a completion of a request queued before tracing started).
    """
    requests: list[SwapRequest] = []
    # (is_write, sector) of the latest Q covering each sector, for the follow-up records.
    open_by_sector: dict[tuple[bool, int], SwapRequest] = {}
    loose: list[BlkRecord] = []
    for rec in records:
        if rec.act == BLK_TA_QUEUE:
            req = SwapRequest(queue=rec, records=[rec])
            requests.append(req)
            n_sectors = max(1, rec.size_bytes // SECTOR_BYTES)
            for s in range(rec.sector, rec.sector + n_sectors, SECTORS_PER_PAGE):
                open_by_sector[(rec.is_write, s)] = req
            continue
        if rec.act in (BLK_TA_PLUG, BLK_TA_UNPLUG_IO, BLK_TA_UNPLUG_TIMER):
            loose.append(rec)
            continue
        key = (rec.is_write, rec.sector - rec.sector % SECTORS_PER_PAGE)
        owner = open_by_sector.get(key)
        if owner is None:
            loose.append(rec)
        else:
            owner.records.append(rec)
    return requests, loose


def attribute_requests(requests: list[SwapRequest], pid_node: Mapping[int, int]) -> None:
    """Set ``node``/``how`` of each request: by pid, else by swap slot (module docstring).

    ``pid_node`` maps task ids (as in the records' ``pid`` field) to node indices.
    """
    for req in requests:
        node = pid_node.get(req.queue.pid)
        if node is not None:
            req.node, req.how = node, "pid"
    last_owner: dict[int, int] = {}
    pending: list[SwapRequest] = []
    for req in requests:  # forward pass: last owner of the slot before the request
        pages = range(req.start_page, req.start_page + req.npages)
        if req.how == "pid":
            for p in pages:
                last_owner[p] = req.node
            continue
        owners = {last_owner.get(p) for p in pages}
        if len(owners) == 1 and None not in owners:
            req.node, req.how = owners.pop(), "slot"  # type: ignore[assignment]
            for p in pages:
                last_owner[p] = req.node
        else:
            pending.append(req)
    next_owner: dict[int, int] = {}
    for req in reversed(requests):  # backward pass: the next owner of the slot
        pages = range(req.start_page, req.start_page + req.npages)
        if req.how == "none":
            owners = {next_owner.get(p) for p in pages}
            if len(owners) == 1 and None not in owners:
                req.node, req.how = owners.pop(), "slot"  # type: ignore[assignment]
        if req.how != "none":
            for p in pages:
                next_owner[p] = req.node


#: A batch never spans a gap longer than this between two of its queue records (ns).
BATCH_MAX_GAP_NS: Final = 1_000_000


def assign_batches(requests: list[SwapRequest], loose: list[BlkRecord]) -> None:
    """Number the batches: the requests one task queued until it unplugged.

    The block layer batches a task's bios on its plug and submits them at the unplug
    (block/blk-core.c ``blk_start_plug``/``blk_finish_plug``; swap-out under reclaim and swap
    readahead both plug). On Linux 6.x blk-mq the plug (``P``) record follows the first
    ``Q`` of the batch, so a batch is: the ``Q`` records of one pid and direction from the
    first one after that pid's previous unplug (``U``/``UT``) up to its next unplug, split
    where two consecutive ones are more than :data:`BATCH_MAX_GAP_NS` apart. Batch ids count
    from 0 in time order; ``batch_time_ns`` is the batch's first ``Q`` time.
    """
    events: list[tuple[int, int, BlkRecord | SwapRequest]] = []
    for rec in loose:
        if rec.act in (BLK_TA_UNPLUG_IO, BLK_TA_UNPLUG_TIMER):
            events.append((rec.time_ns, 1, rec))
    for req in requests:
        events.append((req.queue.time_ns, 0, req))
    events.sort(key=lambda e: (e[0], e[1]))
    # (pid, is_write) -> (batch_id, batch_time_ns, last_q_ns)
    open_batch: dict[tuple[int, bool], tuple[int, int, int]] = {}
    next_id = 0
    for _, _, item in events:
        if isinstance(item, BlkRecord):
            for key in [k for k in open_batch if k[0] == item.pid]:
                del open_batch[key]
            continue
        req = item
        key = (req.queue.pid, req.queue.is_write)
        t = req.queue.time_ns
        cur = open_batch.get(key)
        if cur is not None and t - cur[2] <= BATCH_MAX_GAP_NS:
            req.batch_id, req.batch_time_ns = cur[0], cur[1]
        else:
            req.batch_id, req.batch_time_ns = next_id, t
            next_id += 1
        open_batch[key] = (req.batch_id, req.batch_time_ns, t)


def rmem_rows(requests: list[SwapRequest], t0_ns: int) -> pd.DataFrame:
    """The requests as ``rmem`` rows (``paging.write_rmem`` columns ``batch_id, time_us, op,
    page, npages``), timestamps in µs since ``t0_ns`` (trace clock).

    Within a batch, requests of the same direction on consecutive pages (the block layer
    would merge them, ``M`` records) become one row ``page npages``. Batch ids are
    renumbered 0, 1, ... in order within the given requests (one node's file). Requests
    queued before ``t0_ns`` are clamped to timestamp 0.
    """
    runs: list[list[int]] = []  # [local batch id, ts_us, is_write, start_page, npages]
    local_id: dict[int, int] = {}
    for req in sorted(requests, key=lambda r: (r.batch_id, r.queue.time_ns)):
        bid = local_id.setdefault(req.batch_id, len(local_id))
        w = int(req.queue.is_write)
        last = runs[-1] if runs else None
        if last and last[0] == bid and last[2] == w and last[3] + last[4] == req.start_page:
            last[4] += req.npages
            continue
        ts_us = max(0, req.batch_time_ns - t0_ns) // 1000
        runs.append([bid, ts_us, w, req.start_page, req.npages])
    return pd.DataFrame(
        {
            "batch_id": [r[0] for r in runs],
            "time_us": [r[1] for r in runs],
            "op": ["W" if r[2] else "R" for r in runs],
            "page": [r[3] for r in runs],
            "npages": [r[4] for r in runs],
        }
    )


@dataclass(frozen=True, slots=True)
class PagingSummary:
    """Counts of swap requests per node and per attribution method (for meta.json)."""

    swap_ins: dict[int, int]
    swap_outs: dict[int, int]
    by_method: dict[str, int]


def write_node_paging(
    swap_records: list[BlkRecord],
    pid_node: Mapping[int, int],
    n_nodes: int,
    n_cpus: int,
    out_dir: Path,
    t0_ns: int,
    start_time_us: int,
    keep_actions: frozenset[int] | None = None,
) -> PagingSummary:
    """Split the shared swap device's records per node and write the per-node outputs.

    Writes ``nodeN.swap.blktrace.<cpu>`` (the node's requests, all their records, plus the
    plug/unplug records of the node's tasks), ``nodeN.rmem`` and ``nodeN.rmem.meta``
    (an integer: unix µs of the trace's time zero ``t0_ns``), both by ``paging.write_rmem``,
    for every node, and ``unattributed.swap.blktrace.<cpu>`` / ``unattributed.rmem`` for the rest.
    ``swap_records`` must be time-ordered records of the swap device only. ``keep_actions``
    limits the action codes written to the blktrace files (None: all); attribution and
    batching always use all records.
    """
    requests, loose = group_requests(swap_records)
    attribute_requests(requests, pid_node)
    assign_batches(requests, loose)
    by_node: dict[int, list[SwapRequest]] = defaultdict(list)
    for req in requests:
        by_node[req.node].append(req)
    names = {n: f"node{n}" for n in range(n_nodes)}
    names[UNATTRIBUTED] = "unattributed"
    per_node_records: dict[int, list[BlkRecord]] = defaultdict(list)
    for req in requests:
        per_node_records[req.node].extend(req.records)
    for rec in loose:
        per_node_records[pid_node.get(rec.pid, UNATTRIBUTED)].append(rec)
    for node, name in names.items():
        writer = PerCpuWriter(out_dir / f"{name}.swap", n_cpus)
        for rec in sorted(per_node_records.get(node, []), key=lambda r: (r.time_ns, r.cpu)):
            if keep_actions is None or rec.act in keep_actions:
                writer.write(rec)
        writer.close()
        # The rmem format has one writer, next to its reader (traces/paging.py).
        write_rmem(
            rmem_rows(by_node.get(node, []), t0_ns),
            out_dir / f"{name}.rmem",
            start_time_us=start_time_us,
        )
    by_method: dict[str, int] = defaultdict(int)
    ins: dict[int, int] = defaultdict(int)
    outs: dict[int, int] = defaultdict(int)
    for req in requests:
        by_method[req.how] += 1
        (outs if req.queue.is_write else ins)[req.node] += 1
    return PagingSummary(dict(ins), dict(outs), dict(by_method))


def write_device_paging(
    traces: Mapping[int, list[Path]],
    n_nodes: int,
    out_dir: Path,
    start_realtime_ns: int,
    end_realtime_ns: int,
) -> PagingSummary:
    """Write ``nodeN.rmem`` (+ ``.meta``) from the latency-injection device's own logs
    (``disaggsim collect`` with ``paging_recorder = "swapdev-uffd"``).

    ``traces[node]``: the rmem traces the uffd device (``swapdev/src/uffd_preload.c``)
    wrote for each process of the node, read with :func:`~disaggsim.traces.paging.read_rmem`
    (absolute epoch µs stamps). Every access between ``start_realtime_ns`` and
    ``end_realtime_ns`` (the traced phase) is kept; timestamps become µs since the start,
    as the collector's other traces. Each process numbers its remote pages and batches from
    0, so the processes of a node are laid out one after the other (page and batch offsets:
    the previous processes' largest page/batch + 1), as distinct address ranges of one
    node's memory. Swap-in/out counts are per rmem row (a swap-out row is one evicted run).
    Every node gets a file (empty if nothing paged); written by ``paging.write_rmem``.
    """
    ins: dict[int, int] = defaultdict(int)
    outs: dict[int, int] = defaultdict(int)
    start_us = start_realtime_ns // 1000
    for node in range(n_nodes):
        frames = []
        page_base = batch_base = 0
        for trace in traces.get(node, []):
            if trace.stat().st_size == 0:
                continue
            df = read_rmem(trace, time_base="absolute")
            kept = df[
                (df["realtime_ns"] >= start_realtime_ns) & (df["realtime_ns"] <= end_realtime_ns)
            ]
            frames.append(
                pd.DataFrame(
                    {
                        "batch_id": kept["batch_id"] + batch_base,
                        "time_us": kept["realtime_ns"] // 1000 - start_us,
                        "op": kept["op"],
                        "page": kept["page"] + page_base,
                        "npages": kept["npages"],
                    }
                )
            )
            page_base += int((df["page"] + df["npages"]).max())
            batch_base += int(df["batch_id"].max()) + 1
        rows = (
            pd.concat(frames, ignore_index=True).sort_values("time_us", kind="stable")
            if frames
            else pd.DataFrame({"batch_id": [], "time_us": [], "op": [], "page": [], "npages": []})
        )
        ins[node] = int((rows["op"] == "R").sum())
        outs[node] = int((rows["op"] == "W").sum())
        write_rmem(rows, out_dir / f"node{node}.rmem", start_time_us=start_us)
    return PagingSummary(dict(ins), dict(outs), {"device": sum(ins.values()) + sum(outs.values())})
