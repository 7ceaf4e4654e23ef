"""Error rate of the application study's sequential verdict rule, by Monte Carlo.

``disaggsim emulate`` / ``classify`` call a point a ``pass`` (relative JCT <= 1.05) or a
``fail`` when its interval (:func:`disaggsim.swapdev.jct_stats.paired_ratio_ci`) lies on one
side of 1.05, and stop running it as soon as it is :func:`~disaggsim.swapdev.jct_stats.settled`
(:func:`disaggsim.swapdev.emulate.round_plan`): a sequential design with a look after every
round. This script simulates that rule as the code runs it, calling the real
``paired_ratio_ci``, ``settled`` and ``verdict`` and ``emulate.MIN_RUNS``, so it measures
whichever rule the checked-out code holds (bench/RESULTS.md "Sequential verdicts").

Model: the rounds' log-ratios log(JCT_point / JCT_reference) are independent,
log(m) + s x Z with Z standard normal (``normal``) or Student t with 3 degrees of freedom
scaled to the normal's median absolute deviation (``t3``: the same robust spread s, heavy
tails); m is the true median ratio. For a sweep with ``repeats`` R and ``repeats_max`` C a
point runs rounds 1..R, then before each round n + 1 <= C it is judged on its n pairs
(n >= MIN_RUNS) and stops if settled; its verdict is that of its last interval (undecided
below MIN_RUNS pairs). The fixed-n rule runs n rounds, judged once. A wrong verdict is a
``fail`` when m <= 1.05 or a ``pass`` when m > 1.05. Each cell: wrong % / undecided %
over ``--trials`` simulated points (binomial standard error sqrt(p(1-p)/trials)).

``--dispersion`` prints instead the per-round spread of every committed sweep under
``notebooks/data/app_study/`` (:func:`disaggsim.swapdev.emulate.paired_jcts`: per point with
>= 4 pairs the standard deviation of its log-ratios, the sweep's median of those; the
median absolute deviation of all its points' log-ratios about their point's median,
x 1.4826; their excess kurtosis), where the spreads simulated come from. Pure Python, no
root; seconds for ``--dispersion``, about 20 ms per simulated point and cap set with the
bootstrap rule (1 ms with the order-statistic rule).

    .venv/bin/python bench/stopping_rule.py --dispersion
    .venv/bin/python bench/stopping_rule.py --trials 1000 --spreads 0.01 0.02 0.05 0.10
    .venv/bin/python bench/stopping_rule.py --dist t3 --spreads 0.02 0.05
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from disaggsim.sim.config import load_config_model
from disaggsim.swapdev import emulate, jct_stats

DATA = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "app_study"
THRESHOLD = emulate.DEGRADATION_THRESHOLD
#: t with 3 dof has median |T| 0.7649 (its quantile 0.75); the normal's is 0.6745
T3_TO_NORMAL_MAD = 0.6745 / 0.7649


@dataclass(frozen=True)
class Rule:
    """The rule simulated: a module with ``paired_ratio_ci``, ``settled`` and ``verdict``
    (:mod:`disaggsim.swapdev.jct_stats`, or an earlier version of it read from a file) and
    the pairs a verdict needs (``emulate.MIN_RUNS`` of the same version)."""

    stats: ModuleType
    min_runs: int


def load_rule(path: Path | None, min_runs: int | None) -> Rule:
    """The checked-out rule, or the ``jct_stats`` module file ``path`` (e.g. ``git show
    1b8a7c9:swapdev/jct_stats.py``, the bootstrap rule) with ``min_runs``."""
    if path is None:
        return Rule(jct_stats, emulate.MIN_RUNS if min_runs is None else min_runs)
    spec = importlib.util.spec_from_file_location("rule_under_test", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    if min_runs is None:
        raise SystemExit("--min-runs: needed with --rule-module (that version's MIN_RUNS)")
    return Rule(module, min_runs)


@dataclass(frozen=True)
class Design:
    """A sweep's rounds: ``repeats`` R, ``repeats_max`` C (C = R: the fixed-n rule)."""

    repeats: int
    repeats_max: int

    @property
    def label(self) -> str:
        fixed = self.repeats == self.repeats_max
        return f"n = {self.repeats}" if fixed else f"{self.repeats}/{self.repeats_max}"


