"""RoCE fidelity against HPCC (#19): DCQCN and HPCC's FCT slowdown by flow size, HPCC §5.

HPCC's evaluation (Li et al., SIGCOMM'19 §5.1; its simulator's ``simulation/mix/fat.txt``
and ``run.py``): a fat-tree of 320 servers, 16 per ToR, 20 ToRs, 20 aggregation and 16 core
switches, 100 Gb/s NICs, 400 Gb/s switch links (1:1), every link 1 us (12 us longest base
RTT), 32 MB of shared buffer per switch with PFC (dynamic threshold) and RED-ECN, WebSearch
and FB_Hadoop flow sizes (``traces/cdfs/hpcc-*.txt``) arriving as Poisson processes,
uniformly all-to-all, at 30 % and 50 % of the NICs' capacity.

Here (``HPCC_FABRIC``): our two-tier Clos, so the three tiers become two: the same 320
hosts in 20 racks of 16 at 100 Gb/s, 4 spines at 400 Gb/s (1:1 as HPCC's, 20 ToRs x 4
uplinks), host links 1 us and ToR-spine links 2 us, so a path across racks has HPCC's
longest propagation (6 us each way: 12 us RTT; HPCC's 15 % of pairs inside a pod have 8 us)
and a path in a rack HPCC's 4 us. 32 MiB per switch (``LosslessBufferBytes``), PFC's
dynamic threshold (our default, HPCC's). RED-ECN Kmin 400 KB, Kmax 1600 KB, Pmax 0.2 at
100 Gb/s, scaled with each port's rate (1600 KB / 6400 KB on the 400 Gb/s ports), as HPCC's
``run.py`` sets its KMIN_MAP / KMAX_MAP / PMAX_MAP (``SwitchMmu::EcnReferenceRate``;
``--ecn-one-setting``: every port at the 100 Gb/s values, as before our MMU could scale them).
Reduced: the flow count (``--flows``), not the fabric.

Congestion control as HPCC's ``run.py`` sets it at 100 Gb/s (``ROCE_ATTRIBUTES``; ``dcqcn``
branch and ``hp`` with ``--hpai 50``, the setting of its README and of
``analysis/fct_analysis.py``): DCQCN g = 1/256, α period 1 us, rate-increase timer 300 us,
one fast-recovery step, R_AI 20 Mb/s, R_HAI 200 Mb/s, min rate 1 Gb/s, no byte counter (a
counter that never fires), CNPs at most every 4 us per QP (its rate-decrease check), with the
DCQCN paper's rules; ``DCQCN_VARIANTS`` add HPCC's simulator's rules (``.hpcc-rules``: its
target-rate clamp and timer-only stages, which its tails need: bench/RESULTS.md "DCQCN's
tails"); HPCC
η = 0.95, maxStage 0 (its project page: "maxStage=5 in the paper is due to a typo for the
simulation"), AI 50 Mb/s, min rate 1 Gb/s. MTU payload 1000 B (``MssBytes``, our default).

Statistics: HPCC's Fig. 11 method (``disaggsim.analysis.slowdown_buckets``): flows sorted by
size in groups of ``--step`` % (5: 20 groups), each group's median, 95th and 99th
percentile slowdown, drawn at its largest size. With ``--hpcc-binary`` (HPCC's simulator,
built by ``bench/hpcc_sim.py build``) the same flows also run on HPCC's simulator, on this
same two-tier fabric, and are reduced alike (its slowdown = FCT over its own standalone FCT).

The paper's figures are plots; their values cannot be read exactly, so the comparison
target is the paper's stated outcome (``PAPER_CLAIMS``), beside which the bench prints the
matching ratio from our runs: the largest DCQCN / HPCC ratio of the 95th and 99th
percentile slowdown over the flow groups below 200 KB.

Usage: ``.venv/bin/python bench/bench_roce_fidelity.py [PROTOCOL ...] [--workload W ...]
[--load L ...] [--flows N] [--seed S] [--hpcc-binary PATH] [--out report.md]``; protocols
default to ``roce-dcqcn roce-hpcc``; any registered protocol runs (``pfabric``, ``dctcp``), and
``DCQCN_VARIANTS``' names run roce-dcqcn with HPCC's simulator's rules; ``--hpcc-cc`` picks
HPCC's simulator's runs (``dcqcn-clamp``: its DCQCN with CLAMP_TARGET_RATE 1).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import hpcc_sim
import numpy as np
import pandas as pd
from common import run_driver

from disaggsim.analysis.slowdown_buckets import slowdown_by_size_percentile, tail_ratio
from disaggsim.atomic import atomic_path
from disaggsim.sim.runner import driver_argv
from disaggsim.traces.workloads import generate, write_sim_flows_csv

RATE_GBPS = 100.0
#: The fabric both simulators run (module docstring); cables at 5 ns/m.
HPCC_FABRIC = hpcc_sim.ClosFabric(
    racks=20,
    hosts_per_rack=16,
    spines=4,
    rate_gbps=RATE_GBPS,
    spine_rate_factor=4,
    host_link_ns=1000,
    spine_link_ns=2000,
    buffer_mb=32,
)
TOPOLOGY: dict[str, Any] = {
    "racks": HPCC_FABRIC.racks,
    "hosts_per_rack": HPCC_FABRIC.hosts_per_rack,
    "spines": HPCC_FABRIC.spines,
    "spine_rate_factor": HPCC_FABRIC.spine_rate_factor,
    "intra_rack_cable_m": HPCC_FABRIC.host_link_ns / 5,
    "inter_rack_cable_m": HPCC_FABRIC.spine_link_ns / 5,
    "prop_ns_per_m": 5,
    # lossy fabric only (a protocol run with --fabric lossy): 32 MiB over a ToR's 20 ports
    "buffer_bytes": HPCC_FABRIC.buffer_mb * 2**20 // 20,
}
#: The lossless fabric's switch as HPCC's run.py sets it: RED-ECN at 100 Gb/s, scaled with
#: each port's rate (module docstring).
FABRIC_ATTRIBUTES = {
    "ns3::ClosTopology::LosslessBufferBytes": str(HPCC_FABRIC.buffer_mb * 2**20),
    "ns3::SwitchMmu::EcnKminBytes": "400000",
    "ns3::SwitchMmu::EcnKmaxBytes": "1600000",
    "ns3::SwitchMmu::EcnPmax": "0.2",
    "ns3::SwitchMmu::EcnReferenceRate": f"{RATE_GBPS:g}Gbps",
}
#: HPCC's run.py congestion-control settings at 100 Gb/s (module docstring).
ROCE_ATTRIBUTES = {
    "roce-dcqcn": {
        "ns3::RoceDcqcn::G": "0.00390625",
        "ns3::RoceDcqcn::AlphaTimer": "1us",
        "ns3::RoceDcqcn::RateIncreaseTimer": "300us",
        "ns3::RoceDcqcn::FastRecoverySteps": "1",
        "ns3::RoceDcqcn::RateAi": "20Mbps",
        "ns3::RoceDcqcn::RateHai": "200Mbps",
        "ns3::RoceDcqcn::MinRate": "1Gbps",
        "ns3::RoceDcqcn::ByteCounter": "4000000000",
        "ns3::RoceReceiver::CnpInterval": "4us",
    },
    "roce-hpcc": {
        "ns3::RoceHpcc::Eta": "0.95",
        "ns3::RoceHpcc::MaxStage": "0",
        "ns3::RoceHpcc::RateAi": "50Mbps",
        "ns3::RoceHpcc::MinRate": "1Gbps",
    },
}
#: DCQCN with HPCC's simulator's rules where they differ from the DCQCN paper's (what
#: ``roce-dcqcn`` runs), one at a time and together (``rdma-hw.cc``, transports/roce/doc/roce.md
#: "DCQCN"): ``noclamp``: back-to-back cuts keep the target rate (CheckRateDecreaseMlx with
#: CLAMP_TARGET_RATE 0); ``timer``: no byte counter, the increase stage follows the timer alone
#: (RateIncEventMlx), so hyper increase starts; its stage counts from 0 before the event, ours
#: from 1 after it (DCQCN's T), so its FAST_RECOVERY_TIMES 1 is our F = 2 (one fast recovery
#: step, one additive, then hyper); ``hpcc-rules``: both; ``hpcc-rules-deq``: both, and RED-ECN
#: reads the queue behind a frame as it leaves (``SwitchMmu::EcnAtDequeue``; its switch-node.cc
#: SwitchNotifyDequeue) instead of the queue ahead of it on arrival; ``hpcc-rules-cnp1us``:
#: ``hpcc-rules`` with a CNP per 1 us of CE-marked packets instead of per 4 us (HPCC's
#: simulator flags every marked packet's ACK, so its α, updated every 1 us, rises each 1 us
#: while marks arrive: rdma-hw.cc UpdateAlphaMlx; its cuts stay at most one per 4 us).
DCQCN_VARIANTS: dict[str, dict[str, str]] = {
    "roce-dcqcn.noclamp": {"ns3::RoceDcqcn::ClampTargetRate": "false"},
    "roce-dcqcn.timer": {
        "ns3::RoceDcqcn::ByteCounter": "0",
        "ns3::RoceDcqcn::FastRecoverySteps": "2",
    },
    "roce-dcqcn.hpcc-rules": {
        "ns3::RoceDcqcn::ClampTargetRate": "false",
        "ns3::RoceDcqcn::ByteCounter": "0",
        "ns3::RoceDcqcn::FastRecoverySteps": "2",
    },
    "roce-dcqcn.hpcc-rules-deq": {
        "ns3::RoceDcqcn::ClampTargetRate": "false",
        "ns3::RoceDcqcn::ByteCounter": "0",
        "ns3::RoceDcqcn::FastRecoverySteps": "2",
        "ns3::SwitchMmu::EcnAtDequeue": "true",
    },
    "roce-dcqcn.hpcc-rules-cnp1us": {
        "ns3::RoceDcqcn::ClampTargetRate": "false",
        "ns3::RoceDcqcn::ByteCounter": "0",
        "ns3::RoceDcqcn::FastRecoverySteps": "2",
        "ns3::RoceReceiver::CnpInterval": "1us",
    },
}
for _variant, _extra in DCQCN_VARIANTS.items():
    ROCE_ATTRIBUTES[_variant] = {**ROCE_ATTRIBUTES["roce-dcqcn"], **_extra}
#: Our protocol -> HPCC's simulator's congestion control of the same name (``--hpcc-binary``
#: runs both, whatever protocols are given).
HPCC_SIM_CC = {"roce-dcqcn": "dcqcn", "roce-hpcc": "hpcc"}
#: Short flows, as HPCC's results page words its claim ("flows < 200KB").
SHORT_BYTES = 200_000
#: What the paper and its authors' results page state (figures cannot be read exactly).
PAPER_CLAIMS = (
    "HPCC §5.2 / abstract: compared to DCQCN, HPCC shortens FCTs by up to 95 % "
    "(a DCQCN / HPCC slowdown ratio up to 20).",
    "hpcc-group.github.io/results.html, 30 % load, WebSearch: HPCC significantly improves "
    "the FCT for flows < 200KB, especially at the tail; long flows' FCT is longer with "
    "HPCC-INT (its ~5 % INT overhead) than with schemes that keep buffers occupied.",
    "Same page, Hadoop: the trend is similar; with more short flows, HPCC's advantage is "
    "more evident. 50 % load: the trend is similar to 30 %.",
)


def attributes_for(protocol: str, fabric: str, ecn_per_rate: bool = True) -> list[tuple[str, str]]:
    """``(ns3::Type::Attribute, value)`` pairs of one run (module docstring); without
    ``ecn_per_rate`` every switch port marks at the 100 Gb/s thresholds."""
    fabric_attributes = dict(FABRIC_ATTRIBUTES)
    if not ecn_per_rate:
        del fabric_attributes["ns3::SwitchMmu::EcnReferenceRate"]
    pairs = list(fabric_attributes.items()) if fabric == "lossless" else []
    return pairs + list(ROCE_ATTRIBUTES.get(protocol, {}).items())


def run_ours(
    binary: Path,
    protocol: str,
    flows_csv: Path,
    workdir: Path,
    fabric: str,
    seed: int,
    ecn_per_rate: bool = True,
) -> tuple[pd.DataFrame, dict[str, Any], float]:
    """One driver run; its FCT records, statistics and process wall time (s)."""
    tag = f"{protocol}_{flows_csv.stem}"
    out_csv, stats_json = workdir / f"fct_{tag}.csv", workdir / f"stats_{tag}.json"
    registered = protocol.split(".")[0]  # a DCQCN_VARIANTS name runs roce-dcqcn
    cmd = driver_argv(
        binary,
        flows_csv,
        out_csv,
        stats_json,
        registered,
        RATE_GBPS,
        seed,
        {**TOPOLOGY, "fabric": fabric},
        attributes=attributes_for(protocol, fabric, ecn_per_rate),
    )
    stats, fct, wall = run_driver(cmd, out_csv, stats_json)
    return fct, stats, wall


def run_hpcc_cached(
    binary: Path,
    flows: pd.DataFrame,
    flows_csv: Path,
    cc: str,
    workdir: Path,
    cache: Path | None,
) -> tuple[pd.DataFrame, float]:
    """HPCC's simulator on ``flows`` (``hpcc_sim.run``), or its earlier result for the same
    flow table (by content hash) and congestion control from ``cache``: its runs take
    minutes. Returns the FCT table and the wall time of the run that made it (s)."""
    digest = hashlib.sha256(flows_csv.read_bytes()).hexdigest()[:16]
    cached = cache / f"hpcc-sim_{cc}_{digest}.csv" if cache is not None else None
    if cached is not None and cached.is_file():
        table = pd.read_csv(cached)
        return table, float(cached.with_suffix(".wall").read_text())
    ref, wall = hpcc_sim.run(binary, flows, HPCC_FABRIC, cc, workdir / f"hpcc_{cc}_{digest}")
    if cached is not None:
        cache.mkdir(parents=True, exist_ok=True)
        with atomic_path(cached.with_suffix(".wall")) as tmp:
            tmp.write_text(f"{wall}\n")
        with atomic_path(cached) as tmp:
            ref.to_csv(tmp, index=False)
    return ref, wall


def cell(table: pd.DataFrame, size_pct: int) -> str:
    """``p50 / p95 / p99`` of the group starting at ``size_pct``, or ``-`` if this run has
    no such group (too few finished flows)."""
    match = table[table["size_pct"] == size_pct]
    if match.empty:
        return "-"
    r = match.iloc[0]
    return f"{r.slowdown_p50:.2f} / {r.slowdown_p95:.2f} / {r.slowdown_p99:.2f}"


def agreement(ours: pd.DataFrame, theirs: pd.DataFrame) -> list[str]:
    """How ``ours`` matches ``theirs`` group by group (both from
    :func:`slowdown_by_size_percentile` on the same flows and step): per percentile (p50,
    p95, p99), the median and the range over the size groups of ours / theirs - 1, as
    ``"+3 % (-10..+40 %)"`` strings.

    Raises:
        ValueError: the tables group different flows.
    """
    if list(ours["size_pct"]) != list(theirs["size_pct"]):
        raise ValueError("tables group different flows (size_pct differs)")

    def pct(x: float) -> str:
        return f"{round(100 * x):+d} %"  # round() to an int: no "-0 %"

    cells = []
    for column in ("slowdown_p50", "slowdown_p95", "slowdown_p99"):
        ratio = ours[column].to_numpy() / theirs[column].to_numpy() - 1
        cells.append(f"{pct(np.median(ratio))} ({pct(ratio.min())}..{pct(ratio.max())})")
    return cells


def tails(table: pd.DataFrame) -> str:
    """``max p95 / max p99`` over the groups below 200 KB, and the p95 range over the groups
    of 1 MB and more, of one slowdown-by-size table."""
    short = table[table["size_max_bytes"] <= SHORT_BYTES]
    long_ = table[table["size_max_bytes"] >= 1_000_000]
    text = f"{short['slowdown_p95'].max():.2f} / {short['slowdown_p99'].max():.2f}"
    if not long_.empty:
        text += f" | {long_['slowdown_p95'].min():.2f}-{long_['slowdown_p95'].max():.2f}"
    else:
        text += " | -"
    return text


def summary(tables: dict[str, pd.DataFrame]) -> list[str]:
    """Markdown rows ``| run | vs HPCC's simulator p50 | p95 | p99 | < 200 KB max p95 / p99 |
    >= 1 MB p95 |``: each of our runs against HPCC's simulator's run of the same congestion
    control (HPCC_SIM_CC), then HPCC's simulator's own rows (no comparison)."""
    rows = []
    for name, table in tables.items():
        ref = f"hpcc-sim {HPCC_SIM_CC.get(name.split('.')[0], '')}"
        cmp = agreement(table, tables[ref]) if ref in tables and ref != name else ["", "", ""]
        rows.append(f"| {name} | {' | '.join(cmp)} | {tails(table)} |")
    return rows


def report_point(
    workload: str, load: float, tables: dict[str, pd.DataFrame], notes: list[str]
) -> list[str]:
    """Markdown of one workload x load: one row per size group, one column per source."""
    names = list(tables)
    base = max(tables.values(), key=len)
    lines = [
        f"### {workload}, load {load:g}",
        "",
        "FCT slowdown p50 / p95 / p99 per flow-size group (HPCC Fig. 11 method).",
        "",
        "| size pct | up to bytes | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for row in base.itertuples():
        cells = " | ".join(cell(tables[n], int(row.size_pct)) for n in names)
        lines.append(f"| {row.size_pct:g} % | {row.size_max_bytes:,} | {cells} |")
    lines += [
        "",
        "Each run against HPCC's simulator's run of the same congestion control: median "
        "(and range) over the size groups of ours / theirs - 1.",
        "",
        "| run | p50 | p95 | p99 | < 200 KB: max p95 / p99 | >= 1 MB: p95 |",
        "| --- | --- | --- | --- | --- | --- |",
        *summary(tables),
        "",
    ]
    for dcqcn, hpcc in (("roce-dcqcn", "roce-hpcc"), ("hpcc-sim dcqcn", "hpcc-sim hpcc")):
        if dcqcn in tables and hpcc in tables:
            try:
                r95 = tail_ratio(tables[dcqcn], tables[hpcc], "slowdown_p95", SHORT_BYTES)
                r99 = tail_ratio(tables[dcqcn], tables[hpcc], "slowdown_p99", SHORT_BYTES)
            except ValueError as exc:
                notes.append(f"{dcqcn} / {hpcc}: {exc}")
                continue
            notes.append(
                f"{dcqcn} / {hpcc}, flows < 200 KB: p95 slowdown ratio up to {r95:.2f}, "
                f"p99 up to {r99:.2f} (paper: up to 20, i.e. 95 % shorter)"
            )
    return lines + [f"- {n}" for n in notes] + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("protocols", nargs="*", default=["roce-dcqcn", "roce-hpcc"])
    parser.add_argument(
        "--workload",
        nargs="+",
        default=["hpcc-websearch", "hpcc-fbhadoop"],
        help="flow-size CDFs (shipped names or files)",
    )
    parser.add_argument("--load", nargs="+", type=float, default=[0.3, 0.5])
    parser.add_argument("--flows", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1, help="workload seed and driver seed")
    parser.add_argument("--step", type=int, default=5, help="percent of flows per size group")
    parser.add_argument("--fabric", choices=["lossless", "lossy"], default="lossless")
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument(
        "--hpcc-binary",
        type=Path,
        default=None,
        help="HPCC's simulator (bench/hpcc_sim.py build); runs its dcqcn and hpcc too",
    )
    parser.add_argument(
        "--hpcc-cache",
        type=Path,
        default=None,
        help="keep HPCC's simulator's results here and reuse them for the same flows",
    )
    parser.add_argument(
        "--hpcc-cc",
        nargs="+",
        default=list(HPCC_SIM_CC.values()),
        choices=sorted(hpcc_sim.HPCC_CC_SETTINGS),
        help="HPCC's simulator's congestion controls to run (dcqcn-clamp: CLAMP_TARGET_RATE 1)",
    )
    parser.add_argument(
        "--ecn-one-setting",
        action="store_true",
        help="every switch port marks at the 100 Gb/s RED-ECN thresholds (no per-rate scaling)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    args = parser.parse_args()
    if not args.binary.is_file():
        print(f"bench_roce_fidelity: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    hosts = HPCC_FABRIC.racks * HPCC_FABRIC.hosts_per_rack
    lines = [
        f"## RoCE fidelity against HPCC: {args.flows} flows per point, seed {args.seed}, "
        f"{args.fabric} fabric, {hosts} hosts at {RATE_GBPS:g} Gb/s, RED-ECN "
        + (
            "100 Gb/s thresholds on every port"
            if args.ecn_one_setting
            else "thresholds scaled with each port's rate"
        ),
        "",
        "Paper's statements (the comparison target):",
        "",
        *[f"- {c}" for c in PAPER_CLAIMS],
        "",
    ]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_roce_fidelity.") as tmp:
        workdir = Path(tmp)
        for workload in args.workload:
            for load in args.load:
                flows = generate(
                    workload, load, hosts, args.flows, RATE_GBPS, "all_to_all", seed=args.seed
                )
                flows_csv = workdir / f"flows_{Path(workload).stem}_{load:g}.csv"
                write_sim_flows_csv(flows, flows_csv)
                tables: dict[str, pd.DataFrame] = {}
                notes: list[str] = []
                for protocol in args.protocols:
                    fct, stats, wall = run_ours(
                        args.binary,
                        protocol,
                        flows_csv,
                        workdir,
                        args.fabric,
                        args.seed,
                        not args.ecn_one_setting,
                    )
                    done = fct[fct["finished"] == 1]
                    tables[protocol] = slowdown_by_size_percentile(
                        done["size_bytes"].to_numpy(), done["slowdown"].to_numpy(), args.step
                    )
                    pkts = int(stats["data_packets_delivered"])
                    notes.append(
                        f"{protocol}: {len(done)}/{len(fct)} flows finished; wall "
                        f"{float(stats['wall_s']):.1f} s (process {wall:.1f} s), "
                        f"{pkts / float(stats['wall_s']):,.0f} data packets/s; "
                        f"drops {stats['packets_dropped']}, pause frames "
                        f"{stats.get('pfc_frames', 0)}"
                    )
                    print(notes[-1], flush=True)
                for cc in args.hpcc_cc if args.hpcc_binary is not None else ():
                    t0 = time.perf_counter()
                    ref, wall = run_hpcc_cached(
                        args.hpcc_binary, flows, flows_csv, cc, workdir, args.hpcc_cache
                    )
                    done = ref[ref["finished"] == 1]
                    tables[f"hpcc-sim {cc}"] = slowdown_by_size_percentile(
                        done["size_bytes"].to_numpy(),
                        np.asarray(done["slowdown"], dtype=float),
                        args.step,
                    )
                    # its data packets: 1000 B payloads, no retransmission when lossless
                    pkts = int(np.ceil(done["size_bytes"].to_numpy() / 1000).sum())
                    took = time.perf_counter() - t0
                    notes.append(
                        f"hpcc-sim {cc}: {len(done)}/{len(ref)} flows finished; wall "
                        f"{wall:.1f} s"
                        + (" (from --hpcc-cache)" if took < wall / 2 else "")
                        + f", {pkts / wall:,.0f} data packets/s"
                    )
                    print(notes[-1], flush=True)
                point = report_point(Path(workload).stem, load, tables, notes)
                print("\n".join(point), flush=True)
                lines += point
    report = "\n".join(lines) + "\n"
    if args.out is not None:
        with atomic_path(args.out) as tmp_out:
            tmp_out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
