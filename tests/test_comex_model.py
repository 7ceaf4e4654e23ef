"""COMEX's Eq. (1) and the memory-node queue (``disaggsim.analysis.comex``), against values
derived by hand from the paper (002, §3.3.3) and from Lindley's recursion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from disaggsim.analysis import comex


def test_eq1_gives_the_papers_worked_example() -> None:
    """§3.3.3: 10 compute and 12 memory nodes, P -> 1: RTT = 4.54 + 6.0 + 6.0 x 9/12 =
    15.04 µs, and the threshold 50 pages/µs x 15.04 µs = 752 pages ("some 750")."""
    rtt = comex.eq1_rtt_ns(10, 12, 1.0)
    assert rtt == pytest.approx(15_040)
    assert comex.replenish_threshold_pages(rtt) == pytest.approx(752)


@pytest.mark.parametrize(
    ("n", "m", "p", "hand_ns"),
    [
        (1, 4, 1.0, 10_540),  # alone: no one to wait for
        (5, 4, 0.5, 10_540 + 6_000 * 0.5),  # 4 others x 0.5 / 4 = 0.5 requests ahead
        (17, 4, 1.0, 10_540 + 6_000 * 4),  # 16 / 4 = 4 requests ahead
        (9, 2, 0.25, 10_540 + 6_000 * 1),  # 8 x 0.25 / 2 = 1
    ],
)
def test_eq1_by_hand(n: int, m: int, p: float, hand_ns: float) -> None:
    assert comex.eq1_rtt_ns(n, m, p) == pytest.approx(hand_ns)


def test_expected_others_sums_the_binomial_as_the_paper_derives() -> None:
    """N = 3, M = 2, P = 1: P' = 1/2 over 2 others: P(R=1) = 2 x 1/4, P(R=2) = 1/4, so
    E[R] = 1 x 1/2 + 2 x 1/4 = 1 = (N - 1) P / M; and the closed form elsewhere."""
    assert comex.expected_others(3, 2, 1.0) == pytest.approx(1.0)
    for n, m, p in [(10, 12, 1.0), (33, 7, 0.3), (2, 1, 0.9)]:
        assert comex.expected_others(n, m, p) == pytest.approx((n - 1) * p / m)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="N >= 1"):
        comex.eq1_rtt_ns(0, 1, 0.5)
    with pytest.raises(ValueError, match="0 <= P <= 1"):
        comex.expected_others(2, 1, 1.5)


def test_fifo_waits_by_hand() -> None:
    """Three requests at once on a 6 µs server wait 0, 6, 12 µs; one arriving at 20 µs,
    after the server freed at 18 µs, waits 0; arrivals 1 µs apart wait 0, 5, 10 µs."""
    assert comex.fifo_waits([0, 0, 0, 20_000], 6_000).tolist() == [0, 6_000, 12_000, 0]
    assert comex.fifo_waits([0, 1_000, 2_000], 6_000).tolist() == [0, 5_000, 10_000]
    with pytest.raises(ValueError, match="non-decreasing"):
        comex.fifo_waits([5, 1], 6_000)


def test_slotted_requests_follow_the_models_arrivals() -> None:
    """P = 1 sends one request per node per slot; P = 0 none; at P = 0.3 the count is
    Binomial(N x slots, 0.3): within 4 standard deviations, and every memory node is used."""
    full = comex.slotted_requests(4, 3, 1.0, 10, 6_000, seed=1)
    assert len(full) == 40 and sorted(set(full[:, 0].tolist())) == [6_000 * i for i in range(10)]
    assert len(comex.slotted_requests(4, 3, 0.0, 10, 6_000, seed=1)) == 0
    n, slots, p = 8, 2_000, 0.3
    got = comex.slotted_requests(n, 4, p, slots, 6_000, seed=2)
    sd = math.sqrt(n * slots * p * (1 - p))
    assert abs(len(got) - n * slots * p) < 4 * sd
    assert set(np.unique(got[:, 2]).tolist()) == {0, 1, 2, 3}
