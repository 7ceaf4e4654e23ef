# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   execution:
#     timeout: 1500
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # disaggsim quickstart: transports under disaggregated-datacenter traffic
#
# This notebook loads the FCT records of a campaign (by default the quickstart campaign,
# `configs/quickstart.toml`: the bundled trace samples, TCP and DCTCP, 40 and 100 Gb/s,
# datacenter- and rack-scale disaggregation) and shows
#
# 1. the summary table: flows, unfinished flows, mean / median / 99th-percentile slowdown
#    and FCT per protocol, scope, rate and flow-size bucket;
# 2. the FCT CDFs and the mean slowdown by flow size;
# 3. the FCT-by-size export that the latency-injection swap device reads.
#
# The method is Gao et al., "Network Requirements for Resource Disaggregation", OSDI'16:
# §4.1 turns traces into flows, §4.2 simulates them on a 9-rack Clos fabric, §4.3 reports
# the mean slowdown (FCT over the FCT alone in the network).
#
# Set `DISAGGSIM_RESULTS` to another campaign's `out_dir` to look at it instead. If the
# directory has no `fct.parquet` yet, the quickstart campaign is run first (a few minutes
# on 2 cores; it needs the ns-3 program: `make build`).

# %%
import os
from pathlib import Path

from IPython.display import Image, display

from disaggsim.analysis.export import MEMORY_KINDS, export_fct, read_fct_selection
from disaggsim.analysis.fct_file import FctFile
from disaggsim.analysis.fig7 import RUN_KEYS
from disaggsim.analysis.plots import plot_data_file, plot_fct_cdf
from disaggsim.analysis.stats import format_summary, summarize_file, summarize_groups
from disaggsim.sim.campaign import run_campaign
from disaggsim.sim.runner import repo_root

REPO = repo_root()
results = Path(os.environ.get("DISAGGSIM_RESULTS", "results/quickstart"))
if not results.is_absolute():
    results = REPO / results
fct_path = results / "fct.parquet"
print(f"campaign directory: {results}")

# %% [markdown]
# ## Load (or produce) the campaign's FCT records

# %%
if not fct_path.is_file():
    default = (REPO / "results" / "quickstart").resolve()
    if results.resolve() != default:
        raise FileNotFoundError(
            f"{fct_path} does not exist: run that campaign first "
            "(disaggsim run <config>), or unset DISAGGSIM_RESULTS for the quickstart"
        )
    print("no results yet: running configs/quickstart.toml")
    campaign = run_campaign(
        REPO / "configs" / "quickstart.toml", progress=False, summarize=summarize_groups
    )
    print(f"{campaign.ran} runs simulated, {campaign.skipped} reused")

# Read group by group (FctFile): a campaign's table can outgrow memory (Figure 7 on
# whole traces: 51 M flows), so nothing below loads all of it.
fct = FctFile(fct_path)
runs = fct.group_keys(RUN_KEYS)
print(f"{fct.num_rows} flow records from {len(runs)} runs")
fct.read_group(RUN_KEYS, runs[0]).head()

# %% [markdown]
# ## Summary
#
# `flows` counts every flow; `unfin` the flows that did not finish before the simulation
# ended (they are excluded from the statistics, never dropped silently). `sd_*` is the
# slowdown, `fct_us_*` the flow completion time in µs.

# %%
summary = summarize_file(fct_path)
print(format_summary(summary))

# %% [markdown]
# Mean slowdown over all flow sizes, per protocol and configuration (the paper's
# Figure 7 metric):

# %%
overall = summary[summary["bucket"] == "all"]
overall.pivot_table(
    index=["workload", "scope", "rate_gbps"], columns="protocol", values="slowdown_mean"
).round(2)

# %% [markdown]
# ## Plots

# %%
plots = plot_fct_cdf(plot_data_file(fct_path), results / "plots" / "quickstart")
for path in plots:
    if path.suffix == ".png":
        display(Image(filename=str(path)))

# %% [markdown]
# ## FCT export for the swap device
#
# One line per distinct flow size, `<bytes> <mean_fct_us>`, from the memory flows of one
# configuration (all flows if the workload has no memory flows) — the format of the
# original artifact's `fcts_*.txt` files.

# %%
first = overall.iloc[0]
chosen = read_fct_selection(
    fct_path,
    protocol=first["protocol"],
    rate_gbps=first["rate_gbps"],
    scope=first["scope"],
    workload=first["workload"],
)
kinds = list(MEMORY_KINDS) if chosen["kind"].isin(MEMORY_KINDS).any() else None
export = export_fct(
    chosen,
    results / "exports" / "fcts_quickstart.txt",
    protocol=first["protocol"],
    rate_gbps=first["rate_gbps"],
    scope=first["scope"],
    workload=first["workload"],
    kinds=kinds,
    unfinished="drop",
)
print(
    f"{export.path}: {export.sizes} sizes from {export.flows} flows "
    f"({export.unfinished} unfinished left out)"
)
print("".join(export.path.read_text().splitlines(keepends=True)[:10]))
