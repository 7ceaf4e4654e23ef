"""The campaign runner's Slurm executor against a real Slurm.

The module fixture brings up a single-node cluster on localhost with ``sim/slurm-local.sh``
(real munged, slurmctld and slurmd; its slurm.conf in a private directory named by
``$SLURM_CONF``, so ``/etc/slurm`` is not touched), and stops it afterwards, checking that
no daemon and no state directory is left. It holds ``/run/lock/disaggsim-system.lock``
meanwhile, as every test that changes machine state does. Without the Slurm packages
(Makefile ``APT_PACKAGES``) or root the tests FAIL: they are the only check of this executor.

Oracles: the local executor's tables for the same campaign (the same ns-3 program on the
same inputs is deterministic), and hand-counted task layouts.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from _own_processes import live_processes

from disaggsim.analysis.stats import summarize_groups
from disaggsim.sim.campaign import CampaignError, PlannedRun, run_campaign
from disaggsim.sim.config import ConfigError, load_config
from disaggsim.sim.runner import BinaryNotFoundError, RunSpec, find_binary
from disaggsim.sim.slurm import ArrayJob, failures, max_array_size, plan_tasks

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "sim" / "slurm-local.sh"
SYSTEM_LOCK = Path("/run/lock/disaggsim-system.lock")
#: The test cluster's MaxArraySize: small, so that a 4-run campaign meets it.
MAX_ARRAY_SIZE = 3


def _config(tmp_path: Path, name: str, campaign: str, grid: str, n_flows: int) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "{name}"
            out_dir = "{name}"
            jobs = 2
            """
        )
        + textwrap.dedent(campaign)
        + textwrap.dedent(
            f"""
            [[workloads]]
            kind = "synthetic"
            name = "websearch"
            cdf = "websearch"
            load = 0.3
            n_flows = {n_flows}

            [topology]
            racks = 2
            hosts_per_rack = 4
            spines = 2

            [limits]
            run_timeout_s = 120
            """
        )
        + textwrap.dedent(grid)
    )
    return path


GRID_4 = """
[grid]
protocols = ["tcp", "dctcp"]
rates_gbps = [40, 100]
scopes = ["datacenter"]
seeds = [1]
"""


# --- without a cluster: task layout and config keys --------------------------------------


def test_plan_tasks_groups_runs_evenly_within_limits():
    # 1000 runs, default 100 tasks: 10 runs each, run i in task i % 100
    tasks = plan_tasks(1000, 100)
    assert len(tasks) == 100 and {len(t) for t in tasks} == {10}
    assert tasks[7] == list(range(7, 1000, 100))
    assert sorted(i for t in tasks for i in t) == list(range(1000))
    # the array size limit wins over the target: 1000 runs, MaxArraySize 64 -> 64 tasks
    # of 15 or 16 runs (1000 = 40 * 16 + 24 * 15)
    tasks = plan_tasks(1000, 100, max_array_size=64)
    assert len(tasks) == 64
    assert [len(t) for t in tasks].count(16) == 40 and [len(t) for t in tasks].count(15) == 24
    # fewer runs than tasks: one run per task
    assert plan_tasks(3, 100) == [[0], [1], [2]]
    with pytest.raises(ValueError, match=">= 1"):
        plan_tasks(3, 0)


def test_slurm_keys_are_validated(tmp_path):
    bad = _config(
        tmp_path, "bad", 'executor = "slurm"\nslurm_sbatch_args = ["--array=0-3"]\n', GRID_4, 12
    )
    expected = r"bad.toml:6: campaign.slurm_sbatch_args: .*'--array=0-3'.*not --array"
    with pytest.raises(ConfigError, match=expected):
        load_config(bad)
    bad = _config(tmp_path, "bad2", 'executor = "slurm"\nslurm_tasks = 0\n', GRID_4, 12)
    with pytest.raises(ConfigError, match="slurm_tasks"):
        load_config(bad)
    bad = _config(tmp_path, "bad3", 'executor = "slurm"\nslurm_cpus = 2\n', GRID_4, 12)
    with pytest.raises(ConfigError, match="slurm_cpus"):
        load_config(bad)


def _need_binary() -> None:
    try:
        find_binary()
    except BinaryNotFoundError as exc:
        pytest.fail(f"the ns-3 program is needed: {exc}")


