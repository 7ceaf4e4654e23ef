"""Noise control of ``disaggsim emulate`` (issue #22 item 4): the bootstrap interval of a
ratio of medians covers the true ratio at its nominal rate on known distributions, a
straddling interval is never a pass or a fail, and the dolphin/shark and Table 3 readings
follow the verdicts; the machine-load readers on hand-written /proc files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.swapdev import emulate, jct_stats
from disaggsim.swapdev.jct_stats import RatioInterval


def _coverage(draw_reference: object, ratio: float, n: int, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for trial in range(trials):
        reference = draw_reference(rng, n)  # type: ignore[operator]
        treated = ratio * draw_reference(rng, n)  # type: ignore[operator]
        ci = jct_stats.ratio_of_medians_ci(treated, reference, resamples=1000, seed=trial)
        hits += ci.low <= ratio <= ci.high
    return hits / trials


@pytest.mark.parametrize("n", [6, 12])
def test_interval_covers_the_true_ratio_of_medians_on_lognormal_jcts(n: int) -> None:
    """JCTs 10 s x lognormal(0, 3 %), the treated ones scaled by 1.08: the population
    medians' ratio is exactly 1.08 (a scale family). A 95 % interval must cover it in about
    95 % of 300 independent sweeps; 0.90 leaves the Monte Carlo error (binomial sd 1.3 %)
    and the percentile bootstrap's known small-sample error (Efron & Tibshirani §13.3)."""
    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        return 10.0 * np.exp(rng.normal(0.0, 0.03, size))

    assert _coverage(draw, 1.08, n, 300, seed=n) >= 0.90


@pytest.mark.parametrize("sigma", [0.03, 0.07])
def test_a_verdict_needs_the_runs_at_which_the_interval_covers(sigma: float) -> None:
    """Why ``emulate.MIN_RUNS`` is 3: with the JCTs of the test above (lognormal, CV 3 %,
    and 7 % as the Spark presets'), the nominal 95 % interval of 2 runs against 2 covers
    the true ratio in ~60 % of sweeps (a bootstrap of 2 runs has 3 distinct medians per
    side), far below the 90 % asked of it; at ``MIN_RUNS`` runs it meets the 90 %.
    Summary and stopping rule withhold any verdict below ``MIN_RUNS`` runs
    (test_swapdev_emulate)."""
    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        return 10.0 * np.exp(rng.normal(0.0, sigma, size))

    assert _coverage(draw, 1.08, 2, 300, seed=2) < 0.75
    assert _coverage(draw, 1.08, emulate.MIN_RUNS, 300, seed=3) >= 0.90


def test_interval_covers_the_ratio_with_preempted_runs() -> None:
    """A shared machine's heavy tail: each run is preempted with probability 0.2 and then
    takes 1.5x longer. The treated JCTs are the same distribution scaled by 1.05, so the
    medians' ratio is 1.05 however heavy the tail; coverage as above, 10 runs per point."""
    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        base = 3.0 * np.exp(rng.normal(0.0, 0.02, size))
        return np.where(rng.random(size) < 0.2, 1.5 * base, base)

    assert _coverage(draw, 1.05, 10, 300, seed=7) >= 0.90


def test_interval_narrows_with_repeats() -> None:
    """The half-width shrinks like 1/sqrt(n): at 3 % run-to-run noise, 40 runs per sample
    give about half the width of 10 (within a factor 1.5 either way over 100 sweeps)."""
    rng = np.random.default_rng(3)

    def width(n: int) -> float:
        return float(np.median([jct_stats.ratio_of_medians_ci(
            np.exp(rng.normal(0, 0.03, n)), np.exp(rng.normal(0, 0.03, n)),
            resamples=500, seed=i).half_width for i in range(100)]))

    assert 0.5 / 1.5 <= width(40) / width(10) <= 0.5 * 1.5


def test_identical_runs_give_a_point_interval() -> None:
    """Every resample of constant samples has the same medians: 6 s / 4 s = 1.5 exactly."""
    ci = jct_stats.ratio_of_medians_ci([6.0, 6.0, 6.0], [4.0, 4.0])
    assert (ci.estimate, ci.low, ci.high) == (1.5, 1.5, 1.5)


