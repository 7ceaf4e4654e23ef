"""How many local pages a forked process inherits on the uffd device, and whether each
node's count of local pages is the kernel's.

On uffd, one budget is shared by every process of a node. Until 2026-11-28 a forked child
joined it with its parent's local pages, which then **counted in both processes** until the
older copies left local memory, where the kernel charges a copy-on-write page once; since
then the child charges an inherited page only once it stops being shared
(swapdev/doc/swapdev.md "One budget per node"; bench/RESULTS.md, "The node budget's
copy-on-write double count"). This script measures, for one application:

- it runs one round of the application's config (the zero-delay reference and the config's
  points, ``repeats = repeats_max = 1``) under ``--out-dir`` in a temporary directory
  (committed sweeps are not touched), through ``disaggsim emulate``;
- meanwhile it samples, every ``--interval-s``, each process whose command line holds
  ``--match``: the Rss of its mappings registered with userfaultfd, i.e. the device's
  local pages (``/proc/PID/smaps``, ``VmFlags`` ``um``: "userfaultfd missing tracking",
  Documentation/filesystems/proc.rst; the device registers private anonymous mappings in
  MISSING mode, swapdev/src/uffd_preload.c), and its whole Rss;
- a process whose parent also matches is a forked child; its first sample, taken within
  one interval of its fork, is what it inherited (an upper bound: it may have faulted a
  few pages in that interval);
- at the same period, each node's resident count (its segment, ``SWAPDEV_NODE_SHM``)
  against the kernel's count of the node's local pages: the Pss of the registered mappings
  of every process whose environment names the node (a page mapped by two processes counts
  half in each), in pages. The processes are read one after the other while they run, so
  a single sample's difference also holds the faults and evictions made while reading.

Prints one row per process (pid, parent, role, samples; its first, largest and last
registered Rss and its first whole Rss, in kB; its lifetime in s), the node's budget
(``local_fraction x working_set_bytes``), and one row per node: its samples and the
distribution of the device's count less the kernel's, in pages (median, mean, 5th, 95th
and 99th percentiles) and the share of samples over the kernel's by more
than 1 % of the budget (``node_rows``); ``--node-samples`` writes every sample.
Needs root and the machine lock, as every emulation does:

    flock /tmp/disaggsim-machine.lock .venv/bin/python bench/fork_inherited_pages.py \\
        configs/app-study-spark-sql-bdb-classify.toml --match pyspark.daemon

Raises SystemExit with the emulate command's status if it fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from disaggsim import owners
from disaggsim.swapdev import device


def smaps_rss_kb(text: str) -> tuple[int, int]:
    """(Rss of the userfaultfd-registered mappings, Rss of all mappings), in kB, of one
    ``/proc/PID/smaps`` text: each mapping's ``Rss:`` line precedes its ``VmFlags:`` line,
    whose two-letter flag ``um`` marks a userfaultfd MISSING registration
    (Documentation/filesystems/proc.rst, "VmFlags")."""
    registered = total = rss = 0
    for line in text.splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("VmFlags:"):
            total += rss
            if "um" in line.split()[1:]:
                registered += rss
            rss = 0
    return registered, total


def registered_pss_kb(text: str) -> int:
    """Pss of the userfaultfd-registered mappings, in kB, of one ``/proc/PID/smaps`` text
    (each mapping's ``Pss:`` line precedes its ``VmFlags:`` line): the process's share of
    the physical pages the device holds local for it."""
    registered = pss = 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            pss = int(line.split()[1])
        elif line.startswith("VmFlags:"):
            if "um" in line.split()[1:]:
                registered += pss
            pss = 0
    return registered


def node_of(environ: bytes, netns_inode: int) -> Path | None:
    """The node segment file a process's environment (``/proc/PID/environ``, NUL-separated)
    names in ``SWAPDEV_NODE_SHM``, ``%n`` being its network namespace's inode; None if
    none."""
    for item in environ.split(b"\0"):
        if item.startswith(b"SWAPDEV_NODE_SHM="):
            name = item.split(b"=", 1)[1].decode().replace("%n", str(netns_inode))
            return device.SHM_DIR / name.lstrip("/") if name else None
    return None


#: One node sample: (UTC seconds, the device's resident pages, the kernel's pages, processes).
NodeSample = tuple[float, int, int, int]


def sample_nodes(nodes: dict[Path, list[NodeSample]]) -> None:
    """Add one sample of every node segment some process's environment names to ``nodes``:
    the segment's resident count read after the node's processes' smaps (a process or
    segment gone while read is skipped)."""
    pss_kb: dict[Path, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            if b"SWAPDEV_NODE_SHM=" not in environ:
                continue
            seg = node_of(environ, device.netns_inode(Path(f"/proc/{entry.name}/ns/net")))
            if seg is None or not seg.name.startswith(device.NODE_SHM_PREFIX):
                continue  # not emulate's (a test's segment)
            pss = registered_pss_kb(Path(f"/proc/{entry.name}/smaps").read_text())
        except OSError:
            continue
        pss_kb.setdefault(seg, []).append(pss)
    for seg, per_process in pss_kb.items():
        try:
            counters = device.NodeSegment("/" + seg.name, seg).counters()
        except OSError:
            continue
        if counters is not None:
            nodes.setdefault(seg, []).append(
                (
                    time.time(),
                    counters.resident_pages,
                    sum(per_process) * 1024 // 4096,
                    len(per_process),
                )
            )


def node_rows(nodes: dict[Path, list[NodeSample]], budget_pages: int) -> list[str]:
    """One CSV row per node (see the module's docstring), in segment order: samples; the
    device's count less the kernel's in pages: median, mean, 5th, 95th and 99th
    percentiles (the nearest rank below); and the share of samples in which the device
    counted more than 1 % of the budget over the kernel."""
    rows = []
    for seg in sorted(nodes):
        diffs = sorted(s[1] - s[2] for s in nodes[seg])
        n = len(diffs)

        def pct(q: float, d: list[int] = diffs, k: int = n) -> int:
            return d[min(k - 1, int(q * k))]

        over = sum(d > budget_pages / 100 for d in diffs)
        rows.append(
            f"{seg.name},{n},{pct(0.5)},{sum(diffs) / n:.0f},{pct(0.05)},{pct(0.95)},"
            f"{pct(0.99)},{100 * over / n:.0f}"
        )
    return rows


@dataclass
class Process:
    """One sampled process: its parent's pid and its samples (UTC seconds, registered kB,
    total kB)."""

    ppid: int
    samples: list[tuple[float, int, int]] = field(default_factory=list)


def sample_once(match: bytes, seen: dict[int, Process]) -> None:
    """Add one sample of every process whose command line holds ``match`` to ``seen``
    (a process gone while read is skipped)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if match not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            stat = owners.process_stat(pid)
            registered, total = smaps_rss_kb(Path(f"/proc/{pid}/smaps").read_text())
        except OSError:
            continue
        if stat is not None:
            seen.setdefault(pid, Process(stat.ppid)).samples.append(
                (time.time(), registered, total)
            )


