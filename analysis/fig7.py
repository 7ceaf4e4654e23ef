"""Figure 7 of Gao et al., OSDI'16 (§4.3): mean slowdown per protocol per application.

:func:`fig7_tables` reduces a campaign's FCT records (``disaggsim.schemas.CAMPAIGN_FCT``)
to two small tables that the notebook ``notebooks/paper_fig7.py`` draws and that are small
enough to commit (``notebooks/data/``):

- per workload x protocol x rate_gbps x scope x seed: flows, unfinished flows and the mean
  slowdown (the paper's metric: FCT over the FCT alone in the network, averaged over all
  flows, §4.3), and with :func:`with_run_stats` the run's PFC pause frames and paused time
  (``runs.csv``; RoCE on the lossless fabric, issue #19);
- per workload x protocol x rate_gbps x scope and flow size: flows and mean FCT in µs (the
  artifact's FCT-by-size tables, NetSys/disaggregation rmem/fcts/, one line per size).

:func:`fig7_figure` draws the bars of Figure 7 (one panel per scope x rate, one group of
bars per workload, one bar per protocol, the seeds' spread as error bars);
:func:`fct_by_size_figure` the FCT-by-size curves; :func:`fig7_tables_file` reduces a
collected ``fct.parquet`` of any size in bounded memory; :func:`write_tables` writes the two
tables as CSV, the slowdown table with :func:`with_run_stats`' pause frames
(``python -c "from disaggsim.analysis.fig7 import write_tables;
write_tables('results/paper-fig7', 'notebooks/data')"``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from disaggsim.atomic import atomic_path

#: One run per group: the run keys (``disaggsim.schemas.CAMPAIGN_KEYS``) in the figure's
#: order (tests/test_schema_headers.py checks the set).
RUN_KEYS = ["workload", "protocol", "rate_gbps", "scope", "seed"]
#: Protocol order of the bars: the paper's five protocols (Figure 7), then the Ideal reference,
#: then RDMA's RoCEv2 (issue #19; transports/roce/doc/roce.md).
PROTOCOL_ORDER = [
    "tcp",
    "dctcp",
    "fastpass",
    "phost",
    "pfabric",
    "ideal",
    "roce-dcqcn",
    "roce-hpcc",
    "roce-none",
]
#: Per-run statistics of ``runs.csv`` (``sim/rundir.py run_row``) that :func:`with_run_stats`
#: adds to the slowdown table: PFC pause frames sent and time paused (ns), summed over the
#: fabric's ports (0 on the lossy fabric; topologies/doc/lossless.md).
RUN_STATS = ["pfc_frames", "paused_ns"]
#: Smallest excess slowdown (mean slowdown - 1) drawn on the log axis of :func:`fig7_figure`.
EXCESS_FLOOR = 1e-4


def fig7_tables(fct: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reduce FCT records to (slowdown per run, mean FCT per size).

    Args:
        fct: CAMPAIGN_FCT rows.

    Returns:
        ``(slowdown, by_size)``: ``slowdown`` has RUN_KEYS + flows, unfinished,
        slowdown_mean; ``by_size`` has workload, protocol, rate_gbps, scope, size_bytes,
        flows, fct_us_mean (seeds pooled, finished flows only).

    Raises:
        ValueError: a missing column or an empty table.
    """
    missing = [c for c in FIG7_COLUMNS if c not in fct.columns]
    if missing:
        raise ValueError(f"fig7_tables: FCT table lacks columns {missing}")
    if fct.empty:
        raise ValueError("fig7_tables: empty FCT table")
    done = fct[fct["finished"] == 1]
    slowdown = fct.groupby(RUN_KEYS, sort=True).agg(
        flows=("flow_id", "size"), unfinished=("finished", lambda s: int((s == 0).sum()))
    )
    slowdown["slowdown_mean"] = done.groupby(RUN_KEYS, sort=True)["slowdown"].mean()
    by_size = done.groupby(
        ["workload", "protocol", "rate_gbps", "scope", "size_bytes"], sort=True
    ).agg(flows=("fct_ns", "size"), fct_us_mean=("fct_ns", "mean"))
    by_size["fct_us_mean"] = by_size["fct_us_mean"] / 1e3
    return slowdown.reset_index(), by_size.reset_index()


#: Columns :func:`fig7_tables` reads.
FIG7_COLUMNS = [*RUN_KEYS, "flow_id", "size_bytes", "fct_ns", "slowdown", "finished"]


