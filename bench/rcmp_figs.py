"""Rcmp (papers/003) at reduced scale: Fig. 14, Fig. 17, Fig. 20 and the simulated FCTs of
Rcmp's inter-rack traffic (issue #25 item 4; bench/RESULTS.md, "Rcmp (#25)").

    .venv/bin/python bench/rcmp_figs.py model   # Fig. 20 from the traffic generator
    .venv/bin/python bench/rcmp_figs.py fct     # ns-3: Rcmp's flows on the Clos
    .venv/bin/python bench/rcmp_figs.py lone    # ns-3: Fig. 14's accesses, each alone
    flock /tmp/disaggsim-bench.lock .venv/bin/python bench/rcmp_figs.py kv --backend rcmp
    flock /tmp/disaggsim-bench.lock .venv/bin/python bench/rcmp_figs.py fig20  # Fig. 20 only
    .venv/bin/python bench/rcmp_figs.py fig17-faults  # Fig. 17: page-level faults, counted
    flock /tmp/disaggsim-machine.lock flock /tmp/disaggsim-bench.lock \\
        .venv/bin/python bench/rcmp_figs.py kv --backend pages  # the uffd device (root)

``kv`` runs Fig. 14 and 17 on librcmp and on page-level remote memory (the uffd device),
``fig20`` Fig. 20 on librcmp. Each writes ``bench/figures/rcmp/<part>.csv`` (the notebook
``notebooks/rcmp.py`` reads them) and prints the table with ``uptime``'s load. The same
key streams drive both memories: ``disaggsim.sim.rcmp.generate``'s accesses (YCSB
generators), written as ``rcmp-kv`` op files. The inter-rack delay is the swapdev
``fixed`` model for both: 3 µs (Rcmp §6.2, "the RDMA network latency is 1.5 to 3 µs";
Table 3's ~3 µs) plus the bytes at 100 Gbps (§6.2, ConnectX-5): a 64 B access waits
3005 ns, a 4 KiB page 3328 ns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from disaggsim.sim.rcmp import RcmpParams, generate
from disaggsim.sim.runner import driver_argv, find_binary, read_fct_csv
from disaggsim.swapdev import device

OUT = Path(__file__).resolve().parent / "figures" / "rcmp"
REMOTE_ENV = {
    "SWAPDEV_MODEL": "fixed",
    "SWAPDEV_LATENCY_NS": "3000",
    "SWAPDEV_BANDWIDTH_BPS": "100000000000",
}


def uptime() -> str:
    """The machine's load averages (``uptime``), recorded with every number."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()


def write(name: str, frame: pd.DataFrame) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    frame.to_csv(OUT / f"{name}.csv", index=False)
    print(frame.to_string(index=False))
    print(f"-> {OUT / name}.csv; {uptime()}")


# -- Fig. 20 from the generator ---------------------------------------------------------
def model_fig20() -> pd.DataFrame:
    """Estimated throughput (accesses / closed-loop makespan) of the random-read
    micro-benchmark (§6.3: 64 B items, 100 M of them, 2 racks, clients in one), hot-page
    swapping off vs H_p = 3 (Fig. 20), uniform vs Zipfian keys (YCSB's scrambled, and
    unscrambled as Rcmp's own micro-benchmark draws them)."""
    rows = []
    for dist in ("uniform", "zipfian", "zipfian-unscrambled"):
        for hp in (None, 3.0):
            p = RcmpParams(
                mix="read",
                distribution=dist,
                items=100_000_000,
                racks=2,
                client_racks=1,
                clients_per_rack=8,
                ops_per_client=10_000,
                hot_threshold=hp,
            )
            t = generate(p)
            c = t.counts
            n = c["cxl_R"] + c["rdma_R"]
            rows.append(
                {
                    "distribution": dist,
                    "hot_threshold": hp if hp is not None else "off",
                    "accesses": n,
                    "remote_share": c["rdma_R"] / n,
                    "migrations": c["migrations"],
                    "victims": c["victims"],
                    "swaps_stopped": c["swaps_stopped"],
                    "est_accesses_per_s": n / (t.makespan_ns / 1e9),
                }
            )
    frame = pd.DataFrame(rows)
    base = frame[frame["hot_threshold"] == "off"].set_index("distribution")["est_accesses_per_s"]
    frame["vs_off"] = frame["est_accesses_per_s"] / frame["distribution"].map(base)
    return frame


