# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   execution:
#     timeout: 600
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 7 of Gao et al., OSDI'16: which transport gives disaggregation what it needs?
#
# The paper's Figure 7 (§4.3) compares the mean slowdown of TCP, DCTCP, pFabric and an
# ideal reference on each application's disaggregated traffic, at 40 and 100 Gb/s, with
# rack- and datacenter-scale disaggregation. `configs/paper-fig7.toml` reproduces its
# setup on the bundled traces:
#
# - **placement** (§4.2): at rack scale every blade of a traced cluster sits in one rack;
#   at datacenter scale anywhere;
# - **load**: the fabric holds 9 copies of the traced cluster, one per rack at rack scale
#   and spread at datacenter scale, each the trace shifted by a random offset (the
#   authors' simulator fills the fabric the same way: NetSys/simulator
#   run/flow_generator.cpp);
# - **delays**: the authors' simulator's DDC link delays (`delays = "authors-sim"`), and
#   every slowdown divides by the flow's FCT alone in the network under those delays.
#
# Beside the paper's protocols, RDMA's (issue #19): RoCEv2 with DCQCN, HPCC or no congestion
# control (`roce-dcqcn`, `roce-hpcc`, `roce-none`) on the lossless fabric (PFC), with the
# pause frames each run sent.
#
# The campaign simulates every trace whole (432 runs: the paper's protocols' 288, 51 M
# flows, ~15 min of CPU, and RoCE's 144, ~11 min; bench/RESULTS.md "Figure 7 campaign" and
# "Figure 7 with RoCEv2"). The notebook reads `results/paper-fig7/fct.parquet` and
# `runs.csv` if that campaign has run (or `DISAGGSIM_RESULTS`), one group of runs at a time
# (`fig7_tables_file`: the whole table would not fit in memory), else the two small tables
# committed from a run of it in `notebooks/data/` (`write_tables`; so CI draws the figure
# in seconds).

# %%
import io
import os
from pathlib import Path

import pandas as pd
from IPython.display import Image, display
from matplotlib.figure import Figure

from disaggsim.analysis.fig7 import (
    PROTOCOL_ORDER,
    fct_by_size_figure,
    fig7_figure,
    fig7_tables_file,
    pause_frames_table,
    with_run_stats,
)
from disaggsim.sim.runner import repo_root


