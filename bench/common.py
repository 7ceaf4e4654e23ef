"""What the benches that run the ns-3 driver on the YAPS reference fabric share.

The fabric and setups of the pHost paper's simulator (YAPS; bench_pfabric.py's docstring
gives the sources): 144 hosts in 9 racks of 16, 4 spines with 4x uplinks, 200 ns links,
setups (a) 40 Gbps permutation and (b) 10 Gbps all-to-all. :func:`run` generates the web
search workload, runs the driver (:func:`driver_command`) and returns its FCT records and
statistics; :func:`yaps_slowdowns` and :func:`summarize` reduce them as YAPS does.

Imported by the bench scripts next to it (``python bench/<script>.py`` puts this folder
first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from disaggsim.sim.runner import driver_argv
from disaggsim.traces.workloads import MSS_BYTES, YAPS_HEADER_BYTES, generate, write_sim_flows_csv

HOSTS_PER_RACK = 16
RACKS = 9
PROPAGATION_NS = 200.0  # YAPS propagation_delay 0.0000002 s per link
CABLE_M = 40.0  # 40 m at 5 ns/m = 200 ns for every link
SMALL_BYTES = 100_000
LARGE_BYTES = 10_000_000


@dataclass(frozen=True)
class Setup:
    name: str
    rate_gbps: float
    matrix: str


@dataclass(frozen=True)
class Fabric:
    """Clos size: racks of HOSTS_PER_RACK hosts, spines, ToR-spine rate / access rate."""

    racks: int
    spines: int
    spine_rate_factor: int


#: The YAPS fabric: 144 hosts, 4 spines with 4x uplinks (full bisection).
YAPS_FABRIC = Fabric(RACKS, 4, 4)

SETUPS = {
    "a": Setup("a", 40.0, "permutation"),
    "b": Setup("b", 10.0, "all_to_all"),
}


def header_ns(rate_gbps: float) -> float:
    """Serialization of the 40 B header at the access rate: YAPS's cut-through delay."""
    return YAPS_HEADER_BYTES * 8 / rate_gbps


