"""Fill the fabric with copies of the traced cluster (the authors' way to load it).

One traced 3-node cluster (9 blades) on the paper's 144-host fabric leaves it nearly empty,
and every transport then looks alike. The OSDI'16 artifact's simulator loads the fabric
with copies of the traced cluster instead (NetSys/simulator run/flow_generator.cpp,
``CustomCDFFlowGenerator::make_flows``): at rack scale one copy per rack, at datacenter
scale copies whose blades are spread over the whole fabric. :func:`replicate` makes such
copies as one flow table; ``disaggsim.sim.placement.place`` then puts each copy (its
``cluster_of``) in one rack or anywhere.

Two ways to make a copy's flows:

- ``"replay"``: the trace itself, every start time shifted by the copy's offset and
  wrapped around the trace's span, so all copies cover the same interval with their
  bursts at different times. Copy 0 has offset 0 (with one copy the trace is unchanged);
  the others draw theirs uniformly in ``[0, span)``.
- ``"pair-cdf"``: the artifact's generator (``disaggsim.traces.paircdf``): each copy's
  blade pairs draw their flows from that pair's size and inter-arrival CDFs, built from the
  trace (or read from the artifact's files), over the trace's span.

Ids: copy ``c`` of blade ``b`` is blade ``c * stride + b`` with ``stride = 3 * nodes`` (so
it stays ``3 * node + type``), its node ``c * nodes + node``; flow ids are
``c * (max flow_id + 1) + flow_id`` for replays and numbered afresh for pair-cdf copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from disaggsim.schemas import BLADES_PER_NODE, FLOW_TABLE
from disaggsim.traces import paircdf

#: Ways to make a copy's flows.
MODES = ("replay", "pair-cdf")


def squash_coarrivals(flow_table: pd.DataFrame) -> pd.DataFrame:
    """Merge the flows of one blade pair and kind that start at the same ns into one flow.

    The artifact sends a paging batch's pages between two blades as one flow
    (flowgen-spark/ProcessTrace.scala aggregates memory flows by (batch id, src, dst)) and
    merges co-arriving flows of a pair before building its CDFs (processForSimulation.py
    ``squashCoArrivals``); our converter writes one flow per page run. The merged flow keeps
    the lowest flow_id and its node, source_file and source_record; its size is the sum.

    Args:
        flow_table: FLOW_TABLE rows.

    Returns:
        FLOW_TABLE rows, one per (start_ns, src, dst, kind), sorted by flow_id.
    """
    keys = ["start_ns", "src", "dst", "kind"]
    ordered = flow_table[FLOW_TABLE.names].sort_values("flow_id", kind="stable")
    grouped = ordered.groupby(keys, sort=False)
    first = grouped.head(1).set_index(keys)
    first["size_bytes"] = grouped["size_bytes"].sum()
    out = first.reset_index()[FLOW_TABLE.names]
    return out.sort_values("flow_id", kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Replicated:
    """The result of :func:`replicate`.

    Attributes:
        flows: FLOW_TABLE rows of all copies, sorted by (start_ns, flow_id).
        cluster_of: blade id -> copy index (for ``placement.place``).
        offsets_ns: per copy, the replay offset in ns (all 0 for pair-cdf copies).
        span_ns: the trace's span, ``max(start_ns) - min(start_ns) + 1``.
        stride: blade-id distance between copies.
    """

    flows: pd.DataFrame
    cluster_of: dict[int, int]
    offsets_ns: list[int]
    span_ns: int
    stride: int


def replicate(
    flow_table: pd.DataFrame,
    copies: int,
    mode: Literal["replay", "pair-cdf"],
    seed: int,
    offsets_ns: list[int] | None = None,
    cdfs: dict[tuple[int, int], paircdf.PairCdf] | None = None,
) -> Replicated:
    """Make ``copies`` disjoint copies of a traced cluster's flow table.

    Args:
        flow_table: FLOW_TABLE rows of one traced cluster.
        copies: number of copies (>= 1).
        mode: ``"replay"`` or ``"pair-cdf"`` (module docstring).
        seed: seeds the offsets (replay) or the draws (pair-cdf) through numpy PCG64.
        offsets_ns: replay only: the offsets to use (one per copy, each in [0, span)),
            instead of drawing them.
        cdfs: pair-cdf only: the pairs' CDFs (e.g. read from the artifact's files);
            default: built from ``flow_table`` (``paircdf.build_pair_cdfs``).

    Returns:
        :class:`Replicated`.

    Raises:
        ValueError: an empty table, copies < 1, a bad mode, offsets of the wrong count or
            outside [0, span), or no pair with enough flows for pair-cdf.
    """
    if flow_table.empty:
        raise ValueError("replicate: empty flow table")
    if copies < 1:
        raise ValueError(f"replicate: copies must be >= 1, got {copies}")
    if mode not in MODES:
        raise ValueError(f"replicate: mode must be one of {MODES}, got {mode!r}")
    blades = np.concatenate([flow_table["src"].to_numpy(), flow_table["dst"].to_numpy()])
    nodes = int(blades.max()) // BLADES_PER_NODE + 1
    stride = BLADES_PER_NODE * nodes
    t0 = int(flow_table["start_ns"].min())
    span = int(flow_table["start_ns"].max()) - t0 + 1
    rng = np.random.default_rng(seed)
    if mode == "replay":
        if offsets_ns is None:
            offsets = [0] + [int(x) for x in rng.integers(0, span, size=copies - 1)]
        else:
            offsets = [int(x) for x in offsets_ns]
            if len(offsets) != copies or any(not 0 <= o < span for o in offsets):
                raise ValueError(
                    f"replicate: need {copies} offsets in [0, {span}) ns, got {offsets_ns}"
                )
        base = flow_table[FLOW_TABLE.names].reset_index(drop=True)
        id_stride = int(base["flow_id"].max()) + 1
        parts = []
        for c, offset in enumerate(offsets):
            part = base.copy()
            part["start_ns"] = t0 + (base["start_ns"] - t0 + offset) % span
            part["flow_id"] = base["flow_id"] + c * id_stride
            part["src"] = base["src"] + c * stride
            part["dst"] = base["dst"] + c * stride
            part["node"] = base["node"] + c * nodes
            parts.append(part)
        flows = pd.concat(parts, ignore_index=True)
    else:
        if offsets_ns is not None:
            raise ValueError("replicate: offsets_ns applies to mode 'replay' only")
        if cdfs is None:
            cdfs = paircdf.build_pair_cdfs(flow_table)
        if not cdfs:
            raise ValueError(
                f"replicate: no blade pair has {paircdf.MIN_FLOWS} or more flows to build "
                "its CDFs from"
            )
        offsets = [0] * copies
        parts = []
        for c in range(copies):
            drawn = paircdf.generate_pair_flows(cdfs, span, np.random.default_rng([seed, c]))
            drawn["start_ns"] = drawn["start_ns"] + t0
            drawn["src"] = drawn["src"] + c * stride
            drawn["dst"] = drawn["dst"] + c * stride
            parts.append(drawn)
        flows = pd.concat(parts, ignore_index=True)
        flows = flows.sort_values(["start_ns", "src", "dst"], kind="stable")
        flows = flows.reset_index(drop=True)
        flows["flow_id"] = np.arange(len(flows), dtype=np.int64)
        flows["node"] = flows["src"].where(flows["src"] % BLADES_PER_NODE == 0, flows["dst"])
        flows["node"] = flows["node"] // BLADES_PER_NODE
        flows["source_file"] = "pair-cdf"
        flows["source_record"] = -1
        flows = flows[FLOW_TABLE.names]
    flows = flows.astype(
        {
            f.name: f.type.to_pandas_dtype()
            for f in FLOW_TABLE
            if f.type.to_pandas_dtype() is not np.object_
        }
    )
    flows = flows.sort_values(["start_ns", "flow_id"], kind="stable").reset_index(drop=True)
    all_blades = np.unique(np.concatenate([flows["src"].to_numpy(), flows["dst"].to_numpy()]))
    cluster_of = {int(b): int(b) // stride for b in all_blades}
    return Replicated(flows, cluster_of, offsets, span, stride)
