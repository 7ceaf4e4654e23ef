"""Fidelity and speed of Fastpass against the authors' simulator (NetSys/simulator).

The two setups of ``bench/bench_pfabric.py`` (its fabric, workload generation and
slowdown code, in ``bench/common.py``): (a) 40 Gbps permutation, (b) 10 Gbps all-to-all, web search
workload at load 0.6, 144 hosts in 9 racks of 16, 4 spines with 4x uplinks, 36 KB switch
ports, 0.2 us per link, cut-through after the 40 B header.  Fastpass runs with its defaults
(transports/fastpass/doc/fastpass.md): FCP requests per destination, arbiter on ToR 0 at the
access rate, batches of 8 timeslots, fewest-remaining order, no processing latency;
``--attr`` changes one factor at a time (doc §8 knobs) for the difference table of
bench/RESULTS.md.

Slowdown two ways, as bench_pfabric.py: ``yaps-style`` (FCT + the DONE/ACK return over the
authors' oracle ``2 x hops x 0.2 us + packets x 1500 B x 8 / rate``; their Fastpass flow
finishes when the sender has every ACK, ``ext/fastpassflow.cpp``) and ``ours``
(FCT_RECORDS slowdown over ClosTopology::IdealFct).

Targets (NetSys/simulator Fastpass, from the lead): (a) mean 1.53, p99 2.88, <100 KB mean
1.69; (b) mean 1.64, p99 4.47, <100 KB mean 1.66.  Within 15 % = ok; differences are
explained in bench/RESULTS.md.

Usage: ``.venv/bin/python bench/bench_fastpass.py [--flows N] [--setup a|b|both]
[--binary build/sim/disaggsim-ns3] [--out report.md] [--attr ns3::Type::Attr=value ...]
[--keep DIR]``.
Prints wall time, data packets delivered per wall second, events per wall second and peak
memory of each run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from common import SETUPS, fidelity_parser, run, summarize, yaps_slowdowns

from disaggsim.atomic import atomic_path

TARGETS = {
    "a": {"mean": 1.53, "p99": 2.88, "small_mean": 1.69},
    "b": {"mean": 1.64, "p99": 4.47, "small_mean": 1.66},
}


def parse_attributes(items: list[str]) -> dict[str, str]:
    """``ns3::Type::Attr=value`` strings -> mapping.

    Raises:
        ValueError: an item without ``=`` or not starting with ``ns3::``.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("ns3::"):
            raise ValueError(f"--attr {item!r}: expected ns3::Type::Attribute=value")
        out[name] = value
    return out


def main() -> int:
    parser = fidelity_parser(__doc__.splitlines()[0])
    parser.add_argument("--attr", action="append", default=[], help="ns3::Type::Attr=value")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep the flow table, FCT records and stats in this directory",
    )
    args = parser.parse_args()
    try:
        attributes = parse_attributes(args.attr)
    except ValueError as error:
        print(f"bench_fastpass: {error}", file=sys.stderr)
        return 2
    if not args.binary.is_file():
        print(f"bench_fastpass: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    names = ["a", "b"] if args.setup == "both" else [args.setup]
    lines = [
        f"# Fastpass fidelity vs NetSys/simulator ({args.flows} flows, web search, load 0.6, "
        f"workload seed {args.seed}, attributes {attributes or 'defaults'})",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="bench_fastpass.") as tmp:
        workdir = Path(tmp)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            workdir = args.keep
        for name in names:
            setup = SETUPS[name]
            res = run(
                args.binary,
                setup,
                "fastpass",
                args.flows,
                args.seed,
                workdir,
                attributes=attributes,
                keep_files=args.keep is not None,
            )
            fct, stats = res["fct"], res["stats"]
            done = fct[fct["finished"] == 1]
            sizes = done["size_bytes"].to_numpy()
            theirs = summarize(yaps_slowdowns(done, setup.rate_gbps, res["switch_ns"]), sizes)
            ours = summarize(done["slowdown"].to_numpy(), sizes)
            lines += [
                f"## setup ({name}) {setup.rate_gbps:g} Gbps {setup.matrix}, fastpass: "
                f"{len(done)}/{len(fct)} flows finished",
                "",
                "| slowdown | mean | p99 | <100KB mean | <100KB p99 | >=10MB mean |",
                "| --- | --- | --- | --- | --- | --- |",
            ]
            for label, s in (("authors'-style", theirs), ("ours", ours)):
                lines.append(
                    f"| {label} | {s['mean']:.3f} | {s['p99']:.2f} | {s['small_mean']:.3f} "
                    f"| {s['small_p99']:.2f} | {s['large_mean']:.2f} (n={s['large_n']:.0f}) |"
                )
            checks = []
            for key, want in TARGETS[name].items():
                got = theirs[key]
                diff = (got - want) / want
                checks.append(f"{key} {got:.3f} vs {want} ({diff:+.0%})")
            lines.append(f"| NetSys/simulator | {'; '.join(checks)} |")
            wall = float(stats["wall_s"])
            pkts = int(stats["data_packets_delivered"])
            events = int(stats["events"])
            lines += [
                "",
                f"wall {wall:.1f} s (process {res['wall_s']:.1f} s); "
                f"{pkts} data packets delivered = {pkts / wall:,.0f} packets/s; "
                f"{events} events = {events / wall:,.0f} events/s; "
                f"peak RSS {int(stats['peak_rss_kb']) / 1024:.0f} MiB; "
                f"drops {stats['packets_dropped']}; transport {stats.get('transport', {})}; "
                f"derived {stats.get('config', {}).get('derived', {})}",
                "",
            ]
            print("\n".join(lines[-10:]), flush=True)
    report = "\n".join(lines) + "\n"
    if args.out is not None:
        with atomic_path(args.out) as tmp:  # never half a file
            tmp.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
