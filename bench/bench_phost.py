"""Fidelity, speed and robustness of pHost against the pHost authors' simulator.

Same two setups and driver command as ``bench_pfabric.py`` (``common.py``: ``run``, ``SETUPS``,
``yaps_slowdowns`` and ``summarize``, reused here): (a) 40 Gbps permutation, (b) 10 Gbps
all-to-all, web search at load 0.6, 144 hosts, 36 KB switch ports, 0.2 us per link.
pHost runs with its default attributes (transports/phost/doc/phost.md §4); pFabric with
``PFABRIC_YAPS_ATTRIBUTES`` for the comparison.

Targets (the authors' simulator NetSys/simulator for pHost, from the lead):
(a) mean 1.546, p99 3.80; < 100 KB mean 1.39, p99 2.87.
(b) mean 1.549, p99 4.54; < 100 KB mean 1.45, p99 3.40.

Robustness: a heavy incast, ``--incast-flows`` flows (default 3000) from 4 hosts of rack 1
to hosts 0 and 1 of rack 0, sizes uniform in [1, 64] KB, starts uniform in 1 ms: every
flow must finish.

Usage: ``.venv/bin/python bench/bench_phost.py [--flows N] [--setup a|b|both]
[--binary build/sim/disaggsim-ns3] [--out report.md] [--no-pfabric] [--no-incast]``.
Prints wall time, data packets delivered per wall second, events per wall second and peak
memory of each run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from common import (
    HOSTS_PER_RACK,
    SETUPS,
    fidelity_parser,
    run,
    run_driver,
    summarize,
    yaps_slowdowns,
)

from disaggsim.atomic import atomic_path
from disaggsim.sim.runner import driver_argv

PHOST_TARGETS = {
    "a": {"mean": 1.546, "p99": 3.80, "small_mean": 1.39, "small_p99": 2.87},
    "b": {"mean": 1.549, "p99": 4.54, "small_mean": 1.45, "small_p99": 3.40},
}


def speed_line(stats: dict, process_wall_s: float) -> str:
    """Wall time, packets/s, events/s and peak memory of one driver run."""
    wall = float(stats["wall_s"])
    pkts = int(stats["data_packets_delivered"])
    events = int(stats["events"])
    return (
        f"wall {wall:.1f} s (process {process_wall_s:.1f} s); {pkts} data packets delivered = "
        f"{pkts / wall:,.0f} packets/s; {events} events = {events / wall:,.0f} events/s; "
        f"peak RSS {int(stats['peak_rss_kb']) / 1024:.0f} MiB; drops {stats['packets_dropped']}"
    )


def incast(binary: Path, n_flows: int, workdir: Path, seed: int = 1) -> list[str]:
    """Run the heavy incast (module docstring); returns report lines."""
    rng = np.random.default_rng(seed)
    src = HOSTS_PER_RACK + rng.integers(0, 4, n_flows)
    dst = rng.integers(0, 2, n_flows)
    size = rng.integers(1_000, 64_001, n_flows)
    start = np.sort(rng.integers(0, 1_000_000, n_flows))
    flows = pd.DataFrame(
        {
            "flow_id": np.arange(n_flows),
            "start_ns": start,
            "src_host": src,
            "dst_host": dst,
            "size_bytes": size,
        }
    )
    flows_csv = workdir / "incast_flows.csv"
    flows.to_csv(flows_csv, index=False)
    lines = [
        f"## heavy incast: {n_flows} flows, 4 hosts of rack 1 -> hosts 0 and 1, 1-64 KB, "
        "starts within 1 ms, 40 Gbps, paper fabric (offered ~10x the two receivers' links)",
        "",
    ]
    for protocol in ("phost", "ideal"):
        out_csv = workdir / f"incast_fct_{protocol}.csv"
        stats_json = workdir / f"incast_stats_{protocol}.json"
        # the driver's default fabric and seed (1), stated
        cmd = driver_argv(binary, flows_csv, out_csv, stats_json, protocol, 40, 1, {})
        stats, fct, wall = run_driver(cmd, out_csv, stats_json)
        done = fct[fct["finished"] == 1]
        lines += [
            f"{protocol}: {len(done)}/{len(fct)} flows finished; slowdown mean "
            f"{done['slowdown'].mean():.1f}, p99 {np.percentile(done['slowdown'], 99):.1f}, "
            f"last finish {done['finish_ns'].max() / 1e6:.2f} ms; {speed_line(stats, wall)}; "
            f"transport {stats['transport']}",
            "",
        ]
    return lines


def main() -> int:
    parser = fidelity_parser(__doc__.splitlines()[0])
    parser.add_argument("--no-pfabric", action="store_true", help="skip the pFabric runs")
    parser.add_argument("--no-incast", action="store_true", help="skip the heavy incast")
    parser.add_argument("--incast-flows", type=int, default=3000)
    args = parser.parse_args()
    if not args.binary.is_file():
        print(f"bench_phost: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    names = ["a", "b"] if args.setup == "both" else [args.setup]
    lines = [
        f"# pHost fidelity vs the authors' simulator ({args.flows} flows, web search, load "
        f"0.6, workload seed {args.seed})",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="bench_phost.") as tmp:
        workdir = Path(tmp)
        for name in names:
            setup = SETUPS[name]
            for protocol in ["phost"] + ([] if args.no_pfabric else ["pfabric"]):
                res = run(args.binary, setup, protocol, args.flows, args.seed, workdir)
                fct, stats = res["fct"], res["stats"]
                done = fct[fct["finished"] == 1]
                sizes = done["size_bytes"].to_numpy()
                yaps = summarize(yaps_slowdowns(done, setup.rate_gbps, res["switch_ns"]), sizes)
                ours = summarize(done["slowdown"].to_numpy(), sizes)
                lines += [
                    f"## setup ({name}) {setup.rate_gbps:g} Gbps {setup.matrix}, {protocol}: "
                    f"{len(done)}/{len(fct)} flows finished",
                    "",
                    "| slowdown | mean | p99 | <100KB mean | <100KB p99 | >=10MB mean |",
                    "| --- | --- | --- | --- | --- | --- |",
                ]
                for label, s in (("yaps-style", yaps), ("ours", ours)):
                    lines.append(
                        f"| {label} | {s['mean']:.3f} | {s['p99']:.2f} | {s['small_mean']:.3f} "
                        f"| {s['small_p99']:.2f} | {s['large_mean']:.2f} (n={s['large_n']:.0f}) |"
                    )
                if protocol == "phost":
                    want = PHOST_TARGETS[name]
                    lines.append(
                        "| authors' simulator | "
                        + " | ".join(
                            f"{want[k]}" for k in ("mean", "p99", "small_mean", "small_p99")
                        )
                        + " | |"
                    )
                lines += [
                    "",
                    f"{speed_line(stats, res['wall_s'])}; transport {stats.get('transport', {})}",
                    "",
                ]
                print("\n".join(lines[-10:]), flush=True)
        if not args.no_incast:
            lines += incast(args.binary, args.incast_flows, workdir)
            print("\n".join(lines[-6:]), flush=True)
    report = "\n".join(lines) + "\n"
    if args.out is not None:
        with atomic_path(args.out) as tmp:  # never half a file
            tmp.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
