"""Wall time and peak memory of our pFabric, pHost or Fastpass against the authors' simulator.

The authors' packet simulator is YAPS (the pHost paper's simulator, NetSys/simulator on
GitHub); its configurations are ``py/run_experiments.py``'s ``conf_str_pfabric``,
``conf_str_phost`` and ``conf_str_fastpass`` (``--protocol``; only the lines that differ
from pFabric's are kept in ``YAPS_PROTOCOL_LINES``).  Ours runs the same protocol with its
default attributes (pFabric with bench_pfabric.py's YAPS attributes).
This bench builds it from its public source in a temporary directory (never in this
repository): ``git archive`` of the given git directory (the ``fetch`` tool's mirror, e.g.
``/work/.mirror/NetSys+simulator/repo``), then every source of ``simulator_SOURCES`` in
its ``Makefile.am`` compiled with its ``simulator_CXXFLAGS`` (``-g -O3 -gdwarf-2 -Wall
-std=c++0x``) and linked, which is what its automake build does (without needing
autotools on this machine).  Without ``--reference-git`` (or ``$YAPS_GIT``) it skips with a
message.

Three setups, each run on the very same flows by both simulators: our flow table is
written as a YAPS flow file (``disaggsim.traces.yaps.write_yaps``) and YAPS reads it
(``use_flow_trace: 1``, ``FlowReader``):

  (a) 40 Gbps, permutation, web search at load 0.6, 10,000 flows (bench_pfabric.py (a))
  (b) 10 Gbps, all-to-all, web search at load 0.6, 10,000 flows (bench_pfabric.py (b))
  (c) heavy incast: ``--incast-flows`` flows among the 8 first hosts of rack 0, all
      starting within 1 ms, 3 of 4 towards host 0 or host 1, sizes from the web search
      CDF truncated to 150 packets (0.92 M data packets for 12,000 flows),
      at 40 Gbps.  Massive drops and timeouts: the timer path dominates.

Both simulators get the fabric of bench_pfabric.py: 144 hosts, 9 racks of 16, 4 spines,
36 KB pFabric queues, 0.2 us per link, cut-through, init_cwnd 12, max_cwnd 15, RTO 45 us.
YAPS fixes 144 hosts / 9 ToRs / 4 cores in ``run/experiment.cpp``.

The two simulators run interleaved (ours, theirs, ours, theirs, ...) ``--repeats`` times
per setup; the table gives whole-process wall-time medians (``time.perf_counter`` around
the process), CPU-time medians (user + system) and peak RSS (both from GNU time,
``/usr/bin/time``), and the 1-minute load average before each run, since the
2-core machine is shared.

Usage: ``.venv/bin/python bench/bench_vs_reference.py --reference-git DIR
[--protocol pfabric|phost|fastpass] [--setups a,b,c]
[--repeats 2] [--flows 10000] [--incast-flows 12000] [--binary build/sim/disaggsim-ns3]
[--json bench/figures/vs_reference.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import HOSTS_PER_RACK, RACKS, SETUPS, Setup, driver_command

from disaggsim.atomic import atomic_path
from disaggsim.traces.workloads import YAPS_HEADER_BYTES, generate, write_sim_flows_csv
from disaggsim.traces.yaps import write_yaps

FIGURES = Path(__file__).resolve().parent / "figures"
INCAST = Setup("c", 40.0, "incast")

#: YAPS py/run_experiments.py conf_str_pfabric, with use_flow_trace 1 (read our flows),
#: bandwidth per setup, and its num_flow = our flow count.
YAPS_CONF = """init_cwnd: 12
max_cwnd: 15
retx_timeout: 45e-06
queue_size: 36864
propagation_delay: 0.0000002
bandwidth: {bandwidth}
queue_type: 2
flow_type: 2
num_flow: {flows}
flow_trace: {trace}
cut_through: 1
mean_flow_size: 0
load_balancing: 0
preemptive_queue: 0
big_switch: 0
host_type: 1
traffic_imbalance: 0
load: 0.6
reauth_limit: 3
magic_trans_slack: 1.1
magic_delay_scheduling: 1
use_flow_trace: 1
smooth_cdf: 1
burst_at_beginning: 0
capability_timeout: 1.5
capability_resend_timeout: 9
capability_initial: 8
capability_window: 8
capability_window_timeout: 25
ddc: 0
ddc_cpu_ratio: 0.33
ddc_mem_ratio: 0.33
ddc_disk_ratio: 0.34
ddc_normalize: 2
ddc_type: 0
deadline: 0
schedule_by_deadline: 0
avg_deadline: 0.0001
capability_third_level: 1
capability_fourth_level: 0
magic_inflate: 1
interarrival_cdf: none
num_host_types: 13
permutation_tm: 0
"""

#: The lines of ``py/run_experiments.py``'s ``conf_str_phost`` and ``conf_str_fastpass``
#: that differ from ``conf_str_pfabric`` (everything else is equal there).
YAPS_PROTOCOL_LINES: dict[str, dict[str, str]] = {
    "pfabric": {},
    "phost": {
        "init_cwnd": "2",
        "max_cwnd": "6",
        "retx_timeout": "9.50003e-06",
        "flow_type": "112",
        "host_type": "12",
    },
    "fastpass": {
        "init_cwnd": "6",
        "max_cwnd": "12",
        "flow_type": "114",
        "host_type": "14",
    },
}


def yaps_conf(protocol: str, bandwidth: str, flows: int, trace: Path) -> str:
    """YAPS configuration text for ``protocol`` (``YAPS_CONF`` with its protocol's lines).

    Raises:
        KeyError: ``protocol`` is not one of ``YAPS_PROTOCOL_LINES``.
    """
    overrides = YAPS_PROTOCOL_LINES[protocol]
    out = []
    for line in YAPS_CONF.format(bandwidth=bandwidth, flows=flows, trace=trace).splitlines():
        key = line.split(":", 1)[0]
        out.append(f"{key}: {overrides[key]}" if key in overrides else line)
    return "\n".join(out) + "\n"


def build_reference(git_dir: Path, workdir: Path) -> Path:
    """Build YAPS's ``simulator`` from ``git_dir`` (HEAD) under ``workdir``; return its path.

    Sources and flags are read from the repository's ``Makefile.am`` (``simulator_SOURCES``,
    ``simulator_CXXFLAGS``), compiled two at a time with ``g++``.

    Raises:
        RuntimeError: ``git archive`` or a compile/link step fails (its stderr tail).
    """
    src = workdir / "yaps-src"
    src.mkdir()
    tar_path = workdir / "yaps.tar"
    subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "-o", str(tar_path), "HEAD"],
        check=True,
    )
    with tarfile.open(tar_path) as tar:
        tar.extractall(src, filter="data")
    makefile = (src / "Makefile.am").read_text().replace("\\\n", " ")
    sources_m = re.search(r"^simulator_SOURCES\s*=(.*)$", makefile, re.M)
    flags_m = re.search(r"^simulator_CXXFLAGS\s*=(.*)$", makefile, re.M)
    if sources_m is None or flags_m is None:
        raise RuntimeError(f"{git_dir}: Makefile.am has no simulator_SOURCES/CXXFLAGS")
    sources = sources_m.group(1).split()
    flags = shlex.split(flags_m.group(1))

    def compile_one(source: str) -> Path:
        obj = src / (source.replace("/", "_") + ".o")
        proc = subprocess.run(
            ["g++", *flags, "-c", source, "-o", str(obj)], cwd=src, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(f"compiling YAPS {source} failed:\n{proc.stderr[-3000:]}")
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        objects = list(pool.map(compile_one, sources))
    binary = src / "simulator"
    proc = subprocess.run(
        ["g++", *flags, *map(str, objects), "-o", str(binary)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"linking YAPS failed:\n{proc.stderr[-3000:]}")
    return binary


def incast_flows(n_flows: int, seed: int) -> pd.DataFrame:
    """Setup (c): ``n_flows`` flows among hosts 0..7 (rack 0), starting within 1 ms.

    Sizes: web search CDF (``generate``) truncated to 150 packets of 1460 B, so the mean
    is ~77 packets (0.92 M for 12,000 flows); sources uniform over hosts 0..7;
    destinations host 0 (3/8), host 1 (3/8) or another host of the 8 (1/4), never the
    source; starts uniform in [0, 1 ms), sorted.  Returns SIM_FLOWS rows.
    """
    base = generate(
        "websearch",
        0.6,
        RACKS * HOSTS_PER_RACK,
        n_flows,
        40.0,
        "all_to_all",
        seed=seed,
        header_bytes=YAPS_HEADER_BYTES,
    )
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 8, n_flows)
    pick = rng.random(n_flows)
    dst = np.where(pick < 0.375, 0, np.where(pick < 0.75, 1, rng.integers(0, 8, n_flows)))
    clash = dst == src
    dst[clash] = (src[clash] + 1 + rng.integers(0, 7, int(clash.sum()))) % 8
    start = np.sort(rng.integers(0, 1_000_000, n_flows))
    out = base.copy()
    out["src_host"] = src.astype(out["src_host"].dtype)
    out["dst_host"] = dst.astype(out["dst_host"].dtype)
    out["start_ns"] = start.astype(out["start_ns"].dtype)
    size = np.minimum(out["size_bytes"].to_numpy(), 150 * 1460)
    out["size_bytes"] = size.astype(out["size_bytes"].dtype)
    return out


def setup_flows(
    name: str, flows: int, incast_flows_n: int, seed: int
) -> tuple[Setup, pd.DataFrame]:
    """Setup ``name`` ("a", "b" or "c") and its flow table, sizes in whole 1,460 B packets
    (YAPS flow sizes are whole packets: both simulators get the rounded sizes).

    Raises:
        KeyError: an unknown setup name.
    """
    if name == "c":
        setup, table = INCAST, incast_flows(incast_flows_n, seed)
    else:
        setup = SETUPS[name]
        table = generate(
            "websearch",
            0.6,
            RACKS * HOSTS_PER_RACK,
            flows,
            setup.rate_gbps,
            setup.matrix,  # type: ignore[arg-type]
            seed=seed,
            header_bytes=YAPS_HEADER_BYTES,
        )
    table["size_bytes"] = (np.ceil(table["size_bytes"] / 1460) * 1460).astype(
        table["size_bytes"].dtype
    )
    return setup, table


def timed(cmd: list[str], log: Path) -> tuple[float, float, float]:
    """Run ``cmd`` with stdout/stderr to ``log``; return (wall s, CPU s, peak RSS MiB).

    Wall s is ``time.perf_counter`` around the process.  CPU s (user + system) and peak
    RSS come from GNU time (``/usr/bin/time``): a child forked from this Python process
    would report the parent's pre-exec RSS as its ``ru_maxrss``.  On a shared machine CPU s
    varies far less than wall time, which includes the time other processes hold the cores.

    Raises:
        RuntimeError: non-zero exit (the log's tail).
    """
    usage = log.with_suffix(".time")
    with log.open("wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", str(usage), *cmd], stdout=fh, stderr=fh
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = log.read_bytes()[-3000:].decode(errors="replace")
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{tail}")
    user_s, sys_s, rss_kb = usage.read_text().split()[-3:]
    return wall, float(user_s) + float(sys_s), int(rss_kb) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reference-git",
        type=Path,
        default=os.environ.get("YAPS_GIT"),
        help="git directory of NetSys/simulator (or $YAPS_GIT)",
    )
    parser.add_argument("--protocol", choices=sorted(YAPS_PROTOCOL_LINES), default="pfabric")
    parser.add_argument("--setups", default="a,b,c")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--incast-flows", type=int, default=12_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument(
        "--scheduler",
        default="ns3::FourAryHeapScheduler",
        help="driver --scheduler (event queue; the driver's default)",
    )
    parser.add_argument("--json", type=Path, default=FIGURES / "vs_reference.json")
    args = parser.parse_args()
    if args.reference_git is None or not Path(args.reference_git).is_dir():
        print(
            "bench_vs_reference: skipped: no YAPS source (give --reference-git DIR or "
            "$YAPS_GIT, e.g. the fetch tool's github:NetSys/simulator mirror)",
            file=sys.stderr,
        )
        return 0
    if not args.binary.is_file():
        print(f"bench_vs_reference: driver {args.binary} not found (build first)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_vs_reference.") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        yaps = build_reference(Path(args.reference_git), work)
        print(f"built YAPS in {time.perf_counter() - t0:.0f} s: {yaps}", flush=True)
        for name in args.setups.split(","):
            setup, flows = setup_flows(name, args.flows, args.incast_flows, args.seed)
            flows_csv = work / f"flows_{name}.csv"
            trace = work / f"trace_{name}.txt"
            conf = work / f"conf_{name}.txt"
            write_sim_flows_csv(flows, flows_csv)
            write_yaps(flows, trace)
            conf.write_text(
                yaps_conf(args.protocol, f"{setup.rate_gbps * 1e9:.1f}", len(flows), trace)
            )
            packets = int(np.ceil(flows["size_bytes"] / 1460).sum())
            ours_cmd = driver_command(
                args.binary,
                setup,
                args.protocol,
                flows_csv,
                work / f"fct_{name}.csv",
                work / f"stats_{name}.json",
            ) + [f"--scheduler={args.scheduler}"]
            yaps_cmd = [str(yaps), "1", str(conf)]
            for rep in range(args.repeats):
                for sim, cmd in (("disaggsim", ours_cmd), ("yaps", yaps_cmd)):
                    load = os.getloadavg()[0]
                    wall, cpu, rss = timed(cmd, work / f"log_{name}_{sim}.txt")
                    row = {
                        "protocol": args.protocol,
                        "setup": name,
                        "sim": sim,
                        "rep": rep,
                        "wall_s": wall,
                        "cpu_s": cpu,
                        "peak_rss_mib": rss,
                        "load_avg_1min": load,
                        "flows": len(flows),
                        "data_packets": packets,
                    }
                    if sim == "disaggsim":
                        stats = json.loads((work / f"stats_{name}.json").read_text())
                        row["events"] = int(stats["events"])
                        row["drops"] = int(stats["packets_dropped"])
                        row["delivered"] = int(stats["data_packets_delivered"])
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    lines = [
        f"protocol: {args.protocol}",
        "| setup | flows | data pkts | disaggsim wall s | CPU s | MiB | YAPS wall s | CPU s "
        "| MiB | wall ratio | CPU ratio | load avg |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in args.setups.split(","):
        mine = [r for r in rows if r["setup"] == name and r["sim"] == "disaggsim"]
        theirs = [r for r in rows if r["setup"] == name and r["sim"] == "yaps"]

        def med(runs: list[dict[str, Any]], key: str) -> float:
            return float(statistics.median(r[key] for r in runs))

        loads = [r["load_avg_1min"] for r in mine + theirs]
        lines.append(
            f"| ({name}) | {mine[0]['flows']} | {mine[0]['data_packets']:,} "
            f"| {med(mine, 'wall_s'):.1f} | {med(mine, 'cpu_s'):.1f} "
            f"| {med(mine, 'peak_rss_mib'):.0f} | {med(theirs, 'wall_s'):.1f} "
            f"| {med(theirs, 'cpu_s'):.1f} | {med(theirs, 'peak_rss_mib'):.0f} "
            f"| {med(mine, 'wall_s') / med(theirs, 'wall_s'):.2f} "
            f"| {med(mine, 'cpu_s') / med(theirs, 'cpu_s'):.2f} "
            f"| {min(loads):.1f}-{max(loads):.1f} |"
        )
    print("\n".join(lines))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.json) as tmp:  # never half a file
        tmp.write_text(json.dumps({"rows": rows, "table": lines}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
