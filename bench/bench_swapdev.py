"""Floor latency, throughput and delay accuracy of the latency-injection device, per backend.

- floor: memtouch (swapdev/tools/memtouch.c) writes ``--mib`` MiB, then reads every page
  once in order with a quarter of it local (uffd: ``SWAPDEV_LOCAL_BYTES``; swap: memcg v1
  limit, ``vm.page-cluster=0``), so every read is a fault that brings one page back; the
  per-fault latency is timed by the application (CLOCK_MONOTONIC around the first load).
  Reported: median and p99 per fault, and the read pass's throughput (GB/s = 1e9 B/s,
  faults included: swap-in plus the eviction it forces).
- block device throughput (swap backend only), as the paper measured its RDMA block
  device: ``dd`` with direct I/O, 1 MiB blocks, on the loop device over the FUSE daemon.
- accuracy: the same run with ``fixed`` latency D; the end-to-end median shift against D.

Each configuration runs ``--repeats`` times; the table gives the median over repeats and
the range. Needs root; takes the machine-state lock.
Usage: .venv/bin/python bench/bench_swapdev.py [--mib 256] [--repeats 3] [--delays-us 0,2,5,10]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from disaggsim.swapdev import device


def dd_gbps(args: list[str]) -> float:
    proc = subprocess.run(["dd", *args, "bs=1M"], capture_output=True, text=True, check=True)
    match = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", proc.stderr)
    if not match:
        raise RuntimeError(f"dd: cannot parse {proc.stderr!r}")
    return int(match.group(1)) / float(match.group(2)) / 1e9


def block_throughput(work: Path, mib: int) -> tuple[float, float]:
    """(write, read) GB/s of dd direct I/O on the loop device over swapdev-fuse."""
    with contextlib.ExitStack() as stack:
        dev = device.fuse_loop_device(stack, work, mib << 20, device.DelayModel("none"))
        write = dd_gbps(["if=/dev/zero", f"of={dev.loop}", f"count={mib}", "oflag=direct"])
        read = dd_gbps([f"if={dev.loop}", "of=/dev/null", f"count={mib}", "iflag=direct"])
    return write, read


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delays-us", default="0,2,5,10")
    args = parser.parse_args()
    delays = [int(x) for x in args.delays_us.split(",")]
    local = (args.mib << 20) // 4
    rows = []
    with device.system_lock(), tempfile.TemporaryDirectory(prefix="bench-swapdev-") as tmp:
        work = Path(tmp)
        for backend in ("uffd", "swap"):
            floor_p50: list[float] = []
            for delay_us in delays:
                model = device.DelayModel(
                    "fixed" if delay_us else "none", latency_ns=delay_us * 1000
                )
                p50, p99, gbps = [], [], []
                for rep in range(args.repeats):
                    out = work / f"{backend}-{delay_us}-{rep}"
                    if backend == "uffd":
                        result = device.run_memtouch_uffd(out, args.mib, local, model)
                    else:
                        result = device.run_memtouch_swap(out, args.mib, local, model)
                    assert result.report["bad_pages"] == 0
                    p50.append(result.report["p50_ns"] / 1000)
                    p99.append(result.report["p99_ns"] / 1000)
                    gbps.append(result.report["read_gbps"])
                if delay_us == 0:
                    floor_p50 = p50
                shift = statistics.median(p50) - statistics.median(floor_p50)
                rows.append((backend, delay_us, spread(p50), spread(p99), spread(gbps), shift))
                print(rows[-1], file=sys.stderr, flush=True)
        writes, reads = [], []
        for rep in range(args.repeats):
            w, r = block_throughput(work / f"dd-{rep}", args.mib)
            writes.append(w)
            reads.append(r)
    print(
        f"memtouch {args.mib} MiB, local {local >> 20} MiB, sequential read pass, "
        f"median over {args.repeats} repeats (range)\n"
    )
    print("| backend | injected µs | p50 µs/fault | p99 µs/fault | read pass GB/s | p50 shift µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for backend, delay_us, p50s, p99s, gbs, shift in rows:
        print(f"| {backend} | {delay_us} | {p50s} | {p99s} | {gbs} | {shift:.2f} |")
    print(
        f"\nswap backend block device, dd 1 MiB direct I/O over {args.mib} MiB: "
        f"write {spread(writes)} GB/s, read {spread(reads)} GB/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
