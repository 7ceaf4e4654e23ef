"""The application study's classification points measured again on another machine.

Issue #22's classes (bench/RESULTS.md "Application study (#22)") were measured on one VM.
This script derives, for each application the committed study decided, a config of its
classification point alone (its Figure 2 config's application, or its classification
config's where one is committed, with ``[[models]]`` the 5 µs / 40 Gb/s point, 25 % local
memory, exactly ``ROUNDS`` rounds: the fewest a verdict can rest on, swapdev/jct_stats.py),
writes it as ``OUT/<app>.json`` (``out_dir = "."``: its sweep goes to ``OUT/<app>/``, and
the config resumes it), and prints the command that measures them in one isolated window;
``--table`` then compares each reproduced point with the committed one.

    R=notebooks/data/app_study/reproduce-2026-11-28
    .venv/bin/python bench/app_study_reproduce.py $R
    ISOLATE=bench/isolate.sh WINDOW_S=3600 sh bench/app_study.sh $R/*.json
    .venv/bin/python bench/app_study_reproduce.py $R --table

``--repeats-max N --apps A B`` rewrites only those applications' configs with up to ``N``
rounds (the sequential rule of swapdev/emulate.py: a point stops once its interval is
within +-1.5 % or wholly on one side of the threshold); the same ``app_study.sh`` command
then resumes their sweeps, every committed run reused:

    .venv/bin/python bench/app_study_reproduce.py $R --repeats-max 20 --apps memcached-ycsb

A point's verdict is the sequential rule's (``pass``/``fail``/``undecided``); the zero-delay
JCT's ratio between the two machines says how much faster or slower the second one is.
Raises disaggsim.sim.config.ConfigError (one line, the file) for a bad source config and
disaggsim.errors.InputError for a bad committed table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

import pandas as pd

from disaggsim.swapdev import emulate

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
DATA = REPO / "notebooks" / "data" / "app_study"
#: The committed study's decided applications, fastest run first (so a cut window has
#: measured the most applications).
APPS = [
    "memtouch-random",
    "chunksort",
    "memcached-ycsb",
    "dask-sort",
    "postgres-pgbench",
    "timely-pagerank",
    "hadoop-terasort",
    "hadoop-wordcount",
]
#: Rounds per point: the fewest pairs a verdict can rest on (jct_stats.min_pairs()).
ROUNDS = emulate.MIN_RUNS
POINT = {
    "kind": "fixed",
    "latency_ns": emulate.CLASSIFY_LATENCY_NS,
    "bandwidth_bps": emulate.CLASSIFY_BANDWIDTH_BPS,
}
LOCAL_FRACTION = 0.25


def source_config(app: str) -> Path:
    """The committed config whose application ``app``'s classification point ran with:
    its classification config if committed, else its Figure 2 config."""
    classify = CONFIGS / f"app-study-{app}-classify.toml"
    return classify if classify.exists() else CONFIGS / f"app-study-{app}-fig2.toml"


def derive(app: str, repeats_max: int = ROUNDS) -> dict[str, object]:
    """``app``'s classification point alone, as a config (a TOML table as a dict): ROUNDS
    rounds, then up to ``repeats_max`` while the point is unsettled under the study's
    default ``half_width``. Raises ValueError if ``repeats_max`` < ROUNDS."""
    if repeats_max < ROUNDS:
        raise ValueError(
            f"repeats_max: {repeats_max} is less than the {ROUNDS} rounds a verdict rests on"
        )
    raw = tomllib.loads(source_config(app).read_text())
    section = dict(raw["emulate"])
    section.update(name=app, out_dir=".", repeats=ROUNDS, repeats_max=repeats_max)
    section.pop("half_width", None)  # the study's default rule, not the source's
    application = dict(raw["app"], local_fraction=LOCAL_FRACTION)
    return {"emulate": section, "app": application, "models": [POINT]}


def committed_summary(app: str) -> pd.DataFrame:
    """The committed study's summary.csv of ``app`` whose 5 µs / 40 Gb/s point at 25 % is
    the verdict: its classification sweep's if committed, else its Figure 2 sweep's."""
    for sweep in (f"{app}-classify-iso", f"{app}-fig2-iso"):
        path = DATA / sweep / "summary.csv"
        if path.exists():
            return pd.read_csv(path)
    raise FileNotFoundError(f"{DATA}: no committed sweep of {app}")


def _point(summary: pd.DataFrame) -> pd.Series:
    row = summary[
        (summary["kind"] == "fixed")
        & (summary["latency_ns"] == POINT["latency_ns"])
        & (summary["bandwidth_bps"] == POINT["bandwidth_bps"])
        & (summary["local_fraction"] == LOCAL_FRACTION)
    ]
    if len(row) != 1:
        raise ValueError(f"expected one 5 us / 40 Gb/s row at 25 %, got {len(row)}")
    return row.iloc[0]


def _reference_jct(summary: pd.DataFrame) -> float:
    ref = summary[(summary["model"] == "none") & (summary["local_fraction"] == LOCAL_FRACTION)]
    return float(ref["median_jct_s"].iloc[0])


def _verdict(point: pd.Series) -> str:
    return (
        f"{point['relative_jct']:.3f} [{point['ci_low']:.3f}, {point['ci_high']:.3f}] "
        f"{point['pairs']} {point['verdict']}"
    )


def table(out: Path) -> pd.DataFrame:
    """Per application with a reproduced sweep in ``out``: both machines' point (relative
    JCT with its interval, pairs, verdict), the second machine's zero-delay JCT over the
    first's, and the time the point adds on each (zero-delay JCT x (relative JCT - 1), s):
    the same delay per fault adds the same time on a slower machine, a smaller share."""
    rows = []
    for app in APPS:
        path = out / app / "summary.csv"
        if not path.exists():
            continue
        mine, theirs = pd.read_csv(path), committed_summary(app)
        here, there = _point(mine), _point(theirs)
        ref_mine, ref_theirs = _reference_jct(mine), _reference_jct(theirs)
        added_theirs = ref_theirs * (there["relative_jct"] - 1)
        added_mine = ref_mine * (here["relative_jct"] - 1)
        rows.append(
            {
                "application": app,
                "committed": _verdict(there),
                "reproduced": _verdict(here),
                "zero-delay JCT (s) committed / reproduced": f"{ref_theirs:.2f} / {ref_mine:.2f}",
                "slower by": f"x{ref_mine / ref_theirs:.2f}",
                "delay added (s) committed / reproduced": f"{added_theirs:.2f} / {added_mine:.2f}",
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Write the derived configs into OUT (or, with --table, compare their results)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for the configs and their sweeps")
    parser.add_argument("--table", action="store_true", help="compare, do not write")
    parser.add_argument(
        "--repeats-max",
        type=int,
        default=ROUNDS,
        metavar="N",
        help=f"rounds at most while a point is unsettled (default {ROUNDS})",
    )
    parser.add_argument(
        "--apps",
        nargs="+",
        choices=APPS,
        default=APPS,
        metavar="APP",
        help="write only these applications' configs (default: all)",
    )
    args = parser.parse_args(argv)
    if args.table:
        frame = table(args.out)
        print("| " + " | ".join(frame.columns) + " |")
        print("|" + " --- |" * len(frame.columns))
        for row in frame.itertuples(index=False):
            print("| " + " | ".join(str(v) for v in row) + " |")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    paths = []
    for app in [a for a in APPS if a in args.apps]:
        path = args.out / f"{app}.json"
        config = derive(app, args.repeats_max)
        path.write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
        emulate.load_emulate_config(path)  # the loader's checks, before any window
        paths.append(str(path))
    print("ISOLATE=bench/isolate.sh WINDOW_S=3600 sh bench/app_study.sh " + " ".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
