"""COMEX's requests on the simulated fabric, beside Eq. (1) (issue #23 item 3).

    python bench/comex_fabric.py configs/comex-fabric.toml [--trace-from RMEM |
        --window-from notebooks/data/comex/comex-fabric/trace_window.csv] [--skip-eq1]

COMEX (paper 002, §3.3.3) models a request's round trip from a compute node to a memory
node as Eq. (1), ``RTT = 4.54 µs + T_S + T_S (N - 1) P / M``
(:mod:`disaggsim.analysis.comex`). Here the network part is simulated by the ns-3 program
(``disaggsim-ns3``) and the memory node is a FIFO server of service time T_S:

1. ``eq1``: Eq. (1)'s own arrival process (``comex.slotted_requests``): in each slot of
   T_S, each of N compute blades sends a request of ``message_bytes`` with probability P
   to one of M memory blades drawn uniformly. Phase 1 simulates the requests (compute ->
   memory); each memory blade serves them in arrival order, T_S each
   (``comex.fifo_waits``); phase 2 simulates the replies (memory -> compute) from their
   service ends. The two directions use disjoint links (full duplex), so two runs give
   the same transfers as one, except the transports' ACKs, which the split leaves out.
   RTT = reply finish - request start, compared with Eq. (1) twice: with the paper's
   4.54 µs and with this fabric's own zero-load round trip (the ideal FCTs of the request
   and reply: no NIC latency here, the paper's 4 x ~1 µs), so the T_S and queueing terms
   compare like for like.
2. ``trace``: a comex run's remote requests, from the device's rmem log (numpy-sort at
   half its working set local, ``SWAPDEV_PAGING=comex``, 10 GbE-like delays), converted by
   ``disaggsim convert`` into 64 KiB ``mem_read`` and batched ``mem_write`` flows; N
   copies of its busiest ``trace_window_ns`` (most reads), one per compute blade, each shifted by
   ``window / N`` (wrapped), copy c on memory blade c mod M (the balanced outcome of
   COMEX's hash(NID, PID) placement). A read is a ``message_bytes`` request, the FIFO, and
   the 64 KiB response; a write batch is one flow that then takes T_S of its memory blade.
   Read RTT beside Eq. (1) + 64 KiB at the link rate, with P the measured requests per
   compute blade per T_S.

Outputs (``out_dir/name``): ``trace_window.csv``, the replayed window (``t`` ns, ``kind``,
``size_bytes``: a recording's burstiness depends on the machine's load while it ran, so
the window is kept and ``--window-from`` replays it); ``eq1.csv`` and ``trace.csv``, one
row per point: the
configuration, Eq. (1) (``eq1_paper_ns`` with 4.54 µs, ``eq1_fabric_ns`` with the fabric's
``zero_load_network_ns``; for the trace ``eq1_paper_plus_transfer_ns``), the model's and
the simulated memory-node wait (``model_queue_ns``, ``sim_queue_ns``), the network's own
queueing (FCT - ideal FCT of request and reply, ``sim_network_queue_ns``), the simulated
RTT (``sim_rtt_mean_ns``, ``sim_rtt_p99_ns``), all in ns. Each ns-3 run's files are kept
in a temporary directory only. The transports are those registered in the ns-3 program;
``roce`` (RoCEv2 with PFC and DCQCN, being written under #19) is skipped with a note if it
is not.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from disaggsim.analysis import comex
from disaggsim.atomic import atomic_path
from disaggsim.sim.runner import driver_argv, find_binary, read_fct_csv
from disaggsim.swapdev import device, emulate_apps
from disaggsim.testbed.collect_paging import write_device_paging
from disaggsim.traces.paging import read_rmem

RACK_HOSTS = 16


def hosts(
    topology: str, n: int, m: int, fabric: str
) -> tuple[dict[str, int | str], list[int], list[int]]:
    """(driver topology keys, compute hosts, memory hosts) of N compute and M memory
    blades: ``switch`` one rack of N + M hosts; ``clos`` the 9 x 16 fabric, compute blades
    in rack 0 and memory blade j in rack 1 + j mod 8 (every request crosses a spine);
    ``fabric`` lossy or lossless (``--fabric``)."""
    if topology == "switch":
        return (
            {"racks": 1, "hosts_per_rack": n + m, "fabric": fabric},
            list(range(n)),
            list(range(n, n + m)),
        )
    mem = [RACK_HOSTS * (1 + j % 8) + j // 8 for j in range(m)]
    return {"racks": 9, "hosts_per_rack": RACK_HOSTS, "fabric": fabric}, list(range(n)), mem


def simulate(
    flows: pd.DataFrame,
    topology: dict[str, int | str],
    protocol: str,
    rate_gbps: float,
    run_dir: Path,
) -> pd.DataFrame:
    """Run ``disaggsim-ns3`` on ``flows`` (NS3_FLOWS columns); returns its FCT records
    indexed by ``flow_id`` (a flow unfinished when the run stopped, ``drainNs`` after the
    last start, has ``finished`` 0). Raises RuntimeError if the program fails."""
    run_dir.mkdir(parents=True, exist_ok=True)
    flows_csv, fct_csv = run_dir / "flows.csv", run_dir / "fct.csv"
    flows[["flow_id", "start_ns", "src_host", "dst_host", "size_bytes"]].to_csv(
        flows_csv, index=False
    )
    cmd = driver_argv(
        find_binary(), flows_csv, fct_csv, run_dir / "stats.json", protocol, rate_gbps, 1, topology
    )
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr[-1500:]}")
    return read_fct_csv(fct_csv).set_index("flow_id").sort_index()


def round_trips(
    req: pd.DataFrame,
    topology: dict[str, int | str],
    protocol: str,
    rate_gbps: float,
    service_ns: int,
    reply_bytes: np.ndarray,
    run_dir: Path,
    extra_c2m: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Requests ``req`` (``start_ns, src_host, dst_host``) -> per request: request FCT,
    memory-node wait, reply FCT, RTT and both ideal FCTs (ns). ``extra_c2m``: more
    compute -> memory flows (write batches) simulated with the requests, served by the
    memory node after their transfer like a request, with no reply. A request or reply
    that did not finish (an overloaded link past the run's end) leaves NaN times."""
    n_req = len(req)
    c2m = req.assign(size_bytes=req["size_bytes"], is_req=True)
    if extra_c2m is not None:
        c2m = pd.concat([c2m, extra_c2m.assign(is_req=False)], ignore_index=True)
    c2m = c2m.sort_values("start_ns", kind="stable").reset_index(drop=True)
    c2m["flow_id"] = np.arange(len(c2m))
    f1 = simulate(c2m, topology, protocol, rate_gbps, run_dir / "c2m")
    c2m["arrive_ns"] = f1.loc[c2m["flow_id"], "finish_ns"].to_numpy()
    c2m["fct_ns"] = f1.loc[c2m["flow_id"], "fct_ns"].to_numpy()
    c2m["ideal_ns"] = f1.loc[c2m["flow_id"], "ideal_fct_ns"].to_numpy()
    done1 = f1.loc[c2m["flow_id"], "finished"].to_numpy() == 1
    c2m.loc[~done1, ["arrive_ns", "fct_ns"]] = np.nan
    c2m["wait_ns"] = np.nan
    for _, idx in c2m[done1].groupby("dst_host").groups.items():
        part = c2m.loc[idx].sort_values(["arrive_ns", "flow_id"])
        c2m.loc[part.index, "wait_ns"] = comex.fifo_waits(part["arrive_ns"], service_ns)
    reqs = c2m[c2m["is_req"]].sort_values("req_id").reset_index(drop=True)
    assert len(reqs) == n_req
    served = reqs["wait_ns"].notna().to_numpy()
    reply = pd.DataFrame(
        {
            "flow_id": np.arange(n_req)[served],
            "start_ns": (reqs["arrive_ns"] + reqs["wait_ns"] + service_ns)[served]
            .round()
            .astype(np.int64),
            "src_host": reqs["dst_host"][served],
            "dst_host": reqs["src_host"][served],
            "size_bytes": reply_bytes[served],
        }
    )
    f2 = simulate(
        reply.sort_values("start_ns", kind="stable"), topology, protocol, rate_gbps, run_dir / "m2c"
    )
    f2 = f2.where(f2["finished"] == 1).reindex(np.arange(n_req))
    return pd.DataFrame(
        {
            "req_fct_ns": reqs["fct_ns"],
            "req_ideal_ns": reqs["ideal_ns"],
            "wait_ns": reqs["wait_ns"],
            "reply_fct_ns": f2["fct_ns"].to_numpy(),
            "reply_ideal_ns": f2["ideal_fct_ns"].to_numpy(),
            "rtt_ns": f2["finish_ns"].to_numpy() - reqs["start_ns"].to_numpy(),
        }
    )


