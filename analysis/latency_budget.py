"""The latency budget of a remote 4 KB page access: Table 4 of Gao et al. (OSDI'16, §3.3).

Table 4 of the paper (/work/shared/papers/001_*.txt, §3.3 "Implications and Feasibility",
"Network latency") splits the round-trip latency of fetching one 4 KB page from a remote
blade into six components, each a number of traversals x the latency of one traversal:

=========================  ===========  ===========  ==============================================
component                  inter-rack   intra-rack   per traversal (source)
=========================  ===========  ===========  ==============================================
OS                         2            2            0.95 us: round-trip kernel processing, [49]
                                                     (§3.3); 0 with RDMA (§3.3 "Using RDMA")
data copy                  2            2            1.00 us memory <-> NIC, [46] (§3.3); 0.50 us
                                                     with NIC integration (§3.3, [50])
switching                  6            2            0.24 us per cut-through switch (Table 4;
                                                     3 switches one way across racks, 1 within)
propagation, inter-rack    4            0            40 m x 5 ns/m = 0.20 us (§3.3 assumption 2)
propagation, intra-rack    4            4            4 m x 5 ns/m = 0.02 us (§3.3 assumption 2)
transmission               1            1            4096 B x 8 / link rate: 0.8192 us at 40 Gbps
                                                     (Table 4 prints 0.82); the request's own
                                                     transmission is ignored (§3.3)
=========================  ===========  ===========  ==============================================

Scenarios (Table 4's three column pairs): ``baseline`` (kernel stack, OS + copy),
``rdma`` (RDMA removes the OS component) and ``rdma_nic`` (RDMA + NIC integration: copy
0.5 us). Scopes use the project's names: ``datacenter`` is the paper's inter-rack column,
``rack`` its intra-rack one. Every total is computed from the components; nothing here holds
a published total.

At 40 Gbps the totals rounded to the paper's 0.01 us are Table 4's: 7.04, 5.28, 5.14, 3.38,
4.14 and 2.38 us. The paper also quotes 3.59 us for ``rdma_nic`` across racks at 100 Gbps
(§3.3 "Takeaways"); its own components give 3.65 us (the transmission drops from 0.8192 to
0.32768 us, the 0.49 us ≈ "0.5 us" of Table 4's caption, and 4.14 - 0.5 = 3.64), so that one
published figure is 0.06 us below what its stated components add up to (see README).

The paper's targets (§3.2, Fig. 2; §3.3): 3 us end-to-end for "shark" applications, 5 us for
"dolphins". :func:`sweep` gives the lowest latency reachable per scope and link rate against
both; the floor as the rate grows without bound is :func:`floor_us` (datacenter 3.32 us, rack
1.56 us), so with these components datacenter-scale disaggregation never reaches 3 us.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import pandas as pd

Scenario = Literal["baseline", "rdma", "rdma_nic"]
Scope = Literal["datacenter", "rack"]

#: Table 4's scenarios, in its column order.
SCENARIOS: Final[tuple[Scenario, ...]] = ("baseline", "rdma", "rdma_nic")
#: Table 4's scopes, in its column order (inter-rack, intra-rack).
SCOPES: Final[tuple[Scope, ...]] = ("datacenter", "rack")
#: Column titles of Table 4 per scenario and scope.
SCENARIO_TITLES: Final[dict[str, str]] = {
    "baseline": "Baseline",
    "rdma": "With RDMA",
    "rdma_nic": "With RDMA + NIC integr.",
}
SCOPE_TITLES: Final[dict[str, str]] = {"datacenter": "inter-rack", "rack": "intra-rack"}

#: The page fetched: "a 4KB page" (§3.3), 4096 B.
PAGE_BYTES: Final = 4096
#: Round-trip kernel processing per endpoint, 950 ns ([49], §3.3; Table 4 "2x0.95").
OS_US: Final = 0.95
#: Copy between memory and the NIC per endpoint, ~1 us ([46], §3.3; Table 4 "2x1.00").
DATA_COPY_US: Final = 1.00
#: Copy with the NIC integrated near the CPU, 0.5 us ([50], §3.3 "Using NIC integration").
DATA_COPY_NIC_INTEGRATED_US: Final = 0.50
#: One cut-through switch traversal (Table 4 "Switching ... 0.24").
SWITCH_US: Final = 0.24
#: Propagation speed, 5 ns per metre of cable (§3.3 assumption 2).
PROPAGATION_NS_PER_M: Final = 5.0
#: Cable between racks (ToR - fabric switch), 40 m (§3.3 assumption 2).
INTER_RACK_CABLE_M: Final = 40.0
#: Cable within a rack (host - ToR), 4 m (§3.3 assumption 2).
INTRA_RACK_CABLE_M: Final = 4.0
#: Switches on the one-way path: two ToRs and one fabric switch across racks, one ToR within
#: a rack (§3.3 assumption 1).
SWITCHES_ONE_WAY: Final[dict[str, int]] = {"datacenter": 3, "rack": 1}
#: Endpoint software is paid at the sender and at the receiver (§3.3 "hence 2x the OS and
#: data copy overheads").
ENDPOINTS: Final = 2
#: The paper's end-to-end targets (§3.2 Fig. 2, §3.3): sharks 3 us, dolphins 5 us.
SHARK_TARGET_US: Final = 3.0
DOLPHIN_TARGET_US: Final = 5.0
#: Table 4's link rate (its caption: "a network with 40Gbps access link bandwidth").
TABLE4_RATE_GBPS: Final = 40.0
#: Link rates of the sweep (the paper discusses 40, 100 Gbps and "even 1Tbps", §3.3).
DEFAULT_SWEEP_RATES_GBPS: Final[tuple[float, ...]] = (10.0, 40.0, 100.0, 200.0, 400.0)


@dataclass(frozen=True)
class Component:
    """One row of Table 4 for one column: ``traversals`` x ``per_traversal_us``.

    Attributes:
        name: Table 4's row name (``OS``, ``Data copy``, ...).
        traversals: traversals in one round trip (Table 4's integral part).
        per_traversal_us: latency of one traversal in µs (Table 4's fractional part).
        source: where the paper states the constant or its formula.
    """

    name: str
    traversals: int
    per_traversal_us: float
    source: str

    @property
    def latency_us(self) -> float:
        """``traversals * per_traversal_us`` in µs."""
        return self.traversals * self.per_traversal_us


@dataclass(frozen=True)
class LatencyBudget:
    """The round-trip latency budget of one page access in one scenario and scope.

    Attributes:
        scenario: ``baseline``, ``rdma`` or ``rdma_nic``.
        scope: ``datacenter`` (inter-rack) or ``rack`` (intra-rack).
        rate_gbps: access link rate in Gbit/s.
        page_bytes: bytes transmitted (the page; the request is ignored, §3.3).
        components: Table 4's six rows, in its order.
    """

    scenario: Scenario
    scope: Scope
    rate_gbps: float
    page_bytes: int
    components: tuple[Component, ...]

    @property
    def total_us(self) -> float:
        """Sum of the components in µs (Table 4's "Total")."""
        return math.fsum(c.latency_us for c in self.components)


def transmission_us(page_bytes: int, rate_gbps: float) -> float:
    """Serialization of ``page_bytes`` at ``rate_gbps``: ``bytes * 8 / rate``, in µs.

    4096 B at 40 Gbps: 32768 bit / 40e9 bit/s = 0.8192 µs (Table 4 prints 0.82).

    Raises:
        ValueError: ``rate_gbps`` not positive and finite, or ``page_bytes`` negative.
    """
    if not (rate_gbps > 0 and math.isfinite(rate_gbps)):
        raise ValueError(f"latency_budget: rate_gbps must be positive and finite, got {rate_gbps}")
    if page_bytes < 0:
        raise ValueError(f"latency_budget: page_bytes must be >= 0, got {page_bytes}")
    return page_bytes * 8 / (rate_gbps * 1e3)  # bit / (Gbit/s) = ns; / 1e3 -> µs


def propagation_us(cable_m: float) -> float:
    """Propagation over ``cable_m`` metres at 5 ns/m (§3.3), in µs."""
    return cable_m * PROPAGATION_NS_PER_M / 1e3


def _check(scenario: str, scope: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(
            f"latency_budget: unknown scenario {scenario!r} (expected one of {list(SCENARIOS)})"
        )
    if scope not in SCOPES:
        raise ValueError(
            f"latency_budget: unknown scope {scope!r} (expected one of {list(SCOPES)})"
        )


def latency_budget(
    scenario: Scenario,
    scope: Scope,
    rate_gbps: float = TABLE4_RATE_GBPS,
    page_bytes: int = PAGE_BYTES,
) -> LatencyBudget:
    """Table 4's components for one scenario and scope at ``rate_gbps``.

    Args:
        scenario: ``baseline`` (kernel stack), ``rdma`` (no OS component) or ``rdma_nic``
            (RDMA and a NIC integrated near the CPU: 0.5 µs copies).
        scope: ``datacenter`` (across racks: 3 switches and 2 + 2 cables one way) or ``rack``
            (within a rack: 1 switch and 2 cables one way).
        rate_gbps: access link rate in Gbit/s (Table 4: 40).
        page_bytes: page size in bytes (Table 4: 4096).

    Returns:
        The six components, in Table 4's row order; ``total_us`` is their sum.

    Raises:
        ValueError: unknown scenario or scope, or a bad rate or size.
    """
    _check(scenario, scope)
    tx_us = transmission_us(page_bytes, rate_gbps)
    across = scope == "datacenter"
    copy_us = DATA_COPY_NIC_INTEGRATED_US if scenario == "rdma_nic" else DATA_COPY_US
    components = (
        Component(
            "OS",
            0 if scenario != "baseline" else ENDPOINTS,
            OS_US,
            "950 ns round-trip kernel processing per endpoint ([49], §3.3); "
            "RDMA bypasses it (§3.3 'Using RDMA')",
        ),
        Component(
            "Data copy",
            ENDPOINTS,
            copy_us,
            "~1 us memory<->NIC copy per endpoint ([46], §3.3); 0.5 us with NIC integration "
            "([50], §3.3 'Using NIC integration')",
        ),
        Component(
            "Switching",
            2 * SWITCHES_ONE_WAY[scope],
            SWITCH_US,
            "0.24 us per cut-through switch (Table 4); 3 switches one way across racks, 1 "
            "within (§3.3 assumption 1)",
        ),
        Component(
            "Propagation (inter-rack)",
            4 if across else 0,
            propagation_us(INTER_RACK_CABLE_M),
            "40 m x 5 ns/m; 2 inter-rack cables each way (§3.3 assumption 2)",
        ),
        Component(
            "Propagation (intra-rack)",
            4,
            propagation_us(INTRA_RACK_CABLE_M),
            "4 m x 5 ns/m; 2 intra-rack cables each way (§3.3 assumption 2)",
        ),
        Component(
            "Transmission",
            1,
            tx_us,
            f"{page_bytes} B x 8 / {rate_gbps:g} Gbps, once (cut-through; the request's "
            "transmission is ignored, §3.3)",
        ),
    )
    return LatencyBudget(scenario, scope, float(rate_gbps), page_bytes, components)


def table4(rate_gbps: float = TABLE4_RATE_GBPS, page_bytes: int = PAGE_BYTES) -> pd.DataFrame:
    """Table 4 at ``rate_gbps``: one row per component and scenario x scope.

    Returns:
        Long table with columns ``scenario, scope, component, traversals,
        per_traversal_us, latency_us, source``, plus one ``component == "Total"`` row per
        scenario x scope (``latency_us`` = the sum; ``traversals`` 0, ``per_traversal_us``
        NaN), in Table 4's column and row order.

    Raises:
        ValueError: a bad rate or size.
    """
    rows: list[dict[str, object]] = []
    for scenario in SCENARIOS:
        for scope in SCOPES:
            budget = latency_budget(scenario, scope, rate_gbps, page_bytes)
            for c in budget.components:
                rows.append(
                    {
                        "scenario": scenario,
                        "scope": scope,
                        "component": c.name,
                        "traversals": c.traversals,
                        "per_traversal_us": c.per_traversal_us,
                        "latency_us": c.latency_us,
                        "source": c.source,
                    }
                )
            rows.append(
                {
                    "scenario": scenario,
                    "scope": scope,
                    "component": "Total",
                    "traversals": 0,
                    "per_traversal_us": float("nan"),
                    "latency_us": budget.total_us,
                    "source": "sum of the components",
                }
            )
    return pd.DataFrame(rows)


def floor_us(scenario: Scenario, scope: Scope) -> float:
    """The total as the link rate grows without bound (transmission -> 0), in µs.

    ``rdma_nic``: datacenter 1.00 + 1.44 + 0.80 + 0.08 = 3.32 µs, rack 1.00 + 0.48 + 0.08 =
    1.56 µs.

    Raises:
        ValueError: unknown scenario or scope.
    """
    return latency_budget(scenario, scope, TABLE4_RATE_GBPS, page_bytes=0).total_us


def sweep(
    rates_gbps: Iterable[float] = DEFAULT_SWEEP_RATES_GBPS,
    scopes: Sequence[Scope] = SCOPES,
    page_bytes: int = PAGE_BYTES,
) -> pd.DataFrame:
    """The lowest latency reachable per scope and link rate, against the 3 and 5 µs targets.

    For each scope and rate, every scenario's total is computed and the lowest kept (with all
    of Table 4's technologies that is ``rdma_nic``).

    Returns:
        One row per scope x rate (scopes in the given order, rates ascending), columns
        ``scope, rate_gbps, baseline_us, rdma_us, rdma_nic_us, lowest_us,
        lowest_scenario, transmission_us, meets_shark_3us, meets_dolphin_5us``
        (``meets_*``: ``lowest_us <= target``).

    Raises:
        ValueError: no rates, a bad rate, or an unknown scope.
    """
    rates = sorted(float(r) for r in rates_gbps)
    if not rates:
        raise ValueError("latency_budget.sweep: no link rates given")
    rows: list[dict[str, object]] = []
    for scope in scopes:
        for rate in rates:
            totals = {s: latency_budget(s, scope, rate, page_bytes).total_us for s in SCENARIOS}
            best = min(SCENARIOS, key=lambda s: totals[s])
            lowest = totals[best]
            rows.append(
                {
                    "scope": scope,
                    "rate_gbps": rate,
                    **{f"{s}_us": totals[s] for s in SCENARIOS},
                    "lowest_us": lowest,
                    "lowest_scenario": best,
                    "transmission_us": transmission_us(page_bytes, rate),
                    "meets_shark_3us": bool(lowest <= SHARK_TARGET_US),
                    "meets_dolphin_5us": bool(lowest <= DOLPHIN_TARGET_US),
                }
            )
    return pd.DataFrame(rows)


def format_table4(rate_gbps: float = TABLE4_RATE_GBPS, page_bytes: int = PAGE_BYTES) -> str:
    """Table 4 as text, cells ``traversals x per_traversal_us`` as the paper prints them.

    Columns are scenario / scope (``dc`` = inter-rack, ``rack`` = intra-rack); totals show
    the paper's 0.01 µs precision and, in brackets, the unrounded sum.

    Raises:
        ValueError: a bad rate or size.
    """
    table = table4(rate_gbps, page_bytes)
    columns = [(s, c) for s in SCENARIOS for c in SCOPES]
    names = list(dict.fromkeys(table["component"]))
    short = {"datacenter": "dc", "rack": "rack"}
    header = ["component (us)"] + [f"{s}/{short[c]}" for s, c in columns]
    body: list[list[str]] = []
    for name in names:
        cells = [name]
        for s, c in columns:
            sel = table[(table.scenario == s) & (table.scope == c) & (table.component == name)]
            r = sel.iloc[0]
            if name == "Total":
                cells.append(f"{r.latency_us:.2f} ({r.latency_us:.4f})")
            elif r.traversals == 0:
                cells.append("0")
            else:
                v = float(r.per_traversal_us)
                cells.append(
                    f"{r.traversals}x{v:.2f}" if round(v, 2) == v else f"{r.traversals}x{v:.4f}"
                )
        body.append(cells)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [
        f"Round-trip latency budget of a {page_bytes} B page at {rate_gbps:g} Gbps "
        "(Gao et al. OSDI'16 Table 4; dc = inter-rack, rack = intra-rack)",
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
    ]
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in body
    ]
    return "\n".join(lines)


def format_sweep(table: pd.DataFrame) -> str:
    """:func:`sweep`'s table as text, with the floors of :func:`floor_us`."""
    lines = [
        f"Lowest round-trip latency of a page access vs the paper's targets "
        f"(shark {SHARK_TARGET_US:g} us, dolphin {DOLPHIN_TARGET_US:g} us; §3.3)",
        f"{'scope':<11}{'rate_gbps':>10}{'baseline_us':>13}{'rdma_us':>9}{'rdma_nic_us':>13}"
        f"{'lowest_us':>11}  {'<=3us':<6}{'<=5us':<6}",
    ]
    for r in table.itertuples(index=False):
        lines.append(
            f"{r.scope:<11}{r.rate_gbps:>10g}{r.baseline_us:>13.2f}{r.rdma_us:>9.2f}"
            f"{r.rdma_nic_us:>13.2f}{r.lowest_us:>11.2f}  "
            f"{'yes' if r.meets_shark_3us else 'no':<6}{'yes' if r.meets_dolphin_5us else 'no':<6}"
        )
    for scope in dict.fromkeys(table["scope"]):
        lines.append(
            f"floor ({scope}, rdma_nic, rate -> inf): {floor_us('rdma_nic', scope):.2f} us"
        )
    return "\n".join(lines)
