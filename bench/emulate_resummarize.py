"""Rewrite the committed emulate outputs outside the application study from their runs.

``bench/app_study_resummarize.py`` does ``notebooks/data/app_study/``. The other committed
sweeps were made before emulate wrote ``sweep.json`` (2026-11-24 to 2026-11-27):

- those a config in ``configs/`` still names (:data:`STAMPED`: the FCT replay, the fixed
  sweep, memcached's requirement sweep, the COMEX sweeps) carry a ``sweep.json`` written
  afterwards (2026-11-28) from the config they ran from, unchanged in git since their
  runs, so their config resumes them (:func:`disaggsim.swapdev.emulate.previous_runs`);
  they are summarized from that ``sweep.json``;
- the requirement sweep's per-fraction directories (:data:`SWEEPS`) have none: their
  configs (``configs/emulate-sweep-local<pct>.toml``) were merged into
  ``configs/emulate-sweep-python-sort.toml`` (same application, models and labels), and
  each ``sweep-local<pct>/`` is summarized with that config at its one fraction, under its
  own name.

Both go through :func:`disaggsim.swapdev.emulate.resummarize` (the estimator ``emulate``
itself uses), leaving ``runs.csv`` unchanged. No root, no device: seconds.

    .venv/bin/python bench/emulate_resummarize.py            # every sweep
    .venv/bin/python bench/emulate_resummarize.py replay/pfabric-local60

Writes each sweep's ``summary.csv`` (and ``speedup.csv``, ``table3.csv``,
``classification.csv`` where emulate writes them) and its two plots (ignored by git under
``notebooks/data/comex/``, whose plots notebooks/comex.py draws). bench/RESULTS.md "Other
emulate outputs (branch resummarize-rest)". Raises disaggsim.errors.InputError or
disaggsim.sim.config.ConfigError (one line, the file) for a bad runs.csv or config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from disaggsim.swapdev import emulate

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
#: sweep directories (relative to the repository) whose sweep.json names their config
STAMPED: list[str] = [
    "bench/figures/requirements/memcached-ycsb",
    "bench/figures/python-sort-fixed",
    "bench/figures/replay/pfabric-local60",
    "notebooks/data/comex/comex-numpy-sort",
    "notebooks/data/comex/comex-pb-numpy-sort",
    "notebooks/data/comex/comex-python-sort",
    "notebooks/data/comex/comex-memcached-ycsb",
    "notebooks/data/comex/comex-dask-sort",
]
#: per-fraction sweep directory (relative to the repository) -> the config it was run from
SWEEPS: dict[str, str] = {
    f"bench/figures/requirements/sweep-local{pct}": "emulate-sweep-python-sort.toml"
    for pct in (60, 61, 62, 63, 67, 75, 90)
}
PER_FRACTION = "sweep-local"


def sweep_config(sweep: str) -> emulate.EmulateConfig:
    """The config ``sweep`` (a key of :data:`SWEEPS`, a ``sweep-local<pct>`` directory) was
    run from: the merged requirement config at ``pct`` % local memory, named as the
    directory (its plot's file name)."""
    cfg = emulate.load_emulate_config(CONFIGS / SWEEPS[sweep])
    name = Path(sweep).name
    fraction = int(name.removeprefix(PER_FRACTION)) / 100
    return cfg.model_copy(
        update={
            "emulate": cfg.emulate.model_copy(update={"name": name}),
            "app": cfg.app.model_copy(update={"local_fraction": [fraction]}),
        }
    )


def main(argv: list[str] | None = None) -> int:
    """Resummarize each named sweep (one of :data:`STAMPED` or :data:`SWEEPS`, or its tail
    after ``bench/figures/``; default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sweeps",
        nargs="*",
        help="sweep directories, e.g. "
        "replay/pfabric-local60 or notebooks/data/comex/comex-dask-sort",
    )
    args = parser.parse_args(argv)
    known = [*STAMPED, *SWEEPS]
    names = [s if s in known else f"bench/figures/{s}" for s in args.sweeps] or known
    unknown = [s for s in names if s not in known]
    if unknown:
        parser.error(f"{', '.join(unknown)}: expected one of {', '.join(known)}")
    for sweep in names:
        cfg = sweep_config(sweep) if sweep in SWEEPS else None
        print(f"{sweep}: {emulate.resummarize(REPO / sweep, cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