# -- simulated FCTs ------------------------------------------------------------------------
def fct_runs() -> pd.DataFrame:
    """Rcmp's flows (YCSB A, Zipfian, 4 racks x 8 clients, H_p = 4) on a 4-rack Clos at
    100 Gbps: with pFabric, the network flows alone and every access through the CXL tier
    (``--cxlTier``: in-rack accesses served by the pool, inter-rack ones daemon to daemon);
    with lean DCTCP through the tier; with RoCEv2 + DCQCN (#19) through the tier on the
    lossless (PFC) fabric it runs on."""
    p = RcmpParams(
        mix="A",
        distribution="zipfian",
        items=100_000_000,
        racks=4,
        clients_per_rack=8,
        ops_per_client=1000,
        cxl_rows=True,
    )
    t = generate(p)
    binary = find_binary()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for protocol, tier, fabric in (
            ("pfabric", False, "lossy"),
            ("pfabric", True, "lossy"),
            ("dctcp", True, "lossy"),
            ("roce-dcqcn", True, "lossless"),
        ):
            flows = t.flows if tier else t.flows[t.flows["kind"] != "cxl"]
            flows = flows.reset_index(drop=True)
            csv = Path(tmp) / f"flows-{protocol}-{tier}.csv"
            flows[["flow_id", "start_ns", "src_host", "dst_host", "size_bytes"]].to_csv(
                csv, index=False
            )
            out = Path(tmp) / f"fct-{protocol}-{tier}.csv"
            stats = Path(tmp) / f"stats-{protocol}-{tier}.json"
            cmd = driver_argv(
                binary,
                csv,
                out,
                stats,
                protocol,
                100.0,
                1,
                {
                    "racks": p.racks,
                    "hosts_per_rack": p.hosts_per_rack,
                    "spines": 2,
                    "fabric": fabric,
                },
            )
            if tier:
                cmd.append("--cxlTier=true")
            subprocess.run(cmd, check=True, capture_output=True)
            fct = read_fct_csv(out).merge(flows[["flow_id", "kind"]], on="flow_id")
            for kind, g in fct.groupby("kind"):
                done = g[g["finished"] == 1]
                rows.append(
                    {
                        "protocol": protocol,
                        "fabric": fabric,
                        "cxl_tier": tier,
                        "kind": kind,
                        "flows": len(g),
                        "finished": len(done),
                        "size_bytes_median": int(g["size_bytes"].median()),
                        "fct_us_p50": done["fct_ns"].quantile(0.5) / 1e3,
                        "fct_us_p99": done["fct_ns"].quantile(0.99) / 1e3,
                        "slowdown_p50": done["slowdown"].quantile(0.5),
                        "slowdown_p99": done["slowdown"].quantile(0.99),
                    }
                )
    return pd.DataFrame(rows)


def lone_accesses() -> pd.DataFrame:
    """Fig. 14 simulated: lone accesses on the 4-rack Clos at 100 Gbps with pFabric and the
    CXL tier (each row alone: 10 µs apart). A 64 B read in the rack is one CXL access; across
    racks RRPC's request (16 B) then its reply (16 + 64 B); a page-level system's fetch is a
    request and a 4 KiB page back (its page-fault handling is not in the network)."""
    rows = [
        ("in-rack 64 B (CXL)", 1, 0, 64),
        ("RRPC request 16 B", 0, 9, 16),
        ("RRPC reply 80 B", 9, 0, 80),
        ("page 4 KiB", 9, 0, 4096),
        ("one-sided 512 B", 9, 0, 512),
    ]
    binary = find_binary()
    with tempfile.TemporaryDirectory() as tmp:
        csv, out, stats = (Path(tmp) / n for n in ("f.csv", "fct.csv", "s.json"))
        pd.DataFrame(
            {
                "flow_id": range(len(rows)),
                "start_ns": [10_000 * (i + 1) for i in range(len(rows))],
                "src_host": [r[1] for r in rows],
                "dst_host": [r[2] for r in rows],
                "size_bytes": [r[3] for r in rows],
            }
        ).to_csv(csv, index=False)
        cmd = driver_argv(
            binary,
            csv,
            out,
            stats,
            "pfabric",
            100.0,
            1,
            {"racks": 4, "hosts_per_rack": 9, "spines": 2},
        )
        subprocess.run([*cmd, "--cxlTier=true"], check=True, capture_output=True)
        fct = read_fct_csv(out)
    frame = pd.DataFrame(
        {
            "row": [r[0] for r in rows],
            "size_bytes": [r[3] for r in rows],
            "fct_ns": fct["fct_ns"].to_numpy(),
        }
    )
    t = dict(zip(frame["row"], frame["fct_ns"], strict=True))
    derived = pd.DataFrame(
        [
            {
                "row": "Rcmp 64 B read, remote rack (request + reply)",
                "size_bytes": 64,
                "fct_ns": t["RRPC request 16 B"] + t["RRPC reply 80 B"],
            },
            {
                "row": "page-level 4 KiB fetch (request + page)",
                "size_bytes": 4096,
                "fct_ns": t["RRPC request 16 B"] + t["page 4 KiB"],
            },
        ]
    )
    return pd.concat([frame, derived], ignore_index=True)


