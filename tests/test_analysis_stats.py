"""Statistics on a hand-made FCT table; every expected value computed by hand below."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from disaggsim.analysis.stats import format_summary, size_bucket, summarize


def _row(protocol, size, fct_ns, slowdown, finished=1):
    return {
        "flow_id": 0,
        "src_host": 0,
        "dst_host": 1,
        "size_bytes": size,
        "start_ns": 0,
        "finish_ns": fct_ns if finished else -1,
        "fct_ns": fct_ns if finished else -1,
        "ideal_fct_ns": 1000,
        "slowdown": slowdown if finished else math.nan,
        "finished": finished,
        "kind": "mem_read",
        "protocol": protocol,
        "rate_gbps": 40.0,
        "scope": "rack",
        "workload": "w",
        "seed": 1,
    }


@pytest.fixture
def fct() -> pd.DataFrame:
    rows = [
        # <=4KiB: slowdowns 1,2,3,4,10 and FCTs 1,2,3,4,10 us; one unfinished 4 KiB flow
        _row("tcp", 100, 1000, 1.0),
        _row("tcp", 4096, 2000, 2.0),
        _row("tcp", 4096, 3000, 3.0),
        _row("tcp", 2000, 4000, 4.0),
        _row("tcp", 1000, 10000, 10.0),
        _row("tcp", 4096, 0, 0.0, finished=0),
        # <=64KiB (4097 is just above a page): slowdowns 2, 6; FCTs 5, 7 us
        _row("tcp", 4097, 5000, 2.0),
        _row("tcp", 65536, 7000, 6.0),
        # <=1MiB
        _row("tcp", 65537, 100000, 1.5),
        # >1MiB: only an unfinished flow
        _row("tcp", 2 * 1024 * 1024, 0, 0.0, finished=0),
        # another protocol, one flow
        _row("dctcp", 4096, 2500, 1.25),
    ]
    return pd.DataFrame(rows)


def _get(summary: pd.DataFrame, protocol: str, bucket: str) -> pd.Series:
    rows = summary[(summary["protocol"] == protocol) & (summary["bucket"] == bucket)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_size_bucket_edges():
    sizes = pd.Series([1, 4096, 4097, 65536, 65537, 1048576, 1048577])
    assert list(size_bucket(sizes).astype(str)) == [
        "<=4KiB",
        "<=4KiB",
        "<=64KiB",
        "<=64KiB",
        "<=1MiB",
        "<=1MiB",
        ">1MiB",
    ]


def test_small_bucket(fct):
    row = _get(summarize(fct), "tcp", "<=4KiB")
    assert (row.flows, row.unfinished) == (6, 1)
    # sorted 1,2,3,4,10: mean 20/5; p50: h = 4*0.5 = 2 -> x[2] = 3;
    # p99: h = 3.96 -> x[3] + 0.96 (x[4] - x[3]) = 4 + 0.96*6 = 9.76
    assert row.slowdown_mean == pytest.approx(4.0)
    assert row.slowdown_p50 == pytest.approx(3.0)
    assert row.slowdown_p99 == pytest.approx(9.76)
    assert (row.fct_us_mean, row.fct_us_p50) == pytest.approx((4.0, 3.0))
    assert row.fct_us_p99 == pytest.approx(9.76)


def test_medium_and_large_buckets(fct):
    summary = summarize(fct)
    row = _get(summary, "tcp", "<=64KiB")
    # 2, 6: mean 4, p50 = 2 + 0.5*4 = 4, p99 = 2 + 0.99*4 = 5.96; FCT 5, 7 us
    assert (row.flows, row.unfinished) == (2, 0)
    assert (row.slowdown_mean, row.slowdown_p50, row.slowdown_p99) == pytest.approx(
        (4.0, 4.0, 5.96)
    )
    assert (row.fct_us_mean, row.fct_us_p50, row.fct_us_p99) == pytest.approx((6.0, 6.0, 6.98))
    row = _get(summary, "tcp", "<=1MiB")
    assert (row.flows, row.slowdown_mean, row.slowdown_p99, row.fct_us_p50) == (1, 1.5, 1.5, 100.0)
    row = _get(summary, "tcp", ">1MiB")
    assert (row.flows, row.unfinished) == (1, 1)
    assert math.isnan(row.slowdown_mean) and math.isnan(row.fct_us_p99)


def test_all_sizes_row_counts_unfinished(fct):
    row = _get(summarize(fct), "tcp", "all")
    assert (row.flows, row.unfinished) == (10, 2)
    # slowdowns sorted 1,1.5,2,2,3,4,6,10: mean 29.5/8; p50: h=3.5 -> 2 + 0.5*(3-2);
    # p99: h = 7*0.99 = 6.93 -> 6 + 0.93*(10-6)
    assert row.slowdown_mean == pytest.approx(3.6875)
    assert row.slowdown_p50 == pytest.approx(2.5)
    assert row.slowdown_p99 == pytest.approx(9.72)
    # FCTs sorted 1,2,3,4,5,7,10,100 us: mean 132/8; p50 4.5; p99 10 + 0.93*90
    assert (row.fct_us_mean, row.fct_us_p50, row.fct_us_p99) == pytest.approx((16.5, 4.5, 93.7))


def test_groups_and_columns(fct):
    summary = summarize(fct)
    assert list(summary.columns[:5]) == ["workload", "protocol", "scope", "rate_gbps", "bucket"]
    dctcp = summary[summary["protocol"] == "dctcp"]
    assert list(dctcp["bucket"]) == ["all", "<=4KiB"]
    assert list(dctcp["slowdown_mean"]) == [1.25, 1.25]
    # empty buckets are not listed; every flow appears in exactly one bucket row
    tcp = summary[(summary["protocol"] == "tcp") & (summary["bucket"] != "all")]
    assert tcp["flows"].sum() == 10
    pooled = summarize(fct.assign(workload=["a"] * 5 + ["b"] * 6), by_workload=False)
    assert "workload" not in pooled.columns
    assert _get(pooled, "tcp", "all").flows == 10


def test_format_summary(fct):
    text = format_summary(summarize(fct))
    lines = text.splitlines()
    assert lines[0].split()[:5] == ["workload", "protocol", "scope", "Gbps", "bucket"]
    tcp_all = next(line for line in lines if " tcp " in line and " all " in line)
    assert tcp_all.split()[5:] == ["10", "2", "3.69", "2.50", "9.72", "16.5", "4.5", "93.7"]
    big = next(line for line in lines if ">1MiB" in line)
    assert big.split()[-6:] == ["-"] * 6
    assert format_summary(summarize(fct.iloc[0:0])) == "(no flows)"


def test_missing_column():
    with pytest.raises(ValueError, match="slowdown"):
        summarize(pd.DataFrame({"size_bytes": [1], "fct_ns": [1], "finished": [1]}))
