"""How pFabric's run time and memory scale with the host count (144 -> 576 -> 1152 hosts).

Setup (a) of ``bench/bench_pfabric.py`` (web search, load 0.6 per host, 40 Gbps,
permutation, pFabric with YAPS's parameters, per-packet spraying) on Clos fabrics of
9, 36 and 72 racks of 16 hosts.  The 144-host fabric is YAPS's (4 spines at 4x); the larger
ones have 16 spines at 1x (``spineRateFactor`` is an integer), so every ToR keeps 16
access links' worth of uplink: full bisection at every size.  The flow count is fixed per
host (``--flows-per-host``, default 10.4: 1,500 flows on 144 hosts, 12,000 on 1152), so
every run simulates the same span of time at the same per-host load and the work grows
with the hosts.  One run at a time; per run: wall time (the driver's ``wall_s``), events,
data packets delivered, events and data packets per wall second, peak RSS (VmHWM from the
run's stats JSON), and peak RSS per flow and per host: whole (peak RSS / flows, / hosts)
and marginal (growth over the first run's peak RSS / growth in flows, in hosts).
Writes the rows as JSON and a plot (``bench/figures/hosts.png``).

Usage: ``.venv/bin/python bench/bench_hosts.py [--racks 9,36,72] [--flows-per-host 10.4]
[--flows N (fixed total)] [--spines 16 --spine-rate-factor 1] [--binary build/sim/disaggsim-ns3]
[--json bench/figures/hosts.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from common import HOSTS_PER_RACK, SETUPS, YAPS_FABRIC, Fabric, run

from disaggsim.atomic import atomic_path

FIGURES = Path(__file__).resolve().parent / "figures"


def fabric_for(racks: int, spines: int | None = None, factor: int = 1) -> Fabric:
    """YAPS's fabric at 9 racks, else 16 spines at 1x (full bisection, module docstring).

    ``spines`` given: that many spines at ``factor`` x the access rate at every size.
    """
    if spines is not None:
        return Fabric(racks, spines, factor)
    return YAPS_FABRIC if racks == YAPS_FABRIC.racks else Fabric(racks, 16, 1)


def plot(rows: list[dict[str, float]], path: Path) -> None:
    """Wall time and peak RSS against hosts (two panels), written atomically as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hosts = [r["hosts"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(hosts, [r["wall_s"] for r in rows], "o-", label="wall s")
    ax1.plot(hosts, [r["data_packets"] / 1e6 for r in rows], "s--", label="data packets (M)")
    ax1.set_xlabel("hosts")
    ax1.set_title("pFabric, fixed flows per host")
    ax1.legend()
    ax2.plot(hosts, [r["peak_rss_mib"] for r in rows], "o-")
    ax2.set_xlabel("hosts")
    ax2.set_ylabel("peak RSS (VmHWM), MiB")
    ax2.set_ylim(bottom=0)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racks", default="9,36,72")
    parser.add_argument("--flows-per-host", type=float, default=1500 / 144)
    parser.add_argument("--flows", type=int, default=None, help="fixed total flows instead")
    parser.add_argument("--spines", type=int, default=None, help="spines at every size")
    parser.add_argument("--spine-rate-factor", type=int, default=1, help="with --spines")
    parser.add_argument("--seed", type=int, default=1, help="workload seed")
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--json", type=Path, default=FIGURES / "hosts.json")
    args = parser.parse_args()
    if not args.binary.is_file():
        print(f"bench_hosts: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_hosts.") as tmp:
        for racks in (int(n) for n in args.racks.split(",")):
            fabric = fabric_for(racks, args.spines, args.spine_rate_factor)
            hosts = racks * HOSTS_PER_RACK
            n_flows = args.flows or round(args.flows_per_host * hosts)
            load_avg = os.getloadavg()[0]
            res = run(
                args.binary,
                SETUPS["a"],
                "pfabric",
                n_flows,
                args.seed,
                Path(tmp),
                fabric=fabric,
                keep_files=False,
            )
            stats, fct = res["stats"], res["fct"]
            wall_s = float(stats["wall_s"])
            packets = int(stats["data_packets_delivered"])
            events = int(stats["events"])
            rss_kib = int(stats["peak_rss_kb"])
            row = {
                "hosts": hosts,
                "racks": racks,
                "spines": fabric.spines,
                "spine_rate_factor": fabric.spine_rate_factor,
                "flows": n_flows,
                "finished": int((fct["finished"] == 1).sum()),
                "wall_s": wall_s,
                "events": events,
                "data_packets": packets,
                "events_per_s": events / wall_s,
                "packets_per_s": packets / wall_s,
                "peak_rss_mib": rss_kib / 1024,
                "rss_kib_per_flow": rss_kib / n_flows,
                "rss_kib_per_host": rss_kib / hosts,
                "load_avg_1min": load_avg,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        "| hosts | fabric | flows | finished | wall s | events | events/s | data packets "
        "| data pkts/s | peak RSS MiB | KiB/flow | KiB/host | marginal KiB/flow "
        "| marginal KiB/host | load avg |\n"
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: |"
    )
    base = rows[0]
    for r in rows:
        d_kib = (r["peak_rss_mib"] - base["peak_rss_mib"]) * 1024
        d_flows, d_hosts = r["flows"] - base["flows"], r["hosts"] - base["hosts"]
        r["marginal_kib_per_flow"] = d_kib / d_flows if d_flows else math.nan
        r["marginal_kib_per_host"] = d_kib / d_hosts if d_hosts else math.nan
        print(
            f"| {r['hosts']:,} | {r['racks']}x16, {r['spines']} spines x{r['spine_rate_factor']} "
            f"| {r['flows']:,} | {r['finished']:,} | {r['wall_s']:.1f} | {r['events']:,} "
            f"| {r['events_per_s']:,.0f} | {r['data_packets']:,} | {r['packets_per_s']:,.0f} "
            f"| {r['peak_rss_mib']:.1f} | {r['rss_kib_per_flow']:.2f} "
            f"| {r['rss_kib_per_host']:.1f} | {r['marginal_kib_per_flow']:.2f} "
            f"| {r['marginal_kib_per_host']:.1f} | {r['load_avg_1min']:.1f} |"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json) as tmp:  # never half a file
        tmp.write_text(json.dumps(rows, indent=1))
    plot(rows, args.json.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
