"""HPCC's own simulator as the reference: build it here, feed it our flows, read its FCTs.

HPCC's ns-3 simulator (alibaba-edu/High-Precision-Congestion-Control, ``simulation/``, ns-3.18
era, commit 9f4be2a) is what RoCE congestion-control studies run. Its own build needs waf on
python2 and gcc <= 5 (its README; issues #2, #29); Debian bookworm has neither (no python2
package at all; gcc 11 and 12 only). ``build`` compiles it without waf instead: the ten
ns-3 modules ``scratch/third.cc`` needs (core, network, bridge, mpi, internet,
point-to-point, stats, config-store, tools, applications), their sources as each module's
``wscript`` lists them (conditional ones for win32, cairo, NSC, sqlite, GTK and XML left
out), every header copied to ``<out>/ns3/`` as waf's ``ns3header`` does, and the two
configuration headers waf would generate written by hand. Three compiler choices matter
(bench/RESULTS.md "RoCE fidelity against HPCC (#19)" has the failures without them):

- the optimized profile (no ``NS3_LOG_ENABLE``): in the debug profile gcc 12 rejects
  ns-3.18's ``ParameterLogger`` (``log.h:322: ambiguous overload for operator<<``);
- ``-std=c++11 -fpermissive``: the code predates C++17, gcc 12's default;
- ``-fno-lifetime-dse -fno-strict-aliasing -fno-delete-null-pointer-checks``: without them
  the binary aborts at start-up (``free(): invalid pointer`` in ``ns3::Time::Clear`` called
  from ``main``), the lifetime dead-store elimination gcc 6 introduced breaking the old code,
  which is why its README asks for gcc <= 5.

Usage::

    python bench/hpcc_sim.py build --src /path/to/High-Precision-Congestion-Control/simulation \\
        --out /tmp/hpcc-build            # -> /tmp/hpcc-build/third (~6 min on 2 cores)

The source is not vendored: fetch the repository (a checkout of the commit above) and point
``--src`` at its ``simulation/``. :func:`run` writes its input files for a flow table
(``topology.txt``, ``flow.txt``, ``trace.txt``, ``config.txt``), runs it and returns its FCTs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: ns-3 modules scratch/third.cc needs, in dependency order (each module's wscript).
MODULES = (
    "core",
    "network",
    "bridge",
    "mpi",
    "internet",
    "point-to-point",
    "stats",
    "config-store",
    "tools",
    "applications",
)
#: Sources and headers a default waf configure on Linux leaves out.
_SKIP = re.compile(
    r"win32|int64x64-cairo|cairo-wideint|int64x64-double|nsc-|sqlite|gtk|xml-config|"
    r"model-node-creator|model-typeid-creator|display-functions"
)
CXXFLAGS = (
    "-O2 -std=c++11 -fpermissive -w -fno-lifetime-dse -fno-strict-aliasing "
    "-fno-delete-null-pointer-checks"
)
#: What waf's configure would write for Linux x86-64 (src/core/wscript checks).
_CORE_CONFIG = """#ifndef NS3_CORE_CONFIG_H
#define NS3_CORE_CONFIG_H
#define HAVE___UINT128_T 1
#define INT64X64_USE_128 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_DIRENT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_GETENV 1
#define HAVE_SIGNAL_H 1
#define HAVE_PTHREAD_H 1
#endif
"""


def build(src: Path, out: Path, jobs: int = 2) -> Path:
    """Compile HPCC's ``scratch/third`` from ``src`` (its ``simulation/`` folder) into
    ``out/third`` without waf (module docstring). Returns the binary's path.

    Raises:
        FileNotFoundError: ``src`` is not HPCC's simulation folder.
        subprocess.CalledProcessError: the compiler failed (make's output is on stderr).
    """
    if not (src / "scratch" / "third.cc").is_file():
        raise FileNotFoundError(f"{src}: no scratch/third.cc (expected HPCC's simulation/)")
    (out / "ns3").mkdir(parents=True, exist_ok=True)
    sources: list[str] = []
    for module in MODULES:
        wscript = (src / "src" / module / "wscript").read_text()
        body = wscript[wscript.index("def build(bld)") :]
        listed = re.findall(r"'((?:model|helper|utils)/[\w./-]+\.(?:cc|h))'", body)
        headers = []
        for rel in dict.fromkeys(listed):
            path = src / "src" / module / rel
            if _SKIP.search(rel) or not path.is_file():
                continue
            if rel.endswith(".cc"):
                sources.append(str(path))
            else:
                headers.append(path.name)
        for folder in ("model", "helper", "utils"):
            for header in (src / "src" / module / folder).glob("*.h"):
                shutil.copy(header, out / "ns3" / header.name)
        (out / "ns3" / f"{module}-module.h").write_text(
            "".join(f'#include "ns3/{h}"\n' for h in headers)
        )
    (out / "ns3" / "core-config.h").write_text(_CORE_CONFIG)
    (out / "ns3" / "config-store-config.h").write_text("#pragma once\n")
    sources.append(str(src / "scratch" / "third.cc"))
    objects = [out / "obj" / (Path(s).relative_to(src).with_suffix(".o")) for s in sources]
    rules = [f"{out}/third: {' '.join(map(str, objects))}\n\t$(CXX) -o $@ $^ -lpthread -lrt\n"]
    for source, obj in zip(sources, objects, strict=True):
        rules.append(
            f"{obj}: {source}\n\t@mkdir -p {obj.parent}\n"
            f"\t$(CXX) {CXXFLAGS} -I{out} -I{src} -c $< -o $@\n"
        )
    (out / "Makefile").write_text("CXX ?= g++\n" + "".join(rules))
    subprocess.run(["make", "-f", str(out / "Makefile"), f"-j{jobs}"], check=True)
    return out / "third"


@dataclass(frozen=True)
class ClosFabric:
    """The two-tier Clos both simulators run (bench_roce_fidelity.py ``HPCC_FABRIC``)."""

    racks: int
    hosts_per_rack: int
    spines: int
    rate_gbps: float
    spine_rate_factor: int
    host_link_ns: int
    spine_link_ns: int
    buffer_mb: int  # HPCC's BUFFER_SIZE: shared buffer per switch, MB


#: HPCC's run.py settings per congestion control at 100 Gb/s NICs (its "dcqcn" and "hp"
#: branches with bw = 100 and --hpai 50, the setting its README and analysis/fct_analysis.py
#: use; Kmin/Kmax in KB per link rate, scaled from 100/400 KB at 25 Gb/s).
HPCC_CC_SETTINGS: dict[str, dict[str, str]] = {
    "dcqcn": {
        "CC_MODE": "1",
        "ALPHA_RESUME_INTERVAL": "1",
        "RATE_DECREASE_INTERVAL": "4",
        "RP_TIMER": "300",
        "EWMA_GAIN": "0.00390625",
        "FAST_RECOVERY_TIMES": "1",
        "RATE_AI": "20Mb/s",
        "RATE_HAI": "200Mb/s",
        "HAS_WIN": "0",
        "VAR_WIN": "0",
        "FAST_REACT": "0",
        "INT_MULTI": "1",
        "ACK_HIGH_PRIO": "1",
        "CLAMP_TARGET_RATE": "0",
    },
    "hpcc": {
        "CC_MODE": "3",
        "ALPHA_RESUME_INTERVAL": "1",
        "RATE_DECREASE_INTERVAL": "4",
        "RP_TIMER": "300",
        "EWMA_GAIN": "0.00390625",
        "FAST_RECOVERY_TIMES": "1",
        "RATE_AI": "50Mb/s",
        "RATE_HAI": "50Mb/s",
        "HAS_WIN": "1",
        "VAR_WIN": "1",
        "FAST_REACT": "1",
        "INT_MULTI": "4",
        "ACK_HIGH_PRIO": "0",
        "CLAMP_TARGET_RATE": "0",
    },
}
#: Its DCQCN with CLAMP_TARGET_RATE 1 (rdma-hw.cc CheckRateDecreaseMlx: every cut sets the
#: target rate to the current rate, DCQCN's paper rule), to measure what the flag does.
HPCC_CC_SETTINGS["dcqcn-clamp"] = {**HPCC_CC_SETTINGS["dcqcn"], "CLAMP_TARGET_RATE": "1"}
#: Its DCQCN with α updated every 4 us (ALPHA_RESUME_INTERVAL 4 instead of 1: rdma-hw.cc
#: UpdateAlphaMlx adds g once per interval in which a CNP arrived), the cadence of one CNP
#: per 4 us that ours reacts to.
HPCC_CC_SETTINGS["dcqcn-alpha4us"] = {**HPCC_CC_SETTINGS["dcqcn"], "ALPHA_RESUME_INTERVAL": "4"}
#: Offset of every flow's start: HPCC's traffic_gen.py starts flows at 2 s (base_t).
START_OFFSET_NS = 2_000_000_000


def write_inputs(flows: pd.DataFrame, fabric: ClosFabric, cc: str, workdir: Path) -> Path:
    """Write HPCC's input files for ``flows`` (NS3_FLOWS) in ``workdir``; return config.txt.

    Hosts keep their numbers (HPCC node i = our host i); ToR r is node H + r, spine s node
    H + racks + s. Flow lines are ``src dst 3 100 size start_s`` (priority group 3, port 100
    as its traffic_gen.py writes them), start = 2 s + start_ns, in start order.

    Raises:
        KeyError: ``cc`` is not in :data:`HPCC_CC_SETTINGS`.
    """
    settings = HPCC_CC_SETTINGS[cc]
    hosts = fabric.racks * fabric.hosts_per_rack
    links = [
        f"{h} {hosts + h // fabric.hosts_per_rack} {fabric.rate_gbps:g}Gbps "
        f"{fabric.host_link_ns}ns 0"
        for h in range(hosts)
    ]
    spine_gbps = fabric.rate_gbps * fabric.spine_rate_factor
    links += [
        f"{hosts + r} {hosts + fabric.racks + s} {spine_gbps:g}Gbps {fabric.spine_link_ns}ns 0"
        for r in range(fabric.racks)
        for s in range(fabric.spines)
    ]
    switches = range(hosts, hosts + fabric.racks + fabric.spines)
    (workdir / "topology.txt").write_text(
        f"{hosts + len(switches)} {len(switches)} {len(links)}\n"
        + " ".join(map(str, switches))
        + "\n"
        + "\n".join(links)
        + "\n"
    )
    ordered = flows.sort_values(["start_ns", "flow_id"], kind="stable")
    lines = [
        f"{int(f.src_host)} {int(f.dst_host)} 3 100 {int(f.size_bytes)} "
        f"{(START_OFFSET_NS + int(f.start_ns)) * 1e-9:.9f}"
        for f in ordered.itertuples()
    ]
    (workdir / "flow.txt").write_text(f"{len(lines)}\n" + "\n".join(lines) + "\n")
    (workdir / "trace.txt").write_text("0\n\n")
    last_start_s = (START_OFFSET_NS + int(flows["start_ns"].max())) * 1e-9
    rate_bps = int(fabric.rate_gbps * 1e9)
    kmin = {rate_bps: 400 * fabric.rate_gbps / 100, rate_bps * 4: 1600 * fabric.rate_gbps / 100}
    config = {
        "ENABLE_QCN": "1",
        "USE_DYNAMIC_PFC_THRESHOLD": "1",
        "PACKET_PAYLOAD_SIZE": "1000",
        "TOPOLOGY_FILE": str(workdir / "topology.txt"),
        "FLOW_FILE": str(workdir / "flow.txt"),
        "TRACE_FILE": str(workdir / "trace.txt"),
        "TRACE_OUTPUT_FILE": str(workdir / "mix.tr"),
        "FCT_OUTPUT_FILE": str(workdir / "fct.txt"),
        "PFC_OUTPUT_FILE": str(workdir / "pfc.txt"),
        "SIMULATOR_STOP_TIME": f"{last_start_s + 1.0:.9f}",
        **settings,
        "MIN_RATE": "1000Mb/s",
        "DCTCP_RATE_AI": "1000Mb/s",
        "ERROR_RATE_PER_LINK": "0.0000",
        "L2_CHUNK_SIZE": "4000",
        "L2_ACK_INTERVAL": "1",
        "L2_BACK_TO_ZERO": "0",
        "GLOBAL_T": "1",
        "U_TARGET": "0.95",
        "MI_THRESH": "0",
        "MULTI_RATE": "0",
        "SAMPLE_FEEDBACK": "0",
        "PINT_LOG_BASE": "1.05",
        "PINT_PROB": "1.0",
        "RATE_BOUND": "1",
        "LINK_DOWN": "0 0 0",
        "ENABLE_TRACE": "0",
        "KMAX_MAP": "2 " + " ".join(f"{r} {int(k * 4)}" for r, k in kmin.items()),
        "KMIN_MAP": "2 " + " ".join(f"{r} {int(k)}" for r, k in kmin.items()),
        "PMAX_MAP": "2 " + " ".join(f"{r} 0.2" for r in kmin),
        "BUFFER_SIZE": str(fabric.buffer_mb),
        "QLEN_MON_FILE": str(workdir / "qlen.txt"),
        # after the stop time: the 100 ns queue monitor never runs
        "QLEN_MON_START": str(int((last_start_s + 2.0) * 1e9)),
        "QLEN_MON_END": str(int((last_start_s + 2.0) * 1e9)),
    }
    path = workdir / "config.txt"
    path.write_text("".join(f"{k} {v}\n" for k, v in config.items()))
    return path


def read_fct(path: Path, flows: pd.DataFrame) -> pd.DataFrame:
    """HPCC's ``fct.txt`` (``sip dip sport dport size start_ns fct_ns standalone_fct_ns``,
    hex IPs 11.x.y.1 whose bits 8-23 are the node) joined back to ``flows``' flow ids.

    Returns:
        One row per flow of ``flows``: flow_id, src_host, dst_host, size_bytes, fct_ns,
        ideal_fct_ns (HPCC's standalone FCT), slowdown, finished (0 for a flow HPCC did
        not finish by its stop time; its FCT columns NaN).

    Raises:
        ValueError: a line that is not 8 fields, naming the file and line.
    """
    rows = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        if len(fields) != 8:
            raise ValueError(f"{path}:{lineno}: expected 8 fields of HPCC's fct.txt, got {line!r}")
        rows.append(
            (
                (int(fields[0], 16) >> 8) & 0xFFFF,
                (int(fields[1], 16) >> 8) & 0xFFFF,
                int(fields[4]),
                int(fields[5]) - START_OFFSET_NS,
                int(fields[6]),
                int(fields[7]),
            )
        )
    done = pd.DataFrame(
        rows, columns=["src_host", "dst_host", "size_bytes", "start_ns", "fct_ns", "ideal_fct_ns"]
    ).sort_values("start_ns")
    ours = (
        flows[["flow_id", "src_host", "dst_host", "size_bytes", "start_ns"]]
        .astype({"src_host": "int64", "dst_host": "int64", "start_ns": "int64"})
        .sort_values("start_ns")
    )
    # HPCC keeps the start in double seconds: it may differ from ours by a nanosecond
    merged = pd.merge_asof(
        ours,
        done,
        on="start_ns",
        by=["src_host", "dst_host", "size_bytes"],
        tolerance=2,
        direction="nearest",
    ).sort_values("flow_id")
    merged["finished"] = merged["fct_ns"].notna().astype(np.int8)
    merged["slowdown"] = merged["fct_ns"] / merged["ideal_fct_ns"]
    return merged.reset_index(drop=True)


def run(
    binary: Path, flows: pd.DataFrame, fabric: ClosFabric, cc: str, workdir: Path
) -> tuple[pd.DataFrame, float]:
    """Run HPCC's simulator on ``flows`` with congestion control ``cc`` (``dcqcn`` or
    ``hpcc``); return :func:`read_fct`'s table and the wall time in s.

    Raises:
        RuntimeError: the simulator exited non-zero (its output's tail included).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_inputs(flows, fabric, cc, workdir)
    t0 = time.perf_counter()
    proc = subprocess.run([str(binary), str(config)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(
            f"{binary} {config} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
        )
    return read_fct(workdir / "fct.txt", flows), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile HPCC's scratch/third without waf")
    b.add_argument("--src", type=Path, required=True, help="HPCC's simulation/ folder")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    print(build(args.src, args.out, args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
