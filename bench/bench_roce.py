"""Speed of RoCEv2 (transports/roce) beside pFabric on the same fabric and flows.

The fabric and flows of bench_pfabric.py's setup (a): web search (DCTCP, SIGCOMM'10) at
load 0.6, 40 Gbps access links, permutation traffic, 144 hosts in 9 racks of 16, 4 spines at
4x, 36 KB switch buffers per port (``common.run``).  pFabric runs with its YAPS
configuration on its lossy fabric (``PFABRIC_YAPS_ATTRIBUTES``); ``roce-none``,
``roce-dcqcn`` and ``roce-hpcc`` run on the same flows with the payload of the ports' active
RoCE MTU (``MssBytes=0``: 1024 B on 1500 B ports, transports/roce/doc/roce.md; pFabric's
1460 B do not fit a RoCEv2 frame, so RoCE sends about 1.4x pFabric's data packets for the
same bytes), on the lossless fabric (PFC; where RoCE is meant to run) and on the
lossy one; pFabric runs on both fabrics too, so each RoCE run has a pFabric run on its own
fabric beside it.  Issue #19's bar: RoCE moves at least as many data packets per wall second as
pFabric on the same fabric, measured in one sitting.

Per run: wall time, data packets delivered (STATS.json ``data_packets_delivered``) per wall
second, the driver's CPU time (user + system, from the kernel's accounting of the child:
unlike wall time it does not grow while other jobs hold the cores) and data packets per CPU
second, events per wall second, mean and p99 FCT slowdown (FCT_RECORDS ``slowdown``), PFC
frames, retransmitted packets.  The 1-minute load average is printed before every run; run
it under ``flock /tmp/disaggsim-bench.lock``.  ``--repeat`` interleaves the runs round by
round (A/B), so a change in the machine's load hits every run alike.  ``--callgrind-flows
N`` first runs each once on N flows under ``valgrind --tool=callgrind`` and prints the
instructions of the whole process per data packet delivered (callgrind's total; the
machine's load does not enter).

Usage: ``.venv/bin/python bench/bench_roce.py [--flows 3000] [--seed 1]
[--binary build/sim/disaggsim-ns3] [--repeat 1] [--fabric both|lossless|lossy]
[--callgrind-flows 0]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import SETUPS, run

#: (label, protocol, extra attributes) of each run: pFabric on each fabric, then RoCE.
RUNS: list[tuple[str, str, dict[str, str]]] = [
    (f"pfabric ({_fabric})", "pfabric", {"ns3::ClosTopology::Fabric": _fabric})
    for _fabric in ("lossless", "lossy")
]
for _cc in ("none", "dcqcn", "hpcc"):
    for _fabric in ("lossless", "lossy"):
        RUNS.append(
            (
                f"roce-{_cc} ({_fabric})",
                f"roce-{_cc}",
                {"ns3::RoceFlowTransport::MssBytes": "0", "ns3::ClosTopology::Fabric": _fabric},
            )
        )


def callgrind_instructions(path: Path) -> int:
    """The total instruction count (``summary:`` or ``totals:`` line) of a callgrind output.

    Raises:
        ValueError: ``path`` has no such line (not a callgrind output file).
    """
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError(f"{path}: no 'summary:' or 'totals:' line (not a callgrind output)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--repeat", type=int, default=1, help="rounds over all runs (A/B)")
    parser.add_argument(
        "--fabric",
        choices=["both", "lossless", "lossy"],
        default="both",
        help="run only the runs on this fabric",
    )
    parser.add_argument(
        "--callgrind-flows",
        type=int,
        default=0,
        help="first count instructions per data packet on this many flows",
    )
    args = parser.parse_args()
    setup = SETUPS["a"]
    runs = [
        r for r in RUNS if args.fabric == "both" or r[2]["ns3::ClosTopology::Fabric"] == args.fabric
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if args.callgrind_flows > 0:
            print(f"instructions (callgrind), {args.callgrind_flows} flows, seed {args.seed}")
            print("| run | data pkts | events | Ir | Ir / data pkt |")
            print("|---|---|---|---|---|")
            for label, protocol, attributes in runs:
                out = Path(tmp) / "callgrind.out"
                result = run(
                    args.binary,
                    setup,
                    protocol,
                    args.callgrind_flows,
                    args.seed,
                    Path(tmp),
                    driver_seed=1,
                    attributes=attributes,
                    keep_files=False,
                    wrapper=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"],
                )
                packets = int(result["stats"]["data_packets_delivered"])
                ir = callgrind_instructions(out)
                print(
                    f"| {label} | {packets} | {result['stats']['events']} | {ir:,} | "
                    f"{ir / packets:,.0f} |",
                    flush=True,
                )
        print(
            f"setup (a): {setup.rate_gbps:g} Gbps {setup.matrix}, web search load 0.6, "
            f"{args.flows} flows, seed {args.seed}"
        )
        print(
            "| run | load1 | wall s | CPU s | data pkts | data pkts/s | data pkts/CPU s "
            "| events/s | mean sd | p99 sd | PFC frames | retransmitted |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for _ in range(args.repeat):
            for label, protocol, attributes in runs:
                load1 = os.getloadavg()[0]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                result = run(
                    args.binary,
                    setup,
                    protocol,
                    args.flows,
                    args.seed,
                    Path(tmp),
                    driver_seed=1,
                    attributes=attributes,
                    keep_files=False,
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                stats, fct, wall = result["stats"], result["fct"], result["wall_s"]
                done = fct[fct["fct_ns"] >= 0]
                slowdown = done["slowdown"].to_numpy(float)
                packets = int(stats["data_packets_delivered"])
                transport = stats.get("transport", {})
                pfc = stats.get("pfc_frames", 0)
                retx = transport.get("roce.retransmitted_packets", "-")
                print(
                    f"| {label} | {load1:.2f} | {wall:.2f} | {cpu:.2f} | {packets} | "
                    f"{packets / wall:,.0f} | {packets / cpu:,.0f} | "
                    f"{stats['events'] / wall:,.0f} | "
                    f"{slowdown.mean():.3f} | {np.percentile(slowdown, 99):.2f} | {pfc} | "
                    f"{retx} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
