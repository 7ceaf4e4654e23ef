# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   execution:
#     timeout: 120
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # HPE composable memory on this machine (Ruan et al., papers/004)
#
# Ruan et al. swap to a remote RAM disk exported over iSER/RoCE and model the slowdown of a
# job whose working set is n times the local memory with Eq. (1):
# ratio = n / (1 + (n − 1)·D + ΣC) (`disaggsim.analysis.hpe_cm`). This notebook puts the
# **committed** results of `disaggsim emulate configs/emulate-hpe-cm-*.toml` (swap backend;
# commands, repeats and machine load in bench/RESULTS.md, "HPE composable memory") beside
# the model and the paper's Table 2, Table 3, Fig. 4 and Table 4:
#
# - `bench/figures/hpe-cm/pagefault/summary.csv`: lat_pagefault per device, D;
# - `bench/figures/hpe-cm/overcommit/summary.csv`: paging_w's performance ratio per
#   over-commit and device;
# - `bench/figures/hpe-cm/pgbench/summary.csv` (when present): PostgreSQL + pgbench TPS per
#   database size and device.
#
# It reads only CSV files (seconds, no root, no device).

# %%
import io
import os

import numpy as np
import pandas as pd
from IPython.display import Image, display
from matplotlib.figure import Figure

from disaggsim.analysis import hpe_cm
from disaggsim.sim.runner import repo_root

REPO = repo_root()
RESULTS = REPO / "bench" / "figures" / "hpe-cm"


