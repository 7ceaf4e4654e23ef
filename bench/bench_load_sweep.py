"""Normalized FCT vs offered load for pFabric, pHost, Fastpass, Ideal, TCP and DCTCP (pFabric
paper Fig. 8/9).

Sweeps the offered load 0.1, 0.2, ..., 0.8 on the two YAPS fidelity setups of
``bench/bench_pfabric.py`` (web search sizes, 144 hosts in 9 racks of 16, 4 spines with
4x uplinks, 36 KB ports, 0.2 us per link, cut-through after the 40 B header, pFabric with
YAPS's settings ``common.PFABRIC_YAPS_ATTRIBUTES`` and per-packet round-robin
spraying with driver seed 0; every run goes through ``common.run``):

  (a) 40 Gbps access links, permutation traffic matrix
  (b) 10 Gbps access links, all-to-all traffic matrix

and plots, per load, the four panels of the pFabric paper (Alizadeh et al., SIGCOMM'13,
§5.2 Fig. 8 (web search) "normalized FCT"): mean slowdown overall, mean and 99th percentile
slowdown of flows < 100 KB, and mean slowdown of flows >= 10 MB, one line per protocol.

Slowdown is FCT_RECORDS ``slowdown`` (FCT over the flow's FCT alone in our Clos model);
pFabric's YAPS-style slowdown (bench_pfabric.py) is also kept in the table.

pHost and Fastpass run with their default attributes (transports/phost/doc/phost.md §4,
transports/fastpass/doc/fastpass.md), as in bench_phost.py and bench_fastpass.py.

Flow counts: pFabric, pHost, Fastpass and Ideal run the full 10,000 flows. TCP and DCTCP
(ns-3's own TCP/IP stack, ~35 k data packets per wall second, bench/RESULTS.md) run ``--tcp-
flows`` flows (default 300: ~0.3 M data packets; measured ~9-13 k data packets per wall
second for TCP on this fabric, where drops and retransmissions are frequent, so 1,000 flows
took 118 s per run and a 32-run sweep would not fit) of the same workload (same seed, a
smaller draw). 300 flows last ~1-10 ms of simulated time and hold only ~8 flows >= 10 MB, so
the TCP/DCTCP large-flow mean is noisy and their runs are short of steady state. TCP and
DCTCP use the driver's defaults (transports/tcp/doc: init cwnd 10, MinRto 200 us, SACK,
DCTCP marking threshold) and per-flow ECMP (their frames carry the 5-tuple hash; driver seed
1, as ns-3's RNG rejects seed 0), on the same fabric.

Each run's summary is cached in ``--data`` (JSON, one entry per setup/protocol/load/flows),
so an interrupted sweep resumes and ``--plot-only`` re-plots.  At most ``--jobs`` (default 2)
simulations run at once.

Usage: ``.venv/bin/python bench/bench_load_sweep.py [--setup a|b|both] [--tcp-flows N]
[--flows N] [--loads 0.1,...] [--protocols pfabric,...] [--jobs 2]
[--binary build/sim/disaggsim-ns3] [--data bench/figures/load_sweep.json]
[--figures bench/figures] [--plot-only]``.
Writes ``{--figures}/load_sweep_{a,b}.{png,pdf}``, the ``--data`` JSON cache and prints a
markdown table per setup.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from common import SETUPS, Setup, run, summarize, yaps_slowdowns

from disaggsim.atomic import atomic_path

LOADS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PROTOCOLS = ("pfabric", "phost", "fastpass", "ideal", "dctcp-ns3", "tcp-ns3")
FIGURES = Path(__file__).resolve().parent / "figures"
PANELS = (
    ("mean", "(a) overall: mean"),
    ("small_mean", "(b) (0, 100KB]: mean"),
    ("small_p99", "(c) (0, 100KB]: 99th percentile"),
    ("large_mean", "(d) [10MB, inf): mean"),
)
STYLE = {
    "tcp-ns3": ("tab:red", "s"),
    "dctcp-ns3": ("tab:orange", "^"),
    "pfabric": ("tab:blue", "o"),
    "phost": ("tab:purple", "D"),
    "fastpass": ("tab:green", "v"),
    "ideal": ("black", "x"),
}


def driver_seed_of(protocol: str) -> int:
    """Driver ``--seed`` of a protocol's runs (ECMP salt and ns-3 RNG seed).

    0 = pFabric's per-packet round robin as YAPS; ns-3's TCP draws random numbers and
    rejects RNG seed 0, so TCP/DCTCP use 1 (their frames carry the 5-tuple hash: per-flow
    ECMP either way).
    """
    return 1 if protocol in ("tcp-ns3", "dctcp-ns3") else 0


def run_point(
    binary: Path, setup: Setup, protocol: str, load: float, n_flows: int, seed: int, tmp: Path
) -> dict[str, float]:
    """Run one (setup, protocol, load) point with ``common.run``; summarize it.

    pFabric gets ``common.PFABRIC_YAPS_ATTRIBUTES``; the others the driver defaults.

    Returns:
        ``summarize`` keys of FCT_RECORDS slowdown, ``yaps_*`` keys of the YAPS-style
        slowdown, ``finished``, ``flows``, ``wall_s``, ``data_packets``, ``events``,
        ``peak_rss_mib``.
    Raises:
        RuntimeError: the driver exits non-zero (its stderr tail included).
    """
    res = run(
        binary,
        setup,
        protocol,
        n_flows,
        seed,
        tmp,
        driver_seed=driver_seed_of(protocol),
        load=load,
        keep_files=False,
    )
    stats, fct = res["stats"], res["fct"]
    done = fct[fct["finished"] == 1]
    sizes = done["size_bytes"].to_numpy()
    ours = summarize(done["slowdown"].to_numpy(), sizes)
    yaps = summarize(yaps_slowdowns(done, setup.rate_gbps, res["switch_ns"]), sizes)
    return {
        **ours,
        **{f"yaps_{k}": v for k, v in yaps.items()},
        "finished": float(len(done)),
        "flows": float(len(fct)),
        "wall_s": float(res["wall_s"]),
        "data_packets": float(stats["data_packets_delivered"]),
        "events": float(stats["events"]),
        "peak_rss_mib": float(stats["peak_rss_kb"]) / 1024,
    }


def key(setup: str, protocol: str, load: float, n_flows: int) -> str:
    """Cache key of one point."""
    return f"{setup}/{protocol}/{load:g}/{n_flows}"


def save_point(path: Path, point_key: str, summary: dict[str, float]) -> None:
    """Merge one point into the JSON cache atomically (flock, ``disaggsim.atomic.atomic_path``).

    Several sweeps (e.g. one per setup) may share the cache; each write re-reads it.
    """
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    lock_path = Path(tempfile.gettempdir()) / f"bench_load_sweep.{digest}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.is_file() else {}
        data[point_key] = summary
        with atomic_path(path) as tmp:  # never half a file
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))


def flows_of(protocol: str, flows: int, tcp_flows: int) -> int:
    """Flow count of a protocol's runs (TCP/DCTCP reduced, module docstring)."""
    return tcp_flows if protocol in ("tcp-ns3", "dctcp-ns3") else flows


