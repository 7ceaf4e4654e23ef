"""The report of a finished campaign: summary table (text) and plots, from its directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from disaggsim.analysis.plots import plot_data_file, plot_fct_cdf
from disaggsim.analysis.stats import format_summary, summarize_file


@dataclass(frozen=True)
class Report:
    """A campaign report: ``text`` (the :func:`format_summary` table), the summary
    DataFrame and the plot files written."""

    text: str
    summary: pd.DataFrame
    plots: list[Path]


def report(out_dir: str | Path, plots: bool = True, summary: pd.DataFrame | None = None) -> Report:
    """Summarize a campaign directory's ``fct.parquet`` and draw its plots.

    The table is read one group of runs at a time (``stats.summarize_file``,
    ``plots.plot_data_file``), so a campaign of any size is reported in the memory of its
    largest group, not of all its flows.

    Args:
        out_dir: a campaign's ``out_dir`` (holding ``fct.parquet``).
        plots: also write ``<out_dir>/plots/<dir name>_{fct_cdf,slowdown_by_size}.{png,pdf}``.
        summary: the table's summary if already computed (``CampaignResult.summary``);
            None computes it.

    Returns:
        :class:`Report`.

    Raises:
        FileNotFoundError: no ``fct.parquet`` (the campaign has not been collected).
    """
    out_dir = Path(out_dir)
    fct_path = out_dir / "fct.parquet"
    if not fct_path.is_file():
        raise FileNotFoundError(
            f"{fct_path}: no collected FCT table; run the campaign first "
            "(disaggsim.sim.campaign.run_campaign)"
        )
    if summary is None:
        summary = summarize_file(fct_path)
    written = (
        plot_fct_cdf(plot_data_file(fct_path), out_dir / "plots" / out_dir.name) if plots else []
    )
    return Report(format_summary(summary), summary, written)
