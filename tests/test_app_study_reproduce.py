"""bench/app_study_reproduce.py: the second VM's classification-point configs are what the
script derives (so the commands in bench/RESULTS.md rebuild them), each resumes its
committed sweep with every run reused, and the table's verdicts are the sweeps' own."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from _bench import load_bench

from disaggsim.swapdev import emulate

REPO = Path(__file__).resolve().parents[1]
reproduce = load_bench("app_study_reproduce")

OUT = REPO / "notebooks" / "data" / "app_study" / "reproduce-2026-11-28"


@pytest.mark.parametrize("app", reproduce.APPS)
def test_each_committed_config_is_derived_and_resumes_its_sweep(app: str) -> None:
    path = OUT / f"{app}.json"
    committed = json.loads(path.read_text())
    cap = committed["emulate"]["repeats_max"]
    assert committed == reproduce.derive(app, cap)
    cfg = emulate.load_emulate_config(path)
    with open(OUT / app / "runs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    done = emulate.previous_runs(cfg, (OUT / app).resolve())
    assert len(done) == len(rows) == 2 * max(int(r["repeat"]) + 1 for r in rows)


def test_a_cap_below_the_verdicts_rounds_is_refused() -> None:
    with pytest.raises(ValueError, match="less than the 6 rounds"):
        reproduce.derive("chunksort", reproduce.ROUNDS - 1)


def test_the_table_gives_each_sweeps_own_verdict() -> None:
    table = reproduce.table(OUT).set_index("application")
    for app in reproduce.APPS:
        with open(OUT / app / "summary.csv", newline="") as handle:
            point = next(r for r in csv.DictReader(handle) if r["model"] != "none")
        assert table.loc[app, "reproduced"].endswith(f" {point['pairs']} {point['verdict']}")
        assert table.loc[app, "reproduced"].startswith(f"{float(point['relative_jct']):.3f} [")
