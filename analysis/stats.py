"""FCT statistics of a campaign: slowdown and FCT by protocol, scope, rate and size bucket.

The paper's metric is the mean slowdown, "the flow completion time achieved in simulation
divided by the time that the flow would take to complete if it were alone in the network,
averaged over all flows" (Gao et al., OSDI'16 §4.3, after pFabric [27]); the median and
99th percentile and the FCT itself are reported beside it. Size buckets follow the usual
small/medium/large split of datacenter transport studies (pFabric §5: (0, 100 KB] ...) moved
to DDC sizes: one 4 KiB page, up to 64 KiB, up to 1 MiB, above.

Unfinished flows (``finished == 0``) have no FCT: they are counted in ``unfinished`` and
excluded from the mean and percentiles, never dropped silently (``flows`` counts them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd

#: (label, largest size in bytes); the last bucket has no upper bound.
SIZE_BUCKETS: Final[tuple[tuple[str, float], ...]] = (
    ("<=4KiB", 4 * 1024),
    ("<=64KiB", 64 * 1024),
    ("<=1MiB", 1024 * 1024),
    (">1MiB", math.inf),
)
#: Label of the row over all sizes.
ALL_SIZES: Final = "all"
#: Row keys in output order (those present in the input are used): the run keys
#: (``disaggsim.schemas.CAMPAIGN_KEYS``) but the seed, which is pooled, in the order the
#: summary table has always shown them (tests/test_schema_headers.py checks the set).
GROUP_KEYS: Final = ("workload", "protocol", "scope", "rate_gbps")
#: Statistic columns of :func:`summarize`.
STAT_COLUMNS: Final = (
    "flows",
    "unfinished",
    "slowdown_mean",
    "slowdown_p50",
    "slowdown_p99",
    "fct_us_mean",
    "fct_us_p50",
    "fct_us_p99",
)


def size_bucket(size_bytes: pd.Series) -> pd.Series:
    """Bucket label of each size (see :data:`SIZE_BUCKETS`); ordered categorical."""
    edges = [0.0] + [upper for _, upper in SIZE_BUCKETS]
    labels = [label for label, _ in SIZE_BUCKETS]
    return pd.cut(size_bytes.astype(float), bins=edges, labels=labels, right=True)


def summarize(fct_df: pd.DataFrame, by_workload: bool = True) -> pd.DataFrame:
    """Per workload x protocol x scope x rate_gbps, overall and per size bucket: flow count,
    unfinished count, mean/p50/p99 slowdown and FCT (µs).

    Args:
        fct_df: CAMPAIGN_FCT rows (``disaggsim.schemas``) or bare FCT_RECORDS; the
            grouping keys present among GROUP_KEYS are used. Seeds are pooled.
        by_workload: False pools all workloads.

    Returns:
        Long table: the group keys, ``bucket`` ("all", then the SIZE_BUCKETS with flows),
        then STAT_COLUMNS. Percentiles interpolate linearly between order statistics
        (Hyndman & Fan type 7, numpy's default): p = x[k] + (h - k)(x[k+1] - x[k]) with
        h = (n - 1) q, k = floor(h). Statistics are NaN when every flow is unfinished.

    Raises:
        ValueError: a required column (size_bytes, fct_ns, slowdown, finished) is missing.
    """
    required = ("size_bytes", "fct_ns", "slowdown", "finished")
    missing = [c for c in required if c not in fct_df.columns]
    if missing:
        raise ValueError(f"summarize: FCT table lacks columns {missing}")
    keys = [k for k in GROUP_KEYS if k in fct_df.columns and (by_workload or k != "workload")]
    frame = fct_df.assign(bucket=size_bucket(fct_df["size_bytes"]))
    rows = []
    groups = frame.groupby(keys, sort=True, observed=True) if keys else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        base = dict(zip(keys, key, strict=True))
        rows.append({**base, "bucket": ALL_SIZES, **_stats(group)})
        for label, _ in SIZE_BUCKETS:
            part = group[group["bucket"] == label]
            if len(part):
                rows.append({**base, "bucket": label, **_stats(part)})
    out = pd.DataFrame(rows, columns=[*keys, "bucket", *STAT_COLUMNS])
    return out.astype({"flows": "int64", "unfinished": "int64"})


def combine_summaries(parts: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Join :func:`summarize` outputs of disjoint groups into one summary.

    Args:
        parts: summaries of parts of one FCT table, each part holding *every* row of the
            groups it touches (e.g. the runs of one workload x protocol x scope x
            rate_gbps, which differ only in their seed), in any order.

    Returns:
        The rows of all parts, stably sorted by the group keys (the order of
        :func:`summarize`, whose groupby sorts them): equal to ``summarize`` of the whole
        table, the same rows, order, dtypes and values bit for bit, when each part kept
        its rows in the table's order.

    Raises:
        ValueError: no part at all.
    """
    given = list(parts)
    if not given:
        raise ValueError("combine_summaries: no summary given")
    filled = [p for p in given if len(p)]
    if not filled:
        return given[0]
    out = pd.concat(filled, ignore_index=True)
    keys = [k for k in GROUP_KEYS if k in out.columns]
    return out.sort_values(keys, kind="stable", ignore_index=True) if keys else out


def summarize_groups(groups: Iterable[pd.DataFrame], by_workload: bool = True) -> pd.DataFrame:
    """:func:`summarize` of a table given in parts, one part in memory at a time.

    Args:
        groups: disjoint parts of one FCT table, each holding every row of the summary
            groups it touches (see :func:`combine_summaries`).
        by_workload: as in :func:`summarize`.

    Returns:
        Equal to ``summarize(pd.concat(groups), by_workload)``.

    Raises:
        ValueError: a required column is missing (as :func:`summarize`); no part at all.
    """
    return combine_summaries(summarize(g, by_workload=by_workload) for g in groups)


#: Columns :func:`summarize` reads besides the group keys.
SUMMARY_INPUTS: Final = ("size_bytes", "fct_ns", "slowdown", "finished")


def summarize_file(path: str | Path, by_workload: bool = True) -> pd.DataFrame:
    """:func:`summarize` of a collected ``fct.parquet``, one summary group at a time.

    Reads the groups (workload x protocol x scope x rate_gbps, those of GROUP_KEYS in the
    file) one by one with :class:`disaggsim.analysis.fct_file.FctFile`, only the columns
    the statistics need: peak memory is one group's flows, not the file's.

    Returns:
        Exactly ``summarize(pd.read_parquet(path), by_workload)``.

    Raises:
        FileNotFoundError: no file. ValueError: a required column is missing.
    """
    from disaggsim.analysis.fct_file import FctFile

    table = FctFile(path)
    missing = [c for c in SUMMARY_INPUTS if c not in table.columns]
    if missing:
        raise ValueError(f"summarize: FCT table {table.path} lacks columns {missing}")
    keys = [k for k in GROUP_KEYS if k in table.columns and (by_workload or k != "workload")]
    if not keys or table.num_rows == 0:
        return summarize(table.read_group([], (), [*keys, *SUMMARY_INPUTS]), by_workload)
    groups = (rows for _, rows in table.iter_groups(keys, SUMMARY_INPUTS))
    return summarize_groups(groups, by_workload)


def _stats(group: pd.DataFrame) -> dict[str, float]:
    done = group["finished"].to_numpy() != 0
    slowdown = group["slowdown"].to_numpy(dtype=float)[done]
    fct_us = group["fct_ns"].to_numpy(dtype=float)[done] / 1000.0
    stats: dict[str, float] = {"flows": len(group), "unfinished": int((~done).sum())}
    for name, values in (("slowdown", slowdown), ("fct_us", fct_us)):
        if len(values):
            p50, p99 = np.quantile(values, [0.5, 0.99], method="linear")
            stats.update(
                {
                    f"{name}_mean": float(values.mean()),
                    f"{name}_p50": float(p50),
                    f"{name}_p99": float(p99),
                }
            )
        else:
            stats.update(
                {f"{name}_mean": math.nan, f"{name}_p50": math.nan, f"{name}_p99": math.nan}
            )
    return stats


def format_summary(df: pd.DataFrame) -> str:
    """A fixed-width text table of :func:`summarize`'s output for the terminal.

    Slowdowns get 2 decimals, FCTs 1 decimal µs, rates ``:g`` Gb/s; NaN prints as ``-``.
    """
    if df.empty:
        return "(no flows)"
    shown = df.copy()
    if "rate_gbps" in shown:
        shown["rate_gbps"] = shown["rate_gbps"].map(lambda r: f"{r:g}")
    for column in shown.columns:
        if column.startswith("slowdown_"):
            shown[column] = shown[column].map(lambda v: "-" if pd.isna(v) else f"{v:.2f}")
        elif column.startswith("fct_us_"):
            shown[column] = shown[column].map(lambda v: "-" if pd.isna(v) else f"{v:.1f}")
    header = {
        "rate_gbps": "Gbps",
        "unfinished": "unfin",
        "slowdown_mean": "sd_mean",
        "slowdown_p50": "sd_p50",
        "slowdown_p99": "sd_p99",
        "fct_us_mean": "fct_us_mean",
        "fct_us_p50": "fct_us_p50",
        "fct_us_p99": "fct_us_p99",
    }
    shown = shown.rename(columns=header).astype(str)
    widths = {c: max(len(c), *(len(v) for v in shown[c])) for c in shown.columns}
    numeric = set(header.values()) | {"flows", "seed"}

    def cell(column: str, value: str) -> str:
        return value.rjust(widths[column]) if column in numeric else value.ljust(widths[column])

    lines = ["  ".join(cell(c, c) for c in shown.columns).rstrip()]
    lines.append("  ".join("-" * widths[c] for c in shown.columns))
    previous: tuple[str, ...] | None = None
    keys = [c for c in shown.columns if c not in numeric and c != "bucket"]
    for _, row in shown.iterrows():
        group = tuple(row[k] for k in keys)
        if previous is not None and group != previous:
            lines.append("")
        previous = group
        lines.append("  ".join(cell(c, row[c]) for c in shown.columns).rstrip())
    return "\n".join(lines)
