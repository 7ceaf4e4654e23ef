"""Rewrite the committed emulate outputs outside the application study from their runs.

``bench/app_study_resummarize.py`` does ``notebooks/data/app_study/``, whose sweeps carry
their ``sweep.json``. The other committed sweeps were made before emulate wrote one
(2026-11-24 to 2026-11-27): each is summarized again with the config it was run from
(:data:`SWEEPS`), through :func:`disaggsim.swapdev.emulate.resummarize` (the estimator
``emulate`` itself uses), leaving ``runs.csv`` unchanged. The requirement sweep's
per-fraction configs (``configs/emulate-sweep-local<pct>.toml``) were merged into
``configs/emulate-sweep-python-sort.toml`` (same application, models and labels): each
``sweep-local<pct>/`` is that config at its one fraction, under its own name. No root, no
device: seconds.

    .venv/bin/python bench/emulate_resummarize.py            # every sweep of SWEEPS
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
#: sweep directory (relative to the repository) -> the config it was run from
SWEEPS: dict[str, str] = {
    **{f"bench/figures/requirements/sweep-local{pct}": "emulate-sweep-python-sort.toml"
       for pct in (60, 61, 62, 63, 67, 75, 90)},
    "bench/figures/requirements/memcached-ycsb": "emulate-sweep-memcached-ycsb.toml",
    "bench/figures/python-sort-fixed": "emulate-python-sort.toml",
    "bench/figures/replay/pfabric-local60": "emulate-replay-pfabric.toml",
    "notebooks/data/comex/comex-numpy-sort": "emulate-comex-numpy-sort.toml",
    "notebooks/data/comex/comex-pb-numpy-sort": "emulate-comex-pb-sweep.toml",
    "notebooks/data/comex/comex-python-sort": "emulate-comex-python-sort.toml",
    "notebooks/data/comex/comex-memcached-ycsb": "emulate-comex-memcached-ycsb.toml",
    "notebooks/data/comex/comex-dask-sort": "emulate-comex-dask-sort.toml",
}
PER_FRACTION = "sweep-local"


def sweep_config(sweep: str) -> emulate.EmulateConfig:
    """The config ``sweep`` (a key of :data:`SWEEPS`) was run from; a ``sweep-local<pct>``
    directory is the merged requirement config at ``pct`` % local memory, named as the
    directory (its plot's file name)."""
    cfg = emulate.load_emulate_config(CONFIGS / SWEEPS[sweep])
    name = Path(sweep).name
    if not name.startswith(PER_FRACTION):
        return cfg
    fraction = int(name.removeprefix(PER_FRACTION)) / 100
    return cfg.model_copy(update={
        "emulate": cfg.emulate.model_copy(update={"name": name}),
        "app": cfg.app.model_copy(update={"local_fraction": [fraction]}),
    })


def main(argv: list[str] | None = None) -> int:
    """Resummarize each named sweep (a key of :data:`SWEEPS` or its tail after
    ``bench/figures/``; default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", help="sweep directories, e.g. "
                        "replay/pfabric-local60 or notebooks/data/comex/comex-dask-sort")
    args = parser.parse_args(argv)
    names = [s if s in SWEEPS else f"bench/figures/{s}" for s in args.sweeps] or list(SWEEPS)
    unknown = [s for s in names if s not in SWEEPS]
    if unknown:
        parser.error(f"{', '.join(unknown)}: expected one of {', '.join(SWEEPS)}")
    for sweep in names:
        print(f"{sweep}: {emulate.resummarize(REPO / sweep, sweep_config(sweep))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
