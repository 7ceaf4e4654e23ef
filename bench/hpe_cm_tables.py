"""The HPE composable memory tables of bench/RESULTS.md from the committed results.

Reads ``bench/figures/hpe-cm/{pagefault,overcommit,pgbench}/summary.csv`` (written by
``disaggsim emulate configs/emulate-hpe-cm-*.toml``) and prints, as Markdown: D per device
beside the paper's Table 2; the over-commit ratios beside Eq. (1) with the measured D
(:func:`disaggsim.analysis.hpe_cm.overcommit_comparison`), Fig. 4's quoted points and
Table 3; the pgbench TPS beside Table 4. No root, no device: seconds.

    .venv/bin/python bench/hpe_cm_tables.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from disaggsim.analysis import hpe_cm

RESULTS = Path(__file__).resolve().parent / "figures" / "hpe-cm"


def _fmt(x: object, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def pagefault_table(summary: pd.DataFrame) -> str:
    """Markdown: per device the median fault latency (range over runs), D, the added delay."""
    out = [
        "| device | p50 fault (µs), median of runs [min–max] | mean (µs) | D = p50 / local "
        "p50 | p50 − local (µs) |",
        "|---|---|---|---|---|",
    ]
    for r in summary.itertuples():
        out.append(
            f"| {r.device} | {r.p50_ns / 1e3:.2f} [{r.p50_min_ns / 1e3:.2f}–"
            f"{r.p50_max_ns / 1e3:.2f}] | {r.mean_ns / 1e3:.2f} | {_fmt(r.d_paging)} | "
            f"{r.delta_p50_ns / 1e3:.2f} |"
        )
    return "\n".join(out)


def overcommit_tables(summary: pd.DataFrame, d_by_device: dict[str, float]) -> str:
    """Markdown: measured ratio vs Eq. (1) per device and over-commit, and the fits."""
    points, fits = hpe_cm.overcommit_comparison(summary, d_by_device)
    out = [
        "| over-commit | device | measured ratio [min–max] | D | Eq. (1), ΣC = 0 | error | "
        "implied ΣC | Eq. (1) with fitted D | error | paper |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in points.sort_values(["over_commit", "device"]).itertuples():
        paper = ""
        n = float(r.over_commit)
        if n in hpe_cm.FIG4_QUOTED:
            roce, hdd = hpe_cm.FIG4_QUOTED[n]
            paper = f"Fig. 4: RoCE {roce}, HDD {hdd}"
        if n in hpe_cm.TABLE3:
            t = hpe_cm.TABLE3[int(n)]
            paper += ("; " if paper else "") + (
                f"Table 3: theory {t[0]}, 128 GB {_fmt(t[1])}, 64 GB {t[2]}"
            )
        out.append(
            f"| {n:g} | {r.device} | {r.ratio:.3f} [{r.ratio_min:.3f}–"
            f"{r.ratio_max:.3f}] | {r.d_paging:.2f} | {r.model:.3f} | "
            f"{r.error * 100:+.0f} % | {r.sum_c:.2f} | {r.model_d_fit:.3f} | "
            f"{r.error_d_fit * 100:+.0f} % | {paper} |"
        )
    out += [
        "",
        "| device | D (lat_pagefault) | fitted C per section (ΣC = n·C, before "
        "thrashing) | thrashing from multiple (error < −10 % from there on) | max abs "
        "error up to 8 | D fitted to the sweep | max abs error with it |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in fits.itertuples():
        out.append(
            f"| {f.device} | {f.d_paging:.2f} | {_fmt(f.c_per_section)} | "
            f"{_fmt(f.thrashing_multiple)} | {f.max_abs_error_to_8 * 100:.0f} % | "
            f"{f.d_fit:.2f} | {f.max_abs_error_d_fit * 100:.0f} % |"
        )
    return "\n".join(out)


def pgbench_table(summary: pd.DataFrame, local_bytes: int) -> str:
    """Markdown: TPS per database size and device, and the performance diff to memory."""
    devices = list(dict.fromkeys(summary["device"]))
    head = "| database (MiB) | × memory limit | " + " | ".join(f"{d} TPS" for d in devices)
    head += " | " + " | ".join(f"{d} diff" for d in devices if d != "memory") + " |"
    out = [head, "|" + "---|" * (2 + 2 * len(devices) - 1)]
    for _scale, grp in summary.groupby("scale", sort=True):
        by = grp.set_index("device")
        db = float(grp["db_bytes"].iloc[0])
        cells = [f"{by.loc[d, 'tps']:.0f}" if d in by.index else "–" for d in devices]
        diffs = [
            f"{by.loc[d, 'performance_diff'] * 100:.1f} %" if d in by.index else "–"
            for d in devices
            if d != "memory"
        ]
        out.append(
            f"| {db / 2**20:.0f} | {db / local_bytes:.2f} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(diffs)
            + " |"
        )
    return "\n".join(out)


def main() -> None:
    pf = pd.read_csv(RESULTS / "pagefault" / "summary.csv")
    print("### D\n")
    print(pagefault_table(pf))
    d = {str(r.device): float(r.d_paging) for r in pf.itertuples() if r.device != "memory"}
    oc_path = RESULTS / "overcommit" / "summary.csv"
    if oc_path.exists():
        print("\n### Over-commit\n")
        print(overcommit_tables(pd.read_csv(oc_path), d))
    pg_path = RESULTS / "pgbench" / "summary.csv"
    if pg_path.exists():
        runs = pd.read_csv(RESULTS / "pgbench" / "runs.csv")
        local = int(runs["local_bytes"].dropna().iloc[0])
        print("\n### pgbench\n")
        print(pgbench_table(pd.read_csv(pg_path), local))


if __name__ == "__main__":
    main()
