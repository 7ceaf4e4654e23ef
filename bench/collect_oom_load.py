"""How often the collector's memory cgroups OOM-kill under CPU load (the smoke preset).

The failure of a fresh-clone CI (``tests/test_collect_system.py::
test_smoke_collection_restores_state_and_outputs_parse``: memcached OOM-killed by its
memcg v1 group in each of the 3 start attempts while another helper loaded the machine)
made reproducible: ``--load`` busy loops (``yes > /dev/null`` at nice 0, the same
priority as the collector) run for the whole measurement, and the smoke collection
(:data:`disaggsim.testbed.collect.PRESETS` ``smoke``, the test's configuration) runs
``--runs`` times per variant, the variants interleaved (``waker``: its node groups without
OOM killer and woken by ``OomWaker``, ``collect.NODE_OOM_WAKER``; ``killer``: the OOM
killer on, the collector as it is). ``taskset -c 0`` in front puts the collector and the load on one
CPU, as ``isolate.sh on`` does to every other task while the application study measures.
Per run, one CSV row: whether it finished, its start attempts
(meta.json ``start_attempts``), the OOM kills the kernel logged for the collector's node
groups (``dmesg`` "oom-kill: ... oom_memcg=/disaggsim-nodeN"), the ``/proc/vmstat``
reclaim counters over the run and the load average; the kernel's OOM reports are appended
to ``<csv>.dmesg``. Needs root; hold the machine lock around it
(``flock /tmp/disaggsim-machine.lock``): it changes swap, cgroups and namespaces.

Usage: flock /tmp/disaggsim-machine.lock taskset -c 0 .venv/bin/python
bench/collect_oom_load.py --runs 5 --load 4 --csv /tmp/oom.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

from disaggsim.testbed import collect as collect_module
from disaggsim.testbed.collect import PRESETS, collect

#: /proc/vmstat counters recorded per run (reclaim by memcg = direct reclaim on v1).
VMSTAT_KEYS = (
    "pgscan_anon",
    "pgsteal_anon",
    "pgrefill",
    "pswpout",
    "pswpin",
    "pgrotated",
    "oom_kill",
)


def vmstat() -> dict[str, int]:
    """``/proc/vmstat`` as ``{counter: value}``."""
    out = {}
    for line in Path("/proc/vmstat").read_text().splitlines():
        key, value = line.split()
        out[key] = int(value)
    return out


def dmesg_lines() -> list[tuple[float, str]]:
    """The kernel log: (seconds since boot, line) per record (the ring buffer wraps, so
    records are told apart by their time stamp, not their position)."""
    text = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    return [
        (float(m.group(1)), ln)
        for ln in text.splitlines()
        if (m := re.match(r"\[\s*(\d+\.\d+)\]", ln))
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=4, help="busy loops (yes > /dev/null)")
    parser.add_argument("--csv", type=Path, required=True)
    parser.add_argument(
        "--io-load",
        action="store_true",
        help="also rewrite a 256 MiB file in /var/tmp (where the collector's "
        "loop devices keep their backing files) in a loop, O_DIRECT",
    )
    parser.add_argument(
        "--variants",
        default="waker,killer",
        help="comma-separated, interleaved per run: waker (the collector's "
        "OomWaker) and/or killer (OOM killer on, as before the waker)",
    )
    args = parser.parse_args()
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.load)]
    if args.io_load:
        io_file = tempfile.mktemp(prefix="collect-oom-io-", dir="/var/tmp")
        hogs.append(
            subprocess.Popen(
                [
                    "sh",
                    "-c",
                    f"trap 'rm -f {io_file}; exit' TERM; while :; do dd if=/dev/zero "
                    f"of={io_file} bs=1M count=256 oflag=direct status=none; done",
                ],
                start_new_session=True,
            )
        )
    fields = [
        "run",
        "variant",
        "ok",
        "start_attempts",
        "oom_kills",
        "node0_oom_wakeups",
        "error",
        "seconds",
        "load_1min",
        *VMSTAT_KEYS,
    ]
    new = not args.csv.exists()
    try:
        with open(args.csv, "a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            if new:
                writer.writeheader()
            for run, variant in (
                (r, v) for r in range(args.runs) for v in args.variants.split(",")
            ):
                collect_module.NODE_OOM_WAKER = variant == "waker"
                time.sleep(2)
                seen = max((t for t, _ in dmesg_lines()), default=0.0)
                before = vmstat()
                t0 = time.monotonic()
                row: dict[str, object] = {"run": run, "variant": variant}
                with tempfile.TemporaryDirectory(prefix="oom-load-") as tmp:
                    try:
                        out = collect(
                            PRESETS["smoke"], Path(tmp) / "out", command="bench/collect_oom_load.py"
                        )
                        meta = json.loads((out / "meta.json").read_text())
                        row.update(
                            ok=1,
                            start_attempts=meta["start_attempts"],
                            error="",
                            node0_oom_wakeups=meta["nodes"][0]["memcg_oom_wakeups"],
                        )
                    except RuntimeError as exc:
                        row.update(ok=0, start_attempts="", error=str(exc).splitlines()[0])
                after = vmstat()
                log = [ln for t, ln in dmesg_lines() if t > seen]
                row.update(
                    oom_kills=sum("oom_memcg=/disaggsim-node" in ln for ln in log),
                    seconds=round(time.monotonic() - t0, 1),
                    load_1min=Path("/proc/loadavg").read_text().split()[0],
                    **{k: after.get(k, 0) - before.get(k, 0) for k in VMSTAT_KEYS},
                )
                writer.writerow(row)
                handle.flush()
                print(row, flush=True)
                if row["oom_kills"]:
                    with open(args.csv.with_suffix(".dmesg"), "a") as dm:
                        dm.write(f"=== run {run} {variant}\n" + "\n".join(log) + "\n")
    finally:
        for hog in hogs:
            hog.terminate()
            hog.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
