"""Eq. (1) of Ruan et al. (HPE composable memory, papers/004 §4.3) against the paper's own
numbers: Table 3's theoretical column, the sum C a measurement implies, and where the
paper's Table 3 measurements leave the model (thrashing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from disaggsim.analysis import hpe_cm


def test_eq1_gives_table3_theoretical_column_to_two_decimals() -> None:
    # §5.2: "2/5 = 0.4, 4/13 = 0.31, 8/29 = 0.28 and 16/61 = 0.26" at D = 4, sum C = 0.
    for n, (theory, *_measured) in hpe_cm.TABLE3.items():
        assert round(hpe_cm.performance_ratio(n, hpe_cm.PAPER_D), 2) == theory
    ratios = hpe_cm.performance_ratio([2, 4, 8, 16], 4.0)
    assert np.allclose(ratios, [2 / 5, 4 / 13, 8 / 29, 16 / 61], rtol=0, atol=1e-15)


def test_eq1_limits_and_sum_c() -> None:
    # Full memory (n = 1) is ratio 1; D = 1 (no paging penalty) is ratio 1 at every n; a
    # large n tends to 1/D (§4.3: "the degradation rate will approximate to 1/D").
    assert hpe_cm.performance_ratio(1, 4.0) == 1.0
    assert hpe_cm.performance_ratio(7, 1.0) == 1.0
    assert math.isclose(hpe_cm.performance_ratio(1e9, 4.0), 0.25, rel_tol=1e-8)
    # sum C adds to the denominator: n = 4, D = 4, sum C = 3 -> 4 / (1 + 12 + 3) = 0.25.
    assert hpe_cm.performance_ratio(4, 4.0, 3.0) == 0.25
    assert hpe_cm.sum_c_from_ratio(4, 0.25, 4.0) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.5, 4.0), "n: expected"),
        ((2, 0.0), "d_paging"),
        ((2, float("nan")), "d_paging"),
        ((2, 4.0, -10.0), "sum_c"),
    ],
)
def test_eq1_rejects_bad_input(args: tuple[float, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        hpe_cm.performance_ratio(*args)


def test_fit_on_table3_finds_the_papers_thrashing_onset() -> None:
    # 64 GB column at D = 4: 0.41, 0.28 within 10 % of 0.40, 0.31 (+2.5 %, -9.0 %); 0.22
    # is 20 % below 0.276 and 0.18 31 % below 0.262: thrashing from multiple 8, as §5.2's
    # hypothesis "before the multiple reaches 8" says.
    ns = list(hpe_cm.TABLE3)
    raw = [row[2] for row in hpe_cm.TABLE3.values()]
    fit = hpe_cm.fit_sum_c(ns, raw, hpe_cm.PAPER_D)
    assert fit.thrashing_multiple == 8
    assert fit.relative_error[2] == pytest.approx(0.22 / (8 / 29) - 1)
    # C fitted on n = 2, 4: sum C = 2/0.41 - 5 = -0.122, 4/0.28 - 13 = 1.286;
    # C = (2 * -0.122 + 4 * 1.286) / (4 + 16).
    s2, s4 = 2 / 0.41 - 5, 4 / 0.28 - 13
    assert fit.sum_c[:2] == pytest.approx((s2, s4))
    assert fit.c_per_section == pytest.approx((2 * s2 + 4 * s4) / 20)
    # The "+3 %" compensated column is within 10 % up to 8 (-9.4 %) and 20 % off at 16.
    comp = [row[3] for row in hpe_cm.TABLE3.values()]
    assert hpe_cm.fit_sum_c(ns, comp, hpe_cm.PAPER_D).thrashing_multiple == 16
    # 128 GB (no multiple 16): all within 10 %, no onset, C fitted over every point.
    fit128 = hpe_cm.fit_sum_c([2, 4, 8], [0.45, 0.31, 0.27], hpe_cm.PAPER_D)
    assert fit128.thrashing_multiple is None and fit128.c_per_section is not None


def test_fit_a_dip_followed_by_recovery_is_not_an_onset_and_order_does_not_matter() -> None:
    model = hpe_cm.performance_ratio([2, 4, 8], 4.0)
    measured = [model[0], model[1] * 0.5, model[2]]
    fit = hpe_cm.fit_sum_c([8, 2, 4], [measured[2], measured[0], measured[1]], 4.0)
    assert fit.multiples == (2, 4, 8) and fit.thrashing_multiple is None
    # Exact model values imply sum C = 0.
    assert fit.sum_c[0] == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize(
    ("ns", "rs", "match"),
    [
        ([2, 4], [0.4], "equal non-zero lengths"),
        ([], [], "equal non-zero lengths"),
        ([2, 2], [0.4, 0.4], "repeated"),
        ([2], [0.0], "ratio"),
    ],
)
def test_fit_rejects_bad_input(ns: list[float], rs: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        hpe_cm.fit_sum_c(ns, rs, 4.0)


def test_overcommit_comparison_puts_table3_beside_the_model() -> None:
    # A summary holding the paper's own 64 GB column as "measured" for one device and the
    # full-memory reference rows (skipped): the comparison gives Table 3's errors and onset.
    import pandas as pd

    ns = list(hpe_cm.TABLE3)
    rows = [
        {"over_commit": n, "device": "memory", "ratio": 1.0, "ratio_min": 1.0, "ratio_max": 1.0}
        for n in ns
    ]
    rows += [
        {
            "over_commit": n,
            "device": "paper-64GB",
            "ratio": r[2],
            "ratio_min": r[2],
            "ratio_max": r[2],
        }
        for n, r in hpe_cm.TABLE3.items()
    ]
    points, fits = hpe_cm.overcommit_comparison(pd.DataFrame(rows), {"paper-64GB": 4.0})
    assert list(points["over_commit"]) == ns
    assert points["model"].round(2).tolist() == [r[0] for r in hpe_cm.TABLE3.values()]
    fit = fits.set_index("device").loc["paper-64GB"]
    assert fit["thrashing_multiple"] == 8
    # Largest |error| up to 8: 0.22 vs 8/29 (20.3 %).
    assert fit["max_abs_error_to_8"] == pytest.approx(1 - 0.22 / (8 / 29))


def test_fit_d_recovers_the_papers_d_from_its_own_measurements() -> None:
    # Exact Eq. (1) values at D = 4 give back 4; Table 3's 128 GB measurements give
    # (1 * (2/0.45 - 1) + 3 * (4/0.31 - 1) + 7 * (8/0.27 - 1)) / (1 + 9 + 49) = 4.06,
    # Table 2's 3.8 / 0.94 = 4.04.
    ns = [1.2, 2, 4, 8, 16]
    assert hpe_cm.fit_d_paging(ns, list(hpe_cm.performance_ratio(ns, 4.0))) == pytest.approx(4)
    expected = (1 * (2 / 0.45 - 1) + 3 * (4 / 0.31 - 1) + 7 * (8 / 0.27 - 1)) / 59
    assert hpe_cm.fit_d_paging([2, 4, 8], [0.45, 0.31, 0.27]) == pytest.approx(expected)
    assert round(expected, 2) == 4.06
    with pytest.raises(ValueError, match="> 1"):
        hpe_cm.fit_d_paging([1], [1.0])
