"""FIFO against CLOCK, the uffd backend's two eviction policies (``SWAPDEV_EVICTION``).

CLOCK runs at the default inactive target (``SWAPDEV_INACTIVE_PERMILLE`` 500, half the
budget) and, for the application, also at each of ``--app-permille``.

- hot/cold: memtouch ``--hotcold`` (``swapdev/tools/memtouch.c``), the workload of the
  policy test in tests/test_swapdev_uffd.py: 64 MiB written once, then ``--rounds`` rounds
  of "read the 1024 hot pages, then the next 256 pages of a cold stream", 8 MiB local.
  Reported: swap-ins of hot and of cold pages (from the rmem trace), minor refaults (CLOCK:
  faults on inactive pages, served locally), the median latency of the hot pages' faults
  after round 0 as the application sees them (CLOCK: minor refaults; FIFO: remote faults)
  and the handler's median service time of a minor refault (its ``minor`` histogram),
  and the read phase's time.
- application: the CPython sort of ``configs/emulate-python-sort.toml`` (its command and
  working set) at ``--local-fraction`` of it; JCT (wall time, start to exit), swap-ins,
  swap-out requests and minor refaults from the device's stderr summary and histograms.

Each configuration runs ``--repeats`` times, policies and delays interleaved; the table
gives the median over repeats and the range. Needs root (userfaultfd).

    .venv/bin/python bench/bench_swapdev_eviction.py    # --repeats 3 --delays-us 0,10
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from disaggsim.swapdev import device
from disaggsim.swapdev.emulate import load_emulate_config
from disaggsim.traces import paging

REPO = Path(__file__).resolve().parent.parent
# The policy test's workload (tests/test_swapdev_uffd.py): pages.
HC_MIB, HC_BUDGET, HOT, SCAN = 64, 2048, 1024, 256
SUMMARY = re.compile(r"swapdev uffd: (\d+) swap-ins \(\d+ pages\), (\d+) swap-outs")


def spread(values: list[float], fmt: str = ".2f") -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def hot_cold(
    work: Path, policy: device.EvictionPolicy, delay_us: int, rounds: int
) -> dict[str, float]:
    """One memtouch --hotcold run: its counts and times (µs, s)."""
    model = device.DelayModel("fixed" if delay_us else "none", latency_ns=delay_us * 1000)
    result = device.run_memtouch_uffd(
        work,
        HC_MIB,
        HC_BUDGET * 4096,
        model,
        passes=rounds,
        eviction=policy,
        hotcold=(HOT, SCAN),
    )
    if result.report["bad_pages"]:
        raise RuntimeError(f"memtouch found bad pages: {result.report}")
    df = paging.read_rmem(result.trace)
    reads = df[df["op"] == "R"]
    minor = result.histograms.get("minor")
    return {
        "hot": float((reads["page"] < HOT).sum()),
        "cold": float((reads["page"] >= HOT).sum()),
        "minor": float(result.minor_refaults),
        "hot_fault_us": result.report["hot_slow_p50_ns"] / 1000,
        "minor_handler_us": minor.quantile_ns(0.5) / 1000 if minor and minor.n else 0.0,
        "read_s": result.report["read_s"],
    }


def application(
    work: Path, policy: device.EvictionPolicy, permille: int, delay_us: int, local_fraction: float
) -> dict[str, float]:
    """One run of the CPython sort on the uffd backend: JCT and the device's counts."""
    cfg = load_emulate_config(REPO / "configs" / "emulate-python-sort.toml")
    build = device.build_dir()
    work.mkdir(parents=True, exist_ok=True)
    hist = work / "uffd.hist"
    model = device.DelayModel("fixed" if delay_us else "none", latency_ns=delay_us * 1000)
    env = {
        **os.environ,
        **model.env(),
        "SWAPDEV_LOCAL_BYTES": str(int(cfg.app.working_set_bytes * local_fraction)),
        "SWAPDEV_EVICTION": policy,
        "SWAPDEV_INACTIVE_PERMILLE": str(permille),
        "SWAPDEV_HIST": str(hist),
        "SWAPDEV_TRACE": "",
    }
    start = time.monotonic()
    proc = subprocess.run(
        ["env", f"LD_PRELOAD={build / 'libswapdev_uffd.so'}", *cfg.app.command],
        env=env,
        capture_output=True,
        text=True,
        timeout=cfg.emulate.timeout_s,
    )
    jct = time.monotonic() - start
    summary = SUMMARY.findall(proc.stderr)
    if proc.returncode != 0 or not summary:
        raise RuntimeError(f"python sort failed ({proc.returncode}): {proc.stderr[-2000:]}")
    minor = device.read_histograms(hist).get("minor")
    return {
        "jct_s": jct,
        "swap_ins": float(summary[-1][0]),
        "swap_outs": float(summary[-1][1]),
        "minor": float(minor.n if minor else 0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delays-us", default="0,10")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--local-fraction", type=float, default=0.6)
    parser.add_argument("--app-permille", default="31")
    args = parser.parse_args()
    delays = [int(x) for x in args.delays_us.split(",")]
    variants: list[tuple[device.EvictionPolicy, int]] = [("fifo", 500), ("clock", 500)]
    variants += [("clock", int(x)) for x in args.app_permille.split(",") if x]
    hc: dict[tuple[str, int], list[dict[str, float]]] = {}
    app: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-eviction-") as tmp:
        for rep in range(args.repeats):
            for delay_us in delays:
                for policy, permille in variants:
                    name = policy if policy == "fifo" else f"clock {permille}‰"
                    work = Path(tmp) / f"{policy}-{permille}-{delay_us}-{rep}"
                    if permille == 500:
                        hc.setdefault((name, delay_us), []).append(
                            hot_cold(work / "hc", policy, delay_us, args.rounds)
                        )
                    app.setdefault((name, delay_us), []).append(
                        application(work / "app", policy, permille, delay_us, args.local_fraction)
                    )
                    print(name, delay_us, rep, app[name, delay_us][-1], file=sys.stderr, flush=True)

    def col(runs: list[dict[str, float]], key: str, fmt: str = ".2f") -> str:
        return spread([r[key] for r in runs], fmt)

    print(
        f"hot/cold: memtouch {HC_MIB} MiB --hotcold {HOT},{SCAN}, {args.rounds} rounds, "
        f"{HC_BUDGET * 4096 >> 20} MiB local; median over {args.repeats} repeats (range)\n"
    )
    print(
        "| policy | injected µs | hot swap-ins | cold swap-ins | minor refaults "
        "| hot fault p50 µs | minor handler p50 µs | read phase s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (policy, delay_us), runs in hc.items():
        print(
            f"| {policy} | {delay_us} | {col(runs, 'hot', '.0f')} | {col(runs, 'cold', '.0f')} "
            f"| {col(runs, 'minor', '.0f')} | {col(runs, 'hot_fault_us')} "
            f"| {col(runs, 'minor_handler_us')} | {col(runs, 'read_s', '.3f')} |"
        )
    print(
        f"\nCPython sort (configs/emulate-python-sort.toml), {args.local_fraction:.0%} local; "
        f"median over {args.repeats} repeats (range)\n"
    )
    print(
        "| policy (inactive target) | injected µs | JCT s | swap-ins | swap-out requests "
        "| minor refaults |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for (policy, delay_us), runs in app.items():
        print(
            f"| {policy} | {delay_us} | {col(runs, 'jct_s')} | {col(runs, 'swap_ins', '.0f')} "
            f"| {col(runs, 'swap_outs', '.0f')} | {col(runs, 'minor', '.0f')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
