"""The blade model: memory and disk accesses -> per-blade flows (paper §4.1, §2.2).

Each traced node becomes one compute, one memory and one disk blade
(``disaggsim.schemas.blade_id``). An access made on node A to address ``x`` of A's swap
space (memory) or of A's disk (sectors) is placed on a blade by partitioning that address
space uniformly across all memory (or disk) blades (§4.1: "We assume this address space
is uniformly partitioned across all memory and disk blades"; §2.2: "the disk block
address space is range partitioned into 'blocks', that are uniformly distributed across
the disk blades"). Two partition rules:

- ``range``: N equal contiguous ranges, blade index ``k = x * N // space_bytes`` (range
  ``k`` starts at ``ceil(k * space_bytes / N)``). This is what the original artifact did
  (disaggregation-flowgen ``flowgen-spark/ProcessTrace.scala``: ``addr / maxAddr * N``).
- ``striped``: blocks of ``block_bytes`` dealt round-robin, ``k = (x // block_bytes) % N``.

``space_bytes="observed"`` (the artifact's choice) uses the highest end address the node's
trace touches, so the part of the address space a short trace actually uses is spread
over all blades; an explicit size (e.g. meta.json ``swap_bytes``) partitions the whole
device. With ``rotate_by_node`` node A's range k goes to blade ``(k + A) % N`` (the
artifact rotated disk ranges this way, not memory ranges). An access that straddles a
range/block boundary is split, one piece per blade.

Flows: reads go blade -> the requester's compute blade, writes compute -> blade (§4.1);
the requester is the node itself unless attribution (``attribution.attribute``) says a
remote node caused the access. Memory pieces of one batch that are contiguous, on one
blade, with the same op and requester merge into one flow (the artifact merged every
page of a batch on a blade pair, ``merge="batch"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import pandas as pd

from disaggsim.schemas import BLADES_PER_NODE, BladeType

SECTOR_BYTES: Final = 512  # paper §2.2: "sectors (512B in x86)"

FLOW_COLUMNS: Final = (
    "start_ns",
    "src",
    "dst",
    "size_bytes",
    "kind",
    "node",
    "source_file",
    "source_record",
)


@dataclass(frozen=True)
class Partition:
    """How one resource's address space is spread over its blades (see module docstring).

    Attributes:
        rule: ``"range"`` or ``"striped"``.
        space_bytes: ``"observed"`` or the address-space size in bytes (``range`` only).
        block_bytes: stripe unit in bytes (``striped`` only).
        rotate_by_node: map node A's range/stripe k to blade ``(k + A) % N``.
    """

    rule: Literal["range", "striped"] = "range"
    space_bytes: Literal["observed"] | int = "observed"
    block_bytes: int = 1 << 20
    rotate_by_node: bool = False

    def __post_init__(self) -> None:
        if self.rule not in ("range", "striped"):
            raise ValueError(f"partition rule must be 'range' or 'striped', got {self.rule!r}")
        if self.block_bytes <= 0:
            raise ValueError(f"block_bytes must be > 0, got {self.block_bytes}")
        if self.space_bytes != "observed" and (
            not isinstance(self.space_bytes, int) or self.space_bytes <= 0
        ):
            raise ValueError(
                f"space_bytes must be 'observed' or a positive int, got {self.space_bytes!r}"
            )


#: Artifact defaults (ProcessTrace.scala): range partition of the observed address range;
#: disk ranges rotated by node, memory ranges not.
DEFAULT_MEMORY_PARTITION: Final = Partition("range", "observed", rotate_by_node=False)
DEFAULT_DISK_PARTITION: Final = Partition("range", "observed", rotate_by_node=True)


def split_by_blade(
    node: np.ndarray,
    addr_bytes: np.ndarray,
    size_bytes: np.ndarray,
    n_nodes: int,
    partition: Partition,
    space_bytes: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split accesses [addr, addr+size) into per-blade pieces.

    Args:
        node: node of each access (int array, shape (n,)).
        addr_bytes, size_bytes: access start and length in bytes (size > 0).
        n_nodes: number of nodes = number of blades of this type.
        partition: the rule.
        space_bytes: per-access address-space size for ``range`` (shape (n,)); required
            for ``range``.

    Returns:
        ``(access_index, blade_index, piece_addr, piece_bytes)``, one element per piece,
        pieces of one access consecutive and in address order; ``blade_index`` in
        ``[0, n_nodes)`` (the node whose memory/disk blade holds the piece).

    Raises:
        ValueError: non-positive sizes, or a range-partitioned access beyond ``space_bytes``.
    """
    node = np.asarray(node, dtype=np.int64)
    addr = np.asarray(addr_bytes, dtype=np.int64)
    size = np.asarray(size_bytes, dtype=np.int64)
    if (size <= 0).any():
        raise ValueError("split_by_blade: every access needs size_bytes > 0")
    end = addr + size
    if partition.rule == "range":
        if space_bytes is None:
            raise ValueError("split_by_blade: range partition needs space_bytes")
        space = np.asarray(space_bytes, dtype=np.int64)
        if (end > space).any():
            i = int(np.flatnonzero(end > space)[0])
            raise ValueError(
                f"access {i} ends at byte {int(end[i])}, beyond the address space of "
                f"{int(space[i])} bytes"
            )
        first = addr * n_nodes // space
        last = (end - 1) * n_nodes // space
    else:
        first = addr // partition.block_bytes
        last = (end - 1) // partition.block_bytes
        space = np.zeros_like(addr)
    count = last - first + 1
    access_index = np.repeat(np.arange(addr.shape[0], dtype=np.int64), count)
    within = np.arange(access_index.shape[0], dtype=np.int64) - np.repeat(
        np.cumsum(count) - count, count
    )
    chunk = first[access_index] + within
    if partition.rule == "range":
        sp = space[access_index]
        lo = -(-chunk * sp // n_nodes)
        hi = -(-(chunk + 1) * sp // n_nodes)
        blade = chunk
    else:
        lo = chunk * partition.block_bytes
        hi = lo + partition.block_bytes
        blade = chunk % n_nodes
    piece_lo = np.maximum(lo, addr[access_index])
    piece_hi = np.minimum(hi, end[access_index])
    if partition.rotate_by_node:
        blade = (blade + node[access_index]) % n_nodes
    return access_index, blade.astype(np.int64), piece_lo, piece_hi - piece_lo


def _observed_space(node: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per access: the highest end address over all accesses of its node."""
    frame = pd.DataFrame({"node": node, "end": end})
    return frame.groupby("node")["end"].transform("max").to_numpy(dtype=np.int64)


def _space(partition: Partition, node: np.ndarray, end: np.ndarray) -> np.ndarray:
    if partition.space_bytes == "observed":
        return _observed_space(node, end)
    return np.full(node.shape[0], int(partition.space_bytes), dtype=np.int64)


def _endpoints(
    op: np.ndarray, resource_blade: np.ndarray, compute_blade: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    is_read = op == "R"
    return np.where(is_read, resource_blade, compute_blade), np.where(
        is_read, compute_blade, resource_blade
    )


def memory_flows(
    accesses: pd.DataFrame,
    n_nodes: int,
    *,
    page_bytes: int = 4096,
    partition: Partition = DEFAULT_MEMORY_PARTITION,
    merge: Literal["contiguous", "batch"] = "contiguous",
) -> pd.DataFrame:
    """Paging records -> memory flows.

    Args:
        accesses: one row per paging record with ``node``, ``time_ns`` (common clock),
            ``op`` ('R'/'W'), ``page``, ``npages``, ``batch_id``, ``source_file``,
            ``source_record`` and optionally ``requester_node`` (default: ``node``).
        n_nodes: number of nodes (memory blades).
        page_bytes: page size (paper §2.2: 4 KB).
        partition: address-space partition (default: the artifact's).
        merge: ``"contiguous"`` (pieces of one batch, contiguous, same blade, op and
            requester) or ``"batch"`` (all pieces of a batch per blade, op, requester).

    Returns:
        Flows with columns ``FLOW_COLUMNS`` (kind ``mem_read``/``mem_write``), sorted by
        (start_ns, source_record); ``start_ns`` is the batch's time.
    """
    if len(accesses) == 0:
        return _empty_flows()
    node = accesses["node"].to_numpy(dtype=np.int64)
    addr = accesses["page"].to_numpy(dtype=np.int64) * page_bytes
    size = accesses["npages"].to_numpy(dtype=np.int64) * page_bytes
    space = _space(partition, node, addr + size) if partition.rule == "range" else None
    ai, blade_ix, lo, nbytes = split_by_blade(node, addr, size, n_nodes, partition, space)
    requester = (
        accesses["requester_node"].to_numpy(dtype=np.int64)
        if "requester_node" in accesses.columns
        else node
    )
    pieces = pd.DataFrame(
        {
            "node": node[ai],
            "batch_id": accesses["batch_id"].to_numpy(dtype=np.int64)[ai],
            "op": accesses["op"].to_numpy()[ai],
            "requester": requester[ai],
            "blade_ix": blade_ix,
            "lo": lo,
            "hi": lo + nbytes,
            "size_bytes": nbytes,
            "start_ns": accesses["time_ns"].to_numpy(dtype=np.int64)[ai],
            "source_file": accesses["source_file"].to_numpy()[ai],
            "source_record": accesses["source_record"].to_numpy(dtype=np.int64)[ai],
        }
    )
    keys = ["node", "batch_id", "op", "requester", "blade_ix"]
    pieces = pieces.sort_values([*keys, "lo"], kind="stable").reset_index(drop=True)
    same_group = np.ones(len(pieces), dtype=bool)
    same_group[0] = False
    for k in keys:
        col = pieces[k].to_numpy()
        same_group[1:] &= col[1:] == col[:-1]
    if merge == "contiguous":
        hi = pieces["hi"].to_numpy()
        lo_next = pieces["lo"].to_numpy()
        same_group[1:] &= lo_next[1:] == hi[:-1]
    elif merge != "batch":
        raise ValueError(f"merge must be 'contiguous' or 'batch', got {merge!r}")
    flow_no = np.cumsum(~same_group) - 1
    merged = pieces.groupby(flow_no, sort=True).agg(
        node=("node", "first"),
        op=("op", "first"),
        requester=("requester", "first"),
        blade_ix=("blade_ix", "first"),
        size_bytes=("size_bytes", "sum"),
        start_ns=("start_ns", "min"),
        source_file=("source_file", "first"),
        source_record=("source_record", "min"),
    )
    mem_blade = merged["blade_ix"].to_numpy() * BLADES_PER_NODE + int(BladeType.MEMORY)
    cpu_blade = merged["requester"].to_numpy() * BLADES_PER_NODE + int(BladeType.COMPUTE)
    op = merged["op"].to_numpy()
    src, dst = _endpoints(op, mem_blade, cpu_blade)
    return _flows(merged, src, dst, np.where(op == "R", "mem_read", "mem_write"))


def disk_flows(
    accesses: pd.DataFrame,
    n_nodes: int,
    *,
    partition: Partition = DEFAULT_DISK_PARTITION,
) -> pd.DataFrame:
    """Block requests -> disk flows, one flow per request piece on a disk blade.

    ``accesses`` has ``node``, ``time_ns`` (common clock), ``op``, ``sector`` (512 B),
    ``size_bytes``, ``source_file``, ``source_record`` and optionally ``requester_node``.
    Returns flows with columns ``FLOW_COLUMNS`` (kind ``disk_read``/``disk_write``).
    """
    if len(accesses) == 0:
        return _empty_flows()
    node = accesses["node"].to_numpy(dtype=np.int64)
    addr = accesses["sector"].to_numpy(dtype=np.int64) * SECTOR_BYTES
    size = accesses["size_bytes"].to_numpy(dtype=np.int64)
    space = _space(partition, node, addr + size) if partition.rule == "range" else None
    ai, blade_ix, _, nbytes = split_by_blade(node, addr, size, n_nodes, partition, space)
    requester = (
        accesses["requester_node"].to_numpy(dtype=np.int64)
        if "requester_node" in accesses.columns
        else node
    )
    op = accesses["op"].to_numpy()[ai]
    disk_blade = blade_ix * BLADES_PER_NODE + int(BladeType.DISK)
    cpu_blade = requester[ai] * BLADES_PER_NODE + int(BladeType.COMPUTE)
    src, dst = _endpoints(op, disk_blade, cpu_blade)
    frame = pd.DataFrame(
        {
            "node": node[ai],
            "size_bytes": nbytes,
            "start_ns": accesses["time_ns"].to_numpy(dtype=np.int64)[ai],
            "source_file": accesses["source_file"].to_numpy()[ai],
            "source_record": accesses["source_record"].to_numpy(dtype=np.int64)[ai],
        }
    )
    return _flows(frame, src, dst, np.where(op == "R", "disk_read", "disk_write"))


def _flows(frame: pd.DataFrame, src: np.ndarray, dst: np.ndarray, kind: np.ndarray) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "start_ns": frame["start_ns"].to_numpy(dtype=np.int64),
            "src": src.astype(np.int32),
            "dst": dst.astype(np.int32),
            "size_bytes": frame["size_bytes"].to_numpy(dtype=np.int64),
            "kind": kind.astype(object),
            "node": frame["node"].to_numpy(dtype=np.int32),
            "source_file": frame["source_file"].to_numpy().astype(object),
            "source_record": frame["source_record"].to_numpy(dtype=np.int64),
        }
    )
    return out.sort_values(["start_ns", "source_record"], kind="stable").reset_index(drop=True)


def _empty_flows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "start_ns": np.zeros(0, np.int64),
            "src": np.zeros(0, np.int32),
            "dst": np.zeros(0, np.int32),
            "size_bytes": np.zeros(0, np.int64),
            "kind": np.zeros(0, object),
            "node": np.zeros(0, np.int32),
            "source_file": np.zeros(0, object),
            "source_record": np.zeros(0, np.int64),
        }
    )
