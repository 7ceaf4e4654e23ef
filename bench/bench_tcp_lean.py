"""Fidelity and speed of the lean TCP/DCTCP (transports/tcp-lean) against ns-3's TCP/DCTCP.

Protocol names: ``tcp``/``dctcp`` are the lean ones (formerly ``tcp-lean``/``dctcp-lean``),
``tcp-ns3``/``dctcp-ns3`` ns-3's own stack, the references (README "Protocols").

Both run on the very same flows, and each flow's FCT is compared flow by flow:

- the quickstart's two samples (traces/samples/memcached-ycsb, dask-sort), at 40 and 100 Gbps,
  datacenter and rack scope, through the campaign itself (``disaggsim.sim.campaign``: a
  temporary campaign config with configs/quickstart.toml's topology, so the flows, the
  placement and the command lines are the quickstart's);
- the web search setups (a) 40 Gbps permutation and (b) 10 Gbps all-to-all at load 0.6 of
  bench_pfabric.py / bench_vs_reference.py (their flow generation, ``setup_flows``, and
  fabric, ``driver_command``), ``--flows`` flows, driver seed 1.

Pairs: ``tcp-ns3`` vs ``tcp`` and ``dctcp-ns3`` vs ``dctcp``.  Per setup and pair: mean
FCT and p99 FCT of each and the relative difference, and Pearson's correlation of the
per-flow FCTs; the bar (issue #26) is mean within 5 %, p99 within 10 %, correlation >= 0.95.

Speed: data packets delivered per second of each run (STATS.json ``data_packets_delivered``)
over the process's wall time and over its user + system CPU time (``os.wait4``: the
kernel's accounting of that child alone, which a loaded machine barely changes), with the
1-minute load average before the run; run it under ``flock /tmp/disaggsim-bench.lock``.
A quickstart run's CPU is taken by re-running its recorded command
(``bench_campaign_cpu.run_cpu_s``).  ``--pfabric`` adds pFabric to every setup, the
reference of issue #26's speed bar ("within 2x of our pFabric").  ``--callgrind-flows N``
also runs every web-search protocol under ``valgrind --tool=callgrind`` on that setup's
first N flows (``setup_flows(name, N, ...)``; callgrind runs ~50x slower) and reports
instructions per data packet, which no load changes.

Usage: ``.venv/bin/python bench/bench_tcp_lean.py [--flows 3000] [--setups a,b]
[--skip-quickstart] [--pfabric] [--callgrind-flows 0] [--binary build/sim/disaggsim-ns3]
[--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_campaign_cpu import run_cpu_s  # noqa: E402
from bench_vs_reference import setup_flows  # noqa: E402
from common import SETUPS, driver_command  # noqa: E402

from disaggsim.traces.workloads import write_sim_flows_csv

REPO = Path(__file__).resolve().parents[1]
PAIRS = (("tcp-ns3", "tcp"), ("dctcp-ns3", "dctcp"))
BAR = {"mean": 0.05, "p99": 0.10, "corr": 0.95}


def compare(reference: pd.DataFrame, lean: pd.DataFrame) -> dict[str, float]:
    """Flow-by-flow comparison of two FCT tables (columns flow_id, fct_ns) of the same flows.

    Returns:
        mean_ref_us, mean_lean_us, mean_diff (relative), p99_ref_us, p99_lean_us, p99_diff,
        corr (Pearson, per-flow FCT), flows (compared), unfinished (either side).

    Raises:
        ValueError: the two tables do not hold the same flow ids.
    """
    a = reference.set_index("flow_id")["fct_ns"]
    b = lean.set_index("flow_id")["fct_ns"]
    if set(a.index) != set(b.index):
        raise ValueError(f"the runs hold different flows ({len(a)} vs {len(b)})")
    b = b.reindex(a.index)
    done = (a >= 0) & (b >= 0)
    fa = a[done].to_numpy(float)
    fb = b[done].to_numpy(float)
    mean_a, mean_b = fa.mean(), fb.mean()
    p99_a, p99_b = np.percentile(fa, 99), np.percentile(fb, 99)
    return {
        "mean_ref_us": mean_a / 1e3,
        "mean_lean_us": mean_b / 1e3,
        "mean_diff": mean_b / mean_a - 1,
        "p99_ref_us": p99_a / 1e3,
        "p99_lean_us": p99_b / 1e3,
        "p99_diff": p99_b / p99_a - 1,
        "corr": float(np.corrcoef(fa, fb)[0, 1]),
        "flows": int(done.sum()),
        "unfinished": int((~done).sum()),
    }


def passes(row: dict[str, float]) -> bool:
    """Whether a comparison meets the bar (BAR)."""
    return (
        abs(row["mean_diff"]) <= BAR["mean"]
        and abs(row["p99_diff"]) <= BAR["p99"]
        and row["corr"] >= BAR["corr"]
    )


def quickstart(work: Path, protocols: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the quickstart's samples with ``protocols`` as one campaign in ``work``.

    Returns:
        (the campaign's fct.parquet, its runs.csv joined with each run's STATS.json
        ``data_packets_delivered``).
    """
    from disaggsim.sim.campaign import run_campaign

    config = tomllib.loads((REPO / "configs/quickstart.toml").read_text())
    topology = "\n".join(f"{key} = {value!r}" for key, value in config["topology"].items())
    samples = "\n".join(
        f'[[workloads]]\nkind = "trace_sample"\npath = "{REPO / "traces/samples" / name}"\n'
        for name in ("memcached-ycsb", "dask-sort")
    )
    text = (
        f'[campaign]\nname = "tcp-lean-fidelity"\nout_dir = "{work / "campaign"}"\njobs = 1\n\n'
        f"{samples}\n[topology]\n{topology}\n\n[grid]\nprotocols = {json.dumps(protocols)}\n"
        'rates_gbps = [40, 100]\nscopes = ["datacenter", "rack"]\nseeds = [1]\n'
    )
    path = work / "campaign.toml"
    path.write_text(text)
    result = run_campaign(path, jobs=1, progress=False)
    assert result.fct_path is not None
    fct = pd.read_parquet(result.fct_path)
    runs = pd.read_csv(result.out_dir / "runs.csv")
    packets, cpu = [], []
    for key in runs["key"]:
        run_dir = result.out_dir / "runs" / str(key)[:16]
        stats = json.loads((run_dir / "stats.json").read_text())
        packets.append(stats["data_packets_delivered"])
        cpu.append(run_cpu_s(run_dir))
    runs["data_packets"] = packets
    runs["cpu_s"] = cpu
    return fct, runs


