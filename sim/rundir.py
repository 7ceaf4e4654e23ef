"""Campaign runs: a run's key, its directory, its atomic execution and its ``runs.csv`` row.

Shared by the two executors, :mod:`disaggsim.sim.campaign` (local process pool) and
:mod:`disaggsim.sim.slurm` (a Slurm array whose tasks call :func:`execute_run`), so that
neither imports the other's internals. The layout of ``runs/`` is described in
:mod:`disaggsim.sim.campaign`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_dir
from disaggsim.guards import check_regular
from disaggsim.schemas import CAMPAIGN_FCT
from disaggsim.sim.hashing import sha256_json
from disaggsim.sim.runner import RunError, RunResult, RunSpec, run_one

#: Bumped when a run directory's content changes meaning (invalidates every run).
RUN_FORMAT = 1
#: Hex digits of the run key used as the directory name.
KEY_DIGITS = 16


class CampaignError(RuntimeError):
    """Some runs of a campaign failed, or the campaign cannot start."""


@dataclass(frozen=True)
class PlannedRun:
    """One grid point: its key (full SHA-256 hex) and spec."""

    key: str
    spec: RunSpec

    @property
    def dir_name(self) -> str:
        """The run directory's name under ``runs/``."""
        return self.key[:KEY_DIGITS]


@dataclass
class CampaignResult:
    """What :func:`run_campaign` did.

    Attributes:
        out_dir: the campaign directory.
        runs: one dict per grid point (key, CAMPAIGN_KEYS, status, flows, unfinished,
            wall_s); status is "ran", "skipped" (already done) or "pending" (slurm).
        fct_path, summary_path: collected tables (None until every run is done).
        summary: the summary of the collected table by the function the campaign was
            given (the content of summary.csv; None until collected, or no function).
        slurm_script: the array script written by the slurm executor, else None.
    """

    out_dir: Path
    runs: list[dict[str, Any]] = field(default_factory=list)
    fct_path: Path | None = None
    summary_path: Path | None = None
    summary: pd.DataFrame | None = None
    slurm_script: Path | None = None

    @property
    def ran(self) -> int:
        """Runs simulated by this call."""
        return sum(r["status"] == "ran" for r in self.runs)

    @property
    def skipped(self) -> int:
        """Runs found done and reused."""
        return sum(r["status"] == "skipped" for r in self.runs)

    @property
    def pending(self) -> int:
        """Runs left to a cluster scheduler (slurm executor)."""
        return sum(r["status"] == "pending" for r in self.runs)

    def fct(self) -> pd.DataFrame:
        """The collected FCT table (CAMPAIGN_FCT), all of it in memory: for small
        campaigns; read a large one by groups (``disaggsim.analysis.fct_file.FctFile``).
        Raises CampaignError if not collected."""
        if self.fct_path is None:
            raise CampaignError(f"{self.out_dir}: runs are pending; nothing collected yet")
        return pd.read_parquet(self.fct_path)


def run_key(spec: RunSpec, binary_id: dict[str, str]) -> str:
    """SHA-256 (hex) of a run's canonical inputs.

    Included: the flow table's content hash, the workload name, the topology, protocol,
    ns-3 attributes, rate, scope, seed, stop time, the ns-3 program's identity
    (:func:`disaggsim.sim.hashing.binary_identity`) and :data:`RUN_FORMAT`. Not included:
    file paths and the wall-clock timeout, which do not change the result.
    """
    return sha256_json(
        {
            "format": RUN_FORMAT,
            "flows_sha256": spec.flows_sha256,
            "workload": spec.workload,
            "topology": spec.topology,
            "protocol": spec.protocol,
            "attributes": spec.attributes,
            "rate_gbps": float(spec.rate_gbps),
            "scope": spec.scope,
            "seed": int(spec.seed),
            "stop_time_ns": spec.stop_time_ns,
            "binary": binary_id,
        }
    )


def is_done(run_dir: Path) -> bool:
    """True iff ``run_dir`` holds a finished run (its ``done.json`` marker exists)."""
    return (run_dir / "done.json").is_file()


class DamagedRunWarning(UserWarning):
    """A finished run's files were damaged; the run is redone (issue #21, class 9)."""


