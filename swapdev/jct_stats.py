"""Noise control for ``disaggsim emulate``: confidence intervals of a relative JCT, the
pass / fail / undecided verdict at the paper's 5 % threshold, and the machine's load.

The paper takes "the median result" of 10 runs to compensate EC2's noise (§3.1). On a
shared 2-core VM the noise is larger than the 5 % effect Table 3 and the dolphin / shark
split classify, so every relative JCT here carries an interval and a point is only called
a pass or a fail when its interval lies on one side of the threshold (issue #22, item 4).

Method: the percentile bootstrap of the ratio of two medians, median(JCT at the point) /
median(zero-delay JCT), the two samples resampled independently (Efron and Tibshirani,
*An Introduction to the Bootstrap*, Chapman & Hall 1993, §13.3 "The percentile interval",
and ch. 8 for two-sample problems). It assumes only that the runs of a point are
exchangeable; the zero-delay reference runs in every round of the sweep, between the
points, so a slow drift of the machine's load reaches both samples alike.

The machine's load per run: the 1-minute load average (``/proc/loadavg``) at the run's end
and the fraction of CPU time stolen by the hypervisor during the run (``steal`` over all
the ``cpu`` line's jiffies of ``/proc/stat``, proc(5)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import numpy as np

#: Bootstrap resamples per interval: the percentile interval's Monte Carlo error at 4000
#: resamples is about 0.3 % of the interval's coverage (Efron and Tibshirani §19.3 advise
#: >= 1000 for percentile intervals).
RESAMPLES: Final = 4000
#: Default confidence of the intervals.
CONFIDENCE: Final = 0.95
#: The issue's precision target: an interval no wider than +-1.5 % of the relative JCT at
#: the 5 % threshold (issue #22, item 4).
HALF_WIDTH: Final = 0.015

Verdict = Literal["pass", "fail", "undecided"]


@dataclass(frozen=True)
class RatioInterval:
    """median(treated) / median(reference) and its bootstrap interval (dimensionless)."""

    estimate: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (a relative JCT; 0.015 = +-1.5 %)."""
        return (self.high - self.low) / 2


def ratio_of_medians_ci(
    treated: Sequence[float],
    reference: Sequence[float],
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> RatioInterval:
    """Percentile-bootstrap interval of median(treated) / median(reference).

    Args:
        treated: JCTs (s) of the runs at one point, > 0.
        reference: JCTs (s) of the zero-delay runs at the same local fraction, > 0.
        confidence: two-sided coverage in (0, 1).
        resamples: bootstrap resamples (each sample resampled with replacement).
        seed: the resampling's seed (the same inputs give the same interval).

    Raises:
        ValueError: an empty sample, a JCT <= 0 or not finite, confidence not in (0, 1).
    """
    t = np.asarray(treated, dtype=float)
    r = np.asarray(reference, dtype=float)
    if t.size == 0 or r.size == 0:
        raise ValueError("ratio_of_medians_ci: both samples need at least one JCT")
    if not (np.isfinite(t).all() and np.isfinite(r).all() and (t > 0).all() and (r > 0).all()):
        raise ValueError("ratio_of_medians_ci: JCTs must be finite and > 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a value in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    boot_t = np.median(t[rng.integers(0, t.size, (resamples, t.size))], axis=1)
    boot_r = np.median(r[rng.integers(0, r.size, (resamples, r.size))], axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot_t / boot_r, [alpha, 1 - alpha])
    return RatioInterval(float(np.median(t) / np.median(r)), float(low), float(high))


def verdict(interval: RatioInterval, threshold: float) -> Verdict:
    """``pass`` if the whole interval is at or below ``threshold`` (a relative JCT, 1.05 =
    5 % degradation), ``fail`` if it is wholly above, ``undecided`` if it straddles it."""
    if interval.high <= threshold:
        return "pass"
    if interval.low > threshold:
        return "fail"
    return "undecided"


def settled(interval: RatioInterval, threshold: float, half_width: float = HALF_WIDTH) -> bool:
    """Whether a point needs no more repeats: its interval is within +-``half_width`` or
    it already lies on one side of ``threshold`` (more runs would not change the verdict
    of a decided point, only narrow it)."""
    return interval.half_width <= half_width or verdict(interval, threshold) != "undecided"


AppClass = Literal["dolphin", "shark", "undecided"]


def app_class(point_verdict: Verdict) -> AppClass:
    """The paper's split (§3.2, Figure 2): a dolphin keeps its degradation within 5 % at
    5 µs / 40 Gb/s with 25 % local memory, a shark does not; an undecided point leaves
    the application undecided."""
    classes: dict[Verdict, AppClass] = {"pass": "dolphin", "fail": "shark",
                                        "undecided": "undecided"}
    return classes[point_verdict]


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate ``cpu`` line of ``/proc/stat`` (jiffies): all fields and ``steal``."""

    total: int
    steal: int


def read_cpu_times(stat: Path = Path("/proc/stat")) -> CpuTimes:
    """The machine's CPU time so far (proc(5): user nice system idle iowait irq softirq
    steal guest guest_nice; guest time is already inside user, so it is not added)."""
    for line in stat.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:9]]
            return CpuTimes(sum(values), values[7] if len(values) > 7 else 0)
    raise ValueError(f"{stat}: no aggregate 'cpu' line")


def steal_fraction(before: CpuTimes, after: CpuTimes) -> float | None:
    """Stolen share of the machine's CPU time between two readings (None if no tick)."""
    ticks = after.total - before.total
    return None if ticks <= 0 else (after.steal - before.steal) / ticks


def load_average_1m(loadavg: Path = Path("/proc/loadavg")) -> float:
    """The 1-minute load average (runnable + uninterruptible tasks, proc(5))."""
    return float(loadavg.read_text().split()[0])
