"""Noise control for ``disaggsim emulate``: confidence intervals of a relative JCT, the
pass / fail / undecided verdict at the paper's 5 % threshold, and the machine's load.

The paper takes "the median result" of 10 runs to compensate EC2's noise (§3.1). On a
shared 2-core VM the noise is larger than the 5 % effect Table 3 and the dolphin / shark
split classify, so every relative JCT here carries an interval and a point is only called
a pass or a fail when its interval lies on one side of the threshold (issue #22, item 4).

Pairs: the runs are paired by round. Each round of a sweep runs the zero-delay reference
and then every point still unsettled (:func:`disaggsim.swapdev.emulate.emulate`), so a
round's point run and reference run share the machine's state of that moment. The relative
JCT of a point is the median over its rounds r of JCT_point,r / JCT_reference,r (one ratio
per round in which both have an ``ok`` JCT). A drift of the machine's speed between rounds
(a slower window, another tenant) multiplies both runs of a round alike and cancels in its
ratio. If a point's JCT is c times an independent copy of the reference's (a scale family,
times any factor common to the round), the median ratio is c.

Interval: a sweep looks at a point after every round and stops it once its interval is
decided or narrow (:func:`settled`, :func:`disaggsim.swapdev.emulate.round_plan`), and a
sweep may be topped up later with more rounds: optional stopping over an open number of
looks. An interval that covers 95 % at each fixed n misses far more often at the look where
such a rule stops (Jennison and Turnbull, *Group Sequential Methods with Applications to
Clinical Trials*, Chapman & Hall/CRC 2000, Table 9.1, after Armitage, McPherson and Rowe
1969). The interval here is therefore a repeated confidence interval (Jennison and Turnbull
ch. 9: a sequence of intervals I_n that cover the parameter simultaneously for every n,
hence at any stopping time, their (9.2); for the median, Darling and Robbins, "Confidence
sequences for mean, variance, and median", PNAS 58:66-68, 1967): at n pairs it is
[X_(k_n), X_(n+1-k_n)], order statistics of the n ratios, the sign test's interval
(distribution-free: the number of ratios above the true median is Binomial(n, 1/2) for any
continuous distribution of the ratios, whatever the spread, the tails or how the rounds
differ, as long as they are independent with a common median). The ranks k_n spend the
error as in Jennison and Turnbull ch. 7 (error spending, no maximum number of looks fixed
in advance), exactly: k_n is the largest k keeping the probability that any of the
intervals I_1..I_n lies wholly above the true median at most (1 - confidence) / 2, that
probability computed over the 2^n sign paths by the binomial recursion in integers (exact,
no asymptotics) with the earlier looks' crossings taken out
(:func:`sequence_rank`); by symmetry the same bound holds below. So, at confidence 0.95,
whatever the stopping rule, the cap ``repeats_max`` or a later top-up:

- a ``fail`` when the true median ratio is <= 1.05, or a ``pass`` when it is > 1.05, has
  probability <= 2.5 % (the bound is reached only with the median on 1.05 itself: all
  the intervals up to 9 pairs exclude it from one side with probability 1.56 %, up to 13
  2.15 %, up to 17 2.39 %, up to 24 2.49 %); bench/RESULTS.md "Sequential verdicts"
  measures it (bench/stopping_rule.py) and tests/test_swapdev_jct_stats_sequential.py
  checks it;
- the first decision needs 6 pairs (:func:`min_pairs`: 2^-6 = 1.56 % <= 2.5 % < 2^-5),
  ``emulate.MIN_RUNS``; the ranks then grow: k = 1 at 6-9 pairs, 2 at 10-13, 3 at 14-17,
  4 at 18-24, 5 at 25-29, 6 at 30-33, 8 at 39-42 (the fixed-n 95 % sign interval's: 1 at
  6-8, 2 at 9-11, 3 at 12-14, 6 at 20, 14 at 40).

Below :func:`min_pairs` the sequence claims nothing (k_n = 0); the interval shown is then
the range of the ratios (coverage 1 - 2^(1-n) at that fixed n) and is not ``decisive``:
it gives no verdict and never settles a point.

The rule it replaces, a percentile bootstrap of the median at each n (Efron and Tibshirani
1993, ch. 13) from 5 pairs on, covered 87.5-96 % at a fixed n of 5-20 (87.5 % at 7,
where it is [X_(2), X_(6)]) and, judged after every round, gave a wrong verdict to 7-13 %
of points whose median ratio lay on the threshold at the Spark presets' 5-10 % spread per
round, 3-9 % at the single-process applications' 1-2 % (bench/RESULTS.md "Sequential
verdicts"). The price of the guarantee: one more pair before any verdict, and near the
threshold more undecided points (at 20 pairs k = 4 where a fixed-n 95 % interval has 6).

The machine's load per run: the 1-minute load average (``/proc/loadavg``) at the run's end
and the fraction of CPU time stolen by the hypervisor during the run (``steal`` over all
the ``cpu`` line's jiffies of ``/proc/stat``, proc(5)).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Final, Literal

import numpy as np

#: Default confidence of the intervals: simultaneous over every number of pairs (module
#: docstring), so (1 - confidence) / 2 per side over a whole sequential sweep.
CONFIDENCE: Final = 0.95
#: The issue's precision target: an interval no wider than +-1.5 % of the relative JCT at
#: the 5 % threshold (issue #22, item 4).
HALF_WIDTH: Final = 0.015

Verdict = Literal["pass", "fail", "undecided"]


@dataclass(frozen=True)
class RatioInterval:
    """A point's relative JCT, the median over rounds of JCT_point / JCT_reference, and its
    interval (dimensionless; :func:`paired_ratio_ci`). ``decisive``: the interval is a
    member of the repeated confidence sequence (enough pairs, :func:`min_pairs`), so it
    may give a verdict; else it is only the ratios' range, shown."""

    estimate: float
    low: float
    high: float
    decisive: bool = True

    @property
    def half_width(self) -> float:
        """Half the interval's width (a relative JCT; 0.015 = +-1.5 %)."""
        return (self.high - self.low) / 2