def yaps_slowdowns(fct: pd.DataFrame, rate_gbps: float, switch_ns: float) -> np.ndarray:
    """YAPS-style slowdown of each finished flow (module docstring)."""
    same_rack = (fct["src_host"] // HOSTS_PER_RACK) == (fct["dst_host"] // HOSTS_PER_RACK)
    hops = np.where(same_rack, 2, 4)
    packets = np.ceil(fct["size_bytes"] / MSS_BYTES)
    oracle_ns = (
        2 * hops * PROPAGATION_NS + packets * (MSS_BYTES + YAPS_HEADER_BYTES) * 8 / rate_gbps
    )
    ack_return_ns = header_ns(rate_gbps) + hops * PROPAGATION_NS + (hops - 1) * switch_ns
    return (fct["fct_ns"].to_numpy() + ack_return_ns) / oracle_ns.to_numpy()


def summarize(slowdown: np.ndarray, size_bytes: np.ndarray) -> dict[str, float]:
    """Mean and p99 overall, < 100 KB and >= 10 MB (YAPS run/experiment.cpp bins)."""
    small = size_bytes < SMALL_BYTES
    large = size_bytes >= LARGE_BYTES
    out = {
        "mean": float(np.mean(slowdown)),
        "p99": float(np.percentile(slowdown, 99)),
        "small_mean": float(np.mean(slowdown[small])) if small.any() else math.nan,
        "small_p99": float(np.percentile(slowdown[small], 99)) if small.any() else math.nan,
        "large_mean": float(np.mean(slowdown[large])) if large.any() else math.nan,
        "large_n": float(large.sum()),
    }
    return out


#: pFabric attributes of the YAPS-equivalent configuration (YAPS py/run_experiments.py and
#: run/params.cpp; transports/pfabric/doc/pfabric.md §3, §3a): init_cwnd 12, max_cwnd 15,
#: retx_timeout 45 us, no probe mode, a 36 KB host NIC that drops, and the RTO timer running
#: from the moment a packet enters the host NIC (YAPS retransmits on timeout even while the
#: packet still waits there; our default defers, doc/pfabric.md §3a).
PFABRIC_YAPS_ATTRIBUTES: dict[str, str] = {
    "ns3::PfabricSender::InitialCwnd": "12",
    "ns3::PfabricSender::MaxCwnd": "15",
    "ns3::PfabricSender::Rto": "45us",
    "ns3::PfabricSender::ProbeAfterTimeouts": "0",
    "ns3::PfabricSender::DeferRtoWhileQueued": "false",
    "ns3::PfabricFlowTransport::HostBufferBytes": "36864",
}


def driver_command(
    binary: Path,
    setup: Setup,
    protocol: str,
    flows_csv: Path,
    out_csv: Path,
    stats_json: Path,
    driver_seed: int = 0,
    attributes: Mapping[str, str] | None = None,
    fabric: Fabric | None = None,
) -> list[str]:
    """Driver command line of one run on a YAPS fidelity setup (module docstring).

    Args:
        binary: the ``disaggsim-ns3`` driver.
        setup: fabric rate and traffic matrix (``SETUPS``).
        protocol: driver ``--protocol`` (``pfabric``, ``ideal``, ``tcp``, ``dctcp``).
        flows_csv, out_csv, stats_json: SIM_FLOWS input, FCT_RECORDS output, stats JSON.
        driver_seed: driver ``--seed`` = ECMP salt and ns-3 RNG seed.  0 = pFabric's
            per-packet round robin as YAPS's ``spray_counter++ % 4``; ns-3's TCP rejects
            RNG seed 0, so TCP/DCTCP need a non-zero seed.
        attributes: ``ns3::Type::Attribute`` -> value overrides, appended after the
            defaults (for pFabric ``PFABRIC_YAPS_ATTRIBUTES``); ns-3's CommandLine applies
            them in order, so a key given here wins.
        fabric: racks, spines and spine rate factor; default ``YAPS_FABRIC`` (9 racks of
            16 hosts, 4 spines at 4x: full bisection).

    Returns:
        The argv list.
    """
    fabric = fabric or YAPS_FABRIC
    topology = {
        "racks": fabric.racks,
        "hosts_per_rack": HOSTS_PER_RACK,
        "spines": fabric.spines,
        "spine_rate_factor": fabric.spine_rate_factor,
        "buffer_bytes": 36864,
        "intra_rack_cable_m": CABLE_M,
        "inter_rack_cable_m": CABLE_M,
        "prop_ns_per_m": 5,
        "switch_delay_ns": header_ns(setup.rate_gbps),
    }
    merged = dict(PFABRIC_YAPS_ATTRIBUTES) if protocol == "pfabric" else {}
    merged.update(attributes or {})
    return driver_argv(
        binary,
        flows_csv,
        out_csv,
        stats_json,
        protocol,
        setup.rate_gbps,
        driver_seed,
        topology,
        attributes=merged.items(),
    )


def run_driver(
    cmd: list[str], out_csv: Path, stats_json: Path
) -> tuple[dict[str, Any], pd.DataFrame, float]:
    """Run one driver command line; its statistics JSON, FCT records and wall time (s).

    Raises:
        RuntimeError: the driver failed (the command, exit code and stderr's tail).
    """
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(stats_json.read_text()), pd.read_csv(out_csv), wall


def run(
    binary: Path,
    setup: Setup,
    protocol: str,
    n_flows: int,
    seed: int,
    workdir: Path,
    driver_seed: int = 0,
    load: float = 0.6,
    cdf: str | Path = "websearch",
    attributes: Mapping[str, str] | None = None,
    keep_files: bool = True,
    fabric: Fabric | None = None,
    wrapper: Sequence[str] = (),
) -> dict[str, Any]:
    """Generate the workload, run the driver once, return its stats and FCT table.

    Args:
        binary: the ``disaggsim-ns3`` driver.
        setup: fabric rate and traffic matrix (``SETUPS``).
        protocol: driver ``--protocol``; ``pfabric`` gets ``PFABRIC_YAPS_ATTRIBUTES``.
        n_flows: flows to generate (``disaggsim.traces.workloads.generate``).
        seed: workload seed.
        workdir: directory for the flow table, FCT records and stats; file names carry
            setup, protocol, load, flow count and driver seed, so concurrent runs of
            different points may share it.
        driver_seed: driver ``--seed`` (``driver_command``).
        load: offered load, fraction of access capacity (YAPS setups: 0.6).
        cdf: flow-size CDF (shipped name or YAPS-format file; default web search, DCTCP
            SIGCOMM'10).
        attributes: extra ``ns3::Type::Attribute`` overrides (``driver_command``).
        keep_files: False deletes the three files once read.
        fabric: racks and spines (``driver_command``); default ``YAPS_FABRIC``.
        wrapper: argv run in front of the driver's (e.g. ``valgrind --tool=callgrind``).

    Returns:
        ``{"stats": driver stats JSON (dict), "fct": FCT_RECORDS DataFrame, "wall_s":
        process wall time in s, "switch_ns": cut-through delay in ns, "cmd": argv}``.

    Raises:
        RuntimeError: the driver exits non-zero (its stderr tail included).
        ValueError: from ``generate`` (load, flows or CDF out of range).
    """
    fabric = fabric or YAPS_FABRIC
    flows = generate(
        cdf,
        load,
        fabric.racks * HOSTS_PER_RACK,
        n_flows,
        setup.rate_gbps,
        setup.matrix,  # type: ignore[arg-type]
        seed=seed,
        header_bytes=YAPS_HEADER_BYTES,
    )
    tag = f"{setup.name}_{protocol}_{load:g}_{n_flows}_{seed}_{driver_seed}_{fabric.racks}"
    flows_csv = workdir / f"flows_{tag}.csv"
    out_csv = workdir / f"fct_{tag}.csv"
    stats_json = workdir / f"stats_{tag}.json"
    write_sim_flows_csv(flows, flows_csv)
    cmd = driver_command(
        binary, setup, protocol, flows_csv, out_csv, stats_json, driver_seed, attributes, fabric
    )
    cmd = [*wrapper, *cmd]
    stats, fct, wall = run_driver(cmd, out_csv, stats_json)
    if not keep_files:
        for path in (flows_csv, out_csv, stats_json):
            path.unlink()
    return {
        "stats": stats,
        "fct": fct,
        "wall_s": wall,
        "switch_ns": header_ns(setup.rate_gbps),
        "cmd": cmd,
    }


def fidelity_parser(description: str) -> argparse.ArgumentParser:
    """The options every fidelity bench against the authors' simulator takes (this one,
    bench_phost.py, bench_fastpass.py): ``--flows`` (default 10,000), ``--setup`` (a, b or
    both), ``--seed`` (workload seed, default 1), ``--binary`` (the ns-3 driver) and
    ``--out`` (also write the markdown report there)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--setup", choices=["a", "b", "both"], default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--out", type=Path, default=None, help="also write a markdown report")
    return parser
