"""Markdown for bench/RESULTS.md's application-study sweeps, from their committed tables.

For each sweep directory named (``notebooks/data/app_study/<sweep>/``, written by
``disaggsim classify`` / ``emulate`` with a ``configs/app-study-*.toml``) it prints: the runs
(and how many not ``ok``), the 1-minute load average over the runs (min-max, median) and the
largest hypervisor steal share (``runs.csv``'s ``load_1m``, ``steal_fraction``); the
zero-delay reference's median JCT (min-max, CV = sample standard deviation / mean, runs);
the median swap bytes in and out per run (MB = 10^6 B) and the reference's swap bandwidth;
the Figure 2 grid (latency x bandwidth: degradation = relative JCT - 1 [95 % interval]
verdict at 5 %, rounds paired) or the single point of a classification sweep; the medians' order
(rising with latency at each bandwidth, falling with bandwidth at each latency) and the
least-squares slope over latency; the additive estimate of the degradation from the
device's own counts (reference's median swap-ins / 4 KiB x latency + (bytes in + out) x 8 /
bandwidth, over the reference's median JCT; swap-outs' latency not counted, so a lower
bound for a job whose every swap-in is on its critical path); and ``classification.csv``.
A Figure 5 sweep (several local fractions, ``configs/app-study-*-fig5.toml``) is printed as
its local-memory table instead: one row per delay point (degradation [95 % interval]
verdict, rounds paired) and one of the zero-delay reference per fraction (median JCT, CV, runs; swap
in + out per run and its bandwidth), the additive estimate per fraction, and ``table3.csv``
(Table 3: the smallest local fraction from which every larger one passes).
No root, no device: seconds.

    .venv/bin/python bench/app_study_tables.py postgres-pgbench-fig2-iso spark-pagerank-classify-iso
    .venv/bin/python bench/app_study_tables.py hadoop-wordcount-fig5-iso

Raises FileNotFoundError (one line, the path) for a sweep without ``runs.csv`` or
``summary.csv``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "app_study"
PAGE_BYTES = 4096
THRESHOLD = 1.05


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}"


def cell(row: pd.Series) -> str:
    """One point: ``+x.x % [+lo, +hi] **verdict**, pairs``: the median over the rounds of the
    point's JCT / its round's zero-delay JCT, its interval over those rounds
    (``jct_stats.paired_ratio_ci``), and the rounds paired (``undecided`` below
    emulate.MIN_RUNS of them)."""
    verdict = row["verdict"] if isinstance(row["verdict"], str) else "undecided"
    shown = verdict if verdict == "undecided" else f"**{verdict}**"
    return (
        f"{_pct(row['relative_jct'])} % [{_pct(row['ci_low'])}, {_pct(row['ci_high'])}] "
        f"{shown}, {int(row['pairs'])}"
    )


def _runs_load(sweep: str, runs: pd.DataFrame) -> str:
    """``sweep/: N runs (k not ok), load average lo-hi (median m), steal <= s %``."""
    load = runs["load_1m"]
    not_ok = int((runs["status"] != "ok").sum())
    return (
        f"`{sweep}/`: {len(runs)} runs ({not_ok} not ok), load average "
        f"{load.min():.1f}-{load.max():.1f} (median {load.median():.1f}), steal <= "
        f"{100 * runs['steal_fraction'].max():.1f} %"
    )


def _cv_pct(jcts: pd.Series) -> float:
    """Coefficient of variation (sample standard deviation / mean) in percent; NaN below
    two runs."""
    return 100 * jcts.std(ddof=1) / jcts.mean() if len(jcts) > 1 else float("nan")


def header(sweep: str, runs: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The sweep's one-paragraph facts: runs, load, steal, reference JCT, swap per run."""
    ok = runs[runs["status"] == "ok"]
    ref = ok[ok["model"] == "none"]["jct_s"]
    ref_row = summary[summary["model"] == "none"].iloc[0]
    cv = _cv_pct(ref)
    return (
        f"{_runs_load(sweep, runs)}; zero-delay JCT median "
        f"{ref.median():.3f} s ({ref.min():.3f}-{ref.max():.3f}, CV {cv:.1f} %, "
        f"{len(ref)} runs); swap {ok['swap_in_bytes'].median() / 1e6:.0f} MB in + "
        f"{ok['swap_out_bytes'].median() / 1e6:.0f} MB out per run (median; range in "
        f"{ok['swap_in_bytes'].min() / 1e6:.0f}-{ok['swap_in_bytes'].max() / 1e6:.0f} MB), "
        f"{ref_row['swap_bandwidth_bytes_per_s'] / 1e6:.0f} MB/s at zero delay"
    )


