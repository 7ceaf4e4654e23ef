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
# # COMEX on this machine and on the simulated fabric (Srinuan et al., papers/002, issue #23)
#
# COMEX pages anonymous memory to other nodes' DRAM over RoCE: 16-page (64 KiB) reads into
# a 4096-page LRU read buffer, evictions gathered in per-node write buffers and written in
# contiguous batches of up to 64 pages, a memory-node service time T_S per request. The
# device's `comex` paging policy (`swapdev/src/policy_comex.c`) reproduces that path on
# real applications; `swapdev/baselines.py` gives the local-swap baselines (a 5,400 rpm
# HDD, a SATA SSD); `bench/comex_fabric.py` puts COMEX's requests on the fabric beside
# Eq. (1). This notebook draws the **committed** results (commands, repeats and machine
# load in bench/RESULTS.md, "COMEX (#23)"), all under `notebooks/data/comex/`:
#
# - `comex-<app>/summary.csv`, `speedup.csv`: `disaggsim emulate configs/emulate-comex-*.toml`;
# - `comex-pb-numpy-sort/summary.csv`: the P x B sweep;
# - `comex-fabric/eq1.csv`, `trace.csv`: `bench/comex_fabric.py configs/comex-fabric.toml`.
#
# It reads only CSV files (seconds, no root, no device).

# %%
import io
import os

import numpy as np
import pandas as pd
from IPython.display import Image, display
from matplotlib.figure import Figure

from disaggsim.analysis import comex
from disaggsim.sim.runner import repo_root

DATA = repo_root() / "notebooks" / "data" / "comex"
APPS = {  # emulate config name -> (application, the COMEX workload it stands in for)
    "comex-numpy-sort": ("numpy-sort", "PBBS FSORT"),
    "comex-python-sort": ("python-sort", "PBBS BFS / MIS"),
    "comex-memcached-ycsb": ("memcached-ycsb", "PBBS DICT"),
    "comex-dask-sort": ("dask-sort", "NPB FT"),
}
#: Fig. 14's hit rates at M = 4 GB (§5.3.3): 44 % (BFS) to 87 % (FSORT).
FIG14 = {
    "FSORT": 0.87,
    "DICT": 0.86,
    "HULL": 0.85,
    "MG": 0.79,
    "SP": 0.78,
    "BT": 0.70,
    "LU": 0.53,
    "FT": 0.47,
    "BFS": 0.44,
}


