"""A traced cluster -> the per-blade flow table (paper §4.1), ``disaggsim convert``.

Input: a sample directory (layout below, written by ``disaggsim collect``), the original
artifact's results directory as published (``traces/artifact.py``, detected by its file
names), or the same description built in code (:class:`SampleInputs`)::

    <sample>/meta.json  {"sample": str,
                         "nodes": [{"node": 0, "ip": "10.77.0.1", "pcap": "node0.pcap",
                                    "disk_blktrace": "node0.disk", "swap_blktrace": "node0.swap",
                                    "paging": "node0.rmem",
                                    "pcap_packets": int},  # tcpdump's count, checked
                                   ...],
                         "trace_clock_offset_ns": int,  # CLOCK_REALTIME - blktrace clock
                         "page_bytes": 4096, "swap_bytes": int, "disk_bytes": int}

Every per-node input is optional; a referenced file that does not exist is an error, an
empty one is counted in the report. ``page_bytes`` is a power of two in [512, 2**30];
node IPs are unique; offsets are below 2**62 ns in magnitude.
Clocks: pcap timestamps are CLOCK_REALTIME; the paging trace is converted with its meta
start time (``paging.read_rmem``); blktrace times are the trace clock, moved to realtime
by ``trace_clock_offset_ns`` (a node entry may override it), else by the trace's own
wall-clock anchor, else by aligning it to the node's trace start (``traces/clocks.py``,
reported per file). The declared times are checked against the records
(``disaggsim.bounds.check_declared_time``, issue #21 class 6): a node's meta start against
its capture (not against a blktrace: a disk may be idle for minutes after tracing starts),
a given offset against the trace's anchor. All inputs' time ranges must then fit one run
(``clocks.check_time_ranges``), after each input's records were checked against the
bulk of that input (``disaggsim.timerange``) and their device's size
(``disaggsim.bounds``). One paging trace or blktrace serves one node in one role.
``start_ns`` in the output counts from the earliest record of all inputs.

Steps: network messages (``pcap.network_messages``; a message A -> B is taken from A's
capture, or from B's if A has none, so no message is counted twice) -> attribution of
memory and disk accesses to requesters (``attribution.attribute``) -> blade mapping
(``blades.memory_flows`` / ``blades.disk_flows``) -> net flows (compute blade of A ->
compute blade of B) -> one table in ``disaggsim.schemas.FLOW_TABLE``.
Memory accesses come from the paging trace if the node has one, else from the swap
device's blktrace (the same swap-ins/outs seen at the block layer).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_paths
from disaggsim.bounds import check_declared_count, check_declared_time, check_records
from disaggsim.guards import check_regular, read_text
from disaggsim.schemas import BLADES_PER_NODE, FLOW_KINDS, FLOW_TABLE, BladeType
from disaggsim.timerange import Policy, check_times
from disaggsim.traces.artifact import is_artifact_run, scan_artifact_run
from disaggsim.traces.attribution import DEFAULT_TOLERANCE_NS, AttributionReport, attribute
from disaggsim.traces.blades import (
    DEFAULT_DISK_PARTITION,
    DEFAULT_MEMORY_PARTITION,
    Partition,
    disk_flows,
    memory_flows,
)
from disaggsim.traces.blktrace import (
    SECTOR_BYTES,
    blktrace_files,
    read_blktrace,
    wallclock_offset_ns,
)
from disaggsim.traces.clocks import (
    MAX_OFFSET_NS,
    MIN_GAP_TOLERANCE_NS,
    blktrace_offset,
    check_time_ranges,
)
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.paging import (
    PAGE_BYTES,
    meta_path,
    read_rmem,
    read_rmem_meta_ns,
)
from disaggsim.traces.pcap import (
    DEFAULT_IDLE_GAP_NS,
    PacketTable,
    ip_to_int,
    network_messages,
    read_pcap,
)

META_FILE: Final = "meta.json"
#: Device sizes (``swap_bytes``/``disk_bytes``) are below this: int64-safe address maths.
MAX_DEVICE_BYTES: Final = 2**62
#: Node numbers are below this (blade ids must fit the flow table's int32 src/dst).
MAX_NODES: Final = 2**16


@dataclass(frozen=True)
class NodeInputs:
    """One traced node: its IPv4 address and its (optional) trace files.

    ``disk_blktrace``/``swap_blktrace`` are blktrace prefixes (``NAME`` of
    ``NAME.blktrace.<cpu>``); ``trace_clock_offset_ns`` overrides the sample's.
    ``pcap_packets`` is the capture's own count of the packets it wrote (tcpdump's
    "packets captured", ``testbed/collect.py``), checked against the file's records.
    """

    node: int
    ip: str | None = None
    pcap: Path | None = None
    disk_blktrace: Path | None = None
    swap_blktrace: Path | None = None
    paging: Path | None = None
    trace_clock_offset_ns: int | None = None
    meta: Path | None = None
    host: str | None = None
    pcap_packets: int | None = None


@dataclass(frozen=True)
class SampleInputs:
    """A traced cluster: its nodes and the facts needed to put the traces on one clock.

    ``trace_clock_offset_ns`` None means "not known": each blktrace is then moved by its
    own wall-clock anchor or aligned to its node's trace start (see :func:`convert`).
    ``meta_tz`` is the time zone of ``date``-form meta files (``paging.read_rmem_meta_ns``).
    ``meta_file`` is the file the facts were read from (``meta.json``), for messages.
    """

    nodes: tuple[NodeInputs, ...]
    trace_clock_offset_ns: int | None = None
    page_bytes: int = PAGE_BYTES
    swap_bytes: int | None = None
    disk_bytes: int | None = None
    name: str = ""
    meta_tz: str = "UTC"
    meta_file: Path | None = None


@dataclass(frozen=True)
class ConvertOptions:
    """Knobs of the conversion; every default is the documented one of its module.

    Attributes:
        idle_gap_ns: message split gap (``pcap.DEFAULT_IDLE_GAP_NS``; None = per connection).
        tolerance_ns: attribution window slack (``attribution.DEFAULT_TOLERANCE_NS``).
        attribute_memory, attribute_disk: run attribution on that resource.
        memory_partition, disk_partition: address-space partitions (``blades``).
        use_device_sizes: partition the whole swap/disk (meta ``swap_bytes``/``disk_bytes``)
            instead of the observed address range.
        memory_merge: ``"contiguous"`` or ``"batch"`` (``blades.memory_flows``).
        blk_actions: blkparse action letters kept from blktraces (default issue, ``"D"``).
        kinds: which flow kinds to emit (subset of ``disaggsim.schemas.FLOW_KINDS``).
        allow_truncated_pcap: keep the complete records of a capture cut mid-record (a
            killed tcpdump) and warn, as tcpdump does, instead of failing
            (``pcap.read_pcap`` ``allow_truncated_tail``).
        time_outliers: what to do with records apart from the bulk of their input
            (``disaggsim.timerange``): ``"error"`` (default) or ``"drop"`` them with a
            warning naming each file and its farthest record.
    """

    idle_gap_ns: int | None = DEFAULT_IDLE_GAP_NS
    tolerance_ns: int = DEFAULT_TOLERANCE_NS
    attribute_memory: bool = True
    attribute_disk: bool = True
    memory_partition: Partition = DEFAULT_MEMORY_PARTITION
    disk_partition: Partition = DEFAULT_DISK_PARTITION
    use_device_sizes: bool = False
    memory_merge: Literal["contiguous", "batch"] = "contiguous"
    blk_actions: str = "D"
    kinds: tuple[str, ...] = FLOW_KINDS
    allow_truncated_pcap: bool = False
    time_outliers: Policy = "error"


@dataclass
class ConvertReport:
    """Counts from one conversion (printed by the CLI)."""

    records: dict[str, int] = field(default_factory=dict)
    flows: dict[str, int] = field(default_factory=dict)
    t0_realtime_ns: int = 0
    attribution: AttributionReport | None = None
    #: How each blktrace was put on the wall clock (given offset, anchor or alignment).
    clock_notes: list[str] = field(default_factory=list)
    #: Input files that exist but hold no record.
    empty_files: list[str] = field(default_factory=list)
    #: file -> (first, last) record time, CLOCK_REALTIME ns.
    time_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    source_format: str = "meta.json"

    def __str__(self) -> str:
        lines = [f"input: {self.source_format}", f"t0 (CLOCK_REALTIME ns): {self.t0_realtime_ns}"]
        if self.time_ranges:
            first = min(a for a, _ in self.time_ranges.values())
            last = max(b for _, b in self.time_ranges.values())
            lines.append(f"time span of all inputs: {(last - first) / 1e9:.3f} s")
        lines += [f"clock: {note}" for note in self.clock_notes]
        lines.append(f"empty input files: {len(self.empty_files)}")
        lines += [f"  empty: {f}" for f in self.empty_files]
        lines += [f"records {k}: {v}" for k, v in self.records.items()]
        lines += [f"flows {k}: {v}" for k, v in self.flows.items()]
        if self.attribution is not None:
            lines.append(str(self.attribution))
        return "\n".join(lines)


def _meta_error(path: Path, field_name: str, expected: str, got: object) -> TraceFormatError:
    return TraceFormatError(path, None, field_name, expected, got)


def load_sample(sample_dir: str | Path) -> SampleInputs:
    """Read ``<sample_dir>/meta.json`` into :class:`SampleInputs` (paths joined to the dir).

    Raises:
        FileNotFoundError: no meta.json, or a referenced trace file is missing (named).
        TraceFormatError: a field of meta.json has the wrong type (names the field).
    """
    base = Path(sample_dir)
    meta_path = base / META_FILE
    text = read_text(meta_path, "a sample description (meta.json)")
    try:
        meta: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(meta_path, exc.lineno, None, "valid JSON", exc.msg) from exc
    except (ValueError, RecursionError) as exc:  # int digit limit, nesting depth
        raise TraceFormatError(
            meta_path, None, None, "JSON of plain numbers and shallow nesting", str(exc)
        ) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("nodes"), list) or not meta["nodes"]:
        raise _meta_error(
            meta_path,
            "nodes",
            "a non-empty list of node objects",
            meta.get("nodes") if isinstance(meta, dict) else meta,
        )

    def opt_int(obj: dict[str, Any], key: str, where: str) -> int | None:
        v = obj.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool):
            raise _meta_error(meta_path, f"{where}{key}", "an integer", v)
        return v

    nodes = []
    seen: set[int] = set()
    seen_ips: dict[str, int] = {}
    for i, entry in enumerate(meta["nodes"]):
        where = f"nodes[{i}]."
        if not isinstance(entry, dict):
            raise _meta_error(meta_path, f"nodes[{i}]", "an object", entry)
        node = entry.get("node")
        if (
            not isinstance(node, int)
            or isinstance(node, bool)
            or not 0 <= node < MAX_NODES
            or node in seen
        ):
            raise _meta_error(
                meta_path, f"{where}node", f"a distinct integer in [0, {MAX_NODES})", node
            )
        seen.add(node)
        files: dict[str, Path | None] = {}
        for key in ("pcap", "disk_blktrace", "swap_blktrace", "paging"):
            v = entry.get(key)
            if v is None:
                files[key] = None
                continue
            if not isinstance(v, str) or not v:
                raise _meta_error(meta_path, f"{where}{key}", "a file name (string)", v)
            files[key] = base / v
        ip = entry.get("ip")
        if ip is not None:
            try:
                ip_to_int(ip)
            except (ValueError, AttributeError, TypeError) as exc:
                raise _meta_error(
                    meta_path, f"{where}ip", "a dotted-quad IPv4 address", ip
                ) from exc
            if ip in seen_ips:
                raise _meta_error(
                    meta_path,
                    f"{where}ip",
                    f"an address no other node has (nodes[{seen_ips[ip]}] has it)",
                    ip,
                )
            seen_ips[ip] = i
        nodes.append(
            NodeInputs(
                node=node,
                ip=ip,
                pcap=files["pcap"],
                disk_blktrace=files["disk_blktrace"],
                swap_blktrace=files["swap_blktrace"],
                paging=files["paging"],
                trace_clock_offset_ns=opt_int(entry, "trace_clock_offset_ns", where),
                pcap_packets=opt_int(entry, "pcap_packets", where),
            )
        )
    page_bytes = opt_int(meta, "page_bytes", "")
    for key in ("page_bytes", "swap_bytes", "disk_bytes"):
        v = opt_int(meta, key, "")
        if v is not None and v <= 0:
            raise _meta_error(meta_path, key, "a positive number of bytes", v)
    if page_bytes is not None and not _valid_page_bytes(page_bytes):
        raise _meta_error(
            meta_path, "page_bytes", "a power of two in [512, 2**30] (e.g. 4096)", page_bytes
        )
    for key in ("swap_bytes", "disk_bytes"):
        v = opt_int(meta, key, "")
        if v is not None and v >= MAX_DEVICE_BYTES:
            raise _meta_error(meta_path, key, f"a size below 2**62 bytes ({MAX_DEVICE_BYTES})", v)
    offsets = [("trace_clock_offset_ns", meta)] + [
        (f"nodes[{i}].trace_clock_offset_ns", e) for i, e in enumerate(meta["nodes"])
    ]
    for name, obj in offsets:
        v = obj.get("trace_clock_offset_ns")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= MAX_OFFSET_NS:
            raise _meta_error(
                meta_path, name, f"an offset below 2**62 ns in magnitude ({MAX_OFFSET_NS})", v
            )
    sample = SampleInputs(
        nodes=tuple(nodes),
        trace_clock_offset_ns=opt_int(meta, "trace_clock_offset_ns", ""),
        page_bytes=PAGE_BYTES if page_bytes is None else page_bytes,
        swap_bytes=opt_int(meta, "swap_bytes", ""),
        disk_bytes=opt_int(meta, "disk_bytes", ""),
        name=str(meta.get("sample", base.name)),
        meta_file=meta_path,
    )
    check_inputs(sample)
    return sample


def load_artifact_run(run_dir: str | Path, meta_tz: str = "UTC") -> SampleInputs:
    """Read a results directory of the original artifact as it is published
    (layout, node and blade mapping: ``traces/artifact.py``); ``meta_tz`` is the time
    zone of its ``date``-form meta files.

    Raises:
        FileNotFoundError: no file of that layout in ``run_dir``.
        TraceFormatError: conflicting host names or a bad file name (names the file).
    """
    nodes = tuple(
        NodeInputs(
            node=a.node,
            paging=a.paging,
            disk_blktrace=a.disk_blktrace,
            meta=a.meta,
            host=a.host,
        )
        for a in scan_artifact_run(run_dir, MAX_NODES)
    )
    sample = SampleInputs(nodes=nodes, name=Path(run_dir).name, meta_tz=meta_tz)
    check_inputs(sample)
    return sample


def load_any(source: str | Path, meta_tz: str = "UTC") -> tuple[SampleInputs, str]:
    """A sample directory (meta.json) or an artifact results directory, and which it was.

    Raises:
        FileNotFoundError: neither layout (names the directory and both layouts).
    """
    d = Path(source)
    if (d / META_FILE).exists():
        return load_sample(d), "meta.json"
    if is_artifact_run(d, META_FILE):
        return load_artifact_run(d, meta_tz), "artifact results directory"
    raise FileNotFoundError(
        f"{d}: expected a sample directory with {META_FILE} or an artifact results directory "
        "(<n>-mem-<host>, <n>-meta-<host>, <n>-disk-<host>.blktrace.<cpu>)"
    )


def _valid_page_bytes(pb: int) -> bool:
    """512 B (a sector) to 1 GiB (x86-64's largest huge page), a power of two: with pages
    below 2**31 (rmem.c's ``int``) every byte address stays below 2**61."""
    return 512 <= pb <= 2**30 and pb & (pb - 1) == 0


def check_inputs(sample: SampleInputs) -> None:
    """Check a :class:`SampleInputs` before reading any trace.

    Raises:
        FileNotFoundError: a referenced trace file is missing (names node and file).
        TraceFormatError: a directory where a trace file should be, or one file (or blktrace
            file) given to two nodes or two roles (one file serves one node).
        ValueError: page_bytes not a power of two in [512, 2**30], device sizes outside
            (0, 2**62),
            duplicate node numbers or IPs, or a clock offset >= 2**62 ns in magnitude.
    """
    pb = sample.page_bytes
    if not isinstance(pb, int) or not _valid_page_bytes(pb):
        raise ValueError(f"page_bytes must be a power of two in [512, 2**30], got {pb!r}")
    for key in ("swap_bytes", "disk_bytes"):
        v = getattr(sample, key)
        if v is not None and not 0 < v < MAX_DEVICE_BYTES:
            raise ValueError(f"{key} must be in (0, 2**62), got {v}")
    nodes = [n.node for n in sample.nodes]
    if len(set(nodes)) != len(nodes) or not all(0 <= n < MAX_NODES for n in nodes):
        raise ValueError(f"node numbers must be distinct and in [0, {MAX_NODES}), got {nodes}")
    ips = [n.ip for n in sample.nodes if n.ip is not None]
    dup = sorted({ip for ip in ips if ips.count(ip) > 1})
    if dup:
        raise ValueError(f"node IPs must be unique; {dup} used by several nodes")
    for off in [sample.trace_clock_offset_ns] + [n.trace_clock_offset_ns for n in sample.nodes]:
        if off is not None and abs(off) >= MAX_OFFSET_NS:
            raise ValueError(f"trace_clock_offset_ns {off} is >= 2**62 ns in magnitude")
    for n in sample.nodes:
        for key in ("pcap", "paging", "meta", "disk_blktrace", "swap_blktrace"):
            p = getattr(n, key)
            if p is not None and not _utf8(p):
                raise TraceFormatError(
                    p,
                    None,
                    None,
                    "a file name in UTF-8 (the flow table's source_file column holds it; "
                    "rename the file or its directory)",
                )
        for key in ("pcap", "paging", "meta"):
            p = getattr(n, key)
            if p is None:
                continue
            check_regular(p, f"node {n.node}'s {key} file")
        for key in ("disk_blktrace", "swap_blktrace"):
            p = getattr(n, key)
            if p is not None:
                try:
                    blktrace_files(p)
                except FileNotFoundError as exc:
                    raise FileNotFoundError(f"node {n.node}: {key} {exc}") from exc
    _one_file_one_node(sample)


def _utf8(path: Path) -> bool:
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _one_file_one_node(sample: SampleInputs) -> None:
    """One record file serves one node in one role (issue #21, class 5): a paging trace or a
    blktrace given twice would count its records twice. Files are compared by identity
    (device and inode), so the same file under another name (a symlink, a hard link) is
    caught as well. A pcap may be shared (one capture point for several nodes): each
    message is taken from one capture only (see :func:`convert`); so may a meta file (a
    start time, not records)."""
    owner: dict[tuple[int, int], tuple[Path, str]] = {}
    for n in sample.nodes:
        for key in ("paging", "disk_blktrace", "swap_blktrace"):
            p = getattr(n, key)
            if p is None:
                continue
            files = blktrace_files(p) if key.endswith("blktrace") else [Path(p)]
            for f in files:
                st = f.stat()
                role = f"node {n.node}'s {key}"
                first = owner.setdefault((st.st_dev, st.st_ino), (f, role))
                if first[1] != role:
                    raise TraceFormatError(
                        f,
                        None,
                        key,
                        f"a file that serves one node in one role (it is already "
                        f"{first[1]}{'' if first[0] == f else f' as {first[0]}'}, so its "
                        "records would be counted twice)",
                        role,
                    )


def convert(
    source: str | Path | SampleInputs,
    options: ConvertOptions | None = None,
    report: ConvertReport | None = None,
    meta_tz: str = "UTC",
) -> pd.DataFrame:
    """Convert a traced cluster to the flow table (``FLOW_TABLE`` columns and dtypes).

    Args:
        source: a sample directory (with meta.json), an artifact results directory
            (:func:`load_artifact_run`, detected by its file names) or a
            :class:`SampleInputs`.
        options: conversion knobs (defaults documented in :class:`ConvertOptions`).
        report: if given, filled with record/flow counts, clock notes, empty files, the
            time range of every input and the attribution report.
        meta_tz: time zone of ``date``-form meta files of a directory source.

    Clocks: a blktrace is moved to CLOCK_REALTIME by, in this order, (1) the given
    ``trace_clock_offset_ns`` (node, then sample), (2) its ``BLK_TN_TIMESTAMP`` anchor
    (``blktrace.wallclock_offset_ns``), (3) aligning its first record (of any kind, so
    the start of tracing) to the node's trace start: the node's meta time (the artifact
    writes it just before starting blktrace), else the first record of the node's paging
    trace, else of its pcap. The report says which, per file. Then every input's time
    range is checked (:func:`check_time_ranges`): all within [1970, 2100) and no input
    farther from the others than the longest input is long (floor 60 s); else a
    ValueError lists every file and its range.

    Returns:
        DataFrame with columns flow_id, start_ns, src, dst, size_bytes, kind, node,
        source_file, source_record; flow_id 0..N-1 in (start_ns, node, kind, source_record)
        order; start_ns in ns since the earliest record of all inputs.

    Raises:
        FileNotFoundError, TraceFormatError: from the inputs (named file, line, field).
        ValueError: inconsistent inputs (e.g. a node with a pcap but no IP), or time
            ranges on different clocks (names the files and their ranges).
    """
    opts = options or ConvertOptions()
    rep = report if report is not None else ConvertReport()
    if isinstance(source, SampleInputs):
        sample = source
        check_inputs(sample)
        rep.source_format = "SampleInputs"
    else:
        sample, rep.source_format = load_any(source, meta_tz)
    bad_kinds = set(opts.kinds) - set(FLOW_KINDS)
    if bad_kinds:
        raise ValueError(
            f"unknown flow kinds {sorted(bad_kinds)}; expected a subset of {FLOW_KINDS}"
        )
    n_nodes = max(n.node for n in sample.nodes) + 1
    node_of_ip: dict[int, int] = {}
    for n in sample.nodes:
        if n.ip is not None:
            node_of_ip[ip_to_int(n.ip)] = n.node
        elif n.pcap is not None:
            raise ValueError(f"node {n.node} has a pcap but no ip")
    earliest: list[int] = []

    # Network messages, each counted once (sender's capture preferred).
    has_pcap = {n.node for n in sample.nodes if n.pcap is not None}
    msg_frames = []
    for n in sample.nodes:
        if n.pcap is None:
            continue
        packets = read_pcap(n.pcap, allow_truncated_tail=opts.allow_truncated_pcap)
        if n.pcap_packets is not None and not packets.truncated_tail_bytes:
            check_declared_count(
                sample.meta_file or n.pcap,
                f"node {n.node}",
                "pcap_packets",
                n.pcap_packets,
                packets.n_records,
                f"records in {n.pcap}",
                error=TraceFormatError,
            )
        packets = _select_packets(
            packets,
            check_times(
                n.pcap,
                packets.ts_ns,
                packets.record_index,
                "ts_ns",
                "ns",
                MIN_GAP_TOLERANCE_NS,
                opts.time_outliers,
                error=TraceFormatError,
            ),
        )
        rep.records[f"n{n.node}.pcap_packets"] = len(packets)
        if packets.truncated_tail_bytes:
            rep.records[f"n{n.node}.pcap_truncated_bytes"] = packets.truncated_tail_bytes
        if len(packets):
            earliest.append(int(packets.ts_ns.min()))
            rep.time_ranges[str(n.pcap)] = (int(packets.ts_ns.min()), int(packets.ts_ns.max()))
        else:
            rep.empty_files.append(str(n.pcap))
        msgs = network_messages(packets, node_of_ip, opts.idle_gap_ns)
        own = (msgs["src_node"] == n.node) | (
            (msgs["dst_node"] == n.node) & ~msgs["src_node"].isin(has_pcap)
        )
        msgs = msgs[own].copy()
        msgs["capture_node"] = n.node
        msgs["source_file"] = str(n.pcap)
        msg_frames.append(msgs)
    messages = (
        pd.concat(msg_frames, ignore_index=True)
        if msg_frames
        else pd.DataFrame(
            columns=[
                "start_ns",
                "end_ns",
                "src_node",
                "dst_node",
                "size_bytes",
                "capture_node",
                "source_file",
                "source_record",
            ]
        )
    )
    rep.records["net_messages"] = len(messages)

    # Memory and disk accesses on the realtime clock.
    mem_frames, disk_frames = [], []
    for n in sample.nodes:
        node_meta = n.meta
        if node_meta is None and n.paging is not None and meta_path(n.paging).is_file():
            node_meta = meta_path(n.paging)
        node_start_ns = (
            read_rmem_meta_ns(node_meta, sample.meta_tz) if node_meta is not None else None
        )
        if node_meta is not None and node_start_ns is not None and str(n.pcap) in rep.time_ranges:
            # The meta's start (header) against the node's capture (content, CLOCK_REALTIME).
            check_declared_time(
                node_meta,
                1,
                "start_time",
                node_start_ns,
                *rep.time_ranges[str(n.pcap)],
                f"the node's capture {n.pcap}",
                MIN_GAP_TOLERANCE_NS,
                error=TraceFormatError,
            )
        pg = None
        if n.paging is not None:
            pg = read_rmem(
                n.paging,
                page_bytes=sample.page_bytes,
                meta=node_meta,
                meta_tz=sample.meta_tz,
            )
            pg = _checked_paging(pg, n.paging, sample, opts.time_outliers)
            rep.records[f"n{n.node}.paging"] = len(pg)
            if not len(pg):
                rep.empty_files.append(str(n.paging))
            elif (pg["realtime_ns"] < 0).any():
                raise ValueError(
                    f"{n.paging}: relative timestamps and no meta file {meta_path(n.paging)}"
                )
            else:
                rep.time_ranges[str(n.paging)] = (
                    int(pg["realtime_ns"].min()),
                    int(pg["realtime_ns"].max()),
                )
                if node_start_ns is None:
                    node_start_ns = int(pg["realtime_ns"].min())
        if node_start_ns is None and n.pcap is not None:
            node_start_ns = rep.time_ranges.get(str(n.pcap), (None, None))[0]
        if pg is not None:
            mem_frames.append(
                pd.DataFrame(
                    {
                        "node": n.node,
                        "time_ns": pg["realtime_ns"],
                        "op": pg["op"],
                        "page": pg["page"],
                        "npages": pg["npages"],
                        "batch_id": pg["batch_id"],
                        "size_bytes": pg["size_bytes"],
                        "source_file": str(n.paging),
                        "source_record": pg["source_record"],
                    }
                )
            )
        elif n.swap_blktrace is not None:
            sw = _checked_blk(
                read_blktrace(n.swap_blktrace, actions=opts.blk_actions),
                n.swap_blktrace,
                sample.swap_bytes,
                "swap_bytes",
                opts.time_outliers,
            )
            rep.records[f"n{n.node}.swap_blktrace"] = len(sw)
            if not len(sw):
                rep.empty_files.append(str(n.swap_blktrace))
            else:
                addr = sw["sector"] * SECTOR_BYTES
                misaligned = (addr % sample.page_bytes != 0) | (
                    sw["size_bytes"] % sample.page_bytes != 0
                )
                if misaligned.any():
                    row = sw[misaligned].iloc[0]
                    raise TraceFormatError(
                        row["source_file"],
                        f"record {row['source_record']}",
                        "sector/bytes",
                        f"page-aligned swap I/O ({sample.page_bytes} B)",
                        (int(row["sector"]), int(row["size_bytes"])),
                    )
                time_ns = _on_wall_clock(
                    sw, n, n.swap_blktrace, sample, node_start_ns, node_meta, rep
                )
                mem_frames.append(
                    pd.DataFrame(
                        {
                            "node": n.node,
                            "time_ns": time_ns,
                            "op": sw["op"],
                            "page": addr // sample.page_bytes,
                            "npages": sw["size_bytes"] // sample.page_bytes,
                            "batch_id": np.arange(len(sw), dtype=np.int64),
                            "size_bytes": sw["size_bytes"],
                            "source_file": sw["source_file"],
                            "source_record": sw["source_record"],
                        }
                    )
                )
        if n.disk_blktrace is not None:
            dk = _checked_blk(
                read_blktrace(n.disk_blktrace, actions=opts.blk_actions),
                n.disk_blktrace,
                sample.disk_bytes,
                "disk_bytes",
                opts.time_outliers,
            )
            rep.records[f"n{n.node}.disk_blktrace"] = len(dk)
            if not len(dk):
                rep.empty_files.append(str(n.disk_blktrace))
                continue
            time_ns = _on_wall_clock(dk, n, n.disk_blktrace, sample, node_start_ns, node_meta, rep)
            disk_frames.append(
                pd.DataFrame(
                    {
                        "node": n.node,
                        "time_ns": time_ns,
                        "op": dk["op"],
                        "sector": dk["sector"],
                        "size_bytes": dk["size_bytes"],
                        "source_file": dk["source_file"],
                        "source_record": dk["source_record"],
                    }
                )
            )
    mem = pd.concat(mem_frames, ignore_index=True) if mem_frames else None
    disk = pd.concat(disk_frames, ignore_index=True) if disk_frames else None
    for frame in (mem, disk):
        if frame is not None and len(frame):
            earliest.append(int(frame["time_ns"].min()))
    if not earliest:
        raise ValueError(
            f"sample {sample.name!r}: no records in any input "
            f"({len(rep.empty_files)} empty files: {rep.empty_files})"
        )
    check_time_ranges(rep.time_ranges)
    t0 = min(earliest)
    rep.t0_realtime_ns = t0

    # Attribution (paper §4.1): one pool of message bytes shared by memory and disk.
    parts = []
    if mem is not None and opts.attribute_memory:
        parts.append(mem.assign(resource="mem", _row=np.arange(len(mem))))
    if disk is not None and opts.attribute_disk:
        parts.append(disk.assign(resource="disk", _row=np.arange(len(disk))))
    if parts and len(messages):
        both = pd.concat(
            [p[["node", "time_ns", "op", "size_bytes", "resource", "_row"]] for p in parts],
            ignore_index=True,
        )
        attributed, attr_report = attribute(both, messages, opts.tolerance_ns)
        rep.attribution = attr_report
        for res, frame in (("mem", mem), ("disk", disk)):
            if frame is None:
                continue
            sel = attributed[attributed["resource"] == res].sort_values("_row")
            if len(sel):
                frame["requester_node"] = sel["requester_node"].to_numpy()

    flows = []
    mem_kinds = {"mem_read", "mem_write"} & set(opts.kinds)
    disk_kinds = {"disk_read", "disk_write"} & set(opts.kinds)
    if mem is not None and mem_kinds:
        part = opts.memory_partition
        if opts.use_device_sizes:
            if sample.swap_bytes is None:
                raise ValueError("use_device_sizes needs swap_bytes in meta.json")
            part = dataclasses.replace(part, space_bytes=sample.swap_bytes)
        f = memory_flows(
            mem, n_nodes, page_bytes=sample.page_bytes, partition=part, merge=opts.memory_merge
        )
        flows.append(f[f["kind"].isin(mem_kinds)])
    if disk is not None and disk_kinds:
        part = opts.disk_partition
        if opts.use_device_sizes:
            if sample.disk_bytes is None:
                raise ValueError("use_device_sizes needs disk_bytes in meta.json")
            part = dataclasses.replace(part, space_bytes=sample.disk_bytes)
        f = disk_flows(disk, n_nodes, partition=part)
        flows.append(f[f["kind"].isin(disk_kinds)])
    if "net" in opts.kinds and len(messages):
        flows.append(
            pd.DataFrame(
                {
                    "start_ns": messages["start_ns"].to_numpy(dtype=np.int64),
                    "src": (
                        messages["src_node"].to_numpy() * BLADES_PER_NODE + int(BladeType.COMPUTE)
                    ).astype(np.int32),
                    "dst": (
                        messages["dst_node"].to_numpy() * BLADES_PER_NODE + int(BladeType.COMPUTE)
                    ).astype(np.int32),
                    "size_bytes": messages["size_bytes"].to_numpy(dtype=np.int64),
                    "kind": "net",
                    "node": messages["capture_node"].to_numpy(dtype=np.int32),
                    "source_file": messages["source_file"].to_numpy(),
                    "source_record": messages["source_record"].to_numpy(dtype=np.int64),
                }
            )
        )
    table = pd.concat(flows, ignore_index=True) if flows else _empty_table()
    table["start_ns"] = table["start_ns"].astype(np.int64) - t0
    kind_rank = table["kind"].map({k: i for i, k in enumerate(FLOW_KINDS)})
    order = np.lexsort(
        (
            table["source_record"].to_numpy(),
            kind_rank.to_numpy(),
            table["node"].to_numpy(),
            table["start_ns"].to_numpy(),
        )
    )
    table = table.iloc[order].reset_index(drop=True)
    table.insert(0, "flow_id", np.arange(len(table), dtype=np.int64))
    for k in FLOW_KINDS:
        rep.flows[k] = int((table["kind"] == k).sum())
    return _to_schema(table)


def _select_packets(packets: PacketTable, keep: np.ndarray) -> PacketTable:
    """The packets where ``keep`` is True (all of them when it is all True)."""
    if keep.all():
        return packets
    arrays = {
        f.name: getattr(packets, f.name)[keep]
        for f in dataclasses.fields(packets)
        if isinstance(getattr(packets, f.name), np.ndarray)
    }
    return dataclasses.replace(packets, **arrays)


def _checked_paging(
    pg: pd.DataFrame, path: Path, sample: SampleInputs, policy: Policy
) -> pd.DataFrame:
    """A paging trace's records checked against the swap device's size (meta.json
    ``swap_bytes``, ``disaggsim.bounds``) and the time-range model (on ``time_us`` as in
    the file; the realtime clock is that plus a constant)."""
    if not len(pg):
        return pg
    if sample.swap_bytes is not None:
        end = (pg["page"] + pg["npages"]) * sample.page_bytes
        check_records(
            path,
            (end > sample.swap_bytes).to_numpy(),
            pg["page"].to_numpy(),
            pg["source_record"].to_numpy(),
            "start_page",
            f"pages inside the swap device: (page + npages) * {sample.page_bytes} <= "
            f"swap_bytes {sample.swap_bytes} (meta.json)",
            record_word="line",
            error=TraceFormatError,
        )
    keep = check_times(
        path,
        pg["time_us"].to_numpy(),
        pg["source_record"].to_numpy(),
        "timestamp_us",
        "µs",
        MIN_GAP_TOLERANCE_NS // 1000,
        policy,
        record_word="line",
        error=TraceFormatError,
    )
    return pg if keep.all() else pg[keep].reset_index(drop=True)


def _checked_blk(
    blk: pd.DataFrame, prefix: Path, device_bytes: int | None, key: str, policy: Policy
) -> pd.DataFrame:
    """A blktrace's requests checked against the device's size (meta.json
    ``swap_bytes``/``disk_bytes``, ``disaggsim.bounds``) and the time-range model
    (all per-CPU files of ``prefix`` as one input, on the trace clock)."""
    if not len(blk):
        return blk
    files = blk["source_file"].to_numpy()
    records = blk["source_record"].to_numpy()
    if device_bytes is not None:
        end = blk["sector"] * SECTOR_BYTES + blk["size_bytes"]
        check_records(
            prefix,
            (end > device_bytes).to_numpy(),
            blk["sector"].to_numpy(),
            records,
            "sector",
            f"a request inside the device: sector * 512 + bytes <= {key} {device_bytes} "
            "(meta.json)",
            files=files,
            error=TraceFormatError,
        )
    keep = check_times(
        prefix,
        blk["time_ns"].to_numpy(),
        records,
        "time",
        "ns",
        MIN_GAP_TOLERANCE_NS,
        policy,
        files=files,
        error=TraceFormatError,
    )
    return blk if keep.all() else blk[keep].reset_index(drop=True)


def _on_wall_clock(
    blk: pd.DataFrame,
    n: NodeInputs,
    prefix: Path,
    sample: SampleInputs,
    node_start_ns: int | None,
    node_meta: Path | None,
    rep: ConvertReport,
) -> np.ndarray:
    """``blk.time_ns`` moved to CLOCK_REALTIME (``clocks.blktrace_offset``); records the
    time range and the clock note in ``rep``. A given offset (header) is checked against
    the trace's own wall-clock anchor (content) where it has one
    (``disaggsim.bounds.check_declared_time``)."""
    given = n.trace_clock_offset_ns
    if given is None:
        given = sample.trace_clock_offset_ns
    first, last = int(blk["time_ns"].min()), int(blk["time_ns"].max())
    offset, note, rule = blktrace_offset(prefix, n.node, first, last, given, node_start_ns)
    anchor = wallclock_offset_ns(prefix) if rule == "given" else None
    if anchor is not None:  # the given offset (header) against the trace's own anchor
        field = "trace_clock_offset_ns"
        check_declared_time(
            sample.meta_file or prefix,
            None if n.trace_clock_offset_ns is None else f"node {n.node}",
            field,
            first + offset,
            first + anchor[0],
            last + anchor[0],
            f"{prefix} on the wall clock by its BLK_TN_TIMESTAMP anchor ({anchor[1]} byte "
            f"{anchor[2]}), where the given offset {offset} ns puts it",
            MIN_GAP_TOLERANCE_NS,
            error=TraceFormatError,
        )
    # The node's meta start is not checked against an anchored blktrace: a disk may be idle
    # for minutes after tracing starts (the artifact's Spark run: its first disk request
    # 66 s after the meta's start), so a blktrace's first record does not witness a start.
    rep.clock_notes.append(note)
    rep.time_ranges[str(prefix)] = (first + offset, last + offset)
    return blk["time_ns"].to_numpy(dtype=np.int64) + np.int64(offset)


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            f.name: pd.Series(
                dtype=object if pa.types.is_string(f.type) else f.type.to_pandas_dtype()
            )
            for f in FLOW_TABLE
            if f.name != "flow_id"
        }
    )


