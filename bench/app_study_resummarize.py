"""Rewrite the application study's summaries from its committed runs, running nothing.

For each sweep directory under ``notebooks/data/app_study/`` (or those named), rewrite
``summary.csv``, ``table3.csv``, ``classification.csv`` and the plots from ``runs.csv`` and
``sweep.json`` through :func:`disaggsim.swapdev.emulate.resummarize` (the estimator
``emulate`` itself uses), leaving ``runs.csv`` and ``sweep.json`` unchanged. What a change
of the estimator needs (bench/RESULTS.md "Paired per-round estimator"); the other committed
sweeps, made before emulate wrote ``sweep.json``, are bench/emulate_resummarize.py's. No
root, no device: seconds.

    .venv/bin/python bench/app_study_resummarize.py
    .venv/bin/python bench/app_study_resummarize.py hadoop-wordcount-fig5-iso

Raises disaggsim.errors.InputError (one line, the file) for a directory without
``runs.csv`` or ``sweep.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from disaggsim.swapdev import emulate

DATA = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "app_study"


def main(argv: list[str] | None = None) -> int:
    """Resummarize each named sweep (default: every directory with a ``sweep.json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", help="directory names under " + str(DATA))
    args = parser.parse_args(argv)
    sweeps = args.sweeps or sorted(p.parent.name for p in DATA.glob("*/sweep.json"))
    for sweep in sweeps:
        print(f"{sweep}: {emulate.resummarize(DATA / sweep)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
