"""Plots: panel layout, CDF values and the files written, on a hand-made FCT table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from disaggsim.analysis.plots import fct_cdf_figure, plot_fct_cdf, slowdown_by_size_figure


def _fct() -> pd.DataFrame:
    rows = []
    for protocol, scale in (("tcp", 3.0), ("dctcp", 1.5)):
        for scope in ("datacenter", "rack"):
            for rate in (40.0, 100.0):
                for i, size in enumerate((1000, 4096, 60000, 500000, 2000000)):
                    fct_ns = int(scale * (i + 1) * 2000)
                    rows.append(
                        {
                            "flow_id": i,
                            "size_bytes": size,
                            "fct_ns": fct_ns,
                            "slowdown": scale * (i + 1),
                            "finished": 1,
                            "protocol": protocol,
                            "scope": scope,
                            "rate_gbps": rate,
                            "kind": "mem_read",
                            "workload": "w",
                            "seed": 1,
                        }
                    )
    frame = pd.DataFrame(rows)
    # one unfinished tcp flow in (rack, 100)
    mask = (frame.protocol == "tcp") & (frame.scope == "rack") & (frame.rate_gbps == 100.0)
    index = frame[mask].index[-1]
    frame.loc[index, ["fct_ns", "finished"]] = [-1, 0]
    frame.loc[index, "slowdown"] = math.nan
    return frame


def test_cdf_panels_and_values():
    fig = fct_cdf_figure(_fct())
    axes = fig.get_axes()
    assert len(axes) == 4  # 2 scopes x 2 rates
    titles = [ax.get_title() for ax in axes]
    assert titles == [
        "datacenter scope, 40 Gb/s",
        "datacenter scope, 100 Gb/s",
        "rack scope, 40 Gb/s",
        "rack scope, 100 Gb/s",
    ]
    rack100 = axes[3]
    lines = {line.get_label(): line for line in rack100.get_lines()}
    assert set(lines) == {"dctcp", "tcp (1 unfinished)"}
    tcp = lines["tcp (1 unfinished)"]
    # 4 finished of 5 flows: FCTs 6, 12, 18, 24 us; the CDF rises from 0 at the first FCT
    # and stops at 4/5
    assert np.allclose(tcp.get_xdata(), [6.0, 6.0, 12.0, 18.0, 24.0])
    assert np.allclose(tcp.get_ydata(), [0.0, 0.2, 0.4, 0.6, 0.8])
    assert rack100.get_xscale() == "log"
    dctcp = lines["dctcp"]
    assert np.allclose(dctcp.get_ydata()[-1], 1.0)


def test_slowdown_bars():
    fig = slowdown_by_size_figure(_fct())
    ax = fig.get_axes()[0]  # datacenter, 40
    heights = {}
    for container in ax.containers:
        heights[container.get_label()] = [bar.get_height() for bar in container]
    # buckets <=4KiB (flows 0,1), <=64KiB (2), <=1MiB (3), >1MiB (4); tcp slowdown 3(i+1)
    assert heights["tcp"] == pytest.approx([(3 + 6) / 2, 9, 12, 15])
    assert heights["dctcp"] == pytest.approx([(1.5 + 3) / 2, 4.5, 6, 7.5])


def test_files_written(tmp_path):
    paths = plot_fct_cdf(_fct(), tmp_path / "plots" / "q")
    assert [p.name for p in paths] == [
        "q_fct_cdf.png",
        "q_slowdown_by_size.png",
        "q_fct_cdf.pdf",
        "q_slowdown_by_size.pdf",
    ]
    for path in paths:
        head = path.read_bytes()[:5]
        assert head == (b"\x89PNG\r" if path.suffix == ".png" else b"%PDF-")
    with pytest.raises(ValueError, match="empty"):
        plot_fct_cdf(_fct().iloc[0:0], tmp_path / "x")
