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
# - `bench/figures/rcmp/kv_fig14.csv`, `kv_fig17.csv`, `kv_fig20.csv` (when present): the
#   emulation, librcmp vs page-level remote memory on the uffd device.
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
# swaps asynchronous). The paper: +5 % uniform, +35 % Zipfian.

# %%
model = pd.read_csv(RESULTS / "model_fig20.csv")
display(model)
paper = {"uniform": 1.05, "zipfian": 1.35}
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
# ## Emulation: librcmp vs page-level remote memory (Fig. 14, 17, 20)
#
# Present once `bench/rcmp_figs.py kv` has run on a machine with root (uffd). Medians of
# the repeats; the ratios are what compares with the paper, the absolute latencies depend on
# the emulated tiers and on the machine's load.

# %%
kv14, kv17, kv20 = (RESULTS / f"kv_fig{n}.csv" for n in (14, 17, 20))
if kv14.exists():
    f14 = pd.read_csv(kv14)
    display(f14.groupby(["op", "system"])[["p50_latency_us", "mean_latency_us"]].median())
if kv17.exists():
    f17 = pd.read_csv(kv17)
    thr = f17.groupby(["mix", "distribution", "backend"])["accesses_per_s"].median().unstack()
    thr["rcmp / page-level"] = thr["rcmp"] / thr["pages"]
    display(thr)
if kv20.exists():
    f20 = pd.read_csv(kv20)
    t20 = f20.groupby(["distribution", "hot_threshold"])["accesses_per_s"].median().unstack()
    display(t20)