def test_thousand_runs_write_a_hundred_task_array(tmp_path):
    """Issue 11's scale: 1000 runs (500 seeds x 2 scopes) make 100 tasks of 10 runs."""
    _need_binary()
    seeds = ", ".join(str(s) for s in range(1, 501))
    grid = f"""
    [grid]
    protocols = ["tcp"]
    rates_gbps = [40]
    scopes = ["datacenter", "rack"]
    seeds = [{seeds}]
    """
    extra = 'executor = "slurm"\nslurm_submit = false\nslurm_sbatch_args = ["--partition=big"]\n'
    config = _config(tmp_path, "big", extra, grid, 12)
    result = run_campaign(config, progress=False)
    assert (result.pending, result.ran, result.fct_path) == (1000, 0, None)
    assert result.slurm_script is not None
    body = result.slurm_script.read_text()
    assert "#SBATCH --array=0-99\n" in body and "#SBATCH --partition=big\n" in body
    # each task's time limit: 10 runs x 120 s + 5 min margin = 25 min
    assert "#SBATCH --time=25\n" in body
    specs = sorted((result.out_dir / "slurm" / "specs").glob("*.json"))
    assert len(specs) == 100
    keys = [r["key"] for s in specs for r in json.loads(s.read_text())["runs"]]
    assert len(keys) == 1000 and len(set(keys)) == 1000
    assert {len(json.loads(s.read_text())["runs"]) for s in specs} == {10}


def test_failures_name_the_slurm_state_log_and_runs_of_a_task_without_outcome(tmp_path):
    """The report of a task that wrote no outcome file, for the states squeue can show."""
    _need_binary()
    extra = 'executor = "slurm"\nslurm_submit = false\nslurm_tasks = 1\n'
    result = run_campaign(_config(tmp_path, "report", extra, GRID_4, 12), progress=False)
    slurm_dir = result.out_dir / "slurm"
    spec = json.loads((slurm_dir / "specs" / "0.json").read_text())
    runs = [PlannedRun(r["key"], RunSpec.from_json(r["spec"])) for r in spec["runs"]]
    assert result.slurm_script is not None
    job = ArrayJob(slurm_dir, [runs], result.slurm_script, job_id="7")
    names = [
        "websearch tcp 40Gbps datacenter seed=1",
        "websearch tcp 100Gbps datacenter seed=1",
        "websearch dctcp 40Gbps datacenter seed=1",
        "websearch dctcp 100Gbps datacenter seed=1",
    ]
    log = slurm_dir / "logs" / "7_0.out"
    runs_list = "".join(f"\n  {name}" for name in names)
    # never started, then a node failure
    job.states = {0: "NODE_FAIL"}
    assert failures(job, result.out_dir / "runs") == [
        f"array task 7_0 never started, killed by Slurm (NODE_FAIL); log {log}; "
        f"4 of its 4 runs not done:{runs_list}"
    ]
    # started, then purged from squeue (MinJobAge) without an outcome file
    (slurm_dir / "status" / "7").mkdir(parents=True)
    (slurm_dir / "status" / "7" / "0.start.json").write_text("{}")
    job.states = {}
    assert failures(job, result.out_dir / "runs") == [
        "array task 7_0 ended without writing its outcome (Slurm state unknown (no longer "
        f"in squeue)); log {log}; 4 of its 4 runs not done:{runs_list}"
    ]


def test_submit_without_a_cluster_is_a_clear_error(tmp_path, monkeypatch):
    _need_binary()
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "absent.conf"))
    config = _config(tmp_path, "nocluster", 'executor = "slurm"\n', GRID_4, 12)
    with pytest.raises(CampaignError, match=r"\$SLURM_CONF names .*absent.conf, which does not"):
        run_campaign(config, progress=False)
    assert not (tmp_path / "nocluster" / "slurm" / "job.json").exists()


# --- a real single-node cluster ------------------------------------------------------------


