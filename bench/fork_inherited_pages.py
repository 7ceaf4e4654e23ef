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
  against the kernel's count of the node's local pages: the Pss of the private registered
  mappings of every process that maps the node's segment (a page mapped by two processes
  counts half in each), in pages, plus the Pss of its shared registered mappings (a
  shared anonymous mapping such as PostgreSQL's buffers, in the node's count once since
  2026-11-29; before, it had a budget of its own outside the node's, and the difference
  was taken against the private pages only). A shared page the device holds local that no
  process maps any more (the process that faulted it has exited) is in the device's count
  and not in any Pss. The processes are read one after the other while they run, so a
  single sample's difference also holds the faults and evictions made while reading;
- on the swap backend (``--backend swap``), each node's data holders' memcg: its limit
  and its anonymous and shmem pages (``memory.stat``), i.e. how the kernel splits one
  limit between a process's private memory and a shared mapping.

Prints one row per process (pid, parent, role, samples; its first, largest and last
registered Rss and its first whole Rss, in kB; its lifetime in s), the node's budget
(``local_fraction x working_set_bytes``), and one row per node: its samples and the
distribution of the device's count less the kernel's, in pages (median, mean, 5th, 95th
and 99th percentiles) and the share of samples over the kernel's by more
than 1 % of the budget, and the kernel's private and shared pages (``node_rows``); one
row per memcg, over the samples in which it is full: the medians of its anonymous and
shmem pages (``memcg_rows``); ``--node-samples`` writes every node sample.
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
from disaggsim.testbed import collect_env as env


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


def registered_pss_kb(text: str) -> tuple[int, int]:
    """(Pss of the private, Pss of the shared userfaultfd-registered mappings), in kB, of
    one ``/proc/PID/smaps`` text (each mapping's header line, whose permissions end in
    ``p`` or ``s``, precedes its ``Pss:`` and ``VmFlags:`` lines): the process's share of
    the physical pages the device holds local for it. Shared ones are a shared anonymous
    mapping's (PostgreSQL's buffers; swapdev/src/uffd_shmem.c), which the device counts
    in the node's count on a node (since 2026-11-29), else in the mapping's own budget."""
    private = shared = pss = 0
    is_shared = False
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and "-" in fields[0] and len(fields[1]) == 4:
            is_shared = fields[1][3] == "s"  # a mapping's header: range, perms, ...
        elif line.startswith("Pss:"):
            pss = int(fields[1])
        elif line.startswith("VmFlags:"):
            if "um" in fields[1:]:
                if is_shared:
                    shared += pss
                else:
                    private += pss
            pss = 0
    return private, shared


def node_of(maps: str) -> Path | None:
    """The node segment file (``SWAPDEV_NODE_SHM``, under :data:`device.SHM_DIR`) of
    ``disaggsim emulate`` that a process maps, from its ``/proc/PID/maps`` text; None if
    none. Every device process on a node maps its segment (swapdev/src/uffd_node.h). The
    maps, not the environment: PostgreSQL writes its ps display over its environment
    area, so ``/proc/PID/environ`` no longer names the node there."""
    stem = str(device.SHM_DIR / device.NODE_SHM_PREFIX)
    for line in maps.splitlines():
        at = line.find(stem)
        if at >= 0:
            return Path(line[at:].removesuffix(" (deleted)"))
    return None


#: One node sample: (UTC seconds, the device's resident pages, the kernel's pages of the
#: node's private registered mappings, of its shared ones, processes).
NodeSample = tuple[float, int, int, int, int]


def sample_nodes(nodes: dict[Path, list[NodeSample]]) -> None:
    """Add one sample of every node segment some process maps to ``nodes``: the segment's
    resident count read after the node's processes' smaps (a process or segment gone while
    read is skipped)."""
    pss_kb: dict[Path, list[tuple[int, int]]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            seg = node_of(Path(f"/proc/{entry.name}/maps").read_text())
            if seg is None:
                continue
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
                    sum(p for p, _ in per_process) * 1024 // 4096,
                    sum(s for _, s in per_process) * 1024 // 4096,
                    len(per_process),
                )
            )


def node_rows(nodes: dict[Path, list[NodeSample]], budget_pages: int) -> list[str]:
    """One CSV row per node (see the module's docstring), in segment order: samples; the
    device's count less the kernel's (private and shared registered pages, a shared
    region being in the node's count) in pages: median, mean, 5th, 95th and 99th
    percentiles (the nearest rank below); the share of samples in which the device counted
    more than 1 % of the budget over the kernel; the kernel's private pages (median) and
    its shared registered pages (median, largest)."""
    rows = []
    for seg in sorted(nodes):
        diffs = sorted(s[1] - s[2] - s[3] for s in nodes[seg])
        n = len(diffs)

        def pct(q: float, d: list[int] = diffs, k: int = n) -> int:
            return d[min(k - 1, int(q * k))]

        over = sum(d > budget_pages / 100 for d in diffs)
        shared = sorted(s[3] for s in nodes[seg])
        rows.append(
            f"{seg.name},{n},{pct(0.5)},{sum(diffs) / n:.0f},{pct(0.05)},{pct(0.95)},"
            f"{pct(0.99)},{100 * over / n:.0f},{sorted(s[2] for s in nodes[seg])[n // 2]},"
            f"{shared[n // 2]},{shared[-1]}"
        )
    return rows


#: One holder memcg sample (swap backend): (UTC seconds, its limit, its usage, its
#: anonymous pages ``rss``, its shmem pages ``shmem``, its page cache ``cache``), in pages.
MemcgSample = tuple[float, int, int, int, int, int]


