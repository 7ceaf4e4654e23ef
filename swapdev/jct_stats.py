"""Noise control for ``disaggsim emulate``: confidence intervals of a relative JCT, the
pass / fail / undecided verdict at the paper's 5 % threshold, and the machine's load.

The paper takes "the median result" of 10 runs to compensate EC2's noise (§3.1). On a
shared 2-core VM the noise is larger than the 5 % effect Table 3 and the dolphin / shark
split classify, so every relative JCT here carries an interval and a point is only called
a pass or a fail when its interval lies on one side of the threshold (issue #22, item 4).

Method: the runs are paired by round. Each round of a sweep runs the zero-delay reference
and then every point still unsettled (:func:`disaggsim.swapdev.emulate.emulate`), so a
round's point run and reference run share the machine's state of that moment. The relative
JCT of a point is the median over its rounds r of JCT_point,r / JCT_reference,r (one ratio
per round in which both have an ``ok`` JCT), and its interval is the percentile bootstrap
of that median resampling the rounds, each round's pair kept together (Efron and
Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall 1993: ch. 8 "More
complicated data structures", the one-sample problem, here the sample of paired rounds;
ch. 13 "Confidence intervals based on bootstrap percentiles"). A drift of the machine's
speed between rounds (a slower window, another tenant) multiplies both runs of a round
alike and cancels in its ratio; it assumes only that the rounds' ratios are exchangeable.
If a point's JCT is c times an independent copy of the reference's (a scale family, times
any factor common to the round), the median ratio is c, as the ratio of the medians is.

With n rounds and n <= 5 the 95 % interval is the range of the n ratios (the resampled
median equals the smallest ratio with probability > 2.5 %: 7/27 for n = 3, 13/256 for
n = 4, 181/3125 for n = 5), which covers the true median ratio with probability
1 - 2^(1-n), as the sign test's order-statistic interval does: 75 % at 3 rounds, 87.5 %
at 4, 93.75 % at 5. A verdict therefore needs 5 rounds (``emulate.MIN_RUNS``).

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
    """A point's relative JCT, the median over rounds of JCT_point / JCT_reference, and its
    bootstrap interval (dimensionless; :func:`paired_ratio_ci`)."""

    estimate: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (a relative JCT; 0.015 = +-1.5 %)."""
        return (self.high - self.low) / 2


def paired_ratio_ci(
    point: Sequence[float],
    reference: Sequence[float],
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> RatioInterval:
    """The median of the per-round ratios point[i] / reference[i] and its
    percentile-bootstrap interval, resampling the rounds with replacement (module
    docstring).

    Args:
        point: JCTs (s) of the point, one per round, > 0.
        reference: JCTs (s) of the zero-delay reference at the same local fraction in the
            same rounds, in the same order, > 0.
        confidence: two-sided coverage in (0, 1).
        resamples: bootstrap resamples (each: as many rounds as given, with replacement).
        seed: the resampling's seed (the same inputs give the same interval).

    Raises:
        ValueError: no round, the two sequences of different lengths, a JCT <= 0 or not
            finite, confidence not in (0, 1).
    """
    p = np.asarray(point, dtype=float)
    r = np.asarray(reference, dtype=float)
    if p.size == 0 or r.size == 0:
        raise ValueError("paired_ratio_ci: at least one round with a JCT of both is needed")
    if p.shape != r.shape:
        raise ValueError(f"paired_ratio_ci: {p.size} point JCTs but {r.size} reference "
                         "JCTs: expected one of each per round")
    if not (np.isfinite(p).all() and np.isfinite(r).all() and (p > 0).all() and (r > 0).all()):
        raise ValueError("paired_ratio_ci: JCTs must be finite and > 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a value in (0, 1), got {confidence}")
    ratios = p / r
    rng = np.random.default_rng(seed)
    boot = np.median(ratios[rng.integers(0, ratios.size, (resamples, ratios.size))], axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return RatioInterval(float(np.median(ratios)), float(low), float(high))


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