def fig7_tables_file(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`fig7_tables` of a collected ``fct.parquet``, in bounded memory.

    Reads one workload x protocol x rate_gbps x scope at a time (its seeds' runs, only
    :data:`FIG7_COLUMNS`; ``disaggsim.analysis.fct_file.FctFile``) and concatenates the
    two tables in :func:`fig7_tables`' sort order: peak memory is one such group's flows
    (Figure 7 on whole traces: ~1 M of the 51 M).

    Returns:
        Exactly ``fig7_tables(pd.read_parquet(path))``.

    Raises:
        FileNotFoundError: no file. ValueError: a missing column or an empty table.
    """
    from disaggsim.analysis.fct_file import FctFile

    table = FctFile(path)
    missing = [c for c in FIG7_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"fig7_tables: FCT table {table.path} lacks columns {missing}")
    if table.num_rows == 0:
        raise ValueError(f"fig7_tables: empty FCT table {table.path}")
    slowdowns, by_sizes = [], []
    for _, rows in table.iter_groups(RUN_KEYS[:-1], FIG7_COLUMNS):
        slowdown, by_size = fig7_tables(rows)
        slowdowns.append(slowdown)
        by_sizes.append(by_size)
    return (pd.concat(slowdowns, ignore_index=True), pd.concat(by_sizes, ignore_index=True))


def with_run_stats(slowdown: pd.DataFrame, runs_csv: str | Path) -> pd.DataFrame:
    """``slowdown`` (:func:`fig7_tables`' first table) with :data:`RUN_STATS` columns from
    a campaign's ``runs.csv``, matched on :data:`RUN_KEYS`.

    Returns:
        A new table: ``slowdown``'s rows in order, plus ``pfc_frames`` and ``paused_ns``
        (int64).

    Raises:
        ValueError: ``runs_csv`` lacks a column, or a run of ``slowdown`` has no row (or
            empty statistics) in it, naming the file and the run.
    """
    path = Path(runs_csv)
    runs = pd.read_csv(path)
    missing = [c for c in [*RUN_KEYS, *RUN_STATS] if c not in runs.columns]
    if missing:
        raise ValueError(
            f"{path}: runs.csv lacks columns {missing} (a campaign run before "
            f"they were recorded: run it again to refresh runs.csv)"
        )
    keys = runs[RUN_KEYS + RUN_STATS].astype({"rate_gbps": float, "seed": int})
    merged = slowdown.astype({"rate_gbps": float, "seed": int}).merge(
        keys, on=RUN_KEYS, how="left", validate="one_to_one"
    )
    lacking = merged[merged[RUN_STATS].isna().any(axis=1)]
    if not lacking.empty:
        run = lacking.iloc[0][RUN_KEYS].to_dict()
        raise ValueError(f"{path}: no {RUN_STATS} for run {run} ({len(lacking)} runs lack them)")
    merged[RUN_STATS] = merged[RUN_STATS].astype("int64")
    merged["rate_gbps"] = merged["rate_gbps"].astype(slowdown["rate_gbps"].dtype)
    return merged


def pause_frames_table(slowdown: pd.DataFrame) -> pd.DataFrame:
    """PFC pause frames per run: rows workload x scope x rate_gbps, columns (protocol, seed),
    only the protocols that sent any (the others run on the lossy fabric or never paused).

    Raises:
        ValueError: ``slowdown`` has no ``pfc_frames`` column (:func:`with_run_stats`).
    """
    if "pfc_frames" not in slowdown.columns:
        raise ValueError("pause_frames_table: no pfc_frames column (with_run_stats adds it)")
    table = slowdown.pivot_table(
        index=["workload", "scope", "rate_gbps"],
        columns=["protocol", "seed"],
        values="pfc_frames",
        aggfunc="sum",
    )
    paused = [
        p
        for p in _protocols(slowdown)
        if p in table.columns.get_level_values(0) and table[p].to_numpy().sum() > 0
    ]
    return table[paused].astype("int64")


def _protocols(frame: pd.DataFrame) -> list[str]:
    present = frame["protocol"].unique().tolist()
    return [p for p in PROTOCOL_ORDER if p in present] + sorted(
        p for p in present if p not in PROTOCOL_ORDER
    )


def fig7_figure(slowdown: pd.DataFrame) -> Figure:
    """Bars of mean slowdown: panel per (scope, rate), group per workload, bar per protocol.

    Bar height: the mean over seeds of each run's mean slowdown, minus 1 on a log axis (the
    protocols differ by 0.001 to 20 above the ideal 1, which a linear axis cannot show
    together; values below ``EXCESS_FLOOR`` are drawn at it); error bar: min-max over
    seeds (run-to-run noise).
    """
    scopes = sorted(slowdown["scope"].unique())
    rates = sorted(slowdown["rate_gbps"].unique())
    workloads = sorted(slowdown["workload"].unique())
    protocols = _protocols(slowdown)
    fig = Figure(figsize=(4.5 * len(rates), 3.2 * len(scopes)), layout="constrained")
    axes = fig.subplots(len(scopes), len(rates), squeeze=False, sharey=True)
    width = 0.8 / len(protocols)
    for i, scope in enumerate(scopes):
        for j, rate in enumerate(rates):
            ax = axes[i][j]
            panel = slowdown[(slowdown["scope"] == scope) & (slowdown["rate_gbps"] == rate)]
            for k, protocol in enumerate(protocols):
                stats = (
                    panel[panel["protocol"] == protocol]
                    .groupby("workload")["slowdown_mean"]
                    .agg(["mean", "min", "max"])
                    .reindex(workloads)
                )
                x = np.arange(len(workloads)) + (k - (len(protocols) - 1) / 2) * width
                excess = (stats["mean"] - 1.0).clip(lower=EXCESS_FLOOR)
                err = np.vstack(
                    [
                        excess - (stats["min"] - 1.0).clip(lower=EXCESS_FLOOR),
                        (stats["max"] - 1.0).clip(lower=EXCESS_FLOOR) - excess,
                    ]
                )
                ax.bar(x, excess, width, yerr=err, capsize=2, label=protocol)
            ax.set_yscale("log")
            ax.set_xticks(
                np.arange(len(workloads)), workloads, rotation=30, ha="right", fontsize="small"
            )
            ax.set_title(f"{scope}, {rate:g} Gb/s")
            if j == 0:
                ax.set_ylabel("mean slowdown − 1 (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    return fig


def fct_by_size_figure(by_size: pd.DataFrame, workload: str) -> Figure:
    """Mean FCT (µs) against flow size (bytes, log x) of one workload, one line per
    protocol, one panel per (scope, rate)."""
    data = by_size[by_size["workload"] == workload]
    if data.empty:
        raise ValueError(f"fct_by_size_figure: no rows for workload {workload!r}")
    scopes = sorted(data["scope"].unique())
    rates = sorted(data["rate_gbps"].unique())
    fig = Figure(figsize=(4.5 * len(rates), 3.2 * len(scopes)), layout="constrained")
    axes = fig.subplots(len(scopes), len(rates), squeeze=False, sharex=True)
    for i, scope in enumerate(scopes):
        for j, rate in enumerate(rates):
            ax = axes[i][j]
            panel = data[(data["scope"] == scope) & (data["rate_gbps"] == rate)]
            for protocol in _protocols(panel):
                line = panel[panel["protocol"] == protocol].sort_values("size_bytes")
                ax.plot(
                    line["size_bytes"],
                    line["fct_us_mean"],
                    marker=".",
                    markersize=3,
                    label=protocol,
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{workload}: {scope}, {rate:g} Gb/s")
            ax.set_xlabel("flow size (bytes)")
            if j == 0:
                ax.set_ylabel("mean FCT (µs)")
    axes[0][0].legend(fontsize="small")
    return fig


def write_tables(
    out_dir: str | Path, data_dir: str | Path, min_flows: int = 5, merge: bool = False
) -> list[Path]:
    """Write a campaign's Figure 7 tables as CSV (what ``notebooks/data/`` holds).

    Args:
        out_dir: the campaign's ``out_dir`` (reads ``fct.parquet`` one group of runs at a
            time: :func:`fig7_tables_file`).
        data_dir: where ``paper_fig7_slowdown.csv`` and ``paper_fig7_fct_by_size.csv`` go.
        min_flows: FCT-by-size rows with fewer flows are left out (keeps the file small).
        merge: keep the rows of the tables already in ``data_dir`` whose workload x
            protocol x rate_gbps x scope this campaign did not run (a campaign of some of
            a config's protocols, e.g. only ``roce-*`` of ``configs/paper-fig7.toml``,
            updates the tables of an earlier run of the whole config); kept rows without
            run statistics keep them empty.

    Returns:
        The two paths, each written through a temporary file and renamed.

    Raises:
        ValueError: as :func:`fig7_tables_file` and :func:`with_run_stats` (the slowdown
            table carries each run's :data:`RUN_STATS` from ``out_dir/runs.csv``).
    """
    slowdown, by_size = fig7_tables_file(Path(out_dir) / "fct.parquet")
    slowdown = with_run_stats(slowdown, Path(out_dir) / "runs.csv")
    by_size = by_size[by_size["flows"] >= min_flows]
    data = Path(data_dir)
    tables = {
        "paper_fig7_slowdown.csv": (slowdown, RUN_KEYS),
        "paper_fig7_fct_by_size.csv": (by_size, [*RUN_KEYS[:-1], "size_bytes"]),
    }
    if merge:
        group = RUN_KEYS[:-1]
        for name, (frame, order) in tables.items():
            if not (data / name).is_file():
                continue
            old = pd.read_csv(data / name)
            ran = pd.MultiIndex.from_frame(frame[group].astype({"rate_gbps": float}))
            keep = ~pd.MultiIndex.from_frame(old[group].astype({"rate_gbps": float})).isin(ran)
            merged = pd.concat([old[keep], frame], ignore_index=True)
            tables[name] = (merged.sort_values(order, kind="stable", ignore_index=True), order)
    data.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (frame, _) in tables.items():
        out = frame.astype({c: "Int64" for c in RUN_STATS if c in frame.columns})
        path = data / name
        with atomic_path(path) as tmp:
            out.to_csv(tmp, index=False, float_format="%.6g")
        paths.append(path)
    return paths
