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
# # Rcmp: a CXL pool in each rack, RDMA between racks (papers/003, issue #25)
#
# Rcmp (ACM TACO 2024) reports 64 B random accesses under 3 µs (read) and 3.5 µs (write)
# with 2 racks, 2.7–8.1× below the other systems (Fastswap ~12 µs; Fig. 14), YCSB on a
# hash table at 2–4× Fastswap's throughput, up to 3.8× with Zipfian keys (Fig. 17), and
# hot-page swapping worth +5 % (uniform) and +35 % (Zipfian) (Fig. 20). This notebook puts
# the **committed** results of `bench/rcmp_figs.py` (commands and machine load in
# bench/RESULTS.md, "Rcmp (#25)") beside those:
#
# - `bench/figures/rcmp/model_fig20.csv`: Fig. 20 from the traffic generator (`sim/rcmp.py`);
# - `bench/figures/rcmp/fct.csv`: Rcmp's flows simulated on the Clos with pFabric, with and
#   without the CXL tier;
# - `bench/figures/rcmp/lone.csv`: Fig. 14's accesses simulated alone (pFabric + CXL tier);
# - `bench/figures/rcmp/kv_fig14_*.csv`, `kv_fig17_*.csv`, `kv_fig20.csv` (when present):
#   the emulation, librcmp (`_rcmp`) vs page-level remote memory on the uffd device
#   (`_pages`).
#
# It reads only CSV files (seconds, no root, no device).

# %%
import pandas as pd
from IPython.display import display

from disaggsim.sim.runner import repo_root

RESULTS = repo_root() / "bench" / "figures" / "rcmp"

# %% [markdown]
# ## Fig. 20 from the generator: hot-page swapping off vs H_p = 3
#
# Estimated throughput = accesses / closed-loop makespan (140 ns in-rack, 3 µs across, the
# swaps asynchronous). The paper: +5 % uniform, +35 % Zipfian (its micro-benchmark's
# Zipfian is unscrambled: item i the i-th most popular, at address i x 64 B).

# %%
model = pd.read_csv(RESULTS / "model_fig20.csv")
display(model)
paper = {"uniform": 1.05, "zipfian-unscrambled": 1.35}
on = model[model["hot_threshold"] != "off"].set_index("distribution")
display(pd.DataFrame({"ours": on["vs_off"], "paper (Fig. 20)": pd.Series(paper)}))

# %% [markdown]
# ## Rcmp's flows on the Clos (pFabric, 100 Gbps, 4 racks)
#
# RRPC messages (`rpc`, < 512 B) and the 2 MiB migrations (`migrate`) between the racks'
# daemons; with the CXL tier, in-rack accesses (`cxl`) are served by the pool and every
# inter-rack row pays a CXL access at each end.

# %%
fct = pd.read_csv(RESULTS / "fct.csv")
display(fct)

# %% [markdown]
# ## Fig. 14 simulated: lone accesses (pFabric at 100 Gbps, CXL tier)
#
# The paper: Rcmp's 64 B read < 3 µs with 2 racks; Fastswap > 12 µs (its page-fault
# handling, which is not network time, is most of that).

# %%
display(pd.read_csv(RESULTS / "lone.csv"))

# %% [markdown]
# ## Emulation: librcmp vs page-level remote memory (Fig. 14, 17, 20)
#
# Present once `bench/rcmp_figs.py kv` has run on a machine with root (uffd). Medians of
# the repeats; the ratios are what compares with the paper, the absolute latencies depend on
# the emulated tiers and on the machine's load.


# %%
def both(fig: int) -> pd.DataFrame | None:
    """librcmp's and the uffd device's runs of one figure, when present."""
    parts = [pd.read_csv(f) for f in sorted(RESULTS.glob(f"kv_fig{fig}_*.csv"))]
    return pd.concat(parts, ignore_index=True) if parts else None


f14, f17 = both(14), both(17)
if f14 is not None:
    display(f14.groupby(["op", "system"])[["p50_latency_us", "mean_latency_us"]].median())
if f17 is not None:
    thr = f17.groupby(["mix", "distribution", "backend"])["accesses_per_s"].median().unstack()
    if {"rcmp", "pages"} <= set(thr.columns):
        thr["rcmp / page-level"] = thr["rcmp"] / thr["pages"]
    display(thr)
# %% [markdown]
# ## Fig. 20 emulated: swapping off (H_p -1) vs on (H_p = 3)
#
# librcmp's swaps are done by the rack daemon's thread off the clients' path (Rcmp §5.3;
# `swapdev/doc/rcmp.md`); the repeats interleave off and on, each row with the 1-min load
# average before it. The paper: +5 % uniform, +35 % Zipfian.

# %%
for path in sorted(RESULTS.glob("kv_fig20*.csv")):  # 500 k items, and 10 M (306 pages)
    f20 = pd.read_csv(path)
    print(path.name, "items:", int(f20["items"].iloc[0]))
    t20 = f20.groupby(["distribution", "hot_threshold"])["accesses_per_s"].median().unstack()
    t20.columns = [f"H_p {c}" for c in t20.columns]
    t20["on / off (of the medians)"] = t20["H_p 3"] / t20["H_p -1"]
    t20["paper (Fig. 20)"] = t20.index.map(paper)
    display(t20)
    counters = ["remote_reads", "migrations", "victims", "load_1min"]
    display(
        f20.groupby(["distribution", "hot_threshold"])[
            [c for c in counters if c in f20.columns]
        ].median()
    )

# %% [markdown]
# ## Fig. 17: why YCSB D gains less (page-level faults, counted)
#
# `bench/rcmp_figs.py fig17-faults` replays the `kv` key streams through the uffd
# device's local memory (1/8 of the table, FIFO): the share of operations that fault.
# librcmp sends about half of every mix's accesses to the other rack.

# %%
faults = pd.read_csv(RESULTS / "fig17_faults.csv")
display(faults)