def estimate(runs: pd.DataFrame, latency_ns: float, bandwidth_bps: float) -> float:
    """The additive estimate of the degradation (a fraction) at one point, from the
    reference runs' median counts (module docstring)."""
    ref = runs[(runs["status"] == "ok") & (runs["model"] == "none")]
    wait_s = (
        ref["swap_in_bytes"].median() / PAGE_BYTES * latency_ns * 1e-9
        + (ref["swap_in_bytes"].median() + ref["swap_out_bytes"].median()) * 8 / bandwidth_bps
    )
    return float(wait_s / ref["jct_s"].median())


def grid(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """The latency x bandwidth table (or the one point), the medians' order, the slope over
    latency and the additive estimate, as Markdown lines."""
    fixed = summary[summary["kind"] == "fixed"]
    lats = sorted(fixed["latency_ns"].unique())
    bws = sorted(fixed["bandwidth_bps"].unique())
    by = {(r["latency_ns"], r["bandwidth_bps"]): r for _, r in fixed.iterrows()}
    out = [
        "| latency \\ bandwidth | " + " | ".join(f"{b / 1e9:g} Gb/s" for b in bws) + " |",
        "| --- |" + " --- |" * len(bws),
    ]
    for lat in lats:
        out.append(
            f"| {lat / 1000:g} µs | "
            + " | ".join(cell(by[lat, b]) if (lat, b) in by else "" for b in bws)
            + " |"
        )
    out.append("")
    if len(lats) > 1:
        for b in bws:
            med = [100 * (by[lat, b]["relative_jct"] - 1) for lat in lats]
            slope = np.polyfit(np.array(lats) / 1000, med, 1)[0]
            rising = all(x < y for x, y in zip(med[:-1], med[1:], strict=True))
            out.append(
                f"- {b / 1e9:g} Gb/s: medians over latency "
                f"{', '.join(f'{m:+.1f}' for m in med)} % "
                f"({'rising' if rising else 'not monotone'}), least-squares slope "
                f"{slope:+.2f} points per µs"
            )
    if len(bws) > 1:
        for lat in lats:
            med = [100 * (by[lat, b]["relative_jct"] - 1) for b in bws]
            falling = all(x > y for x, y in zip(med[:-1], med[1:], strict=True))
            out.append(
                f"- {lat / 1000:g} µs: medians over bandwidth "
                f"{', '.join(f'{m:+.1f}' for m in med)} % "
                f"({'falling' if falling else 'not monotone'})"
            )
    est = ", ".join(
        f"{lat / 1000:g} µs / {b / 1e9:g} Gb/s {100 * estimate(runs, lat, b):+.1f} %"
        for lat in lats
        for b in bws
        if (lat, b) in ((5000, 40e9), (1000, 100e9), (10000, 10e9))
    )
    out.append(f"- additive estimate from the reference's counts: {est}")
    return out


def classification(sweep_dir: Path) -> str:
    """``classification.csv``'s row(s) as one line per local fraction."""
    path = sweep_dir / "classification.csv"
    if not path.exists():
        return "classification.csv: not written (sweep cut)"
    rows = pd.read_csv(path)
    return "; ".join(
        f"class **{r['class']}** at {100 * r['local_fraction']:g} % local: "
        f"{r['relative_jct']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}], "
        f"{int(r['pairs'])} rounds paired"
        for _, r in rows.iterrows()
    )


def local_memory(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """A Figure 5 sweep's table as Markdown lines: local fraction (% of the working set)
    across; one row per delay point (``cell``), then the zero-delay reference's median JCT
    (CV, runs) and its swap in + out per run (MB, median) with its bandwidth (MB/s); then
    the additive estimate at each delay point and fraction (``estimate``)."""
    fractions = sorted(summary["local_fraction"].unique())
    fixed = summary[summary["kind"] == "fixed"]
    points = fixed[["latency_ns", "bandwidth_bps"]].drop_duplicates().itertuples(index=False)
    points = sorted(points, key=lambda p: (-p.latency_ns, p.bandwidth_bps))  # Fig. 5's first
    ok = runs[runs["status"] == "ok"]
    out = [
        "| local memory | " + " | ".join(f"{100 * f:g} %" for f in fractions) + " |",
        "| --- |" + " --- |" * len(fractions),
    ]
    by = {
        (r["local_fraction"], r["latency_ns"], r["bandwidth_bps"]): r for _, r in fixed.iterrows()
    }
    for p in points:
        out.append(
            f"| {p.latency_ns / 1000:g} µs, {p.bandwidth_bps / 1e9:g} Gb/s | "
            + " | ".join(
                cell(by[f, p.latency_ns, p.bandwidth_bps])
                if (f, p.latency_ns, p.bandwidth_bps) in by
                else ""
                for f in fractions
            )
            + " |"
        )
    ref_cells, swap_cells = [], []
    for f in fractions:
        ref_runs = ok[(ok["model"] == "none") & (ok["local_fraction"] == f)]
        ref_row = summary[(summary["model"] == "none") & (summary["local_fraction"] == f)]
        jct = ref_runs["jct_s"]
        ref_cells.append(f"{jct.median():.3f} s (CV {_cv_pct(jct):.1f} %, {len(jct)})")
        swap_cells.append(
            f"{ref_runs['swap_in_bytes'].median() / 1e6:.0f} + "
            f"{ref_runs['swap_out_bytes'].median() / 1e6:.0f} MB, "
            f"{ref_row['swap_bandwidth_bytes_per_s'].iloc[0] / 1e6:.0f} MB/s"
        )
    out.append("| zero-delay JCT (CV, runs) | " + " | ".join(ref_cells) + " |")
    out.append("| zero-delay swap in + out per run, rate | " + " | ".join(swap_cells) + " |")
    out.append("")
    for p in points:
        at = [
            estimate(runs[runs["local_fraction"] == f], p.latency_ns, p.bandwidth_bps)
            for f in fractions
        ]
        est = ", ".join(
            f"{100 * f:g} % {100 * e:+.1f} %" for f, e in zip(fractions, at, strict=True)
        )
        out.append(
            f"- additive estimate at {p.latency_ns / 1000:g} µs / "
            f"{p.bandwidth_bps / 1e9:g} Gb/s from each fraction's reference: {est}"
        )
    return out


def table3(sweep_dir: Path) -> str:
    """``table3.csv``'s rows as one line: per delay point, the smallest local fraction from
    which every larger one passes (``emulate.table3``) and its status."""
    path = sweep_dir / "table3.csv"
    if not path.exists():
        return "table3.csv: not written (sweep cut)"
    rows = pd.read_csv(path)

    def needs(r: pd.Series) -> str:
        return (
            "no fraction up to 100 % passes"
            if pd.isna(r["min_local_fraction"])
            else f"needs {100 * r['min_local_fraction']:g} % local"
        )

    return "; ".join(
        f"Table 3 at {r['latency_ns'] / 1000:g} µs / {r['bandwidth_bps'] / 1e9:g} "
        f"Gb/s: **{needs(r)}** ({r['status']})"
        for _, r in rows.iterrows()
    )


def main(argv: list[str] | None = None) -> int:
    """Print each named sweep's Markdown (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", help="directory names under " + str(DATA))
    args = parser.parse_args(argv)
    for sweep in args.sweeps:
        sweep_dir = DATA / sweep
        for name in ("runs.csv", "summary.csv"):
            if not (sweep_dir / name).is_file():
                raise FileNotFoundError(
                    f"{sweep_dir / name}: no such file (sweep not run "
                    "or cut before its summary was written)"
                )
        runs = pd.read_csv(sweep_dir / "runs.csv")
        summary = pd.read_csv(sweep_dir / "summary.csv")
        if summary["local_fraction"].nunique() > 1:
            print(_runs_load(sweep, runs) + ":\n")
            print("\n".join(local_memory(summary, runs)))
            print(f"- {table3(sweep_dir)}")
            print(f"- {classification(sweep_dir)}\n")
            continue
        print(header(sweep, runs, summary) + ":\n")
        print("\n".join(grid(summary, runs)))
        print(f"- {classification(sweep_dir)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
