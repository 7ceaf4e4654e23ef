"""How pFabric's run time scales with the flow count (setup (a) of bench_pfabric.py).

Runs setup (a) of ``bench/bench_pfabric.py`` (YAPS fidelity: web search, load 0.6, 144
hosts in 9 racks of 16, 4 spines, 40 Gbps, permutation, pFabric with YAPS's parameters,
round-robin spraying) with 2,500, 5,000, 10,000 and 20,000 flows, one run at a time, and
prints per run: wall time (the driver's own ``wall_s``), data packets delivered, events,
data packets and events per wall second, peak RSS (VmHWM), and the wall time per data
packet in microseconds.  A discrete-event simulator whose per-event cost does not grow
with the number of flows in flight has flat wall time per data packet: doubling the flows
doubles the packets and the wall time.  The ratio column gives each run's wall time per
packet over the smallest run's; the exit status is 1 if any ratio leaves [0.67, 1.5].

The simulator's speed depends on what else the 2 shared cores are doing; the table prints
the load average before each run.

Writes the rows as JSON and a plot of wall time and peak RSS against flows next to it
(``--plot-only`` re-draws the plot from the JSON).

Usage: ``.venv/bin/python bench/bench_scaling.py [--flows 2500,5000,10000,20000]
[--binary build/sim/disaggsim-ns3] [--json bench/figures/scaling.json] [--plot-only]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from common import SETUPS, run

from disaggsim.atomic import atomic_path

FIGURES = Path(__file__).resolve().parent / "figures"


def plot(rows: list[dict[str, float]], path: Path) -> None:
    """Wall time and peak RSS (VmHWM) against flows, two panels, written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flows = [r["flows"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(flows, [r["wall_s"] for r in rows], "o-")
    ax1.set_xlabel("flows")
    ax1.set_ylabel("wall s")
    ax1.set_title("pFabric, setup (a), 144 hosts")
    ax2.plot(flows, [r["peak_rss_mib"] for r in rows], "o-")
    ax2.set_xlabel("flows")
    ax2.set_ylabel("peak RSS (VmHWM), MiB")
    for ax in (ax1, ax2):
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", default="2500,5000,10000,20000")
    parser.add_argument("--seed", type=int, default=1, help="workload seed")
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--json", type=Path, default=FIGURES / "scaling.json")
    parser.add_argument("--plot-only", action="store_true", help="re-draw from --json")
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads(args.json.read_text()), args.json.with_suffix(".png"))
        return 0
    if not args.binary.is_file():
        print(f"bench_scaling: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    counts = [int(n) for n in args.flows.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_scaling.") as tmp:
        for n_flows in counts:
            load_avg = os.getloadavg()[0]
            res = run(args.binary, SETUPS["a"], "pfabric", n_flows, args.seed, Path(tmp))
            stats, fct = res["stats"], res["fct"]
            wall_s = float(stats["wall_s"])
            packets = int(stats["data_packets_delivered"])
            events = int(stats["events"])
            row = {
                "flows": n_flows,
                "finished": int((fct["finished"] == 1).sum()),
                "wall_s": wall_s,
                "data_packets": packets,
                "events": events,
                "packets_per_s": packets / wall_s,
                "events_per_s": events / wall_s,
                "us_per_packet": wall_s / packets * 1e6,
                "events_per_packet": events / packets,
                "peak_rss_mib": int(stats["peak_rss_kb"]) / 1024,
                "load_avg_1min": load_avg,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = rows[0]["us_per_packet"]
    lines = [
        "| flows | finished | wall s | data packets | data pkts/s | events | events/s "
        "| events/pkt | wall us/pkt | ratio | peak RSS MiB | load avg |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ok = True
    for row in rows:
        ratio = row["us_per_packet"] / base
        row["ratio_us_per_packet"] = ratio
        ok &= 0.67 <= ratio <= 1.5
        lines.append(
            f"| {row['flows']:,} | {row['finished']:,} | {row['wall_s']:.1f} "
            f"| {row['data_packets']:,} | {row['packets_per_s']:,.0f} | {row['events']:,} "
            f"| {row['events_per_s']:,.0f} | {row['events_per_packet']:.2f} "
            f"| {row['us_per_packet']:.2f} | {ratio:.2f} | {row['peak_rss_mib']:.0f} "
            f"| {row['load_avg_1min']:.1f} |"
        )
    print("\n".join(lines))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json) as tmp:  # never half a file
        tmp.write_text(json.dumps(rows, indent=1))
    plot(rows, args.json.with_suffix(".png"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
