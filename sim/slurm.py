"""The campaign runner's Slurm executor: pending runs as one Slurm job array.

With ``executor = "slurm"`` (``configs/README.md``, README "Running a campaign on Slurm"),
:func:`disaggsim.sim.campaign.run_campaign` calls :func:`run_array`, which

1. spreads the pending runs over at most ``campaign.slurm_tasks`` array tasks (and at most
   the cluster's ``MaxArraySize``; run ``i`` goes to task ``i % tasks``, so a task executes
   ``ceil(runs / tasks)`` runs one after the other and a thousand short runs do not pay a
   thousand times the scheduler's per-job overhead);
2. writes ``slurm/specs/<task>.json`` and ``slurm/array.sbatch`` and submits the array
   with ``sbatch --parsable`` (with ``slurm_submit = false`` it stops here: the user submits
   the script, e.g. on a remote cluster, and runs the campaign again to collect);
3. waits with ``squeue`` until no task of the array is pending or running. It needs no
   ``sacct`` (no slurmdbd): each task writes its own outcome file atomically;
4. reports every run that is not done: a run that failed inside its task (ns-3 error, its
   ``limits.run_timeout_s``), or a task that ended without its outcome file because Slurm
   killed it (scancel, time limit, node failure: the state squeue still shows) or it
   crashed. Such runs are never collected; they stay pending and the next run of the
   campaign submits them again. A run is done iff ``runs/<key16>/done.json`` exists, which
   :func:`disaggsim.sim.rundir.execute_run` installs atomically, so a run finished by a
   task before the task was killed is kept.

Layout under ``out_dir/slurm/``::

    array.sbatch                  the array script of the last submission
    specs/<task>.json             the runs of array task <task>
    job.json                      the submitted array: job_id, tasks, runs
    status/<job>/<task>.start.json   written by a task when it starts (host, pid, time)
    status/<job>/<task>.json      written by a task when it ends: each run's outcome
    logs/<job>_<task>.out         stdout and stderr of each task

Slurm behaviour relied upon (slurm-wlm 22.05 man pages sbatch(1), squeue(1), scontrol(1)):
``sbatch --parsable`` prints ``jobid[;cluster]``; ``squeue -r --states=all`` lists each
array task, including finished ones for ``MinJobAge`` seconds; ``MaxArraySize`` bounds the
array's task ids (``0 .. MaxArraySize-1``).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from disaggsim.atomic import write_text_atomic
from disaggsim.sim.config import CampaignConfig
from disaggsim.sim.rundir import (
    CampaignError,
    CampaignResult,
    PlannedRun,
    execute_run,
    is_done,
    reusable,
    run_row,
)
from disaggsim.sim.runner import RunSpec

#: squeue states of a task that has not ended yet (squeue(1) "JOB STATE CODES").
ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
        "SPECIAL_EXIT",
    }
)
#: End states in which Slurm, not the task, ended the task (squeue(1) "JOB STATE CODES").
KILLED_STATES = frozenset(
    {"CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}
)
#: Minutes added to each task's time limit beyond its runs' ``limits.run_timeout_s``
#: (Python start-up, workload generation, writing results).
TIME_MARGIN_MIN = 5


@dataclass
class ArrayJob:
    """A written (and possibly submitted) array: its directory, tasks and job id."""

    slurm_dir: Path
    tasks: list[list[PlannedRun]]
    script: Path
    job_id: str | None = None
    states: dict[int, str] = field(default_factory=dict)


def plan_tasks(n_runs: int, max_tasks: int, max_array_size: int | None = None) -> list[list[int]]:
    """Spread run indices ``0 .. n_runs-1`` over array tasks.

    Returns:
        One list of run indices per task, ``min(n_runs, max_tasks, max_array_size)``
        tasks; run ``i`` goes to task ``i % tasks`` (grid neighbours, which differ in seed,
        scope or rate and so in run time, land in different tasks). Every task has
        ``floor`` or ``ceil(n_runs / tasks)`` runs.

    Raises:
        ValueError: ``max_tasks`` or ``max_array_size`` < 1.
    """
    if max_tasks < 1 or (max_array_size is not None and max_array_size < 1):
        raise ValueError(f"task limits must be >= 1, got {max_tasks}, {max_array_size}")
    limit = max_tasks if max_array_size is None else min(max_tasks, max_array_size)
    n_tasks = min(n_runs, limit)
    return [list(range(task, n_runs, n_tasks)) for task in range(n_tasks)]


def _slurm_command(argv: list[str], what: str) -> str:
    """Run a Slurm client command; its stdout. Raises CampaignError with its stderr."""
    if shutil.which(argv[0]) is None:
        raise CampaignError(
            f"{argv[0]} not found: the Slurm executor needs the Slurm client commands "
            "(Debian: apt-get install slurm-client), or set campaign.slurm_submit = false "
            "to only write the array script"
        )
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CampaignError(
            f"{what} failed ({shlex.join(argv)}, exit {proc.returncode}): "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout


def max_array_size() -> int:
    """The cluster's ``MaxArraySize`` (``scontrol show config``); task ids must be below it.

    Raises:
        CampaignError: scontrol is missing or fails, or prints no MaxArraySize.
    """
    conf = os.environ.get("SLURM_CONF")
    if conf and not Path(conf).is_file():  # scontrol would retry for 60 s
        raise CampaignError(f"$SLURM_CONF names {conf}, which does not exist")
    out = _slurm_command(
        ["scontrol", "show", "config"],
        "reading the Slurm configuration (no cluster? README: 'Running a campaign on Slurm')",
    )
    for line in out.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "MaxArraySize":
            return int(value.strip())
    raise CampaignError("scontrol show config printed no MaxArraySize")


def write_array(
    config: CampaignConfig,
    pending: list[PlannedRun],
    runs_dir: Path,
    slurm_dir: Path,
    array_limit: int | None,
) -> ArrayJob:
    """Write ``specs/<task>.json`` and ``array.sbatch`` for ``pending`` (non-empty).

    Each task's ``--time`` is the sum of its runs' ``limits.run_timeout_s`` plus
    :data:`TIME_MARGIN_MIN`; without submission (``slurm_submit = false``) the
    ``slurm_sbatch_args`` become ``#SBATCH`` lines, else they go on sbatch's command line.
    """
    groups = plan_tasks(len(pending), config.campaign.slurm_tasks, array_limit)
    tasks = [[pending[i] for i in group] for group in groups]
    specs_dir = slurm_dir / "specs"
    shutil.rmtree(specs_dir, ignore_errors=True)
    specs_dir.mkdir(parents=True)
    (slurm_dir / "logs").mkdir(exist_ok=True)
    for index, runs in enumerate(tasks):
        task = {
            "runs_dir": str(runs_dir),
            "runs": [{"key": run.key, "spec": run.spec.to_json()} for run in runs],
        }
        write_text_atomic(specs_dir / f"{index}.json", json.dumps(task, indent=2) + "\n")
    longest = max(len(runs) for runs in tasks)
    minutes = math.ceil(longest * config.limits.run_timeout_s / 60) + TIME_MARGIN_MIN
    lines = [
        "#!/bin/bash",
        f"# disaggsim campaign {config.campaign.name}: {len(pending)} runs in {len(tasks)} "
        "array tasks (disaggsim.sim.slurm)",
        f"#SBATCH --job-name={config.campaign.name}",
        f"#SBATCH --array=0-{len(tasks) - 1}",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --time={minutes}",
        f"#SBATCH --output={slurm_dir}/logs/%A_%a.out",
    ]
    if not config.campaign.slurm_submit:
        lines += [f"#SBATCH {arg}" for arg in config.campaign.slurm_sbatch_args]
    lines += [
        f"exec {shlex.quote(sys.executable)} -m disaggsim.sim.slurm run-task "
        f'{shlex.quote(str(slurm_dir))} "$SLURM_ARRAY_TASK_ID"',
        "",
    ]
    script = slurm_dir / "array.sbatch"
    write_text_atomic(script, "\n".join(lines))
    script.chmod(0o755)
    return ArrayJob(slurm_dir, tasks, script)


def submit(job: ArrayJob, sbatch_args: list[str]) -> str:
    """``sbatch --parsable`` the array; records ``job.json`` and returns the job id.
    Removes the outcome files of earlier arrays first.

    Raises:
        CampaignError: sbatch missing or refusing the job (its message).
    """
    # Outcome files of earlier arrays: a restarted cluster reuses job ids, so an old
    # status/<job>/ could be mistaken for this array's (none of ours is active now).
    shutil.rmtree(job.slurm_dir / "status", ignore_errors=True)
    out = _slurm_command(
        ["sbatch", "--parsable", *sbatch_args, str(job.script)], "submitting the array"
    )
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise CampaignError(f"sbatch --parsable printed {out.strip()!r}, expected a job id")
    job.job_id = job_id
    record = {
        "job_id": job_id,
        "tasks": len(job.tasks),
        "runs": sum(len(runs) for runs in job.tasks),
        "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_text_atomic(job.slurm_dir / "job.json", json.dumps(record, indent=2) + "\n")
    return job_id


def task_states(job_id: str) -> dict[int, str] | None:
    """Each array task's state as squeue shows it (finished ones until MinJobAge).

    Returns:
        ``{task_id: state}``; None when slurmctld no longer knows the job at all.

    Raises:
        CampaignError: squeue fails for another reason.
    """
    argv = ["squeue", "-h", "-r", "--states=all", "-j", job_id, "-o", "%K|%T"]
    if shutil.which("squeue") is None:
        raise CampaignError("squeue not found: cannot wait for the Slurm array")
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return None
        raise CampaignError(f"{shlex.join(argv)} failed: {proc.stderr.strip()}")
    states: dict[int, str] = {}
    for line in proc.stdout.splitlines():
        task, _, state = line.strip().partition("|")
        if task.isdigit():
            states[int(task)] = state.strip()
    return states


def wait(job: ArrayJob, progress: bool, poll_s: float = 0.5, max_poll_s: float = 10.0) -> None:
    """Poll squeue until no task of ``job`` is active; fills ``job.states`` with the last
    state seen of each task. Polls every ``poll_s`` seconds, growing 1.5x up to
    ``max_poll_s``, and retries a failing squeue 5 times (slurmctld may be busy)."""
    assert job.job_id is not None
    from tqdm import tqdm

    status_dir = job.slurm_dir / "status" / job.job_id
    errors = 0
    with tqdm(
        total=len(job.tasks),
        disable=not progress,
        unit="task",
        desc=f"slurm array {job.job_id}",
        file=sys.stderr,
    ) as bar:
        while True:
            try:
                states = task_states(job.job_id)
                errors = 0
            except CampaignError:
                errors += 1
                if errors > 5:
                    raise
                time.sleep(poll_s)
                continue
            if states is not None:
                job.states.update(states)
            ended = sum((status_dir / f"{t}.json").is_file() for t in range(len(job.tasks)))
            bar.update(ended - bar.n)
            if states is None or not any(s in ACTIVE_STATES for s in states.values()):
                return
            time.sleep(poll_s)
            poll_s = min(poll_s * 1.5, max_poll_s)


def failures(job: ArrayJob, runs_dir: Path) -> list[str]:
    """One message per task with runs that are not done after the array ended, naming
    each such run and why (its error, or the Slurm state and log of a killed task)."""
    assert job.job_id is not None
    status_dir = job.slurm_dir / "status" / job.job_id
    messages = []
    for index, runs in enumerate(job.tasks):
        missing = [run for run in runs if not is_done(runs_dir / run.dir_name)]
        if not missing:
            continue
        log = job.slurm_dir / "logs" / f"{job.job_id}_{index}.out"
        state = job.states.get(index, "unknown (no longer in squeue)")
        outcome_path = status_dir / f"{index}.json"
        where = f"array task {job.job_id}_{index}"
        if outcome_path.is_file():
            outcome = {r["key"]: r for r in json.loads(outcome_path.read_text())["runs"]}
            lines = [f"{where} (Slurm state {state}; log {log}):"]
            for run in missing:
                error = outcome.get(run.key, {}).get("error", "not run")
                lines.append(f"  {_describe(run.spec)}: " + error.replace("\n", "\n    "))
        else:
            started = (status_dir / f"{index}.start.json").is_file()
            if state in KILLED_STATES:
                why = f"killed by Slurm ({state})"
            else:
                why = f"ended without writing its outcome (Slurm state {state})"
            lines = [
                f"{where} {'' if started else 'never started, '}{why}; log {log}; "
                f"{len(missing)} of its {len(runs)} runs not done:"
            ]
            lines += [f"  {_describe(run.spec)}" for run in missing]
        messages.append("\n".join(lines))
    return messages


def _describe(spec: RunSpec) -> str:
    return f"{spec.workload} {spec.protocol} {spec.rate_gbps:g}Gbps {spec.scope} seed={spec.seed}"


def wait_previous(out_dir: Path, progress: bool) -> None:
    """If an array submitted by an earlier, interrupted call is still active, wait for it
    (so its runs are neither disturbed nor submitted twice)."""
    record_path = out_dir / "slurm" / "job.json"
    if not record_path.is_file() or shutil.which("squeue") is None:
        return
    record = json.loads(record_path.read_text())
    script = out_dir / "slurm" / "array.sbatch"
    states = task_states(record["job_id"])
    if states is None or not any(s in ACTIVE_STATES for s in states.values()):
        return
    # job ids restart on a new cluster: the job must run this campaign's script
    proc = subprocess.run(
        ["squeue", "-h", "-j", record["job_id"], "-o", "%o"],
        capture_output=True,
        text=True,
        check=False,
    )
    if str(script) not in proc.stdout.split():
        return
    print(
        f"slurm: waiting for array {record['job_id']} submitted earlier by this campaign",
        file=sys.stderr,
    )
    job = ArrayJob(
        out_dir / "slurm", [[] for _ in range(record["tasks"])], script, job_id=record["job_id"]
    )
    wait(job, progress)


def run_array(
    config: CampaignConfig,
    planned: list[PlannedRun],
    runs_dir: Path,
    result: CampaignResult,
    progress: bool,
) -> None:
    """The Slurm executor (see the module docstring): fills ``result.runs``.

    With ``slurm_submit = false`` it writes the script and leaves the runs "pending".
    Else, on return every run is done and ``result.runs`` holds "ran"/"skipped" rows.

    Raises:
        CampaignError: Slurm commands missing or failing, or runs not done after the
        array ended (every one listed, with its error or its task's Slurm state).
    """
    was_done = [reusable(runs_dir / run.dir_name) for run in planned]  # damaged: redone
    pending = [run for run, done in zip(planned, was_done, strict=True) if not done]

    def rows() -> list[dict[str, Any]]:
        out = []
        for run, before in zip(planned, was_done, strict=True):
            if is_done(runs_dir / run.dir_name):
                record = execute_run(run, runs_dir)  # reads done.json
                record["status"] = "skipped" if before else "ran"
            else:
                record = {}
            out.append(run_row(run, record))
        return out

    if not pending:
        result.runs = rows()
        return
    slurm_dir = result.out_dir / "slurm"
    slurm_dir.mkdir(parents=True, exist_ok=True)
    submit_now = config.campaign.slurm_submit
    job = write_array(
        config, pending, runs_dir, slurm_dir, max_array_size() if submit_now else None
    )
    result.slurm_script = job.script
    if not submit_now:
        result.runs = rows()
        return
    job_id = submit(job, config.campaign.slurm_sbatch_args)
    if progress:
        print(
            f"slurm: submitted array {job_id}: {len(pending)} runs in {len(job.tasks)} tasks",
            file=sys.stderr,
        )
    wait(job, progress)
    result.runs = rows()
    problems = failures(job, runs_dir)
    if problems:
        not_done = sum(r["status"] == "pending" for r in result.runs)
        raise CampaignError(
            f"slurm array {job_id}: {not_done} of {len(planned)} runs not done (finished "
            "runs are kept; run the campaign again to submit the rest):\n" + "\n".join(problems)
        )


def run_task(slurm_dir: Path, index: int) -> int:
    """Execute array task ``index`` (``specs/<index>.json``): every run in turn, a failing
    run not stopping the others. Writes ``status/<job>/<index>.start.json`` first and
    ``status/<job>/<index>.json`` (each run's status and error) last, atomically.

    Returns:
        The exit code: 0 if every run is done, 1 if one failed.
    """
    task = json.loads((slurm_dir / "specs" / f"{index}.json").read_text())
    runs_dir = Path(task["runs_dir"])
    job_id = os.environ.get("SLURM_ARRAY_JOB_ID", "manual")
    status_dir = slurm_dir / "status" / job_id
    status_dir.mkdir(parents=True, exist_ok=True)
    started = {
        "task": index,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_text_atomic(status_dir / f"{index}.start.json", json.dumps(started) + "\n")
    outcomes = []
    for item in task["runs"]:
        run = PlannedRun(item["key"], RunSpec.from_json(item["spec"]))
        try:
            record = execute_run(run, runs_dir)
            outcomes.append({"key": run.key, "status": record["status"]})
        except Exception as exc:  # reported by the submitting campaign
            outcomes.append(
                {"key": run.key, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            )
        print(json.dumps({"run": _describe(run.spec), **outcomes[-1]}), flush=True)
    failed = sum(o["status"] == "failed" for o in outcomes)
    outcome = {
        **started,
        "ended_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "exit": int(failed > 0),
        "runs": outcomes,
    }
    write_text_atomic(status_dir / f"{index}.json", json.dumps(outcome, indent=2) + "\n")
    return int(failed > 0)


def main(argv: list[str] | None = None) -> int:
    """``python -m disaggsim.sim.slurm run-task SLURM_DIR TASK``: what each array task runs."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 3 and args[0] == "run-task" and args[2].isdigit():
        return run_task(Path(args[1]), int(args[2]))
    print("usage: python -m disaggsim.sim.slurm run-task SLURM_DIR TASK", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "ACTIVE_STATES",
    "KILLED_STATES",
    "ArrayJob",
    "failures",
    "max_array_size",
    "plan_tasks",
    "run_array",
    "run_task",
    "submit",
    "task_states",
    "wait",
    "wait_previous",
    "write_array",
]