@functools.cache
def _ranks(confidence: float, pairs: int) -> tuple[int, ...]:
    """k_1..k_pairs of the repeated confidence sequence (module docstring), exactly: the
    paths of n signs (ratio above / below the true median, each with probability 1/2)
    that no interval I_1..I_n has yet put wholly above the median, counted by how many
    ratios are above; I_n = [X_(k), X_(n+1-k)] lies above when at least n + 1 - k are."""
    per_side = (1 - Fraction(str(confidence))) / 2
    uncrossed = [1]  # uncrossed[j]: such paths of length n with j ratios above
    spent = Fraction(0)
    ranks: list[int] = []
    for n in range(1, pairs + 1):
        uncrossed = [
            (uncrossed[j] if j < n else 0) + (uncrossed[j - 1] if j else 0) for j in range(n + 1)
        ]
        rank, tail = 0, 0
        for k in range(1, (n + 1) // 2 + 1):
            tail_k = tail + uncrossed[n + 1 - k]
            if spent + Fraction(tail_k, 2**n) > per_side:
                break
            rank, tail = k, tail_k
        spent += Fraction(tail, 2**n)
        for j in range(n + 1 - rank, n + 1) if rank else ():
            uncrossed[j] = 0
        ranks.append(rank)
    return tuple(ranks)


def sequence_rank(pairs: int, confidence: float = CONFIDENCE) -> int:
    """k_n: the interval at ``pairs`` = n pairs is [X_(k_n), X_(n+1-k_n)] of the sorted
    ratios; 0 below :func:`min_pairs` (module docstring: the largest k keeping the chance
    that any interval up to n lies wholly above, or wholly below, the true median at most
    (1 - ``confidence``) / 2, computed exactly).

    Raises:
        ValueError: ``pairs`` < 1 or ``confidence`` not in (0, 1).
    """
    if pairs < 1:
        raise ValueError(f"pairs: expected >= 1, got {pairs}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a value in (0, 1), got {confidence}")
    return _ranks(confidence, pairs)[-1]


def min_pairs(confidence: float = CONFIDENCE) -> int:
    """The fewest pairs with a decisive interval: the smallest n with 2^-n <= (1 -
    ``confidence``) / 2 (k_n >= 1 needs all n ratios on one side of the median to be that
    rare): 6 at 0.95."""
    n = 1
    while sequence_rank(n, confidence) == 0:
        n += 1
    return n


def paired_ratio_ci(
    point: Sequence[float],
    reference: Sequence[float],
    confidence: float = CONFIDENCE,
) -> RatioInterval:
    """The median of the per-round ratios point[i] / reference[i] and its interval of the
    repeated confidence sequence, [X_(k), X_(n+1-k)] with k = :func:`sequence_rank` of the
    n ratios sorted (module docstring); below :func:`min_pairs` pairs the ratios' range,
    not ``decisive``.

    Args:
        point: JCTs (s) of the point, one per round, > 0.
        reference: JCTs (s) of the zero-delay reference at the same local fraction in the
            same rounds, in the same order, > 0.
        confidence: simultaneous two-sided coverage over every n, in (0, 1).

    Raises:
        ValueError: no round, the two sequences of different lengths, a JCT <= 0 or not
            finite, confidence not in (0, 1).
    """
    p = np.asarray(point, dtype=float)
    r = np.asarray(reference, dtype=float)
    if p.size == 0 or r.size == 0:
        raise ValueError("paired_ratio_ci: at least one round with a JCT of both is needed")
    if p.shape != r.shape:
        raise ValueError(
            f"paired_ratio_ci: {p.size} point JCTs but {r.size} reference "
            "JCTs: expected one of each per round"
        )
    if not (np.isfinite(p).all() and np.isfinite(r).all() and (p > 0).all() and (r > 0).all()):
        raise ValueError("paired_ratio_ci: JCTs must be finite and > 0")
    ratios = np.sort(p / r)
    rank = sequence_rank(ratios.size, confidence)
    low, high = ratios[max(rank, 1) - 1], ratios[ratios.size - max(rank, 1)]
    return RatioInterval(float(np.median(ratios)), float(low), float(high), rank > 0)


def verdict(interval: RatioInterval, threshold: float) -> Verdict:
    """``pass`` if the whole interval is at or below ``threshold`` (a relative JCT, 1.05 =
    5 % degradation), ``fail`` if it is wholly above, ``undecided`` if it straddles it or
    is not ``decisive`` (too few pairs, :func:`min_pairs`)."""
    if not interval.decisive:
        return "undecided"
    if interval.high <= threshold:
        return "pass"
    if interval.low > threshold:
        return "fail"
    return "undecided"


def settled(interval: RatioInterval, threshold: float, half_width: float = HALF_WIDTH) -> bool:
    """Whether a point needs no more repeats: its interval is ``decisive`` and within
    +-``half_width`` or already on one side of ``threshold`` (more runs would not change
    the verdict of a decided point, only narrow it; the verdict's error bound holds
    whatever this rule, module docstring)."""
    return interval.decisive and (
        interval.half_width <= half_width or verdict(interval, threshold) != "undecided"
    )


AppClass = Literal["dolphin", "shark", "undecided"]


def app_class(point_verdict: Verdict) -> AppClass:
    """The paper's split (§3.2, Figure 2): a dolphin keeps its degradation within 5 % at
    5 µs / 40 Gb/s with 25 % local memory, a shark does not; an undecided point leaves
    the application undecided."""
    classes: dict[Verdict, AppClass] = {
        "pass": "dolphin",
        "fail": "shark",
        "undecided": "undecided",
    }
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
