"""Attribution of accesses to requesters (paper §4.1), hand-made cases with exact answers."""

from __future__ import annotations

import pandas as pd
import pytest

from disaggsim.traces.attribution import DEFAULT_TOLERANCE_NS, attribute

MESSAGES = pd.DataFrame(
    {
        "start_ns": [1000, 5000, 1500],
        "end_ns": [2000, 5000, 1500],
        "src_node": [0, 1, 0],
        "dst_node": [1, 0, 2],
        "size_bytes": [10000, 4096, 3000],
    }
)


def accesses(rows: list[tuple[int, int, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["node", "time_ns", "op", "size_bytes"])


def test_hand_made_case_tolerance_100() -> None:
    acc = accesses(
        [
            (0, 950, "R", 4096),  # a0: m0 window [900, 2100] -> node 1; m0 left 5904
            (0, 1200, "R", 4096),  # a1: m2 not open yet; m0 -> node 1; m0 left 1808
            (0, 1500, "R", 2048),  # a2: m0 too small now; m2 (3000) -> node 2
            (0, 1550, "R", 1000),  # a3: m0 (earliest, 1808 left) -> node 1
            (0, 2101, "R", 100),  # a4: after m0's window end 2100 -> local
            (0, 5100, "W", 4096),  # a5: write at 0, message 1 -> 0 at its window edge -> node 1
            (0, 5101, "W", 1),  # a6: one ns past the window -> local
            (1, 5000, "R", 4096),  # a7: read at 1, message 1 -> 0 (read pool) -> node 0
            (2, 1500, "W", 10),  # a8: write at 2 can use m2 (0 -> 2): 10 of 3000 B -> node 0
            (3, 1000, "R", 1),  # a9: node 3 has no messages -> local
        ]
    )
    out, report = attribute(acc, MESSAGES, tolerance_ns=100)
    assert out["requester_node"].tolist() == [1, 1, 2, 1, 0, 1, 0, 0, 0, 3]
    assert out["message_index"].tolist() == [0, 0, 2, 0, -1, 1, -1, 1, 2, -1]
    per = report.per_node.set_index("node")
    assert per.loc[0, "accesses"] == 7 and per.loc[0, "reattributed_accesses"] == 5
    assert per.loc[0, "reattributed_bytes"] == 4096 + 4096 + 2048 + 1000 + 4096
    assert per.loc[1, "reattributed_bytes"] == 4096
    assert per.loc[2, "reattributed_bytes"] == 10
    assert per.loc[3, "reattributed_accesses"] == 0
    assert report.reattributed_accesses == 7
    assert report.matched_messages == 3
    assert list(out.columns[:4]) == ["node", "time_ns", "op", "size_bytes"]


def test_time_order_decides_who_consumes_the_bytes() -> None:
    # Given in reverse time order: the earlier access (t=1100) gets the 10000 B message.
    acc = accesses([(0, 1900, "R", 8000), (0, 1100, "R", 8000)])
    out, _ = attribute(acc, MESSAGES.iloc[:1], tolerance_ns=0)
    assert out["requester_node"].tolist() == [0, 1]


def test_zero_tolerance_window_is_inclusive() -> None:
    acc = accesses([(0, 1000, "R", 1), (0, 2000, "R", 1), (0, 999, "R", 1), (0, 2001, "R", 1)])
    out, _ = attribute(acc, MESSAGES.iloc[:1], tolerance_ns=0)
    assert out["requester_node"].tolist() == [1, 1, 0, 0]


def test_volume_exactly_consumed() -> None:
    acc = accesses([(0, 1500, "R", 6000), (0, 1600, "R", 4000), (0, 1700, "R", 1)])
    out, _ = attribute(acc, MESSAGES.iloc[:1], tolerance_ns=0)
    assert out["requester_node"].tolist() == [1, 1, 0]


def test_default_tolerance_is_table1_hdd_latency() -> None:
    assert DEFAULT_TOLERANCE_NS == 1_000_000  # paper Table 1: CPU-Disk (HDD) 10^6 ns


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="lacks columns"):
        attribute(accesses([]).drop(columns="op"), MESSAGES)
    with pytest.raises(ValueError, match="op must be"):
        attribute(accesses([(0, 1, "X", 1)]), MESSAGES)
    with pytest.raises(ValueError, match="tolerance"):
        attribute(accesses([]), MESSAGES, tolerance_ns=-1)