# -- emulation: librcmp vs the uffd device ------------------------------------------------
def _ops_file(path: Path, **kw: Any) -> int:
    t = generate(RcmpParams(**kw))
    a = t.accesses
    with path.open("w") as f:
        for c, o, k in zip(a["client_host"], a["op"], a["key"], strict=True):
            f.write(f"{c} {o} {k}\n")
    return len(a)


def _kv(
    build: Path,
    backend: str,
    ops: Path,
    items: int,
    threads: int,
    extra: list[str],
    local_bytes: int,
) -> dict[str, Any]:
    env = {**os.environ, **REMOTE_ENV}
    for k in ("SWAPDEV_TRACE", "SWAPDEV_HIST"):
        env.pop(k, None)
    if backend == "pages":
        env["LD_PRELOAD"] = str(build / "libswapdev_uffd.so")
        env["SWAPDEV_LOCAL_BYTES"] = str(local_bytes)
    cmd = [
        str(build / "rcmp-kv"),
        f"--backend={backend}",
        f"--items={items}",
        f"--ops={ops}",
        f"--threads={threads}",
        *extra,
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def kv_runs(repeats: int, backend_only: str) -> dict[str, pd.DataFrame]:
    """Fig. 14 (64 B latency per tier and system, the micro-benchmark), Fig. 17 (YCSB on
    the hash table, throughput over page-level remote memory):
    2 racks, clients in rack 0, 500 k items; the page-level system keeps 1/8 of the table
    local (Fastswap's 1 GB of local DRAM in front of the pool, §6.2)."""
    build = device.build_dir()
    items, threads, per_client = 500_000, 2, 10_000
    table_bytes = 2 * items * 64
    local = table_bytes // 8
    fig14, fig17 = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for op in ("read", "write"):
            ops = Path(tmp) / f"micro-{op}.txt"
            _ops_file(
                ops,
                mix=op,
                items=items,
                racks=2,
                client_racks=1,
                clients_per_rack=1,
                ops_per_client=per_client,
                hot_threshold=None,
            )
            systems = [
                ("rcmp-cxl-only", "rcmp", ["--racks=1"]),
                ("rcmp", "rcmp", ["--racks=2"]),
                ("rcmp-no-swap", "rcmp", ["--racks=2", "--hot-threshold=-1"]),
                ("page-level (uffd)", "pages", []),
            ]
            for r in range(repeats):
                for name, backend, extra in systems:
                    if backend != backend_only:
                        continue
                    res = _kv(
                        build, backend, ops, items, 1, ["--direct=1", *extra], items * 64 // 8
                    )
                    fig14.append({"op": op, "system": name, "repeat": r, **res})
        for mix in ("A", "B", "C", "D", "F"):
            for dist in ("uniform", "zipfian"):
                ops = Path(tmp) / f"ycsb-{mix}-{dist}.txt"
                _ops_file(
                    ops,
                    mix=mix,
                    distribution=dist,
                    items=items,
                    racks=2,
                    client_racks=1,
                    clients_per_rack=threads,
                    ops_per_client=per_client,
                    hot_threshold=None,
                )
                for r in range(repeats):
                    for backend in (backend_only,):
                        res = _kv(build, backend, ops, items, threads, [], local)
                        fig17.append({"mix": mix, "distribution": dist, "repeat": r, **res})
    out = {
        f"kv_fig14_{backend_only}": pd.DataFrame(fig14),
        f"kv_fig17_{backend_only}": pd.DataFrame(fig17),
    }
    return out


#: Fig. 20's reads per client: 0.3-0.5 s a run here, long enough that the swaps' early
#: effect (hot pages in, then the pool full of hot pages, §5.3 step 2) is not the whole run.
FIG20_READS_PER_CLIENT = 100_000


def kv_fig20(repeats: int, per_client: int, items: int = 500_000) -> pd.DataFrame:
    """Fig. 20 on librcmp: random 64 B reads (the §6.3 micro-benchmark, ``--direct=1``)
    of ``items`` items (500 k: 16 pages of 2 MiB) over 2 racks, 2 clients in rack 0,
    swapping off (``H_p`` -1) and on
    (``H_p`` = 3, Fig. 20's setting), uniform and unscrambled Zipfian keys (Rcmp's
    micro-benchmark: item i is the i-th most popular). The repeats interleave off and on,
    and each row carries the 1-min load average read just before the run and the CPUs the
    run may use (``cpus``: 1 while another engineer's CPU isolation holds CPU 1)."""
    build = device.build_dir()
    threads = 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ops = {}
        for dist in ("uniform", "zipfian-unscrambled"):
            ops[dist] = Path(tmp) / f"fig20-{dist}.txt"
            _ops_file(
                ops[dist],
                mix="read",
                distribution=dist,
                items=items,
                racks=2,
                client_racks=1,
                clients_per_rack=threads,
                ops_per_client=per_client,
                hot_threshold=None,
            )
        for r in range(repeats):
            for dist in ops:
                for hp in ("-1", "3"):
                    load = os.getloadavg()[0]
                    res = _kv(
                        build,
                        "rcmp",
                        ops[dist],
                        items,
                        threads,
                        ["--direct=1", f"--hot-threshold={hp}"],
                        0,
                    )
                    rows.append(
                        {
                            "distribution": dist,
                            "hot_threshold": hp,
                            "repeat": r,
                            "load_1min": load,
                            "cpus": len(os.sched_getaffinity(0)),
                            **res,
                        }
                    )
    return pd.DataFrame(rows)


def _fnv1a64(value: int) -> int:
    """rcmp-kv's bucket hash (``swapdev/rcmp/rcmp_kv.c`` ``fnv1a64``: FNV-1a over the key's
    8 little-endian bytes)."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (value & 0xFF)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        value >>= 8
    return h


def fig17_faults() -> pd.DataFrame:
    """Why YCSB D gains less over page-level remote memory (Fig. 17), counted, not timed:
    the ``kv`` part's key streams (2 clients x 10 k operations, 500 k items) replayed
    through the uffd device's local memory as ``kv`` runs it (1/8 of the table's 4 KiB
    pages, FIFO of fault-in, the table's last pages resident after the pre-load) gives the
    share of operations whose first probe faults; librcmp sends about half of every mix's
    accesses to the other rack (the table is interleaved), whatever the mix."""
    items, slots = 500_000, 1_000_000
    n_pages = slots * 64 // 4096
    budget = n_pages // 8
    rows = []
    for mix in ("A", "B", "C", "D", "F"):
        for dist in ("uniform", "zipfian"):
            a = generate(
                RcmpParams(
                    mix=mix,
                    distribution=dist,
                    items=items,
                    racks=2,
                    client_racks=1,
                    clients_per_rack=2,
                    ops_per_client=10_000,
                    hot_threshold=None,
                )
            ).accesses
            pages = [(_fnv1a64(int(k)) % slots) * 64 // 4096 for k in a["key"]]
            resident = dict.fromkeys(range(n_pages - budget, n_pages))
            faults = 0
            for page in pages:
                if page not in resident:
                    faults += 1
                    resident[page] = None
                    if len(resident) > budget:
                        del resident[next(iter(resident))]
            rows.append(
                {
                    "mix": mix,
                    "distribution": dist,
                    "accesses": len(pages),
                    "distinct_pages": len(set(pages)),
                    "faults": faults,
                    "fault_share": faults / len(pages),
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["model", "fct", "lone", "kv", "fig20", "fig17-faults"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--fig20-ops", type=int, default=FIG20_READS_PER_CLIENT, help="fig20: reads per client"
    )
    ap.add_argument(
        "--fig20-items",
        type=int,
        default=500_000,
        help="fig20: items of 64 B (500 k: 16 pages; §6.3 uses 100 M)",
    )
    ap.add_argument(
        "--backend",
        choices=["rcmp", "pages"],
        default="rcmp",
        help="kv: librcmp, or the uffd device (root, under the machine lock)",
    )
    args = ap.parse_args(argv)
    print(uptime())
    if args.part == "model":
        write("model_fig20", model_fig20())
    elif args.part == "fct":
        write("fct", fct_runs())
    elif args.part == "lone":
        write("lone", lone_accesses())
    elif args.part == "fig17-faults":
        write("fig17_faults", fig17_faults())
    elif args.part == "fig20":
        write(
            "kv_fig20" if args.fig20_items == 500_000 else f"kv_fig20_{args.fig20_items}",
            kv_fig20(args.repeats, args.fig20_ops, args.fig20_items),
        )
    else:
        for name, frame in kv_runs(args.repeats, args.backend).items():
            write(name, frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