def damage(run_dir: Path) -> str:
    """What is wrong with a finished run's files ("" if nothing): ``done.json`` must be a
    JSON object with an integer ``flows``, and ``fct.parquet`` a readable Parquet file
    (footer and schema) of CAMPAIGN_FCT's columns with exactly that many rows (one per
    flow, ``runner.run_one``). Checks the footer only, not every page: a resume stays fast.
    """
    try:
        done = json.loads((run_dir / "done.json").read_text(encoding="utf-8"))
        flows = done["flows"]
        if not isinstance(flows, int) or isinstance(flows, bool):
            return "done.json: expected an integer 'flows'"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"done.json: expected the run's JSON record ({type(exc).__name__}: {exc})"
    fct = run_dir / "fct.parquet"
    try:
        check_regular(fct, "a run's FCT table")
        meta = pq.ParquetFile(fct).metadata
        names = set(meta.schema.names)
    except (OSError, ValueError, pa.ArrowException) as exc:
        return f"fct.parquet: expected a readable Parquet file ({exc})"
    if not set(CAMPAIGN_FCT.names) <= names or meta.num_rows != flows:
        return (
            f"fct.parquet: expected {flows} rows of CAMPAIGN_FCT, got {meta.num_rows} rows "
            f"of columns {sorted(names)}"
        )
    return ""


def reusable(run_dir: Path) -> bool:
    """Whether a resume may reuse ``run_dir``: it is done and undamaged. A damaged run
    directory is removed with a :class:`DamagedRunWarning` naming what was wrong, so the
    run is redone."""
    if not is_done(run_dir):
        return False
    problem = damage(run_dir)
    if not problem:
        return True
    warnings.warn(
        DamagedRunWarning(f"{run_dir}/{problem}; the finished run is damaged and is redone"),
        stacklevel=2,
    )
    shutil.rmtree(run_dir, ignore_errors=True)
    return False


def execute_run(planned: PlannedRun, runs_dir: Path) -> dict[str, Any]:
    """Run one planned run unless it is done; install it atomically.

    The run is built in a fresh ``runs/.tmp-*`` directory; ``done.json`` is written last
    and the directory renamed to ``runs/<key16>`` (``disaggsim.atomic.atomic_dir``). A
    directory there without ``done.json`` (left by an interrupted older layout or by hand)
    is replaced.

    Returns:
        The run's ``done.json`` content plus ``status``: "ran" or "skipped".

    Raises:
        RunError, BinaryNotFoundError: from :func:`run_one`; the attempt's files are kept
        in ``runs/failed/<key16>/``.
    """
    final = runs_dir / planned.dir_name
    if is_done(final):
        return {**json.loads((final / "done.json").read_text()), "status": "skipped"}
    with atomic_dir(final) as tmp:
        try:
            result = run_one(planned.spec, tmp)
        except BaseException as exc:
            failed = runs_dir / "failed" / planned.dir_name
            shutil.rmtree(failed, ignore_errors=True)
            failed.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, failed)
            if isinstance(exc, RunError):  # name the kept files, not the temp dir
                raise RunError(str(exc).replace(str(tmp), str(failed))) from None
            raise
        done = _done_record(planned, result)
        (tmp / "done.json").write_text(json.dumps(done, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(runs_dir / "failed" / planned.dir_name, ignore_errors=True)
    return {**done, "status": "ran"}


def _done_record(planned: PlannedRun, result: RunResult) -> dict[str, Any]:
    return {
        "key": planned.key,
        "spec": planned.spec.to_json(),
        "flows": result.flows,
        "unfinished": result.unfinished,
        "wall_s": result.wall_s,
        "stats": result.stats,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def run_row(run: PlannedRun, record: dict[str, Any]) -> dict[str, Any]:
    """The ``runs.csv`` row of a run: key, CAMPAIGN_KEYS, status, flows, unfinished,
    wall_s, events, and the lossless fabric's pfc_frames and paused_ns (0 on the lossy
    fabric; topologies/doc/lossless.md) (from ``record``, its ``done.json`` content; None
    while pending)."""
    spec = run.spec
    return {
        "key": run.dir_name,
        "workload": spec.workload,
        "protocol": spec.protocol,
        "rate_gbps": spec.rate_gbps,
        "scope": spec.scope,
        "seed": spec.seed,
        "status": record.get("status", "pending"),
        "flows": record.get("flows"),
        "unfinished": record.get("unfinished"),
        "wall_s": record.get("wall_s"),
        "events": record.get("stats", {}).get("events"),
        "pfc_frames": record.get("stats", {}).get("pfc_frames"),
        "paused_ns": record.get("stats", {}).get("paused_ns"),
    }
