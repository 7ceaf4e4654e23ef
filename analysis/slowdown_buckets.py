"""FCT slowdown by flow-size percentile, computed as HPCC's paper computes it (Fig. 11).

HPCC (Li et al., SIGCOMM'19 §5.2, Fig. 11) plots the median, 95th and 99th percentile FCT
slowdown against flow size, with flows grouped by *count*: sorted by size, cut into groups of
``step_percent`` % of the flows each, every group drawn at its largest size. Its repository
computes exactly that (alibaba-edu/High-Precision-Congestion-Control,
``analysis/fct_analysis.py``, "prints data that can produce figures like Figure 11 (a) and
(c)"); this module follows it rule for rule, so a table from our FCT records and one from
HPCC's simulator's ``fct.txt`` are computed alike:

- slowdown = FCT / the flow's FCT alone, floored at 1 (``slow<1?1:slow``);
- flows sorted by size (``sort -n -k 2``; ties here by slowdown, a total order);
- group k holds sorted flows ``[k*step*n//100, (k+1)*step*n//100)`` (Python 2 integer
  division, as the script runs);
- its size is the largest in the group (``d[-1][1]``), its percentile p the element at index
  ``int(len * p)`` of its sorted slowdowns (``get_pctl``), with no interpolation.

Unfinished flows have no FCT and are left out; the caller counts them.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

#: Percentiles reported per group, as HPCC's ``fct_analysis.py`` (mid, 95-pct, 99-pct).
PERCENTILES: Final = (0.5, 0.95, 0.99)
#: Columns of :func:`slowdown_by_size_percentile`'s result.
COLUMNS: Final = (
    "size_pct",
    "size_max_bytes",
    "flows",
    "slowdown_p50",
    "slowdown_p95",
    "slowdown_p99",
)


def hpcc_percentile(sorted_values: np.ndarray, p: float) -> float:
    """``sorted_values[int(len * p)]``: HPCC's ``get_pctl`` (no interpolation).

    Args:
        sorted_values: float array, shape (n,), n >= 1, ascending.
        p: fraction in [0, 1).

    Raises:
        ValueError: empty input or p outside [0, 1).
    """
    if len(sorted_values) == 0:
        raise ValueError("hpcc_percentile of no values")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"percentile fraction must be in [0, 1), got {p!r}")
    return float(sorted_values[int(len(sorted_values) * p)])


def slowdown_by_size_percentile(
    size_bytes: np.ndarray, slowdown: np.ndarray, step_percent: int = 5
) -> pd.DataFrame:
    """Median/95th/99th percentile slowdown per flow-size group (module docstring).

    Args:
        size_bytes: int array, shape (n,): each finished flow's size.
        slowdown: float array, shape (n,): each flow's FCT over its FCT alone (floored at 1
            here, as HPCC does).
        step_percent: share of the flows in each group, in percent; divides 100 (HPCC's
            ``-s``, default 5: 20 groups).

    Returns:
        One row per group in size order, columns :data:`COLUMNS`: ``size_pct`` the group's
        first flow's position in percent of the flows (0, 5, ...), ``size_max_bytes`` its
        largest size, ``flows`` its flow count, ``slowdown_p50/p95/p99``. Groups left empty
        by too few flows are left out.

    Raises:
        ValueError: shapes differ, no flows, a non-finite slowdown, or a step that does not
            divide 100.
    """
    size = np.asarray(size_bytes, dtype=np.int64)
    slow = np.asarray(slowdown, dtype=np.float64)
    if size.shape != slow.shape or size.ndim != 1:
        raise ValueError(
            f"size_bytes and slowdown must be 1-D of one length, got {size.shape} and {slow.shape}"
        )
    if len(size) == 0:
        raise ValueError("no finished flows to group by size")
    if not np.all(np.isfinite(slow)):
        raise ValueError("slowdown holds a non-finite value (an unfinished flow?)")
    if not (0 < step_percent <= 100 and 100 % step_percent == 0):
        raise ValueError(f"step_percent must divide 100, got {step_percent!r}")
    slow = np.maximum(slow, 1.0)
    order = np.lexsort((slow, size))
    size, slow = size[order], slow[order]
    n = len(size)
    rows = []
    for lo_pct in range(0, 100, step_percent):
        lo, hi = lo_pct * n // 100, (lo_pct + step_percent) * n // 100
        if hi <= lo:
            continue
        group = np.sort(slow[lo:hi])
        rows.append(
            {
                "size_pct": lo_pct,
                "size_max_bytes": int(size[hi - 1]),
                "flows": hi - lo,
                **{f"slowdown_p{round(p * 100)}": hpcc_percentile(group, p) for p in PERCENTILES},
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def tail_ratio(
    baseline: pd.DataFrame, other: pd.DataFrame, column: str, max_size_bytes: float
) -> float:
    """Largest ratio ``baseline[column] / other[column]`` over the groups whose largest size
    is at most ``max_size_bytes``: "X is up to N times better than the baseline on short
    flows" (HPCC's abstract: "shortens flow completion times by up to 95 %" = a ratio of 20).

    Both tables come from :func:`slowdown_by_size_percentile` on the same flows with the same
    step, so their groups align row for row.

    Raises:
        ValueError: the groups do not align, or none is that small.
    """
    if list(baseline["size_pct"]) != list(other["size_pct"]):
        raise ValueError("tables group different flows (size_pct differs)")
    small = baseline["size_max_bytes"].to_numpy() <= max_size_bytes
    if not small.any():
        raise ValueError(f"no group of flows at most {max_size_bytes:g} B")
    ratio = baseline[column].to_numpy()[small] / other[column].to_numpy()[small]
    return float(ratio.max())