def test_bad_samples_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one JCT"):
        jct_stats.ratio_of_medians_ci([], [1.0])
    with pytest.raises(ValueError, match="finite and > 0"):
        jct_stats.ratio_of_medians_ci([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="confidence"):
        jct_stats.ratio_of_medians_ci([1.0], [1.0], confidence=1.0)


jcts = st.lists(st.floats(0.1, 100.0), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(treated=jcts, reference=jcts, scale=st.floats(0.25, 4.0))
def test_interval_scales_with_the_treated_jcts(
    treated: list[float], reference: list[float], scale: float
) -> None:
    """A ratio of medians is equivariant: JCTs c times longer give an estimate and bounds
    c times larger (same resamples: same seed)."""
    a = jct_stats.ratio_of_medians_ci(treated, reference)
    b = jct_stats.ratio_of_medians_ci([scale * t for t in treated], reference)
    assert b.estimate == pytest.approx(scale * a.estimate, rel=1e-9)
    assert (b.low, b.high) == pytest.approx((scale * a.low, scale * a.high), rel=1e-9)


bounds = st.floats(0.5, 2.0)


@given(low=bounds, high=bounds)
def test_a_straddling_interval_is_undecided(low: float, high: float) -> None:
    """The issue's rule: an interval holding the threshold inside it is neither a pass nor
    a fail; one wholly at or below is a pass, one wholly above a fail."""
    low, high = min(low, high), max(low, high)
    v = jct_stats.verdict(RatioInterval((low + high) / 2, low, high), 1.05)
    if low <= 1.05 < high:
        assert v == "undecided"
    elif high <= 1.05:
        assert v == "pass"
    else:
        assert v == "fail"


def test_settled_points_need_no_more_rounds() -> None:
    # +-1 %: narrow enough whatever its position; +-4 % below 1.05: decided (pass).
    assert jct_stats.settled(RatioInterval(1.05, 1.04, 1.06), 1.05)
    assert jct_stats.settled(RatioInterval(0.98, 0.94, 1.02), 1.05)
    # +-4 % around 1.05: undecided and wide: another round.
    assert not jct_stats.settled(RatioInterval(1.05, 1.01, 1.09), 1.05)


def test_dolphins_and_sharks_from_the_5us_40gbps_point() -> None:
    """Figure 2's split from hand-made verdicts: app at 25 % passes 5 us / 40 Gb/s
    (dolphin); at 10 % it fails (shark); at 50 % its interval straddles (undecided). The
    latency it needs at 40 Gb/s: 1, 3, 5 pass and 10 fails -> 5 us (decided); at 100 Gb/s
    3 passes and 5 is undecided -> 3 us, undecided."""
    rows: list[dict[str, object]] = []
    verdicts = {
        0.25: {(1000, 40): "pass", (3000, 40): "pass", (5000, 40): "pass",
               (10000, 40): "fail", (3000, 100): "pass", (5000, 100): "undecided"},
        0.1: {(5000, 40): "fail"},
        0.5: {(5000, 40): "undecided"},
    }
    for fraction, points in verdicts.items():
        for (lat, gbps), v in points.items():
            rows.append({"kind": "fixed", "local_fraction": fraction, "latency_ns": lat,
                         "bandwidth_bps": gbps * 10**9, "verdict": v, "relative_jct": 1.0,
                         "ci_low": 0.9, "ci_high": 1.1, "repeats_ok": 5})
    got = {r["local_fraction"]: r for r in emulate.classify(rows)}
    assert {f: r["class"] for f, r in got.items()} == {
        0.25: "dolphin", 0.1: "shark", 0.5: "undecided"}
    assert got[0.25]["max_latency_ns_at_40gbps"] == 5000
    assert got[0.25]["status_at_40gbps"] == "decided"
    assert got[0.25]["max_latency_ns_at_100gbps"] == 3000
    assert got[0.25]["status_at_100gbps"] == "undecided"
    text = emulate.format_classification(list(got.values()))
    assert "dolphin" in text and "5 us" in text and "3 us?" in text


def test_table3_stops_at_an_undecided_fraction() -> None:
    """Walking down from 90 %: pass, pass, then undecided at 25 % -> 50 %, undecided (the
    true requirement may be lower); with a fail instead the same 50 % is decided."""
    def summary(at25: str) -> list[dict[str, object]]:
        return [{"kind": "fixed", "latency_ns": 5000, "bandwidth_bps": 40 * 10**9,
                 "local_fraction": f, "verdict": v}
                for f, v in [(0.9, "pass"), (0.5, "pass"), (0.25, at25)]]

    assert [(r["min_local_fraction"], r["status"]) for r in emulate.table3(
        summary("undecided"))] == [(0.5, "undecided")]
    assert [(r["min_local_fraction"], r["status"]) for r in emulate.table3(
        summary("fail"))] == [(0.5, "decided")]


def test_steal_share_and_load_average_from_proc_files(tmp_path: Path) -> None:
    """proc(5) cpu line: user nice system idle iowait irq softirq steal guest guest_nice.
    Between the readings 100 + 0 + 50 + 800 + 0 + 0 + 0 + 50 = 1000 jiffies passed, 50 of
    them stolen: 5 %. Guest time (already inside user) is not added."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  1000 0 500 8000 0 0 0 100 7 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n")
    before = jct_stats.read_cpu_times(stat)
    stat.write_text("cpu  1100 0 550 8800 0 0 0 150 99 0\n")
    after = jct_stats.read_cpu_times(stat)
    assert jct_stats.steal_fraction(before, after) == pytest.approx(0.05)
    assert jct_stats.steal_fraction(after, after) is None
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("2.39 1.10 1.10 3/402 12345\n")
    assert jct_stats.load_average_1m(loadavg) == 2.39