def timed_run(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` (output discarded); its (wall seconds, user + system CPU seconds).

    Raises:
        subprocess.CalledProcessError: it exited non-zero.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall_s, usage.ru_utime + usage.ru_stime


def callgrind_instructions(
    binary: Path, name: str, n_flows: int, protocol: str, work: Path
) -> tuple[int, int]:
    """(instructions executed, data packets delivered) of ``protocol`` on the first
    ``n_flows`` flows of setup ``name``, under ``valgrind --tool=callgrind``.

    Raises:
        subprocess.CalledProcessError: the run failed; RuntimeError: no instruction count.
    """
    setup, table = setup_flows(name, n_flows, 0, seed=1)
    flows_csv = work / f"cg_flows_{name}.csv"
    write_sim_flows_csv(table, flows_csv)
    stats_json = work / f"cg_stats_{name}_{protocol}.json"
    cmd = driver_command(binary, setup, protocol, flows_csv, work / "cg_fct.csv", stats_json, 1)
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / 'callgrind.out'}", *cmd],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no 'Collected :' line: {proc.stderr[-300:]}")
    packets = int(json.loads(stats_json.read_text())["data_packets_delivered"])
    return int(found.group(1)), packets


def run_websearch(
    binary: Path, name: str, n_flows: int, protocols: list[str], work: Path
) -> tuple[dict[str, pd.DataFrame], list[dict[str, Any]]]:
    """Run setup ``name`` with each protocol on the same flows.

    Returns:
        ({protocol: FCT_RECORDS}, one speed row per run).
    """
    setup, table = setup_flows(name, n_flows, 0, seed=1)
    flows_csv = work / f"flows_{name}.csv"
    write_sim_flows_csv(table, flows_csv)
    out: dict[str, pd.DataFrame] = {}
    speed: list[dict[str, Any]] = []
    for protocol in protocols:
        fct_csv = work / f"fct_{name}_{protocol}.csv"
        stats_json = work / f"stats_{name}_{protocol}.json"
        cmd = driver_command(binary, setup, protocol, flows_csv, fct_csv, stats_json, 1)
        load = os.getloadavg()[0]
        wall_s, cpu_s = timed_run(cmd)
        stats = json.loads(stats_json.read_text())
        out[protocol] = pd.read_csv(fct_csv)
        speed.append(
            {
                "setup": name,
                "protocol": protocol,
                "wall_s": wall_s,
                "data_packets": stats["data_packets_delivered"],
                "packets_per_s": stats["data_packets_delivered"] / wall_s,
                "cpu_s": cpu_s,
                "packets_per_cpu_s": stats["data_packets_delivered"] / cpu_s,
                "load1": load,
            }
        )
        print(f"speed: {json.dumps(speed[-1])}", file=sys.stderr, flush=True)  # as it comes
    return out, speed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=3000)
    parser.add_argument("--setups", default="a,b")
    parser.add_argument("--skip-quickstart", action="store_true")
    parser.add_argument("--pfabric", action="store_true", help="also time pfabric (speed)")
    parser.add_argument(
        "--callgrind-flows",
        type=int,
        default=0,
        help="also count instructions per data packet on this many flows",
    )
    parser.add_argument("--binary", type=Path, default=REPO / "build/sim/disaggsim-ns3")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    protocols = [p for pair in PAIRS for p in pair]
    rows: list[dict[str, Any]] = []
    speed: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-tcp-lean-") as tmp:
        work = Path(tmp)
        if not args.skip_quickstart:
            fct, runs = quickstart(work, protocols + (["pfabric"] if args.pfabric else []))
            for (workload, rate, scope), group in fct.groupby(["workload", "rate_gbps", "scope"]):
                by_protocol = {p: g for p, g in group.groupby("protocol")}
                for ref, lean in PAIRS:
                    row = compare(by_protocol[ref], by_protocol[lean])
                    rows.append({"setup": f"{workload} {rate:g}G {scope}", "pair": lean, **row})
            for _, run in runs.iterrows():
                speed.append(
                    {
                        "setup": f"{run['workload']} {run['rate_gbps']:g}G {run['scope']}",
                        "protocol": run["protocol"],
                        "wall_s": run["wall_s"],
                        "data_packets": run["data_packets"],
                        "packets_per_s": run["data_packets"] / run["wall_s"],
                        "cpu_s": run["cpu_s"],
                        "packets_per_cpu_s": run["data_packets"] / run["cpu_s"],
                        "load1": float("nan"),
                    }
                )
        for name in filter(None, args.setups.split(",")):
            if name not in SETUPS:
                parser.error(f"--setups: unknown setup {name!r} (expected a or b)")
            extra = ["pfabric"] if args.pfabric else []
            out, runs_speed = run_websearch(args.binary, name, args.flows, protocols + extra, work)
            speed += runs_speed
            for ref, lean in PAIRS:
                row = compare(out[ref], out[lean])
                rows.append({"setup": f"websearch ({name})", "pair": lean, **row})
        # callgrind last (~50x slower), the lean and pFabric runs first: rows print as they come
        for row in sorted(
            (r for r in speed if "load1" in r and r["setup"] in SETUPS),
            key=lambda r: r["protocol"].endswith("-ns3"),
        ):
            if not args.callgrind_flows:
                break
            ir, packets = callgrind_instructions(
                args.binary, row["setup"], args.callgrind_flows, row["protocol"], work
            )
            row.update(
                callgrind_flows=args.callgrind_flows,
                instructions=ir,
                callgrind_packets=packets,
                instructions_per_packet=ir / packets,
            )
            print(f"callgrind: {json.dumps(row)}", file=sys.stderr, flush=True)
    print("| setup | lean | mean ns-3 / lean us | diff | p99 ns-3 / lean us | diff | corr | bar |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['setup']} | {row['pair']} | {row['mean_ref_us']:.2f} / "
            f"{row['mean_lean_us']:.2f} | {100 * row['mean_diff']:+.1f} % | "
            f"{row['p99_ref_us']:.1f} / {row['p99_lean_us']:.1f} | {100 * row['p99_diff']:+.1f} % "
            f"| {row['corr']:.3f} | {'pass' if passes(row) else 'FAIL'} |"
        )
    print(
        "\n| setup | protocol | wall s | CPU s | data packets | packets / wall s | "
        "packets / CPU s | instructions / packet | load1 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in speed:
        per_packet = s.get("instructions_per_packet")
        print(
            f"| {s['setup']} | {s['protocol']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | "
            f"{s['data_packets']} | {s['packets_per_s']:.0f} | {s['packets_per_cpu_s']:.0f} | "
            f"{'' if per_packet is None else f'{per_packet:.0f}'} | {s['load1']:.2f} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"fidelity": rows, "speed": speed}, indent=1))
    return 0 if all(passes(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