def one_round(config: Path, out: Path) -> Path:
    """``config`` (TOML) as a one-round JSON config in ``out`` with ``out_dir = "."``."""
    cfg = tomllib.loads(config.read_text())
    cfg["emulate"].update(
        name=cfg["emulate"]["name"] + "-fork-probe", out_dir=".", repeats=1, repeats_max=1
    )
    path = out / "probe.json"
    path.write_text(json.dumps(cfg, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path, help="an emulate config (TOML) with an [app]")
    ap.add_argument("--match", default="pyspark.daemon", help="command-line substring")
    ap.add_argument("--interval-s", type=float, default=0.25, help="sampling period (s)")
    ap.add_argument(
        "--node-samples",
        type=Path,
        help="also write every node sample here (CSV: node, UTC s, device pages, kernel "
        "pages, processes)",
    )
    args = ap.parse_args(argv)
    app = tomllib.loads(args.config.read_text())["app"]
    budget_kb = int(app["working_set_bytes"] * app["local_fraction"]) // 1024
    seen: dict[int, Process] = {}
    stop = threading.Event()

    nodes: dict[Path, list[NodeSample]] = {}

    def sampler() -> None:
        while not stop.is_set():
            sample_once(args.match.encode(), seen)
            sample_nodes(nodes)
            stop.wait(args.interval_s)

    with tempfile.TemporaryDirectory(prefix="fork-probe-") as tmp:
        probe = one_round(args.config, Path(tmp))
        thread = threading.Thread(target=sampler, daemon=True)
        thread.start()
        cli = Path(sys.executable).parent / "disaggsim"
        status = subprocess.run([str(cli), "emulate", str(probe)], check=False).returncode
        stop.set()
        thread.join()
    if status:
        raise SystemExit(status)
    print(f"node budget: {budget_kb} kB ({app['local_fraction']} x {app['working_set_bytes']} B)")
    print(
        "pid,ppid,role,samples,first_registered_kb,max_registered_kb,last_registered_kb,"
        "first_rss_kb,lifetime_s"
    )
    for pid in sorted(seen):
        p = seen[pid]
        role = "forked child" if p.ppid in seen else "parent"
        t0, reg0, rss0 = p.samples[0]
        print(
            f"{pid},{p.ppid},{role},{len(p.samples)},{reg0},"
            f"{max(s[1] for s in p.samples)},{p.samples[-1][1]},{rss0},"
            f"{p.samples[-1][0] - t0:.1f}"
        )
    print("node,samples,device_less_kernel_pages_median,mean,p5,p95,p99,over_1pct_pct")
    print(*node_rows(nodes, budget_kb // 4), sep="\n")
    if args.node_samples:
        with open(args.node_samples, "w") as out:
            out.write("node,utc_s,device_pages,kernel_pages,processes\n")
            for seg in sorted(nodes):
                for t, dev, kern, procs in nodes[seg]:
                    out.write(f"{seg.name},{t:.3f},{dev},{kern},{procs}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
