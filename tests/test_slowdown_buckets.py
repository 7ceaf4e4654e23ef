"""HPCC Fig. 11 statistics (disaggsim.analysis.slowdown_buckets) on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from disaggsim.analysis import slowdown_buckets as sb


def test_groups_by_count_hand_computed() -> None:
    # 10 flows, step 50 %: group 0 = the 5 smallest (sizes 100..500), group 1 = 600..1000.
    # Given shuffled, to check the sort by size; slowdown 0.5 is floored to 1 (HPCC's
    # "slow<1?1:slow").
    size = np.array([600, 100, 900, 300, 1000, 200, 700, 500, 800, 400])
    slow = np.array([9.0, 0.5, 6.0, 3.0, 10.0, 2.0, 7.0, 5.0, 8.0, 4.0])
    table = sb.slowdown_by_size_percentile(size, slow, step_percent=50)
    # group 0 sorted slowdowns [1, 2, 3, 4, 5]: p50 = a[int(5 * .5)] = a[2] = 3,
    # p95 = a[int(4.75)] = a[4] = 5, p99 = a[int(4.95)] = a[4] = 5; largest size 500.
    # group 1 [6, 7, 8, 9, 10]: 8, 10, 10; largest size 1000.
    expected = pd.DataFrame(
        {
            "size_pct": [0, 50],
            "size_max_bytes": [500, 1000],
            "flows": [5, 5],
            "slowdown_p50": [3.0, 8.0],
            "slowdown_p95": [5.0, 10.0],
            "slowdown_p99": [5.0, 10.0],
        }
    )
    pd.testing.assert_frame_equal(table, expected)


def test_group_bounds_use_integer_division() -> None:
    # 7 flows, step 25 %: bounds k * 25 * 7 // 100 = 0, 1, 3, 5, 7 -> groups of 1, 2, 2, 2
    # flows (fct_analysis.py's l = i * n / 100 under Python 2).
    size = np.arange(1, 8) * 1000
    slow = np.arange(1, 8, dtype=float)
    table = sb.slowdown_by_size_percentile(size, slow, step_percent=25)
    assert table["flows"].tolist() == [1, 2, 2, 2]
    assert table["size_max_bytes"].tolist() == [1000, 3000, 5000, 7000]
    # group [2, 3]: p50 = a[int(1.0)] = 3; group [6, 7]: p99 = a[int(1.98)] = 7
    assert table["slowdown_p50"].tolist() == [1.0, 3.0, 5.0, 7.0]
    assert table["slowdown_p99"].tolist() == [1.0, 3.0, 5.0, 7.0]


def test_too_few_flows_leave_groups_out() -> None:
    # 3 flows in 20 groups: bound(k) = k * 5 * 3 // 100 first reaches 1 at k = 7 (105),
    # 2 at k = 14 (210), 3 at k = 20: only the groups starting at 30, 65 and 95 % (k = 6,
    # 13, 19) hold a flow, one each.
    table = sb.slowdown_by_size_percentile(np.array([10, 20, 30]), np.array([1.0, 2.0, 3.0]))
    assert table["size_pct"].tolist() == [30, 65, 95]
    assert table["size_max_bytes"].tolist() == [10, 20, 30]


def test_hpcc_percentile_and_errors() -> None:
    assert sb.hpcc_percentile(np.array([1.0, 2.0, 3.0, 4.0]), 0.5) == 3.0
    with pytest.raises(ValueError, match="no values"):
        sb.hpcc_percentile(np.array([]), 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        sb.hpcc_percentile(np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="one length"):
        sb.slowdown_by_size_percentile(np.array([1, 2]), np.array([1.0]))
    with pytest.raises(ValueError, match="no finished flows"):
        sb.slowdown_by_size_percentile(np.array([], dtype=int), np.array([]))
    with pytest.raises(ValueError, match="non-finite"):
        sb.slowdown_by_size_percentile(np.array([1]), np.array([np.nan]))
    with pytest.raises(ValueError, match="divide 100"):
        sb.slowdown_by_size_percentile(np.array([1]), np.array([1.0]), step_percent=7)


def test_tail_ratio_over_small_groups() -> None:
    size = np.array([100, 200, 300, 400])
    base = sb.slowdown_by_size_percentile(size, np.array([4.0, 8.0, 3.0, 9.0]), 25)
    other = sb.slowdown_by_size_percentile(size, np.array([2.0, 2.0, 3.0, 1.0]), 25)
    # groups of one flow; sizes <= 300: ratios 2, 4, 1 -> 4 (the 400 B group's 9 is ignored)
    assert sb.tail_ratio(base, other, "slowdown_p99", 300) == 4.0
    with pytest.raises(ValueError, match="no group"):
        sb.tail_ratio(base, other, "slowdown_p99", 50)
    with pytest.raises(ValueError, match="different flows"):
        sb.tail_ratio(base, other.iloc[1:], "slowdown_p99", 300)
