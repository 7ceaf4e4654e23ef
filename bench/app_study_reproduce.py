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
APPS = ["memtouch-random", "chunksort", "memcached-ycsb", "dask-sort", "postgres-pgbench",
        "timely-pagerank", "hadoop-terasort", "hadoop-wordcount"]
#: Rounds per point: the fewest pairs a verdict can rest on (jct_stats.min_pairs()).
ROUNDS = emulate.MIN_RUNS
POINT = {"kind": "fixed", "latency_ns": emulate.CLASSIFY_LATENCY_NS,
         "bandwidth_bps": emulate.CLASSIFY_BANDWIDTH_BPS}
LOCAL_FRACTION = 0.25


def source_config(app: str) -> Path:
    """The committed config whose application ``app``'s classification point ran with:
    its classification config if committed, else its Figure 2 config."""
    classify = CONFIGS / f"app-study-{app}-classify.toml"
    return classify if classify.exists() else CONFIGS / f"app-study-{app}-fig2.toml"


def derive(app: str) -> dict[str, object]:
    """``app``'s classification point alone, as a config (a TOML table as a dict)."""
    raw = tomllib.loads(source_config(app).read_text())
    section = dict(raw["emulate"])
    section.update(name=app, out_dir=".", repeats=ROUNDS, repeats_max=ROUNDS)
    section.pop("half_width", None)  # ROUNDS rounds, whatever the interval's width
    application = dict(raw["app"], local_fraction=LOCAL_FRACTION)
    return {"emulate": section, "app": application, "models": [POINT]}


def committed_point(app: str) -> pd.Series:
    """The committed study's row of ``app``'s 5 µs / 40 Gb/s point at 25 % (its
    classification sweep's if committed, else its Figure 2 sweep's)."""
    for sweep in (f"{app}-classify-iso", f"{app}-fig2-iso"):
        path = DATA / sweep / "summary.csv"
        if path.exists():
            return _point(pd.read_csv(path))
    raise FileNotFoundError(f"{DATA}: no committed sweep of {app}")


def _point(summary: pd.DataFrame) -> pd.Series:
    row = summary[(summary["kind"] == "fixed") & (summary["latency_ns"] == POINT["latency_ns"])
                  & (summary["bandwidth_bps"] == POINT["bandwidth_bps"])
                  & (summary["local_fraction"] == LOCAL_FRACTION)]
    if len(row) != 1:
        raise ValueError(f"expected one 5 us / 40 Gb/s row at 25 %, got {len(row)}")
    return row.iloc[0]


def _reference_jct(summary: pd.DataFrame) -> float:
    ref = summary[(summary["model"] == "none") & (summary["local_fraction"] == LOCAL_FRACTION)]
    return float(ref["median_jct_s"].iloc[0])


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
        mine = pd.read_csv(path)
        here = _point(mine)
        there = committed_point(app)
        sweep = "classify" if (DATA / f"{app}-classify-iso").exists() else "fig2"
        theirs = pd.read_csv(DATA / f"{app}-{sweep}-iso" / "summary.csv")
        rows.append({
            "application": app,
            "committed": f"{there['relative_jct']:.3f} [{there['ci_low']:.3f}, "
                         f"{there['ci_high']:.3f}] {there['pairs']} {there['verdict']}",
            "reproduced": f"{here['relative_jct']:.3f} [{here['ci_low']:.3f}, "
                          f"{here['ci_high']:.3f}] {here['pairs']} {here['verdict']}",
            "zero-delay JCT (s) committed / reproduced":
                f"{_reference_jct(theirs):.2f} / {_reference_jct(mine):.2f}",
            "slower by": f"x{_reference_jct(mine) / _reference_jct(theirs):.2f}",
            "delay added (s) committed / reproduced":
                f"{_reference_jct(theirs) * (there['relative_jct'] - 1):.2f} / "
                f"{_reference_jct(mine) * (here['relative_jct'] - 1):.2f}",
        })
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """Write the derived configs into OUT (or, with --table, compare their results)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for the configs and their sweeps")
    parser.add_argument("--table", action="store_true", help="compare, do not write")
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
    for app in APPS:
        path = args.out / f"{app}.json"
        path.write_text(json.dumps(derive(app), indent=1, sort_keys=True) + "\n")
        emulate.load_emulate_config(path)  # the loader's checks, before any window
        paths.append(str(path))
    print("ISOLATE=bench/isolate.sh WINDOW_S=3600 sh bench/app_study.sh " + " ".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