def _daemons(conf: Path) -> list[str]:
    """The command names of the live processes the cluster of ``conf`` started: their
    environment carries ``SLURM_CONF=conf`` (``slurm-local.sh`` exports it before it starts
    munged, slurmctld and slurmd, whose job steps inherit it). Another engineer's Slurm or
    munged on this machine is not one of them."""
    return sorted(
        cmd.split()[0].rsplit("/", 1)[-1].rstrip(":")
        for cmd in live_processes(str(conf), "SLURM_CONF").values()
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    missing = [c for c in ("slurmctld", "slurmd", "sbatch", "munged") if shutil.which(c) is None]
    if missing:
        pytest.fail(
            f"Slurm is not installed (missing {', '.join(missing)}): run `make deps` "
            "(apt-get install slurmctld slurmd slurm-client munge)"
        )
    if os.geteuid() != 0:
        pytest.fail("the single-node Slurm cluster must be started as root")
    _need_binary()
    SYSTEM_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(SYSTEM_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = Path(tempfile.mkdtemp(prefix="dsim-slurm-"))
        conf = state / "slurm.conf"
        env = {
            **os.environ,
            "SLURM_LOCAL_DIR": str(state),
            "SLURM_LOCAL_CONF": str(conf),
            "SLURM_LOCAL_CPUS": "2",
            "SLURM_LOCAL_MAX_ARRAY": str(MAX_ARRAY_SIZE),
        }
        saved = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = str(conf)
        try:
            subprocess.run(["bash", str(SCRIPT), "start"], env=env, check=True, timeout=60)
            # a munged someone else started stays running, and is not ours
            assert {"slurmctld", "slurmd"} <= set(_daemons(conf)), _daemons(conf)
            yield state
        finally:
            subprocess.run(["bash", str(SCRIPT), "stop"], env=env, check=True, timeout=60)
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved
        assert not state.exists(), "stop must remove the cluster's state directory"
        assert _daemons(conf) == [], "stop must leave no process of the cluster running"


def test_cluster_reports_its_array_limit(cluster):
    assert max_array_size() == MAX_ARRAY_SIZE  # SLURM_LOCAL_MAX_ARRAY of the fixture


def test_slurm_array_equals_local_executor(cluster, tmp_path):
    """2 protocols x 2 rates on Slurm: the same tables as the local pool. The default
    slurm_tasks (100) meets the cluster's MaxArraySize of 3: 3 tasks of 2, 1 and 1 runs."""
    local = run_campaign(
        _config(tmp_path, "local", "", GRID_4, 24), progress=False, summarize=summarize_groups
    )
    slurm_cfg = _config(tmp_path, "onslurm", 'executor = "slurm"\n', GRID_4, 24)
    start = time.monotonic()
    slurm = run_campaign(slurm_cfg, progress=False, summarize=summarize_groups)
    elapsed = time.monotonic() - start
    assert (slurm.pending, slurm.ran, slurm.skipped) == (0, 4, 0)
    assert elapsed < 60
    pd.testing.assert_frame_equal(slurm.fct(), local.fct())
    assert len(slurm.fct()) == 4 * 24
    assert slurm.summary_path is not None and local.summary_path is not None
    assert slurm.summary_path.read_text() == local.summary_path.read_text()
    keep = ["key", "workload", "protocol", "rate_gbps", "scope", "seed", "flows", "unfinished"]
    runs = [pd.read_csv(r.out_dir / "runs.csv")[keep] for r in (slurm, local)]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    # it really ran as a 3-task array: outcome files under the Slurm job id
    job = json.loads((slurm.out_dir / "slurm" / "job.json").read_text())
    assert (job["tasks"], job["runs"]) == (3, 4)
    assert "#SBATCH --array=0-2\n" in (slurm.out_dir / "slurm" / "array.sbatch").read_text()
    status = slurm.out_dir / "slurm" / "status" / job["job_id"]
    for task, n_runs in ((0, 2), (1, 1), (2, 1)):
        outcome = json.loads((status / f"{task}.json").read_text())
        assert [r["status"] for r in outcome["runs"]] == ["ran"] * n_runs
        assert outcome["exit"] == 0
        assert (slurm.out_dir / "slurm" / "logs" / f"{job['job_id']}_{task}.out").is_file()
    # a second call finds every run done and submits nothing
    again = run_campaign(slurm_cfg, progress=False)
    assert (again.skipped, again.ran) == (4, 0)
    assert json.loads((slurm.out_dir / "slurm" / "job.json").read_text()) == job


def test_task_killed_by_slurm_is_reported_and_resubmitted(cluster, tmp_path):
    """scancel of the running task: its runs are reported, not collected, and the next
    call submits them again and completes the campaign."""
    grid = """
    [grid]
    protocols = ["tcp"]
    rates_gbps = [40]
    scopes = ["datacenter", "rack"]
    seeds = [1]
    """
    n_flows = 100  # ~2 s per run on the project's 2-core machine: killed mid-run
    config = _config(tmp_path, "killed", 'executor = "slurm"\nslurm_tasks = 1\n', grid, n_flows)
    out = tmp_path / "killed"
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(run_campaign, config, None, False)
        deadline = time.monotonic() + 60
        started: list[Path] = []
        while not started and time.monotonic() < deadline and not future.done():
            started = list((out / "slurm" / "status").glob("*/0.start.json"))
            time.sleep(0.05)
        assert started, "the array task did not start within 60 s"
        job_id = started[0].parent.name
        subprocess.run(["scancel", f"{job_id}_0"], check=True)
        with pytest.raises(CampaignError) as info:
            future.result(timeout=60)
    message = str(info.value)
    assert f"slurm array {job_id}: 2 of 2 runs not done" in message
    assert f"array task {job_id}_0 killed by Slurm (CANCELLED)" in message
    assert "websearch tcp 40Gbps datacenter seed=1" in message
    assert "websearch tcp 40Gbps rack seed=1" in message
    assert not (out / "fct.parquet").exists()
    assert not list((out / "runs").glob("*/done.json"))
    assert not (out / "slurm" / "status" / job_id / "0.json").exists()

    resumed = run_campaign(config, progress=False)
    assert (resumed.pending, resumed.ran, resumed.skipped) == (0, 2, 0)
    new_job = json.loads((out / "slurm" / "job.json").read_text())["job_id"]
    assert new_job != job_id
    fct = resumed.fct()
    assert len(fct) == 2 * n_flows and (fct["finished"] == 1).all()
    assert not list((out / "runs").glob(".tmp-*")), "the killed run's temp dir is removed"


def test_run_failing_inside_its_task_is_reported_with_its_error(cluster, tmp_path, monkeypatch):
    """A run the ns-3 program rejects fails in its task; the task's other run is kept.

    The campaign's preflight now rejects the bad value before any run (issue #21,
    tests/test_issue21_reproducers.py); its value probe is bypassed here so that ns-3
    aborts ("Can't Parse Time bogus") inside the task, the case this test is about.
    """
    from disaggsim.sim import campaign

    monkeypatch.setattr(campaign, "_attribute_value_problem", lambda *args: "")
    grid = """
    [grid]
    protocols = ["tcp", "dctcp"]
    rates_gbps = [40]
    scopes = ["datacenter"]
    seeds = [1]

    [protocols.dctcp.attributes]
    "ns3::TcpSocketBase::MinRto" = "bogus"
    """
    config = _config(tmp_path, "failing", 'executor = "slurm"\nslurm_tasks = 1\n', grid, 12)
    with pytest.raises(CampaignError) as info:
        run_campaign(config, progress=False)
    message = str(info.value)
    job_id = json.loads((tmp_path / "failing" / "slurm" / "job.json").read_text())["job_id"]
    assert f"slurm array {job_id}: 1 of 2 runs not done" in message
    # the task ran to its end (exit 1 -> FAILED) and named the failed run and its error
    assert f"array task {job_id}_0 (Slurm state FAILED;" in message
    assert "websearch dctcp 40Gbps datacenter seed=1: RunError:" in message
    assert "websearch tcp" not in message
    assert len(list((tmp_path / "failing" / "runs").glob("*/done.json"))) == 1


def test_interrupted_runner_waits_for_its_array_instead_of_resubmitting(cluster, tmp_path):
    """`disaggsim run` killed while waiting: the array keeps running; the next call waits
    for that array (same job id, no second submission) and collects its runs."""
    config = _config(tmp_path, "interrupted", 'executor = "slurm"\nslurm_tasks = 2\n', GRID_4, 24)
    out = tmp_path / "interrupted"
    runner = subprocess.Popen(
        [sys.executable, "-m", "disaggsim.sim.campaign", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / "slurm" / "job.json").exists() and time.monotonic() < deadline:
            assert runner.poll() is None, "the runner ended before submitting"
            time.sleep(0.05)
    finally:
        runner.kill()
        runner.wait()
    job = json.loads((out / "slurm" / "job.json").read_text())
    active = subprocess.run(
        ["squeue", "-h", "-j", job["job_id"], "-o", "%T"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert active, "the array must still be queued or running when the runner is killed"
    resumed = run_campaign(config, progress=False)
    assert json.loads((out / "slurm" / "job.json").read_text()) == job
    assert (resumed.pending, resumed.skipped) == (0, 4)  # done by the first array
    assert len(resumed.fct()) == 4 * 24
