"""report(): reads a campaign directory, prints the summary, writes the plots."""

from __future__ import annotations

import pytest
from test_analysis_plots import _fct

from disaggsim.analysis.report import report


def test_report_from_directory(tmp_path):
    out = tmp_path / "camp"
    with pytest.raises(FileNotFoundError, match="no collected FCT table"):
        report(out)
    out.mkdir()
    _fct().to_parquet(out / "fct.parquet")
    result = report(out)
    # 2 protocols x 2 scopes x 2 rates groups, each with "all" + 4 size buckets
    assert len(result.summary) == 8 * 5
    rows = [line.split() for line in result.text.splitlines()[2:] if line.strip()]
    assert len(rows) == 40
    # tcp, rack, 100 Gb/s, all sizes: 5 flows, 1 unfinished; slowdowns 3, 6, 9, 12 -> mean 7.5
    tcp = next(r for r in rows if r[1:5] == ["tcp", "rack", "100", "all"])
    assert tcp[5:8] == ["5", "1", "7.50"]
    assert sorted(p.name for p in result.plots) == [
        "camp_fct_cdf.pdf",
        "camp_fct_cdf.png",
        "camp_slowdown_by_size.pdf",
        "camp_slowdown_by_size.png",
    ]
    assert all(p.parent == out / "plots" for p in result.plots)