def parse_design(text: str) -> Design:
    """``R/C`` (sequential) or ``N`` (fixed n); argparse's type."""
    try:
        parts = [int(v) for v in text.split("/")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected R/C or N (integers)") from None
    if len(parts) not in (1, 2) or parts[0] < 1 or parts[-1] < parts[0]:
        raise argparse.ArgumentTypeError(f"{text!r}: expected R/C with 1 <= R <= C, or N")
    return Design(parts[0], parts[-1])


def draw_log_ratios(
    rng: np.random.Generator, dist: str, median: float, spread: float, shape: tuple[int, int]
) -> np.ndarray:
    """Per-round log-ratios: log(median) + spread x Z (module docstring)."""
    if dist == "normal":
        z = rng.standard_normal(shape)
    else:
        z = rng.standard_t(3, shape) * T3_TO_NORMAL_MAD
    return np.log(median) + spread * z


def outcome(
    rule: Rule, ratios: np.ndarray, design: Design, cache: dict[int, object]
) -> tuple[str, int]:
    """The verdict of one simulated point under ``design`` and the rounds it ran, with
    the real rule (``cache``: its intervals by number of pairs, shared by the designs)."""

    def interval(n: int) -> object:
        if n not in cache:
            cache[n] = rule.stats.paired_ratio_ci(ratios[:n], np.ones(n))
        return cache[n]

    rounds = design.repeats
    while rounds < design.repeats_max:  # the look before round rounds + 1 (round_plan)
        if rounds >= rule.min_runs and rule.stats.settled(interval(rounds), THRESHOLD):
            break
        rounds += 1
    if rounds < rule.min_runs:
        return "undecided", rounds
    return str(rule.stats.verdict(interval(rounds), THRESHOLD)), rounds


def simulate(
    rule: Rule,
    designs: list[Design],
    dist: str,
    median: float,
    spread: float,
    trials: int,
    seed: int,
) -> dict[Design, dict[str, float]]:
    """Per design: the shares of ``fail``, ``pass``, ``undecided`` and wrong verdicts and
    the mean rounds run, over ``trials`` simulated points."""
    nmax = max(d.repeats_max for d in designs)
    rng = np.random.default_rng(seed)
    ratios = np.exp(draw_log_ratios(rng, dist, median, spread, (trials, nmax)))
    counts = {d: {"fail": 0.0, "pass": 0.0, "undecided": 0.0, "rounds": 0.0} for d in designs}
    for path in ratios:
        cache: dict[int, object] = {}
        for d in designs:
            v, rounds = outcome(rule, path, d, cache)
            counts[d][v] += 1
            counts[d]["rounds"] += rounds
    out = {}
    for d, c in counts.items():
        share = {k: v / trials for k, v in c.items()}
        share["wrong"] = share["fail"] if median <= THRESHOLD else share["pass"]
        out[d] = share
    return out


def coverage(
    rule: Rule, rounds: list[int], dist: str, spread: float, trials: int, seed: int
) -> dict[int, float]:
    """Per fixed number of rounds n: the share of ``trials`` simulated points whose
    interval on their first n ratios holds the true median ratio (1.05 here; the share
    does not depend on it for a continuous distribution)."""
    rng = np.random.default_rng(seed)
    ratios = np.exp(draw_log_ratios(rng, dist, THRESHOLD, spread, (trials, max(rounds))))
    out = {}
    for n in rounds:
        cis = [rule.stats.paired_ratio_ci(path[:n], np.ones(n)) for path in ratios]
        out[n] = float(np.mean([ci.low <= THRESHOLD <= ci.high for ci in cis]))
    return out


def dispersion(data: Path = DATA) -> list[tuple[str, int, float, float, float]]:
    """Per committed sweep with a ``sweep.json``: (name, points with >= 4 pairs, median
    per-point SD of the log-ratios, MAD x 1.4826 of the log-ratios about their point's
    median, their excess kurtosis)."""
    rows = []
    for stamp in sorted(data.glob("*/sweep.json")):
        cfg, _ = load_config_model(stamp, emulate.EmulateConfig)
        runs = emulate.read_runs(stamp.parent / "runs.csv", cfg)
        sds: list[float] = []
        resid: list[float] = []
        for fraction in dict.fromkeys(r.local_fraction for r in runs):
            for label in dict.fromkeys(
                r.model for r in runs if r.local_fraction == fraction and r.model != "none"
            ):
                pairs = emulate.paired_jcts(runs, fraction, label)
                if len(pairs.rounds) < 4:
                    continue
                lr = np.log(np.asarray(pairs.point) / np.asarray(pairs.reference))
                sds.append(float(lr.std(ddof=1)))
                resid.extend((lr - np.median(lr)).tolist())
        if sds:
            r = np.asarray(resid)
            kurt = float(np.mean(r**4) / np.mean(r**2) ** 2 - 3)
            rows.append(
                (
                    stamp.parent.name,
                    len(sds),
                    float(np.median(sds)),
                    1.4826 * float(np.median(np.abs(r))),
                    kurt,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the table (Markdown) of wrong / undecided shares, or the dispersions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--medians",
        type=float,
        nargs="+",
        default=[1.00, 1.03, 1.04, 1.05, 1.06, 1.07, 1.10],
        help="true median ratios m",
    )
    parser.add_argument(
        "--spreads",
        type=float,
        nargs="+",
        default=[0.01, 0.02, 0.05, 0.10],
        help="per-round spreads s of the log-ratio",
    )
    parser.add_argument("--dist", choices=["normal", "t3"], default="normal")
    parser.add_argument(
        "--designs",
        type=parse_design,
        nargs="+",
        default=[
            parse_design(t) for t in ("5/7", "3/8", "3/10", "4/20", "8/16", "5", "6", "10", "20")
        ],
        help="R/C sequential (repeats/repeats_max) or N fixed",
    )
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--rule-module",
        type=Path,
        help="a jct_stats.py file to simulate instead of the checked-out one",
    )
    parser.add_argument(
        "--min-runs", type=int, help="the pairs a verdict needs under --rule-module (its MIN_RUNS)"
    )
    parser.add_argument(
        "--coverage",
        type=int,
        nargs="+",
        metavar="N",
        help="print instead each fixed n's coverage of the true median (first --spreads value)",
    )
    parser.add_argument(
        "--dispersion",
        action="store_true",
        help="print the committed sweeps' per-round spreads instead",
    )
    args = parser.parse_args(argv)
    if args.dispersion:
        print("| sweep | points | median SD of log-ratio | MAD x 1.4826 | excess kurtosis |")
        print("| --- | --- | --- | --- | --- |")
        for name, points, sd, mad, kurt in dispersion():
            print(f"| `{name}` | {points} | {sd:.3f} | {mad:.3f} | {kurt:.1f} |")
        return 0
    rule = load_rule(args.rule_module, args.min_runs)
    if args.coverage:
        cov = coverage(rule, args.coverage, args.dist, args.spreads[0], args.trials, args.seed)
        print(
            f"{args.dist}, s {args.spreads[0]:g}, {args.trials} points per n, seed "
            f"{args.seed}: coverage of the true median at a fixed n"
        )
        print("| n | " + " | ".join(str(n) for n in cov) + " |")
        print("| --- | " + " | ".join("---" for _ in cov) + " |")
        print("| coverage | " + " | ".join(f"{c:.3f}" for c in cov.values()) + " |")
        return 0
    print(
        f"{args.dist}, {args.trials} points per cell, seed {args.seed}, MIN_RUNS "
        f"{rule.min_runs}: wrong % / undecided % (mean rounds)"
    )
    print("| s | m | " + " | ".join(d.label for d in args.designs) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in args.designs) + " |")
    for i, spread in enumerate(args.spreads):
        for j, median in enumerate(args.medians):
            res = simulate(
                rule, args.designs, args.dist, median, spread, args.trials, args.seed + 1000 * i + j
            )
            cells = [
                f"{100 * r['wrong']:.1f} / {100 * r['undecided']:.0f} ({r['rounds']:.1f})"
                for r in res.values()
            ]
            print(f"| {spread:g} | {median:.2f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
