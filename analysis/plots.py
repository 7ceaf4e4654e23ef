"""Plots of a campaign's FCTs: FCT CDFs and mean slowdown by flow size.

Both draw one panel per (scope, rate_gbps) — rows are scopes, columns rates — and one
line/bar series per protocol, pooling workloads and seeds, like the paper's Figure 7 (mean
slowdown per protocol at 100 Gb/s, §4.3). Figures are built with ``matplotlib.figure.Figure``
(no pyplot state), so they work the same in scripts, tests and notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from disaggsim.analysis.stats import SIZE_BUCKETS, size_bucket
from disaggsim.atomic import atomic_path

_PANEL_IN = (4.2, 3.2)
#: Line styles per protocol, so coinciding CDFs stay visible.
_LINESTYLES = ("-", "--", "-.", ":")


#: Most points drawn per FCT CDF curve; a longer curve is drawn through this many of its
#: steps, evenly spaced in rank (the curve moves at most 1/MAX_CDF_POINTS in y between
#: drawn points, below a pixel at these figure sizes). Shorter curves are drawn exactly.
MAX_CDF_POINTS = 20_000
#: Columns the two campaign figures read.
PLOT_COLUMNS = ("protocol", "scope", "rate_gbps", "fct_ns", "finished", "size_bytes", "slowdown")
#: Keys of one curve / bar series: a panel (scope, rate_gbps) and a protocol.
CURVE_KEYS = ("scope", "rate_gbps", "protocol")


@dataclass
class PlotData:
    """What :func:`fct_cdf_figure` and :func:`slowdown_by_size_figure` draw, reduced from
    FCT records so that it can be built one (scope, rate_gbps, protocol) at a time.

    Attributes:
        cdf: per (scope, rate_gbps, protocol): (fct_us, frac, flows, unfinished): the
            CDF's points (FCT of finished flows in µs, sorted, and the fraction of *all*
            the curve's flows at or below it, at most MAX_CDF_POINTS of them) and the
            curve's flow counts.
        slowdown: mean slowdown and count (columns ``mean``, ``size``) of finished flows
            per (scope, rate_gbps, protocol, bucket), bucket from ``stats.SIZE_BUCKETS``.
    """

    cdf: dict[tuple[str, float, str], tuple[np.ndarray, np.ndarray, int, int]] = field(
        default_factory=dict
    )
    slowdown: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def scopes(self) -> list[str]:
        """Scopes (panel rows), sorted."""
        return sorted({k[0] for k in self.cdf})

    @property
    def rates(self) -> list[float]:
        """Link rates in Gb/s (panel columns), sorted."""
        return sorted({float(k[1]) for k in self.cdf})

    @property
    def protocols(self) -> list[str]:
        """Protocols (series), sorted."""
        return sorted({k[2] for k in self.cdf})


def _check_columns(fct_df: pd.DataFrame) -> None:
    for column in ("protocol", "scope", "rate_gbps", "fct_ns", "finished", "size_bytes"):
        if column not in fct_df.columns:
            raise ValueError(f"plots: FCT table lacks column {column!r}")


def _add_rows(data: PlotData, fct_df: pd.DataFrame) -> None:
    """Reduce FCT rows into ``data``; a (scope, rate_gbps, protocol) must come whole, in
    one call."""
    for key, runs in fct_df.groupby(list(CURVE_KEYS), sort=True):
        scope, rate, protocol = cast(tuple[str, float, str], key)
        done = runs[runs["finished"] != 0]
        fct_us = np.sort(done["fct_ns"].to_numpy(dtype=float) / 1000.0)
        frac = np.arange(1, len(fct_us) + 1) / len(runs)
        if len(fct_us) > MAX_CDF_POINTS:
            keep = np.unique(
                np.linspace(0, len(fct_us) - 1, MAX_CDF_POINTS).round().astype(np.int64)
            )
            fct_us, frac = fct_us[keep], frac[keep]
        data.cdf[(str(scope), float(rate), str(protocol))] = (
            fct_us,
            frac,
            len(runs),
            len(runs) - len(done),
        )
    if "slowdown" not in fct_df.columns:
        return
    frame = fct_df[fct_df["finished"] != 0].assign(bucket=size_bucket(fct_df["size_bytes"]))
    means = frame.groupby(["scope", "rate_gbps", "protocol", "bucket"], observed=True)[
        "slowdown"
    ].agg(["mean", "size"])
    data.slowdown = means if data.slowdown.empty else pd.concat([data.slowdown, means])


def plot_data(fct_df: pd.DataFrame) -> PlotData:
    """:class:`PlotData` of FCT records in memory.

    Raises:
        ValueError: missing columns or an empty table.
    """
    _check_columns(fct_df)
    if fct_df.empty:
        raise ValueError("plots: FCT table is empty")
    data = PlotData()
    _add_rows(data, fct_df)
    return data


def plot_data_file(path: str | Path) -> PlotData:
    """:class:`PlotData` of a collected ``fct.parquet``, read one (scope, rate_gbps,
    protocol) at a time with only :data:`PLOT_COLUMNS` (``analysis.fct_file.FctFile``):
    peak memory is one curve's flows. Equal to ``plot_data(pd.read_parquet(path))``.

    Raises:
        FileNotFoundError: no file. ValueError: missing columns or an empty table.
    """
    from disaggsim.analysis.fct_file import FctFile

    table = FctFile(path)
    _check_columns(pd.DataFrame(columns=table.columns))
    if table.num_rows == 0:
        raise ValueError(f"plots: FCT table {table.path} is empty")
    data = PlotData()
    columns = [c for c in PLOT_COLUMNS if c in table.columns]
    for _, rows in table.iter_groups(CURVE_KEYS, columns):
        _add_rows(data, rows)
    return data


def _reduced(fct: pd.DataFrame | PlotData) -> PlotData:
    return fct if isinstance(fct, PlotData) else plot_data(fct)


def _colors(protocols: list[str]) -> dict[str, str]:
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
    return {p: palette[i % len(palette)] for i, p in enumerate(protocols)}


def fct_cdf_figure(fct: pd.DataFrame | PlotData) -> Figure:
    """CDF of FCT (µs, log x) per protocol, one panel per scope x rate.

    The y axis is the fraction of *all* flows of the panel's runs, so a protocol whose flows
    did not all finish tops out below 1 (the legend gives the unfinished count).

    Args:
        fct: CAMPAIGN_FCT rows, or their :class:`PlotData`.

    Raises:
        ValueError: missing columns or an empty table.
    """
    data = _reduced(fct)
    scopes, rates, protocols = data.scopes, data.rates, data.protocols
    colors = _colors(protocols)
    fig = Figure(
        figsize=(_PANEL_IN[0] * len(rates), _PANEL_IN[1] * len(scopes)), layout="constrained"
    )
    axes = fig.subplots(len(scopes), len(rates), squeeze=False, sharex=True, sharey=True)
    for i, scope in enumerate(scopes):
        for j, rate in enumerate(rates):
            ax = axes[i][j]
            for protocol in protocols:
                curve = data.cdf.get((scope, rate, protocol))
                if curve is None:
                    continue
                fct_us, frac, _, unfinished = curve
                if len(fct_us):  # start the curve at 0 so the first step is drawn
                    fct_us = np.concatenate([[fct_us[0]], fct_us])
                    frac = np.concatenate([[0.0], frac])
                label = protocol + (f" ({unfinished} unfinished)" if unfinished else "")
                style = _LINESTYLES[protocols.index(protocol) % len(_LINESTYLES)]
                ax.step(
                    fct_us,
                    frac,
                    where="post",
                    color=colors[protocol],
                    label=label,
                    linewidth=1.6,
                    linestyle=style,
                )
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(0, 1.02)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(f"{scope} scope, {rate:g} Gb/s", fontsize=10)
            if i == len(scopes) - 1:
                ax.set_xlabel("flow completion time (µs)")
            if j == 0:
                ax.set_ylabel("fraction of flows")
            ax.legend(loc="best", fontsize=8)
    return fig


def slowdown_by_size_figure(fct: pd.DataFrame | PlotData) -> Figure:
    """Mean slowdown per size bucket (grouped bars per protocol), one panel per scope x
    rate; finished flows only.

    Args:
        fct: CAMPAIGN_FCT rows, or their :class:`PlotData`.

    Raises:
        ValueError: missing columns or an empty table.
    """
    data = _reduced(fct)
    scopes, rates, protocols = data.scopes, data.rates, data.protocols
    colors = _colors(protocols)
    labels = [label for label, _ in SIZE_BUCKETS]
    means = data.slowdown
    top = float(means["mean"].max()) if len(means) else 1.0
    log_y = top > 20
    fig = Figure(
        figsize=(_PANEL_IN[0] * len(rates), _PANEL_IN[1] * len(scopes)), layout="constrained"
    )
    axes = fig.subplots(len(scopes), len(rates), squeeze=False, sharey=True)
    width = 0.8 / max(len(protocols), 1)
    x = np.arange(len(labels))
    for i, scope in enumerate(scopes):
        for j, rate in enumerate(rates):
            ax = axes[i][j]
            for k, protocol in enumerate(protocols):
                heights, counts = [], []
                for label in labels:
                    key = (scope, rate, protocol, label)
                    if key in means.index:
                        heights.append(float(means.loc[key, "mean"]))
                        counts.append(int(means.loc[key, "size"]))
                    else:
                        heights.append(np.nan)
                        counts.append(0)
                offset = (k - (len(protocols) - 1) / 2) * width
                ax.bar(x + offset, heights, width, color=colors[protocol], label=protocol)
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
            if log_y:
                ax.set_yscale("log")
            ax.set_xticks(x, labels, fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
            ax.set_title(f"{scope} scope, {rate:g} Gb/s", fontsize=10)
            if i == len(scopes) - 1:
                ax.set_xlabel("flow size")
            if j == 0:
                ax.set_ylabel("mean slowdown (FCT / ideal FCT)")
            ax.legend(fontsize=8)
    return fig


def plot_fct_cdf(fct: pd.DataFrame | PlotData, out_prefix: str | Path) -> list[Path]:
    """Draw :func:`fct_cdf_figure` and :func:`slowdown_by_size_figure` to PNG and PDF.

    Args:
        fct: CAMPAIGN_FCT rows (``disaggsim.schemas``), or their :class:`PlotData`
            (:func:`plot_data_file` builds it from a campaign's ``fct.parquet`` in
            bounded memory).
        out_prefix: e.g. ``results/quickstart/plots/quickstart``; writes
            ``<prefix>_fct_cdf.{png,pdf}`` and ``<prefix>_slowdown_by_size.{png,pdf}``
            (parent directories created).

    Returns:
        The four paths written, PNGs first.
    """
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    data = _reduced(fct)
    figures = {
        "fct_cdf": fct_cdf_figure(data),
        "slowdown_by_size": slowdown_by_size_figure(data),
    }
    written: list[Path] = []
    for suffix in ("png", "pdf"):
        for name, fig in figures.items():
            path = prefix.with_name(f"{prefix.name}_{name}.{suffix}")
            fig.savefig(path, dpi=150)
            written.append(path)
    return written


def latency_sweep_figure(sweep_df: pd.DataFrame) -> Figure:
    """Round-trip latency of a 4 KB page vs link rate, per scope and Table 4 scenario.

    One panel per scope (``datacenter`` = inter-rack, ``rack`` = intra-rack), log x (Gbit/s),
    y in µs; one line per scenario (``baseline``, ``rdma``, ``rdma_nic``) and the paper's
    targets as horizontal lines: 3 µs (sharks) and 5 µs (dolphins), Gao et al. OSDI'16 §3.3.

    Args:
        sweep_df: :func:`disaggsim.analysis.latency_budget.sweep`'s table.

    Raises:
        ValueError: missing columns or an empty table.
    """
    from disaggsim.analysis.latency_budget import (
        DOLPHIN_TARGET_US,
        SCENARIOS,
        SHARK_TARGET_US,
    )

    columns = ("scope", "rate_gbps", *(f"{s}_us" for s in SCENARIOS))
    for column in columns:
        if column not in sweep_df.columns:
            raise ValueError(f"plots: latency sweep lacks column {column!r}")
    if sweep_df.empty:
        raise ValueError("plots: latency sweep is empty")
    scopes = list(dict.fromkeys(sweep_df["scope"]))
    colors = _colors(list(SCENARIOS))
    fig = Figure(figsize=(_PANEL_IN[0] * len(scopes), _PANEL_IN[1]), layout="constrained")
    axes = fig.subplots(1, len(scopes), squeeze=False, sharey=True)[0]
    for ax, scope in zip(axes, scopes, strict=True):
        panel = sweep_df[sweep_df["scope"] == scope].sort_values("rate_gbps")
        for k, scenario in enumerate(SCENARIOS):
            ax.plot(
                panel["rate_gbps"],
                panel[f"{scenario}_us"],
                marker="o",
                linestyle=_LINESTYLES[k % len(_LINESTYLES)],
                color=colors[scenario],
                label=scenario,
            )
        ax.axhline(SHARK_TARGET_US, color="0.3", linewidth=0.8, linestyle=":")
        ax.axhline(DOLPHIN_TARGET_US, color="0.3", linewidth=0.8, linestyle="--")
        ax.text(panel["rate_gbps"].min(), SHARK_TARGET_US, " shark 3 µs", va="bottom", fontsize=7)
        ax.text(
            panel["rate_gbps"].min(), DOLPHIN_TARGET_US, " dolphin 5 µs", va="bottom", fontsize=7
        )
        ax.set_xscale("log")
        ax.set_xticks(panel["rate_gbps"].tolist())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(scope)
        ax.set_xlabel("link rate (Gbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, linewidth=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("round-trip latency of a 4 KB page (µs)")
    return fig


def plot_latency_sweep(sweep_df: pd.DataFrame, path: str | Path) -> Path:
    """Draw :func:`latency_sweep_figure` to ``path`` (format from its suffix), atomically.

    Raises:
        ValueError: see :func:`latency_sweep_figure`; an unsupported suffix.
    """
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt not in ("png", "pdf", "svg"):
        raise ValueError(f"plots: {target}: expected a .png, .pdf or .svg file name")
    fig = latency_sweep_figure(sweep_df)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, dpi=150, format=fmt)
    return target
