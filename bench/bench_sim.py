"""Benchmark of the ns-3 driver ``build/sim/disaggsim-ns3`` (TCP and DCTCP, 40/100 Gbps).

Generates a reproducible all-to-all workload on the paper's 144-host Clos (Gao et al.,
OSDI'16 §4.2): Poisson flow arrivals, sizes log-uniform in [4 KiB, 1 MiB], offered load
``--load`` of the hosts' aggregate access capacity.  Runs the binary once per
(protocol, rate) and prints wall time, data packets/s, events/s, flows/s and peak memory
(from the run's STATS.json), plus the mean slowdown as a sanity check.  Rates are per wall
second; ``cpu_s`` (the child's user + system time) shows how much of the wall time the
simulator actually ran when the machine is shared.

Usage::

    .venv/bin/python bench/bench_sim.py [--flows 3000] [--load 0.5] [--seed 1]
                                        [--binary build/sim/disaggsim-ns3]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from disaggsim.schemas import NS3_FLOWS
from disaggsim.sim.runner import driver_argv

REPO = Path(__file__).resolve().parents[1]
HOSTS = 144  # 9 racks x 16 hosts (paper §4.2)
MIN_SIZE_BYTES = 4096
MAX_SIZE_BYTES = 1 << 20


def make_flows(n_flows: int, load: float, rate_gbps: float, seed: int) -> list[tuple[int, ...]]:
    """Return ``n_flows`` NS3_FLOWS rows (flow_id, start_ns, src_host, dst_host, size_bytes).

    Sizes are log-uniform in [4 KiB, 1 MiB]; arrivals are Poisson with rate
    ``load * HOSTS * rate_gbps * 1e9 / (8 * mean_size_bytes)`` per second, so the offered
    load is ``load`` of the hosts' total access capacity.  src != dst, uniform all-to-all.
    """
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(math.log(MIN_SIZE_BYTES), math.log(MAX_SIZE_BYTES), n_flows))
    sizes = sizes.astype(np.int64)
    mean_size_bytes = (MAX_SIZE_BYTES - MIN_SIZE_BYTES) / math.log(MAX_SIZE_BYTES / MIN_SIZE_BYTES)
    flows_per_s = load * HOSTS * rate_gbps * 1e9 / (8 * mean_size_bytes)
    gaps_ns = rng.exponential(1e9 / flows_per_s, n_flows)
    starts_ns = np.cumsum(gaps_ns).astype(np.int64)
    src = rng.integers(0, HOSTS, n_flows)
    dst = (src + rng.integers(1, HOSTS, n_flows)) % HOSTS
    return [(i, int(starts_ns[i]), int(src[i]), int(dst[i]), int(sizes[i])) for i in range(n_flows)]


def write_flows(path: Path, rows: list[tuple[int, ...]]) -> None:
    """Write NS3_FLOWS rows as CSV with the schema's header."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(NS3_FLOWS.names)
        writer.writerows(rows)


def mean_slowdown(fct_csv: Path) -> float:
    """Mean slowdown over finished flows of an FCT_RECORDS CSV."""
    with fct_csv.open() as f:
        values = [float(r["slowdown"]) for r in csv.DictReader(f) if r["finished"] == "1"]
    return sum(values) / len(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=3000)
    parser.add_argument("--load", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binary", type=Path, default=REPO / "build/sim/disaggsim-ns3")
    args = parser.parse_args()
    if not args.binary.exists():
        print(f"{args.binary}: not built (cmake --build build)", file=sys.stderr)
        return 2
    print(
        f"workload: {args.flows} flows, {HOSTS} hosts all-to-all, sizes 4 KiB-1 MiB "
        f"log-uniform, load {args.load}, seed {args.seed}"
    )
    header = (
        f"{'protocol':8} {'Gbps':>5} {'wall_s':>7} {'cpu_s':>7} {'data_pkts':>10} "
        f"{'pkts/s':>9} {'events':>10} {'events/s':>9} {'flows/s':>8} {'peak_MiB':>8} "
        f"{'finished':>9} {'slowdown':>8}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for rate_gbps in (40, 100):
            flows_csv = tmp / f"flows_{rate_gbps}.csv"
            write_flows(flows_csv, make_flows(args.flows, args.load, rate_gbps, args.seed))
            for protocol in ("tcp-ns3", "dctcp-ns3"):
                out = tmp / f"fct_{protocol}_{rate_gbps}.csv"
                stats_path = tmp / f"stats_{protocol}_{rate_gbps}.json"
                cmd = driver_argv(
                    args.binary, flows_csv, out, stats_path, protocol, rate_gbps, args.seed, {}
                )
                t0 = time.perf_counter()
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(cmd, check=True)
                wall_s = time.perf_counter() - t0
                cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
                stats = json.loads(stats_path.read_text())
                packets = stats["data_packets_delivered"]
                print(
                    f"{protocol:8} {rate_gbps:>5} {wall_s:>7.2f} {cpu_s:>7.2f} {packets:>10} "
                    f"{packets / wall_s:>9.0f} {stats['events']:>10} "
                    f"{stats['events'] / wall_s:>9.0f} {stats['flows'] / wall_s:>8.0f} "
                    f"{stats['peak_rss_kb'] / 1024:>8.1f} "
                    f"{stats['flows_finished']:>4}/{stats['flows']:<4} "
                    f"{mean_slowdown(out):>8.2f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