def _to_schema(table: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame()
    for f in FLOW_TABLE:
        col = table[f.name]
        out[f.name] = col.astype(object if pa.types.is_string(f.type) else f.type.to_pandas_dtype())
    return out


def write_flow_table(
    df: pd.DataFrame,
    out_prefix: str | Path,
    extra_writers: Sequence[tuple[Path, Callable[[Path], None]]] = (),
) -> tuple[Path, Path]:
    """Write ``OUT_PREFIX.parquet`` and ``OUT_PREFIX.csv`` (``FLOW_TABLE``), atomically.

    The table is checked against ``FLOW_TABLE`` first (column names, order, types, no
    nulls, size_bytes > 0, flow_id = 0..N-1); both files are written to temporary files
    and moved into place only when both are complete, so on any error neither exists
    (or the old ones stay). ``extra_writers`` are ``(path, write(tmp_path))`` pairs of
    further outputs (e.g. the YAPS file of ``disaggsim convert --yaps-out``) that join the
    same all-or-nothing group (``disaggsim.atomic.atomic_paths``). Returns the two paths.

    Raises:
        ValueError: the table does not match the schema.
        OSError: an output cannot be written (e.g. a directory is in the way); then no
            output is changed.
    """
    extra = [p for p, _ in extra_writers]
    if list(df.columns) != FLOW_TABLE.names:
        raise ValueError(f"flow table columns {list(df.columns)} != FLOW_TABLE {FLOW_TABLE.names}")
    try:
        table = pa.Table.from_pandas(df, schema=FLOW_TABLE, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"flow table does not match FLOW_TABLE: {exc}") from exc
    for f in FLOW_TABLE:
        if table.column(f.name).null_count:
            raise ValueError(f"flow table column {f.name!r} has nulls")
    if len(df) and (
        (df["size_bytes"] <= 0).any()
        or not np.array_equal(df["flow_id"].to_numpy(), np.arange(len(df)))
    ):
        raise ValueError("flow table needs size_bytes > 0 and flow_id = 0..N-1")
    bad = set(df["kind"].unique()) - set(FLOW_KINDS)
    if bad:
        raise ValueError(f"flow table has unknown kinds {sorted(bad)}")
    prefix = Path(out_prefix)
    parquet = prefix.with_name(prefix.name + ".parquet")
    csv = prefix.with_name(prefix.name + ".csv")
    with atomic_paths(parquet, csv, *extra) as tmps:
        pq.write_table(table, tmps[0])
        df.to_csv(tmps[1], index=False)
        for (_, write), tmp in zip(extra_writers, tmps[2:], strict=True):
            write(tmp)
    return parquet, csv


def read_flow_table(path: str | Path) -> pd.DataFrame:
    """Read a flow table written by :func:`write_flow_table` (.parquet or .csv)."""
    p = Path(path)
    if p.suffix == ".parquet":
        return _to_schema(pq.read_table(p, schema=FLOW_TABLE).to_pandas())
    df = pd.read_csv(p, dtype={"kind": object, "source_file": object}, keep_default_na=False)
    if list(df.columns) != FLOW_TABLE.names:
        raise TraceFormatError(
            p, 1, None, f"the header {','.join(FLOW_TABLE.names)}", ",".join(df.columns)
        )
    return _to_schema(df)
