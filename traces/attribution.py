"""Attribute memory/disk accesses to the compute blade that caused them (paper §4.1).

Paper §4.1: "we match network and disk traces across the cluster - e.g., matching the
network traffic between B and A to the disk traffic at A - using a heuristic based on
both the timestamps and volume of data transferred. If a locally captured memory or disk
access request matches a local flow in our tcpdump traces, then it is assumed to be part
of a remote read and is attributed to the remote endpoint of the network flow. Otherwise,
the memory/disk access is assumed to have originated from the local CPU."

The rule implemented (the artifact's version, disaggregation-flowgen
``flowgen-spark/ProcessTrace.scala``, matched a disk read at A to a NIC flow from A when
``flow.start <= t <= flow.end`` and the read fit in the flow's bytes, filling each flow's
volume greedily):

- A read of ``s`` bytes at node A at time ``t`` serves B if some message A -> B (the data
  going out) has ``start_ns - tolerance_ns <= t <= end_ns + tolerance_ns`` and at least
  ``s`` of its bytes are not yet claimed by earlier accesses; a write at A serves B if a
  message B -> A (the data coming in) does.
- Accesses are taken in time order; among matching messages the earliest-starting one
  is chosen and ``s`` of its bytes are consumed (reads at the sender and writes at the
  receiver draw on separate pools of the message's bytes).
- Everything else is attributed to A's own compute blade.

The tolerance covers the device time between an access and the message it belongs to
(a read precedes its reply; a write follows its request). Default 1 ms: the paper's
Table 1 latency of the slowest device, an HDD (10^6 ns; an SSD is 10^4 ns).
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

DEFAULT_TOLERANCE_NS: Final = 1_000_000


@dataclass(frozen=True)
class AttributionReport:
    """What attribution changed.

    ``per_node`` has one row per (node, resource) with ``accesses``, ``bytes``,
    ``reattributed_accesses`` and ``reattributed_bytes`` (resource is the accesses'
    ``resource`` column, or ``"all"``); ``matched_messages`` counts messages that absorbed
    at least one access.
    """

    per_node: pd.DataFrame
    matched_messages: int

    @property
    def reattributed_accesses(self) -> int:
        return int(self.per_node["reattributed_accesses"].sum())

    @property
    def reattributed_bytes(self) -> int:
        return int(self.per_node["reattributed_bytes"].sum())

    def __str__(self) -> str:
        return (
            f"attribution: {self.reattributed_accesses} accesses "
            f"({self.reattributed_bytes} B) reattributed to remote requesters\n"
            + self.per_node.to_string(index=False)
        )


def attribute(
    accesses: pd.DataFrame,
    messages: pd.DataFrame,
    tolerance_ns: int = DEFAULT_TOLERANCE_NS,
) -> tuple[pd.DataFrame, AttributionReport]:
    """Find the requester of each access (see module docstring for the rule).

    Args:
        accesses: rows with ``node``, ``time_ns``, ``op`` ('R'/'W'), ``size_bytes``
            (optional ``resource``, e.g. 'mem'/'disk', for the report). Times on the same
            clock as the messages.
        messages: rows with ``start_ns``, ``end_ns``, ``src_node``, ``dst_node``,
            ``size_bytes`` (``pcap.network_messages``).
        tolerance_ns: window slack on both sides of a message (>= 0).

    Returns:
        ``(accesses with requester_node and message_index columns, report)``: a copy of
        ``accesses`` in its original order, ``requester_node`` = the node whose compute
        blade caused the access, ``message_index`` = the matched row of ``messages``
        (positional) or -1.

    Raises:
        ValueError: missing columns, negative tolerance, an op other than 'R'/'W'.
    """
    for name, frame, cols in (
        ("accesses", accesses, ("node", "time_ns", "op", "size_bytes")),
        ("messages", messages, ("start_ns", "end_ns", "src_node", "dst_node", "size_bytes")),
    ):
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"attribute: {name} lacks columns {missing}")
    if tolerance_ns < 0:
        raise ValueError(f"tolerance_ns must be >= 0, got {tolerance_ns}")
    ops = accesses["op"].to_numpy()
    if len(ops) and not np.isin(ops, ["R", "W"]).all():
        raise ValueError("attribute: op must be 'R' or 'W'")

    node = accesses["node"].to_numpy(dtype=np.int64)
    t = accesses["time_ns"].to_numpy(dtype=np.int64)
    size = accesses["size_bytes"].to_numpy(dtype=np.int64)
    requester = node.copy()
    matched = np.full(len(accesses), -1, dtype=np.int64)

    m_start = messages["start_ns"].to_numpy(dtype=np.int64) - tolerance_ns
    m_end = messages["end_ns"].to_numpy(dtype=np.int64) + tolerance_ns
    m_src = messages["src_node"].to_numpy(dtype=np.int64)
    m_dst = messages["dst_node"].to_numpy(dtype=np.int64)
    m_size = messages["size_bytes"].to_numpy(dtype=np.int64)

    # A read at A draws on messages A -> *, a write at A on messages * -> A. The two roles
    # have separate byte pools: a message's bytes may be both read at its sender and
    # written at its receiver (e.g. a block copied from B's disk to A's disk).
    for role_op, local, remote in (("R", m_src, m_dst), ("W", m_dst, m_src)):
        remaining = m_size.copy()
        for a in np.unique(node[ops == role_op]) if len(ops) else []:
            acc = np.flatnonzero((node == a) & (ops == role_op))
            msg = np.flatnonzero(local == a)
            if msg.size == 0:
                continue
            msg = msg[np.lexsort((msg, m_start[msg]))]
            acc = acc[np.lexsort((acc, t[acc]))]
            active: list[tuple[int, int]] = []  # (window start, message index), sorted
            nxt = 0
            for i in acc:
                ti = int(t[i])
                while nxt < msg.size and m_start[msg[nxt]] <= ti:
                    insort(active, (int(m_start[msg[nxt]]), int(msg[nxt])))
                    nxt += 1
                if active:
                    active = [x for x in active if m_end[x[1]] >= ti]
                for _, j in active:
                    if remaining[j] >= size[i]:
                        remaining[j] -= size[i]
                        requester[i] = remote[j]
                        matched[i] = j
                        break
    out = accesses.copy()
    out["requester_node"] = requester
    out["message_index"] = matched
    resource = (
        accesses["resource"].to_numpy()
        if "resource" in accesses.columns
        else np.full(len(accesses), "all")
    )
    moved = requester != node
    stats = pd.DataFrame(
        {
            "node": node,
            "resource": resource,
            "accesses": 1,
            "bytes": size,
            "reattributed_accesses": moved.astype(np.int64),
            "reattributed_bytes": np.where(moved, size, 0),
        }
    )
    per_node = stats.groupby(["node", "resource"], as_index=False).sum()
    report = AttributionReport(
        per_node=per_node, matched_messages=int(np.unique(matched[matched >= 0]).size)
    )
    return out, report
