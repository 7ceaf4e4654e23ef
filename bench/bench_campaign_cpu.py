"""CPU time per protocol of a finished campaign: each run's ns-3 process re-run and measured.

A campaign's ``runs.csv`` holds each run's wall time, which on a shared machine grows with
the other jobs' load.  This re-runs every run's recorded command (``runs/<key>/command.txt``,
relative to the run directory, whose ``flows.csv`` the run kept) in a scratch copy of that
directory and reads the process's user + system CPU time from ``os.wait4`` (the kernel's
accounting of that child alone), which the load barely changes.  Prints one row per protocol:
runs, CPU seconds, share of the campaign's CPU, and the same from ``runs.csv``'s wall times.

Usage: ``.venv/bin/python bench/bench_campaign_cpu.py results/quickstart [--protocols tcp,dctcp]``
(``--protocols`` limits which runs are re-run; the shares then cover those runs only).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd


def run_cpu_s(run_dir: Path) -> float:
    """User + system CPU seconds of re-running ``run_dir``'s command in a scratch copy.

    Raises:
        RuntimeError: the command failed (its exit status and the stderr tail).
    """
    argv = shlex.split((run_dir / "command.txt").read_text())
    with tempfile.TemporaryDirectory(prefix="cpu-") as tmp:
        shutil.copy2(run_dir / "flows.csv", Path(tmp) / "flows.csv")
        proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{run_dir}: exit {proc.returncode}: {stderr[-300:]!r}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path, help="the campaign's out_dir")
    parser.add_argument("--protocols", default="", help="comma-separated; default: all")
    args = parser.parse_args()
    runs = pd.read_csv(args.campaign / "runs.csv")
    if args.protocols:
        runs = runs[runs["protocol"].isin(args.protocols.split(","))]
    cpu = []
    for key in runs["key"]:
        cpu.append(run_cpu_s(args.campaign / "runs" / str(key)[:16]))
    runs = runs.assign(cpu_s=cpu)
    table = runs.groupby("protocol").agg(
        runs=("key", "size"), cpu_s=("cpu_s", "sum"), wall_s=("wall_s", "sum")
    )
    table["cpu_share"] = table["cpu_s"] / table["cpu_s"].sum()
    table["wall_share"] = table["wall_s"] / table["wall_s"].sum()
    print(
        f"load average before/after: see uptime; {len(runs)} runs, "
        f"CPU {table['cpu_s'].sum():.1f} s, runs.csv wall {table['wall_s'].sum():.1f} s"
    )
    print(table.round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
