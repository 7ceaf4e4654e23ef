"""Wall time of a campaign of many short runs on the Slurm executor, by runs per array task.

Brings up the single-node Slurm cluster of ``sim/slurm-local.sh`` (as root; private
slurm.conf, under ``/run/lock/disaggsim-system.lock``), then runs the same campaign of
``--runs`` tiny runs (12 synthetic web-search flows on a 2 x 4-host fabric, one seed each)
with ``slurm_tasks`` = each value of ``--tasks`` (``runs / tasks`` runs per task), each in a
fresh output directory, and once with the local executor (``jobs = --cpus``) for reference.
Prints a Markdown table: tasks, runs per task, wall seconds from submission to collected
tables, seconds per run. Usage::

    .venv/bin/python bench/bench_slurm_array.py --runs 100 --tasks 100 10
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from disaggsim.analysis.stats import summarize_groups
from disaggsim.sim.campaign import run_campaign

REPO = Path(__file__).resolve().parents[1]


def _config(directory: Path, name: str, runs: int, campaign: str) -> Path:
    seeds = ", ".join(str(s) for s in range(1, runs + 1))
    path = directory / f"{name}.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "{name}"
            out_dir = "{name}"
            {campaign}

            [[workloads]]
            kind = "synthetic"
            name = "websearch"
            cdf = "websearch"
            load = 0.3
            n_flows = 12

            [topology]
            racks = 2
            hosts_per_rack = 4
            spines = 2

            [grid]
            protocols = ["tcp-ns3"]
            rates_gbps = [40]
            scopes = ["datacenter"]
            seeds = [{seeds}]
            """
        )
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tasks", type=int, nargs="+", default=[100, 10])
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dsim-bench-"))
    try:
        _bench(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _bench(args: argparse.Namespace, work: Path) -> None:
    state = work / "cluster"
    env = {
        **os.environ,
        "SLURM_LOCAL_DIR": str(state),
        "SLURM_LOCAL_CONF": str(state / "slurm.conf"),
        "SLURM_LOCAL_CPUS": str(args.cpus),
    }
    rows = []
    with open("/run/lock/disaggsim-system.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.environ["SLURM_CONF"] = env["SLURM_LOCAL_CONF"]
        script = REPO / "sim" / "slurm-local.sh"
        subprocess.run(["bash", str(script), "start"], env=env, check=True)
        try:
            for tasks in args.tasks:
                config = _config(
                    work, f"slurm{tasks}", args.runs, f'executor = "slurm"\nslurm_tasks = {tasks}'
                )
                start = time.monotonic()
                result = run_campaign(config, progress=False, summarize=summarize_groups)
                wall = time.monotonic() - start
                assert result.ran == args.runs
                rows.append(
                    (
                        f"slurm, {min(tasks, args.runs)} tasks",
                        args.runs / min(tasks, args.runs),
                        wall,
                    )
                )
        finally:
            subprocess.run(["bash", str(script), "stop"], env=env, check=True)
    config = _config(work, "local", args.runs, f"jobs = {args.cpus}")
    start = time.monotonic()
    run_campaign(config, progress=False, summarize=summarize_groups)
    rows.append((f"local, jobs = {args.cpus}", float("nan"), time.monotonic() - start))
    print(f"{args.runs} runs, node CPUs = {args.cpus}, load average {os.getloadavg()[0]:.1f}")
    print("| executor | runs per task | wall s | s per run |\n| --- | --- | --- | --- |")
    for name, per_task, wall in rows:
        shown = "-" if per_task != per_task else f"{per_task:g}"  # NaN: local executor
        print(f"| {name} | {shown} | {wall:.1f} | {wall / args.runs:.2f} |")


if __name__ == "__main__":
    main()