def show(fig: Figure, name: str) -> None:
    """Display a Figure as PNG; with DISAGGSIM_SAVE_FIGURES=1 also write it next to the CSVs."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    display(Image(data=buffer.getvalue()))
    if os.environ.get("DISAGGSIM_SAVE_FIGURES") == "1":
        (DATA / name).write_bytes(buffer.getvalue())


def summary(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / name / "summary.csv")


# %% [markdown]
# ## Buffer hit rate per application (Fig. 14)
#
# Faults served by COMEX's buffers (read-buffer hits + write-buffer hits) over all faults on
# remote pages, with the comex policy at COMEX's defaults (P = 16, B = 4096) over a
# 10 GbE-like network; beside the paper's range at its smallest memory.

# %%
rows = []
for name, (app, stands_in) in APPS.items():
    if not (DATA / name / "summary.csv").exists():
        continue
    s = summary(name)
    for _, r in s[(s["model"] == "comex-10g") & s["hit_rate"].notna()].iterrows():
        rows.append(
            {
                "application": app,
                "COMEX workload": stands_in,
                "local fraction": r["local_fraction"],
                "hit rate": r["hit_rate"],
            }
        )
hits = pd.DataFrame(rows)
display(hits.round(3))
fig = Figure(figsize=(6.5, 3.2))
ax = fig.subplots()
labels = [f"{r['application']}\n{r['local fraction']:.0%}" for _, r in hits.iterrows()]
ax.bar(labels, hits["hit rate"] * 100, color="tab:blue", label="comex policy, this machine")
ax.axhspan(44, 87, color="tab:orange", alpha=0.2, label="Fig. 14: 44-87 % (M = 4 GB)")
ax.set_ylabel("buffer hits / remote faults (%)")
ax.set_ylim(0, 100)
ax.legend(fontsize=7, loc="lower right")
ax.tick_params(axis="x", labelsize=7)
fig.tight_layout()
show(fig, "hit_rates.png")

# %% [markdown]
# ## Prefetch size P and read-buffer size B (Figs. 11-12)
#
# numpy-sort at half its working set local; JCT normalised as the paper does: Fig. 11 to
# P = 8 at each B, Fig. 12 to B = 1024 at each P. The paper adopts P = 16, B = 4096.

# %%
pb = summary("comex-pb-numpy-sort")
pb = pb[pb["model"] != "none"].copy()
pb["P"] = pb["model"].str.extract(r"-P(\d+)-")[0].astype(int)
pb["B"] = pb["model"].str.extract(r"-B(\d+)$")[0].astype(int)
table = pb.pivot_table(index="P", columns="B", values="median_jct_s")
display(table.round(3))
display(pb.pivot_table(index="P", columns="B", values="hit_rate").round(3))
fig = Figure(figsize=(8, 3.2))
ax1, ax2 = fig.subplots(1, 2)
for b in table.columns:
    ax1.plot(table.index, table[b] / table.loc[table.index.min(), b], marker="o", label=f"B = {b}")
for p in table.index:
    ax2.plot(
        table.columns,
        table.loc[p] / table.loc[p, table.columns.min()],
        marker="o",
        label=f"P = {p}",
    )
ax1.set_xlabel("prefetch size P (pages)")
ax1.set_ylabel("JCT / JCT at P = 8")
ax1.set_xscale("log", base=2)
ax2.set_xlabel("read buffer B (pages)")
ax2.set_ylabel("JCT / JCT at B = 1024")
ax2.set_xscale("log", base=2)
for ax in (ax1, ax2):
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
fig.tight_layout()
show(fig, "pb_sweep.png")

# %% [markdown]
# ## Speed-up over local swap (Figs. 13 and 17)
#
# median JCT on the baseline / median JCT with comex, per local fraction; an HDD run past
# its time limit gives a lower bound (hatched). The paper's trend: the speed-up grows as
# local memory shrinks (Fig. 13: > 20x for most benchmarks at 4 GB; Fig. 17: COMEX ahead
# of the SSD at 8 GB).

# %%
speed = []
for name, (app, _) in APPS.items():
    path = DATA / name / "speedup.csv"
    if path.exists():
        speed.append(pd.read_csv(path).assign(application=app))
sp = pd.concat(speed, ignore_index=True)
display(sp.round(3))
fig = Figure(figsize=(8, 3.8))
ax = fig.subplots()
x = np.arange(len(sp))
value = sp["speedup"].fillna(sp["speedup_at_least"])
ax.bar(
    x,
    value,
    color=["tab:green" if b == "ssd-sata" else "tab:brown" for b in sp["baseline"]],
    hatch=None,
)
for i, bound in enumerate(sp["speedup"].isna()):
    if bound:
        ax.bar(x[i], value[i], fill=False, hatch="//", edgecolor="black")
ax.set_xticks(
    x,
    [
        f"{a} {f:.0%}\nvs {b}"
        for a, f, b in zip(sp["application"], sp["local_fraction"], sp["baseline"], strict=True)
    ],
    fontsize=6,
    rotation=30,
    ha="right",
)
ax.set_yscale("log")
ax.set_ylabel("speed-up over local swap")
ax.axhline(1, color="grey", lw=1)
fig.tight_layout()
show(fig, "speedups.png")

# %% [markdown]
# ## Eq. (1) against the simulated request round trip
#
# Eq. (1)'s arrival process on the fabric (ns-3, 10 Gb/s, 64 B request and reply, the
# memory node a FIFO of T_S = 6 µs): the simulated mean RTT beside Eq. (1) with this
# fabric's zero-load network time (no NIC latency is modelled: the paper's 4.54 µs has
# four ~1 µs NIC trips), against the offered load per memory node rho = N P / M.

# %%
eq1 = pd.read_csv(DATA / "comex-fabric" / "eq1.csv")
eq1 = eq1[eq1["fabric"] == "lossy"]  # the lossless fabric gives the same RTTs here
display(
    eq1[
        [
            "topology",
            "protocol",
            "compute_nodes",
            "memory_nodes",
            "request_probability",
            "rho",
            "eq1_fabric_ns",
            "sim_rtt_mean_ns",
            "model_queue_ns",
            "sim_queue_ns",
            "sim_network_queue_ns",
        ]
    ].round(0)
)
# Eq. (1) by this package against the paper's own worked example (§3.3.3).
assert round(comex.replenish_threshold_pages(comex.eq1_rtt_ns(10, 12, 1.0))) == 752
fig = Figure(figsize=(8, 3.4))
axes = fig.subplots(1, 2, sharey=True)
for ax, topo in zip(axes, ["switch", "clos"], strict=True):
    part = eq1[(eq1["topology"] == topo) & (eq1["protocol"] == "pfabric")]
    for n, g in part.groupby("compute_nodes"):
        g = g.sort_values("rho")
        (line,) = ax.plot(g["rho"], g["sim_rtt_mean_ns"] / 1000, marker="o", label=f"N = {n}")
        ax.plot(g["rho"], g["eq1_fabric_ns"] / 1000, ls="--", color=line.get_color())
    ax.axvline(1, color="grey", lw=1, ls=":")
    ax.set_xlabel("rho = N P / M (requests per T_S per memory node)")
    ax.set_yscale("log")
    ax.set_title(f"{topo}, pfabric, M = 4 (dashed: Eq. (1))", fontsize=9)
    ax.grid(alpha=0.3)
axes[0].set_ylabel("mean request RTT (µs)")
axes[0].legend(fontsize=7)
fig.tight_layout()
show(fig, "eq1.png")

# %% [markdown]
# ## A comex run's requests on the fabric
#
# numpy-sort's rmem log under the comex policy, converted by `disaggsim convert` (64 KiB
# reads, batched writes), replayed from N compute blades onto M = 4 memory blades: the
# read RTT beside Eq. (1) + the 64 KiB transfer at 10 Gb/s.

# %%
trace = pd.read_csv(DATA / "comex-fabric" / "trace.csv")
display(trace.round(1))
