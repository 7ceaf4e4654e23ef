"""Two builds of the ns-3 program side by side: CPU time, interleaved, and identical FCTs.

How every "What moved the numbers" row of bench/RESULTS.md since the branch and clock work
was measured: a change's build (``--binary``) against a build of the commit before it
(``--base-binary``, e.g. ``git worktree add --detach /tmp/base REV`` then
``cmake -S /tmp/base -B /tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=Release`` and
``cmake --build /tmp/base/build``), on the very flows of bench_vs_reference.py's setup
(a), (b) or (c) (``setup_flows``), run alternately base, new, base, new, ... so that a
drift of the shared machine's load hits both alike.  Prints each pair's CPU seconds (user
+ system, GNU time), the mean ratio new / base, and whether the two FCT CSVs and event
counts are identical (a speed change must leave them so, or say why).

Usage: ``.venv/bin/python bench/bench_ab.py --base-binary DIR/build/sim/disaggsim-ns3
[--binary build/sim/disaggsim-ns3] [--setup c] [--rounds 4] [--protocol pfabric]``.
Exit status 1 if the FCT CSVs or event counts differ.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench_vs_reference import setup_flows, timed
from common import driver_command

from disaggsim.traces.workloads import write_sim_flows_csv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-binary", type=Path, required=True)
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--setup", choices=("a", "b", "c"), default="c")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--protocol", default="pfabric")
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--incast-flows", type=int, default=12_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for binary in (args.base_binary, args.binary):
        if not binary.is_file():
            print(f"bench_ab: driver {binary} not found (build it first)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="bench_ab.") as tmp:
        work = Path(tmp)
        setup, flows = setup_flows(args.setup, args.flows, args.incast_flows, args.seed)
        flows_csv = work / "flows.csv"
        write_sim_flows_csv(flows, flows_csv)
        cmds = {
            name: driver_command(
                binary,
                setup,
                args.protocol,
                flows_csv,
                work / f"fct_{name}.csv",
                work / f"stats_{name}.json",
            )
            for name, binary in (("base", args.base_binary), ("new", args.binary))
        }
        cpu: dict[str, list[float]] = {"base": [], "new": []}
        for rnd in range(args.rounds):
            for name in ("base", "new"):
                _, cpu_s, _ = timed(cmds[name], work / f"log_{name}.txt")
                cpu[name].append(cpu_s)
            print(
                f"round {rnd}: base {cpu['base'][-1]:.2f} s, new {cpu['new'][-1]:.2f} s CPU",
                flush=True,
            )
        events = {
            name: json.loads((work / f"stats_{name}.json").read_text())["events"] for name in cmds
        }
        same = filecmp.cmp(work / "fct_base.csv", work / "fct_new.csv", shallow=False)
    base, new = statistics.mean(cpu["base"]), statistics.mean(cpu["new"])
    print(
        f"setup ({args.setup}), {args.protocol}, {args.rounds} rounds: base {base:.3f} s, "
        f"new {new:.3f} s CPU, ratio {new / base:.3f}"
    )
    print(
        f"FCT CSVs {'identical' if same else 'DIFFER'}; events base {events['base']:,}, "
        f"new {events['new']:,}"
    )
    return 0 if same and events["base"] == events["new"] else 1


if __name__ == "__main__":
    sys.exit(main())
