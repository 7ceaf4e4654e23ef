"""Speed-up of a campaign of many short runs with the local executor's ``jobs``.

Runs one small campaign (``disaggsim run``, executor ``local``): a ``synthetic`` workload
(web search, DCTCP SIGCOMM'10; load 0.6; ``--flows`` flows per run) on the default
144-host Clos at 40 Gbps, pFabric, datacenter scope, ``--runs`` seeds, once per value of
``--jobs`` (each time into a fresh output directory, so nothing is cached).  Prints per
``jobs``: campaign wall time (the whole ``disaggsim run`` process: workload generation,
runs, collection and plots), speed-up over ``jobs = 1``, runs/s, flows/s, summed events
and data packets over the campaign wall time, the largest driver's peak RSS (VmHWM, from
the runs' ``done.json`` stats) and the peak RSS of the ``disaggsim`` process tree's largest
process (GNU time ``%M``).  Writes the rows as JSON and a plot of wall time and speed-up
against ``jobs`` (``bench/figures/campaign_jobs.png``).

Usage: ``.venv/bin/python bench/bench_campaign_jobs.py [--jobs 1,2,3,4] [--runs 24]
[--flows 300] [--json bench/figures/campaign_jobs.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from disaggsim.atomic import atomic_path

FIGURES = Path(__file__).resolve().parent / "figures"
DISAGGSIM = Path(sys.executable).parent / "disaggsim"

CONFIG = """\
[campaign]
name = "bench-jobs"
out_dir = "out"

[[workloads]]
kind = "synthetic"
name = "websearch"
cdf = "websearch"
load = 0.6
n_flows = {flows}
header_bytes = 40

[grid]
protocols = ["pfabric"]
rates_gbps = [40]
scopes = ["datacenter"]
seeds = {seeds}
"""


def run_campaign(config: Path, jobs: int) -> dict[str, float]:
    """Run the campaign once with ``jobs``; wall time, totals and peak RSS (docstring)."""
    out = config.parent / "out"
    shutil.rmtree(out, ignore_errors=True)
    rss_file = config.parent / "time.txt"
    cmd = [
        "/usr/bin/time",
        "-f",
        "%M",
        "-o",
        str(rss_file),
        str(DISAGGSIM),
        "run",
        str(config),
        "--jobs",
        str(jobs),
        "--quiet",
    ]
    load_avg = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=config.parent)
    wall_s = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    stats = [json.loads(p.read_text())["stats"] for p in sorted(out.glob("runs/*/done.json"))]
    return {
        "jobs": jobs,
        "runs": len(stats),
        "wall_s": wall_s,
        "flows": sum(int(s["flows"]) for s in stats),
        "events": sum(int(s["events"]) for s in stats),
        "data_packets": sum(int(s["data_packets_delivered"]) for s in stats),
        "run_wall_s_sum": sum(float(s["wall_s"]) for s in stats),
        "driver_peak_rss_mib": max(int(s["peak_rss_kb"]) for s in stats) / 1024,
        "tree_peak_rss_mib": int(rss_file.read_text().split()[-1]) / 1024,
        "load_avg_1min": load_avg,
    }


def plot(rows: list[dict[str, float]], path: Path) -> None:
    """Wall time and speed-up against jobs, with the 2-core ideal, written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = [r["jobs"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(jobs, [r["wall_s"] for r in rows], "o-")
    ax1.set_xlabel("jobs")
    ax1.set_ylabel("campaign wall s")
    ax1.set_ylim(bottom=0)
    ax2.plot(jobs, [r["speedup"] for r in rows], "o-", label="measured")
    ax2.plot(jobs, [min(j, 2) for j in jobs], "k:", label="ideal on 2 cores")
    ax2.set_xlabel("jobs")
    ax2.set_ylabel("speed-up over jobs = 1")
    ax2.legend()
    fig.suptitle(f"{rows[0]['runs']} pFabric runs, 2-core machine")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="1,2,3,4")
    parser.add_argument("--runs", type=int, default=24, help="runs (seeds) per campaign")
    parser.add_argument("--flows", type=int, default=300, help="flows per run")
    parser.add_argument("--json", type=Path, default=FIGURES / "campaign_jobs.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_jobs.") as tmp:
        config = Path(tmp) / "campaign.toml"
        seeds = list(range(1, args.runs + 1))
        config.write_text(CONFIG.format(flows=args.flows, seeds=seeds))
        for jobs in (int(j) for j in args.jobs.split(",")):
            row = run_campaign(config, jobs)
            row["speedup"] = rows[0]["wall_s"] / row["wall_s"] if rows else 1.0
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        "| jobs | runs | wall s | speed-up | runs/s | flows/s | events/s | data pkts/s "
        "| sum of run wall s | driver peak RSS MiB | largest process MiB | load avg |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for r in rows:
        w = r["wall_s"]
        print(
            f"| {r['jobs']} | {r['runs']} | {w:.1f} | {r['speedup']:.2f} | {r['runs'] / w:.2f} "
            f"| {r['flows'] / w:,.0f} | {r['events'] / w:,.0f} | {r['data_packets'] / w:,.0f} "
            f"| {r['run_wall_s_sum']:.1f} | {r['driver_peak_rss_mib']:.1f} "
            f"| {r['tree_peak_rss_mib']:.0f} | {r['load_avg_1min']:.1f} |"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json) as tmp:  # never half a file
        tmp.write_text(json.dumps(rows, indent=1))
    plot(rows, args.json.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
