"""How many local pages a forked process inherits on the uffd device: the size of the node
budget's copy-on-write double count, measured.

On uffd, one budget is shared by every process of a node, and a forked child joins it with
its parent's local pages, which then **count in both processes** until the older copies
leave local memory, where the kernel charges a copy-on-write page once
(swapdev/doc/swapdev.md "One budget per node"; bench/RESULTS.md's Spark sections carry it
as a caveat). This script measures how large that count is for one application:

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
  few pages in that interval).

Prints one row per process (pid, parent, role, samples; its first, largest and last
registered Rss and its first whole Rss, in kB; its lifetime in s) and the node's budget
(``local_fraction x working_set_bytes``).
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
    args = ap.parse_args(argv)
    app = tomllib.loads(args.config.read_text())["app"]
    budget_kb = int(app["working_set_bytes"] * app["local_fraction"]) // 1024
    seen: dict[int, Process] = {}
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            sample_once(args.match.encode(), seen)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