def show(fig: Figure) -> None:
    """Display a matplotlib Figure as PNG (no pyplot state needed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    display(Image(data=buffer.getvalue()))


REPO = repo_root()
results = Path(os.environ.get("DISAGGSIM_RESULTS", "results/paper-fig7"))
if not results.is_absolute():
    results = REPO / results
data = REPO / "notebooks" / "data"
if (results / "fct.parquet").is_file():
    print(f"campaign results: {results}")
    slowdown, by_size = fig7_tables_file(results / "fct.parquet")
    slowdown = with_run_stats(slowdown, results / "runs.csv")
else:
    print(f"no {results / 'fct.parquet'}: using the committed tables in {data}")
    slowdown = pd.read_csv(data / "paper_fig7_slowdown.csv")
    by_size = pd.read_csv(data / "paper_fig7_fct_by_size.csv")
print(
    f"{len(slowdown)} runs, {int(slowdown['flows'].sum())} flows, "
    f"{int(slowdown['unfinished'].sum())} unfinished"
)

# %% [markdown]
# ## Mean slowdown per protocol (Figure 7)
#
# Bars: the mean over seeds of each run's mean slowdown; error bars: the range over seeds.

# %%
table = slowdown.pivot_table(
    index=["workload", "scope", "rate_gbps"],
    columns="protocol",
    values="slowdown_mean",
    aggfunc="mean",
)
table = table[[p for p in PROTOCOL_ORDER if p in table.columns]]
display(table.round(3))
show(fig7_figure(slowdown))

# %% [markdown]
# The paper's ordering: TCP worst, pFabric nearest to the ideal. Checked here per
# configuration (the seeds' spread is the run-to-run noise). DCTCP differs from TCP only
# once switch queues pass its marking threshold; on a lightly loaded fabric the two tie.
# Fastpass is left out of "TCP worst": nearly every flow of these traces is a page or a
# few pages (ideal FCT ~1 µs), and every Fastpass flow first waits a request-allocation
# round trip through the arbiter plus the allocation lead (several µs), so its mean
# slowdown is several times the others' (its column above; the arbiter's cost for short
# flows that the Fastpass issue names).

# %%
roce = [p for p in table.columns if p.startswith("roce-")]
spread = (
    slowdown.groupby(["workload", "scope", "rate_gbps", "protocol"])["slowdown_mean"]
    .agg(lambda s: s.max() - s.min())
    .unstack("protocol")
)
others = table.drop(columns=["tcp", "dctcp", "fastpass", *roce], errors="ignore")
ordering = pd.DataFrame(
    {
        "tcp_worst": table["tcp"] >= others.max(axis=1),
        "pfabric_best_real": table.drop(columns=["ideal"], errors="ignore").idxmin(axis=1)
        == "pfabric",
        "phost_minus_pfabric": (table["phost"] - table["pfabric"]).round(4)
        if "phost" in table.columns
        else None,
        "tcp_minus_pfabric": (table["tcp"] - table["pfabric"]).round(4),
        "dctcp_minus_tcp": (table["dctcp"] - table["tcp"]).round(4),
        "max_seed_spread": spread.drop(columns=["fastpass"], errors="ignore").max(axis=1).round(4),
    }
)
display(ordering)

# %% [markdown]
# ## RoCEv2 on the lossless fabric (issue #19)
#
# RoCE's three congestion controls beside TCP and pFabric (the "TCP worst" check above is
# over the paper's protocols): `roce_minus_tcp` and `roce_minus_pfabric` are the best RoCE
# mean slowdown minus TCP's and pFabric's (negative: RoCE faster); then DCQCN's and HPCC's
# against no congestion control (PFC alone).

# %%
versus = pd.DataFrame(
    {
        "roce_minus_tcp": (table[roce].min(axis=1) - table["tcp"]).round(4),
        "roce_minus_pfabric": (table[roce].min(axis=1) - table["pfabric"]).round(4),
        "dcqcn_minus_none": (table["roce-dcqcn"] - table["roce-none"]).round(4),
        "hpcc_minus_none": (table["roce-hpcc"] - table["roce-none"]).round(4),
    }
)
display(versus)
on_roce = slowdown[slowdown["protocol"].isin(roce)]
print(
    f"RoCE: {len(on_roce)} runs, {int(on_roce['flows'].sum())} flows, "
    f"{int(on_roce['unfinished'].sum())} unfinished"
)

# %% [markdown]
# ### PFC pause frames per run
#
# Pause frames the fabric's switch ports sent in each run (`runs.csv` `pfc_frames`, summed
# over ports), per seed, for the protocols that paused at all, then the total per protocol
# and rate. The paper's protocols run on the lossy fabric, which has no PFC (their rows
# carry no run statistics when the committed tables predate them).

# %%
frames = pause_frames_table(slowdown)
display(frames)
display(
    on_roce.pivot_table(
        index="rate_gbps", columns="protocol", values="pfc_frames", aggfunc="sum"
    ).astype("int64")
)
paused = frames[frames.sum(axis=1) > 0]
fig = Figure(figsize=(8, 0.35 * len(paused) + 1.2), layout="constrained")
ax = fig.subplots()
paused.set_axis([f"{p} seed {seed}" for p, seed in paused.columns], axis=1).plot.barh(
    ax=ax, width=0.8
)
ax.invert_yaxis()
ax.set_xlabel("PFC pause frames in the run")
ax.set_title("PFC pause frames per run (lossless fabric; rows with any)")
ax.legend(fontsize="small")
show(fig)

# %% [markdown]
# ## FCT by flow size
#
# Mean FCT per flow size (seeds pooled), the form of the artifact's published pFabric
# tables (NetSys/disaggregation rmem/fcts/); bench/RESULTS.md compares the numbers.

# %%
for workload in sorted(by_size["workload"].unique()):
    show(fct_by_size_figure(by_size, workload))