def runs_of(protocols: list[str], flows: int, tcp_flows: int) -> list[tuple[str, int]]:
    """(protocol, flow count) pairs to run and plot.

    Ideal also runs at the TCP/DCTCP flow count when those are swept: the same smaller
    workload's lower bound, so the reduced TCP/DCTCP runs have a like-for-like floor.
    """
    runs = [(p, flows_of(p, flows, tcp_flows)) for p in protocols]
    ns3_tcp = {"tcp-ns3", "dctcp-ns3"} & set(protocols)
    if ("ideal", flows) in runs and ns3_tcp and tcp_flows != flows:
        runs.append(("ideal", tcp_flows))
    return runs


def plot(
    data: dict[str, dict[str, float]], setup: Setup, flows: int, tcp_flows: int, out_dir: Path
) -> list[Path]:
    """Four panels of slowdown vs load, one line per protocol; write PNG and PDF."""
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2))
    for ax, (metric, title) in zip(axes, PANELS, strict=True):
        for protocol, n in runs_of(list(PROTOCOLS), flows, tcp_flows):
            pts = [
                (load, data[k][metric])
                for load in LOADS
                if (k := key(setup.name, protocol, load, n)) in data
            ]
            if not pts:
                continue
            color, marker = STYLE[protocol]
            label = f"{protocol} ({n:,} flows)"
            line = "--" if protocol == "ideal" and n != flows else "-"
            if line == "--":
                color = "gray"
            ax.plot(*zip(*pts, strict=True), line, color=color, marker=marker, label=label)
        if metric != "large_mean":
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("offered load")
        ax.set_ylabel("normalized FCT (slowdown)" + (", log" if metric != "large_mean" else ""))
        ax.set_xlim(0.05, 0.85)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"setup ({setup.name}): {setup.rate_gbps:g} Gbps {setup.matrix.replace('_', '-')}, "
        f"web search, 144 hosts (9x16, 4 spines), 36 KB ports; "
        f"TCP/DCTCP at {tcp_flows:,} flows, pFabric/Ideal at {flows:,}"
    )
    fig.tight_layout()
    paths = []
    for ext in ("png", "pdf"):
        path = out_dir / f"load_sweep_{setup.name}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=120, format=ext)
        paths.append(path)
    plt.close(fig)
    return paths