def show(fig: Figure, name: str) -> None:
    """Display a Figure as PNG; with DISAGGSIM_SAVE_FIGURES=1 also write it next to the CSVs."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    display(Image(data=buffer.getvalue()))
    if os.environ.get("DISAGGSIM_SAVE_FIGURES") == "1":
        (RESULTS / name).write_bytes(buffer.getvalue())


# %% [markdown]
# ## D: page-fault latency per device (Table 2)
#
# The paper: 0.94 µs on a local RAM disk, 3.8 µs over RoCE, 20 µs on an HDD: D = 4. Here
# the "local" device is the swap backend's RAM-backed FUSE device with no delay, "remote"
# the same plus the paper's RDMA − RAM-disk difference (2.86 µs) at 25 Gb/s.

# %%
pf = pd.read_csv(RESULTS / "pagefault" / "summary.csv")
display(
    pf[
        [
            "device",
            "repeats_ok",
            "p50_ns",
            "p50_min_ns",
            "p50_max_ns",
            "mean_ns",
            "d_paging",
            "delta_p50_ns",
        ]
    ]
)
d_by_device = {r.device: r.d_paging for r in pf.itertuples() if r.device != "memory"}

# %% [markdown]
# ## Over-commit: measured ratio beside Eq. (1) (Fig. 4, Fig. 5, Table 3)
#
# Lines: Eq. (1) with ΣC = 0 at each device's lat_pagefault D (dashed), at the D fitted to
# the sweep itself (dotted, `fit_d_paging`) and at the paper's D = 4 (grey); markers:
# paging_w's measured ratio (median, min–max bars); crosses: the paper's
# Table 3 (64 GB) and Fig. 4's quoted points.

# %%
oc = pd.read_csv(RESULTS / "overcommit" / "summary.csv")
points, fits = hpe_cm.overcommit_comparison(oc, d_by_device)
display(fits)

fig = Figure(figsize=(6.5, 4.2))
ax = fig.subplots()
grid = np.linspace(1, 16, 200)
ax.plot(
    grid,
    hpe_cm.performance_ratio(grid, hpe_cm.PAPER_D),
    color="grey",
    label="Eq. (1), D = 4 (paper)",
)
for i, (name, grp) in enumerate(points.groupby("device", sort=False)):
    color = f"C{i}"
    d = float(grp["d_paging"].iloc[0])
    ax.plot(grid, hpe_cm.performance_ratio(grid, d), ls="--", color=color, lw=1)
    d_fit = float(fits.set_index("device").loc[name, "d_fit"])
    ax.plot(grid, hpe_cm.performance_ratio(grid, d_fit), ls=":", color=color, lw=1)
    ax.errorbar(
        grp["over_commit"],
        grp["ratio"],
        yerr=[grp["ratio"] - grp["ratio_min"], grp["ratio_max"] - grp["ratio"]],
        marker="o",
        ls="-",
        color=color,
        capsize=3,
        label=f"{name} (D = {d:.2f})",
    )
ax.scatter(
    list(hpe_cm.TABLE3),
    [r[2] for r in hpe_cm.TABLE3.values()],
    marker="x",
    color="k",
    label="paper Table 3, 64 GB",
)
ax.scatter(
    list(hpe_cm.FIG4_QUOTED),
    [r[0] for r in hpe_cm.FIG4_QUOTED.values()],
    marker="+",
    s=80,
    color="k",
    label="paper Fig. 4, RoCE",
)
ax.scatter(
    list(hpe_cm.FIG4_QUOTED),
    [r[1] for r in hpe_cm.FIG4_QUOTED.values()],
    marker="1",
    s=80,
    color="k",
    label="paper Fig. 4, HDD",
)
ax.set_xscale("log", base=2)
ax.set_xlabel("over-commit multiple n (working set / local memory)")
ax.set_ylabel("performance ratio (full memory / swap)")
ax.set_ylim(0, 1.05)
ax.grid(alpha=0.3)
ax.legend(fontsize=7)
show(fig, "overcommit.png")

# %% [markdown]
# The error of Eq. (1) (ΣC = 0) per point, with the lat_pagefault D and with the fitted D;
# the paper finds 0–10 % up to multiple 8 and about 20 % at 16.

# %%
display(points.pivot(index="over_commit", columns="device", values="error").round(3))
display(points.pivot(index="over_commit", columns="device", values="error_d_fit").round(3))

# %% [markdown]
# ## OLTP: PostgreSQL + pgbench beside Table 4 (VoltDB/TPC-C)
#
# The paper's shape: identical TPS below the memory size, then a gentle decline over RoCE
# (−17.6 % at 3.75× memory) and a collapse on the HDD (−58 % at 1.46×, then no result).

# %%
pg_path = RESULTS / "pgbench" / "summary.csv"
if pg_path.exists():
    pg = pd.read_csv(pg_path)
    runs = pd.read_csv(RESULTS / "pgbench" / "runs.csv")
    local = float(runs["local_bytes"].dropna().iloc[0])
    fig = Figure(figsize=(6.5, 3.8))
    ax1, ax2 = fig.subplots(1, 2)
    for i, (name, grp) in enumerate(pg.groupby("device", sort=False)):
        x = grp["db_bytes"] / local
        ax1.plot(x, grp["tps"], marker="o", color=f"C{i}", label=name)
        if name != "memory":
            ax2.plot(x, grp["tps_vs_memory"], marker="o", color=f"C{i}", label=name)
    paper_x = [gb / hpe_cm.TABLE4_LOCAL_MEMORY_GB for gb in hpe_cm.TABLE4_TPS]
    for j, label in enumerate(("paper RDMA", "paper HDD")):
        ys = [(r[j] / r[2]) if r[j] is not None else np.nan for r in hpe_cm.TABLE4_TPS.values()]
        ax2.plot(paper_x, ys, ls=":", marker="x", color="k" if j == 0 else "grey", label=label)
    ax1.set_xlabel("database / memory limit")
    ax1.set_ylabel("TPS")
    ax2.set_xlabel("database / memory limit")
    ax2.set_ylabel("TPS / full-memory TPS")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    show(fig, "pgbench.png")
    display(pg[["scale", "db_bytes", "device", "repeats_ok", "tps", "tps_vs_memory"]])
else:
    print(f"{pg_path}: not committed (bench/RESULTS.md says why)")