def memcg_pages(
    stat: dict[str, int], limit_bytes: int, usage_bytes: int
) -> tuple[int, int, int, int, int]:
    """(limit, usage, rss, shmem, cache) in pages from a cgroup v1 ``memory.stat`` (as
    :func:`disaggsim.testbed.collect_env.memcg_stat` reads it), the group's
    ``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` (which also holds the kernel
    memory charged to it: page tables, slab): the group's own counters (not
    ``total_*``), in bytes there (Documentation/admin-guide/cgroup-v1/memory.rst, 5.2:
    ``rss`` is anonymous and swap cache memory, ``shmem`` shared memory included in
    ``cache``)."""
    return (
        limit_bytes // 4096,
        usage_bytes // 4096,
        stat["rss"] // 4096,
        stat["shmem"] // 4096,
        stat["cache"] // 4096,
    )


def sample_memcgs(memcgs: dict[str, list[MemcgSample]]) -> None:
    """Add one sample of every data holders' memcg of ``disaggsim emulate``
    (``disaggsim-emulate-node*``: the swap backend holds each node's data holders to
    ``local_fraction x working_set_bytes`` there) to ``memcgs``, by group name."""
    for cg in sorted(env.MEMCG_ROOT.glob("disaggsim-emulate-node*")):
        try:
            got = memcg_pages(
                env.memcg_stat(cg),
                env.memcg_read_int(cg, "memory.limit_in_bytes"),
                env.memcg_read_int(cg, "memory.usage_in_bytes"),
            )
        except (OSError, KeyError, ValueError):
            continue
        memcgs.setdefault(cg.name, []).append((time.time(), *got))


def memcg_rows(memcgs: dict[str, list[MemcgSample]]) -> list[str]:
    """One CSV row per memcg (see the module's docstring): its limit and, over the samples
    in which it is full (its usage within 2 % of the limit), the medians of its
    anonymous and shmem pages and the shmem share of the limit, in %."""
    rows = []
    for name in sorted(memcgs):
        full = [x for x in memcgs[name] if x[2] >= 0.98 * x[1]]
        if not full:
            rows.append(f"{name},{len(memcgs[name])},0,,,,")
            continue
        anon = sorted(x[3] for x in full)[len(full) // 2]
        shmem = sorted(x[4] for x in full)[len(full) // 2]
        limit = full[0][1]
        rows.append(
            f"{name},{len(memcgs[name])},{len(full)},{limit},{anon},{shmem},"
            f"{100 * shmem / limit:.1f}"
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


def one_round(config: Path, out: Path, backend: str | None = None) -> Path:
    """``config`` (TOML) as a one-round JSON config in ``out`` with ``out_dir = "."`` (and
    ``backend``, if given)."""
    cfg = tomllib.loads(config.read_text())
    cfg["emulate"].update(
        name=cfg["emulate"]["name"] + "-fork-probe", out_dir=".", repeats=1, repeats_max=1
    )
    if backend is not None:
        cfg["emulate"]["backend"] = backend
    path = out / "probe.json"
    path.write_text(json.dumps(cfg, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path, help="an emulate config (TOML) with an [app]")
    ap.add_argument("--match", default="pyspark.daemon", help="command-line substring")
    ap.add_argument("--interval-s", type=float, default=0.25, help="sampling period (s)")
    ap.add_argument(
        "--backend",
        choices=("uffd", "swap"),
        help="run on this backend instead of the config's (swap: the holders' memcgs are "
        "sampled: the kernel's split of the limit between anonymous and shmem pages)",
    )
    ap.add_argument(
        "--node-samples",
        type=Path,
        help="also write every node sample here (CSV: node, UTC s, device pages, kernel "
        "pages, processes)",
    )
    ap.add_argument(
        "--memcg-samples",
        type=Path,
        help="also write every memcg sample here (CSV: memcg, UTC s, limit, anon, shmem and "
        "cache pages)",
    )
    args = ap.parse_args(argv)
    app = tomllib.loads(args.config.read_text())["app"]
    budget_kb = int(app["working_set_bytes"] * app["local_fraction"]) // 1024
    seen: dict[int, Process] = {}
    stop = threading.Event()

    nodes: dict[Path, list[NodeSample]] = {}
    memcgs: dict[str, list[MemcgSample]] = {}

    def sampler() -> None:
        while not stop.is_set():
            sample_once(args.match.encode(), seen)
            sample_nodes(nodes)
            sample_memcgs(memcgs)
            stop.wait(args.interval_s)

    with tempfile.TemporaryDirectory(prefix="fork-probe-") as tmp:
        probe = one_round(args.config, Path(tmp), args.backend)
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
    if nodes:
        print(
            "node,samples,device_less_kernel_pages_median,mean,p5,p95,p99,over_1pct_pct,"
            "kernel_private_pages_median,kernel_shared_pages_median,kernel_shared_pages_max"
        )
        print(*node_rows(nodes, budget_kb // 4), sep="\n")
    if memcgs:
        print(
            "memcg,samples,full_samples,limit_pages,anon_pages_median,shmem_pages_median,"
            "shmem_pct_of_limit"
        )
        print(*memcg_rows(memcgs), sep="\n")
    if args.node_samples:
        with open(args.node_samples, "w") as out:
            out.write("node,utc_s,device_pages,kernel_pages,kernel_shared_pages,processes\n")
            for seg in sorted(nodes):
                for t, dev, kern, kern_shared, procs in nodes[seg]:
                    out.write(f"{seg.name},{t:.3f},{dev},{kern},{kern_shared},{procs}\n")
    if args.memcg_samples:
        with open(args.memcg_samples, "w") as out:
            out.write("memcg,utc_s,limit_pages,usage_pages,anon_pages,shmem_pages,cache_pages\n")
            for name in sorted(memcgs):
                for t, *pages in memcgs[name]:
                    out.write(f"{name},{t:.3f},{','.join(map(str, pages))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
