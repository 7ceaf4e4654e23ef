"""The pipeline's table schemas, defined once (CONTRIBUTING.md "One flow through the code").

Every reader and writer of these tables imports its schema from here:

    traces/   raw traces                  -> FLOW_TABLE      (per-blade flows)
    traces/   rmem paging trace           -> RMEM_RECORDS    (parsed swap-device records)
    sim/      FLOW_TABLE + placement      -> SIM_FLOWS       (per-host flows; NS3_FLOWS to ns-3)
    sim/      ns-3 run                    -> FCT_RECORDS     (one row per flow)
    sim/      a campaign's runs           -> CAMPAIGN_FCT    (FCT_RECORDS + kind + run keys)
    analysis/ CAMPAIGN_FCT                -> FCT_EXPORT      (``<bytes> <mean_fct_us>``)

Blade ids (paper §4.1: "splitting each node into one compute, one memory, and one disk
blade"): ``blade = 3 * node + type`` with type 0 = compute, 1 = memory, 2 = disk.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

import pyarrow as pa


class BladeType(IntEnum):
    """Blade type of a disaggregated node (paper §4.1)."""

    COMPUTE = 0
    MEMORY = 1
    DISK = 2


BLADES_PER_NODE: Final = 3


def blade_id(node: int, blade_type: BladeType) -> int:
    """Return the blade id of ``blade_type`` on ``node`` (``3 * node + type``)."""
    return BLADES_PER_NODE * node + int(blade_type)


def blade_node(blade: int) -> int:
    """Return the node a blade id belongs to."""
    return blade // BLADES_PER_NODE


def blade_type(blade: int) -> BladeType:
    """Return the type of a blade id."""
    return BladeType(blade % BLADES_PER_NODE)


def blade_name(blade: int) -> str:
    """Human-readable blade name, e.g. ``n2.memory``."""
    return f"n{blade_node(blade)}.{blade_type(blade).name.lower()}"


#: Flow kinds. Reads flow blade -> compute, writes compute -> blade (paper §4.1).
FLOW_KINDS: Final = ("mem_read", "mem_write", "disk_read", "disk_write", "net")

#: Per-blade flow table written by ``disaggsim convert`` (Parquet and CSV).
#:
#: - flow_id: 0..N-1, in (start_ns, source order) order
#: - start_ns: ns since the start of the trace (the earliest record of all inputs)
#: - src, dst: blade ids (see module docstring)
#: - size_bytes: bytes carried by the flow (> 0)
#: - kind: one of FLOW_KINDS
#: - node: the node whose trace the record came from
#: - source_file: the input file (path as given) the record came from
#: - source_record: line number (text inputs, 1-based) or record index (binary inputs, 0-based)
FLOW_TABLE: Final = pa.schema(
    [
        pa.field("flow_id", pa.int64(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("src", pa.int32(), nullable=False),
        pa.field("dst", pa.int32(), nullable=False),
        pa.field("size_bytes", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("node", pa.int32(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_record", pa.int64(), nullable=False),
    ]
)

#: Per-host flows, the ns-3 program's input (CSV with this header, in this column order:
#: ``sim/flow-csv.cc`` reads exactly these). Host-level flow files (YAPS, ``disaggsim gen``)
#: hold these columns. Hosts are numbered rack-major: host = rack * hosts_per_rack +
#: index_in_rack.
NS3_FLOWS: Final = pa.schema(
    [
        pa.field("flow_id", pa.int64(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("src_host", pa.int32(), nullable=False),
        pa.field("dst_host", pa.int32(), nullable=False),
        pa.field("size_bytes", pa.int64(), nullable=False),
    ]
)

#: The flows of one run (sim/runner.py): NS3_FLOWS plus the columns that describe a flow
#: but that ns-3 does not need. The runner hands ns-3 the NS3_FLOWS columns and joins the
#: others back to the FCT records by flow_id, so every column added here reaches
#: CAMPAIGN_FCT with no other edit than the code that fills it (sim/placement.py for
#: placed blades, sim/runner.py for host-level workloads).
#:
#: - kind: one of FLOW_KINDS (FLOW_TABLE "kind"; "net" for host-level workloads), or one of
#:   RCMP_FLOW_KINDS for an Rcmp workload (sim/rcmp.py)
SIM_FLOWS: Final = pa.schema(list(NS3_FLOWS) + [FLOW_TABLE.field("kind")])

#: Flow kinds of an Rcmp workload (sim/rcmp.py; Rcmp, ACM TACO 2024, papers/003):
#:
#: - rpc: a pure-RPC message between two racks' daemons (RRPC, §5.5: data < 512 B travels
#:   inside the request or the reply; also the address lookup before one-sided access)
#: - rdma_read / rdma_write: a one-sided RDMA READ's data (remote daemon -> local daemon) or
#:   WRITE's data (local -> remote), RRPC's mode for >= 512 B (§5.5)
#: - migrate: a hot page (2 MiB, §6.1) moved between racks by two one-sided RDMA operations
#:   (§5.3 step 5): the hot page to the requesting rack, and a victim page back if that rack
#:   had no free page
#: - cxl: an intra-rack access served by the rack's CXL pool, not by the Ethernet fabric
#:   (only with ``cxl_rows``: the ns-3 CXL tier serves these, ``topologies/doc/cxl.md``)
RCMP_FLOW_KINDS: Final = ("rpc", "rdma_read", "rdma_write", "migrate", "cxl")

#: One row per memory access of an Rcmp workload (sim/rcmp.py), in start order.
#:
#: - start_ns: when the client issued the access (closed loop, see sim/rcmp.py)
#: - client_host: the issuing compute node (host id, rack-major as NS3_FLOWS)
#: - rack: the client's rack; owner_rack: the rack whose CXL pool held the page then
#: - op: 'R' read or 'W' write (a YCSB update, insert, or the write of a read-modify-write)
#: - key: item number; page: global page id (key * item bytes // page bytes)
#: - size_bytes: bytes accessed (the item size)
#: - tier: "cxl" (owner_rack == rack) or "rdma" (another rack, through the daemons)
RCMP_ACCESSES: Final = pa.schema(
    [
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("client_host", pa.int32(), nullable=False),
        pa.field("rack", pa.int32(), nullable=False),
        pa.field("owner_rack", pa.int32(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
        pa.field("key", pa.int64(), nullable=False),
        pa.field("page", pa.int64(), nullable=False),
        pa.field("size_bytes", pa.int64(), nullable=False),
        pa.field("tier", pa.string(), nullable=False),
    ]
)

#: One record per flow, written by the ns-3 program (CSV with this header and order).
#:
#: - finish_ns: time the receiver got the flow's last byte; -1 if unfinished
#: - fct_ns: finish_ns - start_ns; -1 if unfinished
#: - ideal_fct_ns: the flow's FCT alone in the network on its path (propagation +
#:   switching + serialization with the model's pipelining; see topologies/doc/clos.md)
#: - slowdown: fct_ns / ideal_fct_ns; NaN if unfinished (paper §4.3, after pFabric [27])
#: - finished: 1 if every byte arrived before the simulation ended, else 0
FCT_RECORDS: Final = pa.schema(
    [
        pa.field("flow_id", pa.int64(), nullable=False),
        pa.field("src_host", pa.int32(), nullable=False),
        pa.field("dst_host", pa.int32(), nullable=False),
        pa.field("size_bytes", pa.int64(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("finish_ns", pa.int64(), nullable=False),
        pa.field("fct_ns", pa.int64(), nullable=False),
        pa.field("ideal_fct_ns", pa.int64(), nullable=False),
        pa.field("slowdown", pa.float64(), nullable=True),
        pa.field("finished", pa.int8(), nullable=False),
    ]
)

#: Columns a campaign adds to FCT_RECORDS when it collects runs into one table, with their
#: types. One run configuration is selected by these columns (analysis.export), and the
#: runs that differ only in ``seed`` form one summary group (analysis.stats).
CAMPAIGN_KEY_TYPES: Final[dict[str, pa.DataType]] = {
    "protocol": pa.string(),
    "rate_gbps": pa.float64(),
    "scope": pa.string(),
    "workload": pa.string(),
    "seed": pa.int64(),
}
#: The run keys, in this order: what identifies one run of a campaign's grid.
CAMPAIGN_KEYS: Final = tuple(CAMPAIGN_KEY_TYPES)

#: A campaign's FCT table: FCT_RECORDS, the SIM_FLOWS columns ns-3 does not see (kind) and
#: the run's CAMPAIGN_KEYS. Written per run (``runs/<key>/fct.parquet``) and collected
#: (``<out_dir>/fct.parquet``) by sim/campaign.py; read by analysis/.
CAMPAIGN_FCT: Final = pa.schema(
    list(FCT_RECORDS)
    + [f for f in SIM_FLOWS if f.name not in FCT_RECORDS.names]
    + [pa.field(name, typ, nullable=False) for name, typ in CAMPAIGN_KEY_TYPES.items()]
)

#: The FCT export, the table the latency-injection swap device reads (paper §4.4), written
#: by analysis/export.py as ASCII text, one line per distinct flow size sorted by size,
#: ``<size_bytes> <mean_fct_us>`` with one space between and ``\n`` line ends, numbers as
#: Python 2's ``str(float)`` (the original artifact's ``rmem/fcts/*/fcts_*.txt``), e.g.::
#:
#:     4096 2.99671096504
#:
#: - size_bytes: flow size (> 0, strictly increasing down the file)
#: - mean_fct_us: mean FCT of the finished flows of that size, µs
FCT_EXPORT: Final = pa.schema(
    [
        pa.field("size_bytes", pa.int64(), nullable=False),
        pa.field("mean_fct_us", pa.float64(), nullable=False),
    ]
)

#: The parsed rmem paging trace (traces/paging.py ``read_rmem``; the swap device's log,
#: original artifact ``rmem/rmem.c``). The text forms on disk are described there; the
#: batch form is ``<batch_id> <timestamp_us> <±start_page> <npages>`` ('-' swap-in).
#:
#: - batch_id: request batch (the older form's line index)
#: - time_us: timestamp as in the file (µs, unsigned)
#: - op: 'R' swap-in (read from remote memory) or 'W' swap-out
#: - page: start page; npages: run length in pages; size_bytes = npages * page size
#: - realtime_ns: epoch ns (-1 if unknown: relative timestamps and no meta file)
#: - source_record: 1-based line of the file
RMEM_RECORDS: Final = pa.schema(
    [
        pa.field("batch_id", pa.int64(), nullable=False),
        pa.field("time_us", pa.int64(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
        pa.field("page", pa.int64(), nullable=False),
        pa.field("npages", pa.int64(), nullable=False),
        pa.field("size_bytes", pa.int64(), nullable=False),
        pa.field("realtime_ns", pa.int64(), nullable=False),
        pa.field("source_record", pa.int64(), nullable=False),
    ]
)