def measured(rt: pd.DataFrame, base_ns: float, t0: float) -> dict[str, float]:
    """A point's simulated columns from :func:`round_trips`' rows (ns; ``wall_s`` since
    ``t0``, a ``time.monotonic()``): means and p99 over the round trips that finished,
    ``unfinished`` the others."""
    return {
        "unfinished": int(rt["rtt_ns"].isna().sum()),
        "zero_load_network_ns": base_ns,
        "sim_queue_ns": float(rt["wait_ns"].mean()),
        "sim_network_queue_ns": float(
            (
                rt["req_fct_ns"] - rt["req_ideal_ns"] + rt["reply_fct_ns"] - rt["reply_ideal_ns"]
            ).mean()
        ),
        "sim_rtt_mean_ns": float(rt["rtt_ns"].mean()),
        "sim_rtt_p99_ns": float(rt["rtt_ns"].quantile(0.99)),
        "wall_s": round(time.monotonic() - t0, 2),
    }


def eq1_part(cfg: comex.FabricSection, protocols: list[str], runs: Path) -> pd.DataFrame:
    rows = []
    for topo, fabric in itertools.product(cfg.topologies, cfg.fabrics):
        for proto in protocols:
            for n in cfg.compute_nodes:
                for m in cfg.memory_nodes:
                    topology, c_hosts, m_hosts = hosts(topo, n, m, fabric)
                    for p in cfg.request_probability:
                        arr = comex.slotted_requests(n, m, p, cfg.slots, cfg.service_ns, cfg.seed)
                        if len(arr) == 0:
                            continue
                        req = pd.DataFrame(
                            {
                                "req_id": np.arange(len(arr)),
                                "start_ns": arr[:, 0],
                                "src_host": np.asarray(c_hosts)[arr[:, 1]],
                                "dst_host": np.asarray(m_hosts)[arr[:, 2]],
                                "size_bytes": cfg.message_bytes,
                            }
                        )
                        t0 = time.monotonic()
                        rt = round_trips(
                            req,
                            topology,
                            proto,
                            cfg.rate_gbps,
                            cfg.service_ns,
                            np.full(len(req), cfg.message_bytes),
                            runs / f"eq1-{topo}-{fabric}-{proto}-N{n}-M{m}-P{p}",
                        )
                        base = float((rt["req_ideal_ns"] + rt["reply_ideal_ns"]).median())
                        rows.append(
                            {
                                "topology": topo,
                                "fabric": fabric,
                                "protocol": proto,
                                "compute_nodes": n,
                                "memory_nodes": m,
                                "request_probability": p,
                                "rho": n * p / m,
                                "requests": len(req),
                                "eq1_paper_ns": comex.eq1_rtt_ns(n, m, p, cfg.service_ns),
                                "eq1_fabric_ns": comex.eq1_rtt_ns(n, m, p, cfg.service_ns, base),
                                "model_queue_ns": cfg.service_ns * (n - 1) * p / m,
                                **measured(rt, base, t0),
                            }
                        )
                        print(json.dumps(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def comex_rmem_log(work: Path) -> Path:
    """Run numpy-sort on the uffd device with the comex policy (half its working set
    local, 4.54 µs + size / 10 Gb/s per request) and return its rmem log."""
    spec = emulate_apps.PRESETS["numpy-sort"]
    env = device.uffd_env(
        device.DelayModel("fixed", 4540, 10_000_000_000),
        spec.working_set_bytes // 2,
        True,
        "fifo",
        "comex",
    )
    env["SWAPDEV_TRACE"] = str(work / "numpy-sort.rmem")
    proc = subprocess.run(
        list(spec.command), env={**os.environ, **env}, capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"numpy-sort on the comex device failed: {proc.stderr[-1500:]}")
    print(proc.stderr.strip().splitlines()[-2], flush=True)
    return work / "numpy-sort.rmem"


def converted_flows(rmem: Path, work: Path) -> pd.DataFrame:
    """The rmem log as a one-node sample (``write_device_paging``, as ``disaggsim collect
    --paging-recorder swapdev-uffd`` writes it), converted by ``disaggsim convert``."""
    sample = work / "sample"
    sample.mkdir(parents=True, exist_ok=True)
    stamps = read_rmem(rmem, time_base="absolute")["realtime_ns"]
    write_device_paging({0: [rmem]}, 1, sample, int(stamps.min()), int(stamps.max()))
    (sample / "meta.json").write_text(
        json.dumps(
            {
                "sample": "comex-numpy-sort",
                "page_bytes": 4096,
                "nodes": [{"node": 0, "ip": "10.77.0.1", "paging": "node0.rmem"}],
            }
        )
    )
    cli = Path(sys.executable).with_name("disaggsim")
    proc = subprocess.run(
        [str(cli), "convert", str(sample), "--out", str(work / "flows")],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"disaggsim convert {sample}: {proc.stderr[-1500:]}")
    flows = pd.read_parquet(work / "flows.parquet")
    return flows[flows["kind"].isin(["mem_read", "mem_write"])].reset_index(drop=True)


def busiest_window(flows: pd.DataFrame, window_ns: int) -> pd.DataFrame:
    """The flows of the window (of consecutive ``window_ns`` windows from the first read
    on) with the most reads, as ``t`` (ns from the window's start), ``kind``,
    ``size_bytes``: the run first writes its array out (evictions only), and its reads
    come in bursts."""
    read_starts = flows.loc[flows["kind"] == "mem_read", "start_ns"]
    bins = (read_starts - read_starts.min()) // window_ns
    first = read_starts.min() + int(bins.value_counts().idxmax()) * window_ns
    window = flows[(flows["start_ns"] >= first) & (flows["start_ns"] - first < window_ns)]
    return pd.DataFrame(
        {
            "t": window["start_ns"] - first,
            "kind": window["kind"],
            "size_bytes": window["size_bytes"],
        }
    ).reset_index(drop=True)


def trace_part(
    cfg: comex.FabricSection, protocols: list[str], window: pd.DataFrame, runs: Path
) -> pd.DataFrame:
    reads = window[window["kind"] == "mem_read"]
    writes = window[window["kind"] == "mem_write"]
    rows = []
    for topo, fabric in itertools.product(cfg.topologies, cfg.fabrics):
        for proto in protocols:
            for n in cfg.trace_compute_nodes:
                m = cfg.trace_memory_nodes
                topology, c_hosts, m_hosts = hosts(topo, n, m, fabric)
                req_parts, wr_parts, sizes = [], [], []
                for c in range(n):
                    shift = c * cfg.trace_window_ns // n
                    for part, store in ((reads, req_parts), (writes, wr_parts)):
                        store.append(
                            pd.DataFrame(
                                {
                                    "start_ns": (part["t"] + shift) % cfg.trace_window_ns,
                                    "src_host": c_hosts[c],
                                    "dst_host": m_hosts[c % m],
                                    "size_bytes": part["size_bytes"]
                                    if part is writes
                                    else cfg.message_bytes,
                                }
                            )
                        )
                    sizes.append(reads["size_bytes"].to_numpy())
                req = pd.concat(req_parts, ignore_index=True)
                order = np.argsort(req["start_ns"].to_numpy(), kind="stable")
                req = req.iloc[order].reset_index(drop=True)
                reply_bytes = np.concatenate(sizes)[order]
                req["req_id"] = np.arange(len(req))
                wr = pd.concat(wr_parts, ignore_index=True).assign(req_id=-1)
                t0 = time.monotonic()
                rt = round_trips(
                    req,
                    topology,
                    proto,
                    cfg.rate_gbps,
                    cfg.service_ns,
                    reply_bytes,
                    runs / f"trace-{topo}-{fabric}-{proto}-N{n}-M{m}",
                    wr,
                )
                p_req = min(1.0, len(reads) * cfg.service_ns / cfg.trace_window_ns)
                transfer = float(np.mean(reply_bytes)) * 8 / cfg.rate_gbps
                base = float((rt["req_ideal_ns"] + rt["reply_ideal_ns"]).median())
                rows.append(
                    {
                        "topology": topo,
                        "fabric": fabric,
                        "protocol": proto,
                        "compute_nodes": n,
                        "memory_nodes": m,
                        "reads": len(req),
                        "writes": len(wr),
                        "write_bytes_mean": float(wr["size_bytes"].mean()) if len(wr) else 0.0,
                        "request_probability": p_req,
                        "eq1_paper_plus_transfer_ns": comex.eq1_rtt_ns(n, m, p_req, cfg.service_ns)
                        + transfer,
                        "eq1_fabric_ns": comex.eq1_rtt_ns(n, m, p_req, cfg.service_ns, base),
                        **measured(rt, base, t0),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path)
    ap.add_argument(
        "--trace-from",
        type=Path,
        help="an rmem log of a comex run (default: "
        "record one: numpy-sort on the uffd device, ~5 s)",
    )
    ap.add_argument(
        "--window-from",
        type=Path,
        help="replay a window written before "
        "(out_dir/name/trace_window.csv) instead of recording and converting",
    )
    ap.add_argument("--skip-eq1", action="store_true")
    args = ap.parse_args(argv)
    cfg = comex.load_fabric_config(args.config).comex_fabric
    out = (args.config.resolve().parent / cfg.out_dir / cfg.name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run(
        [str(find_binary()), "--list-capabilities"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    registered = {ln.split()[1] for ln in listed if ln.startswith("protocol ")}
    protocols = [p for p in cfg.protocols if p in registered]
    for p in sorted(set(cfg.protocols) - registered):
        print(f"comex_fabric: transport {p!r} is not registered in this build; skipped", flush=True)
    with tempfile.TemporaryDirectory(prefix="comex-fabric-") as tmpdir:
        work = Path(tmpdir)  # every ns-3 run's flows and FCTs, the sample, the flow table
        if not args.skip_eq1:
            eq1 = eq1_part(cfg, protocols, work / "runs")
            with atomic_path(out / "eq1.csv") as tmp:
                eq1.to_csv(tmp, index=False)
        if cfg.trace_compute_nodes:
            if args.window_from is not None:
                window = pd.read_csv(args.window_from)
            else:
                rmem = args.trace_from or comex_rmem_log(work)
                flows = converted_flows(rmem, work)
                print(flows.groupby("kind")["size_bytes"].describe().to_string(), flush=True)
                window = busiest_window(flows, cfg.trace_window_ns)
                with atomic_path(out / "trace_window.csv") as tmp:
                    window.to_csv(tmp, index=False)
            trace = trace_part(cfg, protocols, window, work / "runs")
            with atomic_path(out / "trace.csv") as tmp:
                trace.to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