def table(data: dict[str, dict[str, float]], setup: Setup, flows: int, tcp_flows: int) -> str:
    """Markdown table of one setup: a row per protocol and load."""
    lines = [
        f"### setup ({setup.name}) {setup.rate_gbps:g} Gbps {setup.matrix}",
        "",
        "| protocol | flows | load | finished | mean | p99 | <100KB mean | <100KB p99 "
        "| >=10MB mean (n) | wall s | data pkts/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for protocol, n in runs_of(list(PROTOCOLS), flows, tcp_flows):
        for load in LOADS:
            k = key(setup.name, protocol, load, n)
            if k not in data:
                continue
            s = data[k]
            lines.append(
                f"| {protocol} | {n:,} | {load:g} | {s['finished']:.0f} | {s['mean']:.3f} "
                f"| {s['p99']:.2f} | {s['small_mean']:.3f} | {s['small_p99']:.2f} "
                f"| {s['large_mean']:.2f} ({s['large_n']:.0f}) | {s['wall_s']:.1f} "
                f"| {s['data_packets'] / s['wall_s']:,.0f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", choices=["a", "b", "both"], default="both")
    parser.add_argument("--flows", type=int, default=10_000, help="pFabric and Ideal flows")
    parser.add_argument("--tcp-flows", type=int, default=300, help="TCP and DCTCP flows")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument(
        "--loads", default=",".join(f"{x:g}" for x in LOADS), help="subset of the sweep's loads"
    )
    parser.add_argument("--seed", type=int, default=1, help="workload seed")
    parser.add_argument("--jobs", type=int, default=2, help="simulations at once")
    parser.add_argument("--binary", type=Path, default=Path("build/sim/disaggsim-ns3"))
    parser.add_argument("--data", type=Path, default=FIGURES / "load_sweep.json")
    parser.add_argument("--figures", type=Path, default=FIGURES, help="PNG/PDF directory")
    parser.add_argument("--plot-only", action="store_true")
    args = parser.parse_args()
    names = ["a", "b"] if args.setup == "both" else [args.setup]
    loads = [float(x) for x in args.loads.split(",") if x]
    if not set(loads) <= set(LOADS):
        parser.error(f"--loads: expected some of {LOADS}, got {loads}")
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = set(protocols) - set(PROTOCOLS)
    if unknown:
        parser.error(f"--protocols: unknown {sorted(unknown)}, expected some of {PROTOCOLS}")
    args.figures.mkdir(parents=True, exist_ok=True)
    data: dict[str, dict[str, float]] = (
        json.loads(args.data.read_text()) if args.data.is_file() else {}
    )
    if not args.plot_only:
        if not args.binary.is_file():
            print(
                f"bench_load_sweep: driver {args.binary} not found (build first)", file=sys.stderr
            )
            return 2
        todo = [
            (name, protocol, load, n)
            for name in names
            for load in loads
            for protocol, n in runs_of(protocols, args.flows, args.tcp_flows)
            if key(name, protocol, load, n) not in data
        ]
        lock = threading.Lock()
        t_start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench_load_sweep.") as tmp:

            def one(point: tuple[str, str, float, int]) -> None:
                name, protocol, load, n = point
                res = run_point(args.binary, SETUPS[name], protocol, load, n, args.seed, Path(tmp))
                with lock:
                    data[key(name, protocol, load, n)] = res
                    save_point(args.data, key(name, protocol, load, n), res)
                    print(
                        f"[{time.perf_counter() - t_start:7.1f} s] ({name}) {protocol} load "
                        f"{load:g} {n} flows: {res['finished']:.0f} finished, mean "
                        f"{res['mean']:.3f}, <100KB p99 {res['small_p99']:.2f}, >=10MB mean "
                        f"{res['large_mean']:.2f}; wall {res['wall_s']:.1f} s",
                        flush=True,
                    )

            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                for _ in pool.map(one, todo):
                    pass
        data = json.loads(args.data.read_text())
    for name in names:
        setup = SETUPS[name]
        for path in plot(data, setup, args.flows, args.tcp_flows, args.figures):
            print(f"wrote {path}")
        print(table(data, setup, args.flows, args.tcp_flows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
