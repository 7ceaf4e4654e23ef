"""``disaggsim collect``: record real network, disk and paging traces on an emulated cluster.

The method is Gao et al., OSDI'16 §3.1-3.2 ("Network Requirements for Resource
Disaggregation"): run real applications on a few nodes, limit each node's memory to a
fraction (default 25 %) of its working set so the rest is paged to swap (the stand-in for
remote memory), and record per node the network packets, the disk's block I/O and the
paging (swap) I/O. Here the nodes are emulated on one machine:

- a network namespace per node (``10.77.0.N+1/24``) bridged in a switch namespace; a
  ``tcpdump`` per node on the switch side of its veth (both directions of the node);
- a memcg v1 group per node (``memory.limit_in_bytes`` = fraction x working set, measured by
  an untraced calibration run without a limit as the group's peak
  ``memory.max_usage_in_bytes``, i.e. anonymous memory plus page cache charged to it),
  with its OOM killer: a start that a group OOM-killed is repeated
  (:func:`~disaggsim.testbed.memcg_oom.oom_kills_named`, shared with ``disaggsim
  emulate``; the waker that ``emulate``'s swap backend uses made memcached's system calls
  fail with EFAULT here, see ``NODE_OOM_WAKER``; meta.json ``memcg_oom_wakeups``, 0 unless
  ``NODE_OOM_WAKER``);
- a loop-device ext4 data disk per node and one loop-device swap area for all nodes, traced
  with the ftrace ``blk`` tracer (:mod:`disaggsim.testbed.collect_blk`); swap requests are
  attributed to nodes by the pids tracked in their cgroups
  (:mod:`disaggsim.testbed.collect_paging`).

Output layout (what ``disaggsim convert`` reads)::

    <out_dir>/README.md  meta.json
    nodeN.pcap  nodeN.disk.blktrace.<cpu>  nodeN.swap.blktrace.<cpu>  nodeN.rmem  nodeN.rmem.meta
    unattributed.swap.blktrace.<cpu>  unattributed.rmem  unattributed.rmem.meta
    logs/  (the applications' output)

Times: blktrace records carry CLOCK_MONOTONIC ns (``trace_clock=mono``); add
``meta["trace_clock_offset_ns"]`` (CLOCK_REALTIME - CLOCK_MONOTONIC at the start) to get unix
ns, the clock of the pcaps. ``meta["start_realtime_ns"]`` is the trace's time zero; the rmem
timestamps are µs since it (``nodeN.rmem.meta``: that time as an integer of unix µs).

Everything the collector changes is undone on exit, failure, SIGINT, SIGTERM and SIGHUP
(:class:`~disaggsim.testbed.collect_env.UndoStack`, :mod:`disaggsim.signals`): every undo
step runs even if another fails, and one :class:`~disaggsim.testbed.collect_env.RestoreError`
names each piece of state left changed. tracefs settings are restored in whatever format
the kernel showed them; a boot-time ring buffer that was never used (``buffer_size_kb`` =
``N (expanded: M)``) comes back at its boot size ``M``, since the kernel cannot shrink it
back to the unexpanded state (:mod:`disaggsim.testbed.collect_tracefs`). SIGKILL runs no
undo step: every piece of machine state the collector changes records it as its owner
first, the tracefs mount, each tracefs setting and each device's block trace enable with
the value to restore, and the next command that reaps undoes a dead collector's
(:mod:`disaggsim.owners`); while a collector runs, a second one fails naming its pid.

Usage: ``python -m disaggsim.testbed.collect --preset memcached-ycsb --out DIR`` (root).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from tqdm import tqdm

from disaggsim.polling import PollingThread
from disaggsim.signals import Interrupted, deferred_signals, interrupt_on_signals
from disaggsim.testbed.apps.pgbench import PgbenchConfig
from disaggsim.testbed.apps.spark import SparkConfig
from disaggsim.testbed.collect_apps import (
    AppConfig,
    Cluster,
    DaskSortConfig,
    MemcachedYcsbConfig,
    make_app,
)
from disaggsim.testbed.collect_blk import (
    BlkTraceSplitter,
    arm_blk_tracer,
    kernel_dev,
    parse_keep_actions,
    read_blktrace,
)
from disaggsim.testbed.collect_env import (
    SWITCH_NS,
    UndoStack,
    disable_zswap,
    ensure_tracefs,
    ext4_disk,
    loop_device,
    make_cluster_network,
    memcg_group,
    memcg_read_int,
    memcg_reset,
    memcg_stat,
    memcg_tasks,
    node_ip,
    ns_exec,
    swap_area,
    work_dir,
)
from disaggsim.testbed.collect_paging import (
    PAGE_BYTES,
    PagingSummary,
    write_device_paging,
    write_node_paging,
)
from disaggsim.testbed.memcg_oom import OOM_ATTEMPTS, MemcgOomKill, OomWaker, oom_kills_named

GIB: Final = 1 << 30


class CollectConfig(BaseModel):
    """What to run and record (``disaggsim collect``). Sizes in bytes, times in seconds.

    - ``sample``: the sample's name (meta.json ``sample``).
    - ``apps``: applications run together on the cluster (``memcached-ycsb``, ``dask-sort``,
      ``postgres-pgbench``).
    - ``duration_s``: traced phase; memcached-ycsb runs this long, dask-sort runs to the end
      of the job (then ``duration_s`` only bounds its timeout).
    - ``memory_limit_fraction``: memcg limit / working set (paper §3.1-3.2: 0.25).
    - ``working_set_bytes``: per-node working sets; ``None`` measures them in an untraced
      calibration run without a limit lasting ``calibration_duration_s``.
    - ``memory_limit_floor_bytes``: the limit is never set below this: a group's kernel
      memory (page tables, slab; charged to memcg v1, never swapped) and an interpreter's
      startup need a few MiB, and a tiny limit makes the memcg OOM killer end the process
      instead of paging (observed for a 25 % limit on a ~15 MiB Python YCSB client).
    - ``memory_swappiness``: the groups' ``memory.swappiness`` (100: reclaim anonymous memory
      as readily as page cache).
    - ``pcap_snaplen_bytes``: bytes kept per packet (sizes come from the IP total length).
    - ``blk_act_mask``: ``/sys/block/DEV/trace/act_mask`` (categories; 0xffff = all).
    - ``blk_keep_actions``: blkparse action letters written to the blktrace files (e.g.
      ``"QDC"``: queue, issue, complete), or ``"all"``; attribution and the rmem batches
      always use every record.
    - ``blk_buffer_kb``: ftrace ring buffer per CPU.
    - ``work_dir``: where the loop devices' backing files go (default: a temp dir in /var/tmp).
    - ``paging_recorder``: ``"blktrace"`` (the shared swap area's block records, attributed
      to nodes: :mod:`disaggsim.testbed.collect_paging`), or ``"swapdev-uffd"``: the
      latency-injection device records the paging, so traces and replays come from the same
      instrument (paper §3.1: the same swap device both injects delays and logs accesses).
      Every application process runs on the uffd backend with zero delay
      (:func:`disaggsim.swapdev.device.uffd_env`, jemalloc preloaded so the heap is seen)
      and a local budget of its node's memory limit (the budget is per process, the memcg
      limit per node: a node's other processes, e.g. the Dask scheduler beside a worker,
      get a budget each); no swap area, the node groups unlimited. The device's own rmem
      logs become ``nodeN.rmem`` (:func:`~disaggsim.testbed.collect_paging.
      write_device_paging`); there are no ``nodeN.swap`` blktrace files.
    """

    model_config = ConfigDict(extra="forbid")
    sample: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")]
    n_nodes: Annotated[int, Field(ge=2, le=16)] = 3
    apps: Annotated[list[AppConfig], Field(min_length=1)]
    duration_s: Annotated[float, Field(gt=0)] = 30.0
    memory_limit_fraction: Annotated[float, Field(gt=0, le=1)] = 0.25
    working_set_bytes: list[int] | None = None
    calibration_duration_s: Annotated[float, Field(gt=0)] = 10.0
    memory_limit_floor_bytes: Annotated[int, Field(ge=0)] = 24 << 20
    memory_swappiness: Annotated[int, Field(ge=0, le=100)] = 100
    disk_bytes: Annotated[int, Field(ge=64 << 20)] = 2 * GIB
    swap_bytes: Annotated[int, Field(ge=64 << 20)] = 4 * GIB
    pcap_snaplen_bytes: Annotated[int, Field(ge=64, le=65535)] = 96
    blk_act_mask: str = "0xffff"
    blk_keep_actions: str = "all"
    blk_buffer_kb: Annotated[int, Field(ge=1024)] = 32768
    work_dir: Path | None = None
    seed: int = 1
    paging_recorder: Literal["blktrace", "swapdev-uffd"] = "blktrace"

    @field_validator("blk_keep_actions")
    @classmethod
    def _known_actions(cls, v: str) -> str:
        parse_keep_actions(v)
        return v


#: Ready-made configurations; the bundled samples under traces/samples/ were made with them.
PRESETS: Final[dict[str, CollectConfig]] = {
    "memcached-ycsb": CollectConfig(
        sample="memcached-ycsb",
        apps=[MemcachedYcsbConfig(recordcount=100_000, workload="a", target_ops_per_s=100)],
        duration_s=10,
        calibration_duration_s=10,
        pcap_snaplen_bytes=64,
        blk_keep_actions="QDC",
    ),
    "dask-sort": CollectConfig(
        sample="dask-sort",
        apps=[DaskSortConfig(files_per_node=2, records_per_file=50_000, reducers_per_node=2)],
        duration_s=60,
        calibration_duration_s=60,
        pcap_snaplen_bytes=64,
        # Paper Fig. 5 varies local memory 10-100 %; at 25 % the Python workers' runtime alone
        # thrashes (~40 MB/s of swap records: 85 MB of traces for a 6 s sort), too large to
        # bundle, so the bundled sample uses 50 % and keeps only Q/D/C block records.
        memory_limit_fraction=0.5,
        blk_keep_actions="QDC",
    ),
    "dask-sort-large": CollectConfig(
        sample="dask-sort-large",
        apps=[DaskSortConfig(files_per_node=4, records_per_file=100_000, reducers_per_node=2)],
        duration_s=90,
        calibration_duration_s=90,
    ),
    "postgres-pgbench": CollectConfig(
        sample="postgres-pgbench",
        # shared_buffers (192 MB) holds the prewarmed accounts table + index (~150 MB); the
        # 25 % limit leaves ~a third of it resident, so account reads swap pages back in.
        apps=[PgbenchConfig(scale=10, shared_buffers_mb=192, clients_per_node=4, rate_tps=100)],
        duration_s=8,
        calibration_duration_s=8,
        pcap_snaplen_bytes=64,
        blk_keep_actions="QDC",
        disk_bytes=1 * GIB,
        swap_bytes=1 * GIB,
    ),
    # Spark (PySpark jobs on a standalone cluster; testbed/apps/spark.py). The JVMs page
    # heavily: a 1.2 M-word WordCount at 25 % made 750 k swap requests in 61 s (91 MB of
    # traces), a 300 k-word one at 50 % 360 k in 36 s (30 MB; both before young_gen_mb) and
    # a 150 k-word one at 50 % 205 k in 12 s (17 MB), so the bundled samples use 75 %, small
    # inputs and keep only the block issue records (D: what convert reads; Q/D/C made 8-11 MB
    # samples, 90 % of it swap blktrace); the *-large presets are the release-size traces at
    # the paper's 25 % with every record.
    "spark-wordcount": CollectConfig(
        sample="spark-wordcount",
        apps=[SparkConfig(job="wordcount", splits_per_node=2, lines_per_split=2_500)],
        duration_s=30,
        calibration_duration_s=30,
        pcap_snaplen_bytes=64,
        blk_keep_actions="D",
        memory_limit_fraction=0.75,
        disk_bytes=1 * GIB,
        swap_bytes=2 * GIB,
    ),
    "spark-sort": CollectConfig(
        sample="spark-sort",
        apps=[SparkConfig(job="sort", splits_per_node=2, records_per_split=15_000)],
        duration_s=30,
        calibration_duration_s=30,
        pcap_snaplen_bytes=64,
        blk_keep_actions="D",
        memory_limit_fraction=0.75,
        disk_bytes=1 * GIB,
        swap_bytes=2 * GIB,
    ),
    "spark-pagerank": CollectConfig(
        sample="spark-pagerank",
        apps=[
            SparkConfig(
                job="pagerank",
                splits_per_node=2,
                edges_per_split=20_000,
                graph_scale=14,
                iterations=3,
            )
        ],
        duration_s=30,
        calibration_duration_s=30,
        pcap_snaplen_bytes=64,
        blk_keep_actions="D",
        memory_limit_fraction=0.75,
        disk_bytes=1 * GIB,
        swap_bytes=2 * GIB,
    ),
    "spark-wordcount-large": CollectConfig(
        sample="spark-wordcount-large",
        apps=[SparkConfig(job="wordcount", splits_per_node=4, lines_per_split=50_000)],
        duration_s=120,
        calibration_duration_s=120,
        swap_bytes=4 * GIB,
    ),
    "spark-sort-large": CollectConfig(
        sample="spark-sort-large",
        apps=[SparkConfig(job="sort", splits_per_node=4, records_per_split=100_000)],
        duration_s=120,
        calibration_duration_s=120,
        swap_bytes=4 * GIB,
    ),
    "spark-pagerank-large": CollectConfig(
        sample="spark-pagerank-large",
        apps=[
            SparkConfig(
                job="pagerank",
                splits_per_node=4,
                edges_per_split=200_000,
                graph_scale=18,
                iterations=10,
            )
        ],
        duration_s=120,
        calibration_duration_s=120,
        swap_bytes=4 * GIB,
    ),
    "postgres-pgbench-large": CollectConfig(
        sample="postgres-pgbench-large",
        apps=[PgbenchConfig(scale=50, shared_buffers_mb=1024, clients_per_node=8, rate_tps=400)],
        duration_s=60,
        calibration_duration_s=60,
        swap_bytes=4 * GIB,
    ),
    "smoke": CollectConfig(
        sample="smoke",
        # ~80 MB working set, so 25 % of it (or the 24 MB floor) binds with a wide margin; at
        # 20k records the working set (~25-34 MB) sat next to the floor and on some machines
        # memcached did not swap at all.
        apps=[
            MemcachedYcsbConfig(
                recordcount=60_000, workload="a", target_ops_per_s=200, memcached_cache_mb=256
            )
        ],
        duration_s=6,
        calibration_duration_s=3,
        disk_bytes=256 << 20,
        swap_bytes=512 << 20,
    ),
}

REQUIRED_TOOLS: Final = (
    "ip",
    "tcpdump",
    "losetup",
    "mkswap",
    "swapon",
    "swapoff",
    "mkfs.ext4",
    "mount",
    "umount",
    "sysctl",
)


def clock_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC in ns, from the tightest of 20 bracketed readings."""
    best: tuple[int, int] | None = None
    for _ in range(20):
        m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        m2 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or m2 - m1 < best[0]:
            best = (m2 - m1, r - (m1 + m2) // 2)
    assert best is not None
    return best[1]


def _dev_numbers(dev: str) -> tuple[int, int]:
    major, minor = Path(f"/sys/block/{dev}/dev").read_text().strip().split(":")
    return int(major), int(minor)


class PidTracker:
    """Polls the node cgroups' ``tasks`` every ``period_s`` and remembers tid -> node."""

    def __init__(self, memcgs: list[Path], period_s: float = 0.05) -> None:
        self.memcgs = memcgs
        self.pid_node: dict[int, int] = {}
        self.poll()
        self._thread = PollingThread(self.poll, period_s, "pid-tracker")
        self._thread.start()

    def poll(self) -> None:
        """Record the tasks now in each group."""
        for node, cg in enumerate(self.memcgs):
            for tid in memcg_tasks(cg):
                self.pid_node[tid] = node

    def stop(self) -> None:
        """Stop polling, then a last poll; raises what a poll raised."""
        self._thread.stop(last_poll=True)


class Tcpdump:
    """``tcpdump`` on the switch side of node veths, writing nanosecond pcaps."""

    def __init__(self, stack: UndoStack, iface: str, pcap: Path, snaplen: int, log: Path) -> None:
        self.log = log
        self._logf = open(log, "wb")  # noqa: SIM115 - closed in stop()
        with deferred_signals():  # no signal between the start and the push of its stop
            self.proc = subprocess.Popen(
                ns_exec(SWITCH_NS)
                + [
                    "tcpdump",
                    "-i",
                    iface,
                    "-s",
                    str(snaplen),
                    "-n",
                    "-U",
                    "-Z",
                    "root",
                    "--time-stamp-precision=nano",
                    "-w",
                    str(pcap),
                ],
                stdout=subprocess.DEVNULL,
                stderr=self._logf,
                start_new_session=True,
            )
            stack.undo(f"tcpdump on {iface}", self._kill)
        deadline = time.monotonic() + 10
        while "listening on" not in log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tcpdump on {iface} did not start: {log.read_text()}")
            time.sleep(0.05)

    def _kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._logf.close()

    def stop(self) -> dict[str, int]:
        """SIGINT tcpdump (it flushes the pcap) and return its packet counters."""
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)
        self._logf.close()
        text = self.log.read_text(errors="replace")
        counts = {}
        for key in ("captured", "received by filter", "dropped by kernel"):
            m = re.search(rf"(\d+) packets? {key}", text)
            counts[key.replace(" ", "_")] = int(m.group(1)) if m else -1
        return counts


def _check_host() -> None:
    if os.geteuid() != 0:
        raise PermissionError("disaggsim collect needs root (namespaces, cgroups, swap, ftrace)")
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        raise RuntimeError(
            f"missing tools: {' '.join(missing)} (apt-get install iproute2 "
            "tcpdump util-linux e2fsprogs procps)"
        )


#: The node groups run without their OOM killer, woken by OomWaker, if True. False: with it
#: off, memcached's socket reads into swapped-out buffers failed with EFAULT in all 3 start
#: attempts of a quiet fresh-clone CI (2026-11-27 15:41 UTC), where OOM kills with retries
#: had passed every CI before (bench/RESULTS.md, "The collector's memcg v1 OOM");
#: bench/collect_oom_load.py sets it per variant.
NODE_OOM_WAKER = False


def _start_apps(
    apps: list[Any],
    memcgs: list[Path],
    run_stack: UndoStack,
    log_dir: Path,
    steps: tqdm,
    wakers: Sequence[OomWaker] = (),
) -> int:
    """Start every application (its untraced start and load phase) under the memory limits;
    return how many attempts it took.

    Under memcg v1 a group at its limit can fail to reclaim 16 times in a row although swap
    is free (:mod:`disaggsim.testbed.memcg_oom`; seen: memcached of the smoke preset during
    its YCSB load, 24 MiB limit for ~80 MiB, under CPU load). The node groups run without
    their OOM killer (``wakers``, :class:`~disaggsim.testbed.memcg_oom.OomWaker`), but a
    system call that faults then can fail with EFAULT, and a group whose OOM killer is on
    kills. Nothing is traced yet, so an attempt that failed so
    (:func:`~disaggsim.testbed.memcg_oom.oom_kills_named`) is undone (its processes
    stopped, its logs kept as ``attemptN-<log>``) and the start repeated, at most
    ``OOM_ATTEMPTS`` times; any other failure, or the last attempt's, is raised.

    Raises:
        RuntimeError: an application failed to start (the message names its log);
            MemcgOomKill (a RuntimeError) after ``OOM_ATTEMPTS`` attempts that a group
            OOM-killed or was under OOM in.
    """
    for attempt in range(1, OOM_ATTEMPTS + 1):
        attempt_stack = UndoStack()
        try:
            with oom_kills_named(memcgs, wakers), attempt_stack:
                for app in apps:
                    app.start(attempt_stack)
                run_stack.enter_context(attempt_stack.pop_all())
            return attempt
        except MemcgOomKill as exc:
            why = str(exc).splitlines()[-1].strip("()")
            if attempt == OOM_ATTEMPTS:
                raise MemcgOomKill(
                    f"{exc}\n(in each of {OOM_ATTEMPTS} attempts at the start)"
                ) from exc
            steps.write(
                f"collect: {why} during the untraced start (attempt "
                f"{attempt}/{OOM_ATTEMPTS}); retrying"
            )
            for f in list(log_dir.iterdir()):
                if f.is_file() and not f.name.startswith(("calibration-", "attempt")):
                    f.rename(f.with_name(f"attempt{attempt}-{f.name}"))
            for cg in memcgs:
                memcg_reset(cg)
    raise AssertionError("unreachable")


def _run_apps(
    apps: list[Any], stack: UndoStack, duration_s: float, label: str
) -> dict[str, object]:
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def worker(app: Any) -> None:
        try:
            results[app.describe()["app"]] = app.run(stack, duration_s)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(a,), daemon=True) for a in apps]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    with tqdm(total=round(duration_s), desc=label, unit="s", leave=False) as bar:
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
            bar.n = min(round(duration_s), int(time.monotonic() - t0))
            bar.refresh()
    if errors:
        raise errors[0]
    return results


def _machine() -> str:
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return (
        f"{platform.node()}: Linux {platform.release()}, {os.cpu_count()} CPUs, "
        f"{mem_kb / 2**20:.0f} GiB RAM, {platform.python_implementation()} "
        f"{platform.python_version()}"
    )


def _write_readme(out: Path, meta: dict[str, Any]) -> None:
    lines = [
        f"# Sample `{meta['sample']}`",
        "",
        "Real traces recorded by `disaggsim collect` (testbed/collect.py) on an emulated "
        f"{len(meta['nodes'])}-node cluster (network namespaces + memcg v1 + swap), "
        "Gao et al., OSDI'16 §3.",
        "",
    ]
    for app in meta["apps"]:
        lines += [
            f"- Application: {app['application']}",
            f"- Dataset: {app['dataset']}",
            f"- Placement (node indices): `{json.dumps(app['placement'])}`",
            f"- Results: `{json.dumps(app.get('results', {}))}`",
        ]
    lines += [
        "",
        "| node | ip | working set (bytes) | memcg limit (bytes) | swap-outs | "
        "swap-ins | packets |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in meta["nodes"]:
        lines.append(
            f"| {n['node']} | {n['ip']} | {n['working_set_bytes']} | "
            f"{n['memory_limit_bytes']} | {n['swap_out_requests']} | "
            f"{n['swap_in_requests']} | {n['pcap_packets']} |"
        )
    lines += [
        "",
        f"- Memory limit: {meta['memory_limit_fraction']:.0%} of each node's working set "
        f"(working set = peak `memory.max_usage_in_bytes` of the node's memcg in an "
        "untraced calibration run without a limit"
        f"{'; here given in the config' if meta['working_set_given'] else ''}).",
        f"- Traced duration: {meta['duration_s']:.1f} s; swap area {meta['swap_bytes']} B; "
        f"data disk {meta['disk_bytes']} B per node; pcap snaplen "
        f"{meta['pcap_snaplen_bytes']} B.",
        f"- Block records kept (blkparse letters): {meta['blk_keep_actions']}; "
        "the rmem batches were built from all records.",
        f"- Swap request attribution: `{json.dumps(meta['swap_attribution'])}` "
        "(pid = by the submitting task's cgroup; slot = by the swap slot's owner).",
        f"- Command: `{meta['command']}`",
        f"- Machine: {meta['machine']}",
        f"- Date: {meta['date']}",
        "",
        "Files: see testbed/collect.py's docstring for the layout and clocks; "
        "`blkparse -i node0.disk` and `tcpdump -r node0.pcap` read them.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))


#: The environment that runs a process on the paging-recorder device with a local-memory
#: budget of the given bytes (``disaggsim.swapdev.device.recorder_env``).
DeviceEnv = Callable[[int], dict[str, str]]


def collect(
    config: CollectConfig,
    out_dir: Path,
    command: str | None = None,
    device_env: DeviceEnv | None = None,
) -> Path:
    """Run ``config`` on an emulated cluster and write its traces to ``out_dir``.

    ``out_dir`` must not exist or be empty; the traces are assembled in a sibling temp dir
    and renamed into place at the end, so a failed run leaves no partial output (only its
    application logs, moved to ``<out_dir>.failed-logs``; errors quote the failing log).
    ``command`` is recorded in the README (default: this process's argv). ``device_env``
    (needed for ``paging_recorder = "swapdev-uffd"``; ``disaggsim collect`` passes
    ``disaggsim.swapdev.device.recorder_env``) is given, not imported: swapdev runs its
    experiments on this testbed, so the testbed does not import swapdev.

    Returns ``out_dir``. Takes about calibration + load + ``duration_s`` + ~20 s of setup.

    Raises:
        PermissionError: not root.
        RuntimeError: a missing tool, no cgroup v1 memory controller, an active swap area,
            a leftover namespace/cgroup of another collection, or an application failure.
        FileExistsError: ``out_dir`` is not empty.
        ValueError: ``paging_recorder = "swapdev-uffd"`` without ``device_env``.
        disaggsim.signals.Interrupted (a KeyboardInterrupt): SIGINT, SIGTERM or SIGHUP,
            after cleaning up (:func:`disaggsim.signals.interrupt_on_signals`).
        RestoreError: some machine state could not be restored (lists each piece; every
            other undo step ran; the error being unwound is its ``during``/``__cause__``).
    """
    if config.paging_recorder == "swapdev-uffd" and device_env is None:
        raise ValueError(
            'paging_recorder = "swapdev-uffd" needs the device\'s environment: pass '
            "device_env=disaggsim.swapdev.device.recorder_env (`disaggsim collect` does)"
        )
    _check_host()
    out_dir = Path(out_dir).resolve()
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir}: not empty")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    n = config.n_nodes
    if config.working_set_bytes is not None and len(config.working_set_bytes) != n:
        raise ValueError(
            f"working_set_bytes: expected {n} values, got {len(config.working_set_bytes)}"
        )
    n_cpus = os.cpu_count() or 1
    command = command or " ".join(shlex.quote(a) for a in sys.argv)
    steps = tqdm(total=8, desc=f"collect {config.sample}", unit="step")
    with interrupt_on_signals(), UndoStack() as stack:
        stack.callback(steps.close)
        with deferred_signals():  # no signal between a mkdtemp and the push of its removal
            partial = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
            stack.callback(_discard_partial, partial, out_dir)
        work = work_dir(stack, Path(config.work_dir or "/var/tmp"))
        partial.chmod(0o755)  # mkdtemp makes it 0700
        (partial / "logs").mkdir()
        (partial / ".raw").mkdir()

        steps.set_postfix_str("system")
        tracefs = ensure_tracefs(stack)
        disable_zswap(stack)
        make_cluster_network(stack, n)
        on_device = config.paging_recorder == "swapdev-uffd"
        swap_dev = None
        if not on_device:
            swap_dev = loop_device(stack, work / "swap.img", config.swap_bytes)
            swap_area(stack, swap_dev)
        disk_devs, data_dirs, memcgs = [], [], []
        for i in range(n):
            dev = loop_device(stack, work / f"node{i}.disk.img", config.disk_bytes)
            ext4_disk(stack, dev, work / f"mnt{i}")
            disk_devs.append(dev)
            data_dirs.append(work / f"mnt{i}")
            memcgs.append(memcg_group(stack, f"disaggsim-node{i}"))
            (memcgs[i] / "memory.swappiness").write_text(str(config.memory_swappiness))
        steps.update()

        cluster = Cluster(n, memcgs, data_dirs, partial / "logs", config.seed)
        apps = [make_app(a, cluster) for a in config.apps]
        steps.set_postfix_str("data")
        for app in apps:
            app.prepare_data()
        steps.update()

        # Working set: an untraced run without a limit (paper §3.1: limit = 25 % of it).
        if config.working_set_bytes is None:
            steps.set_postfix_str("calibration")
            for cg in memcgs:
                memcg_reset(cg)
            with UndoStack() as run_stack:
                for app in apps:
                    app.start(run_stack)
                _run_apps(apps, run_stack, config.calibration_duration_s, "calibration")
                working_set = [memcg_read_int(cg, "memory.max_usage_in_bytes") for cg in memcgs]
            for f in (partial / "logs").iterdir():
                f.rename(f.with_name("calibration-" + f.name))
        else:
            working_set = list(config.working_set_bytes)
        steps.update()
        limits = []
        for cg, ws in zip(memcgs, working_set, strict=True):
            memcg_reset(cg)
            limit = max(
                config.memory_limit_floor_bytes,
                int(ws * config.memory_limit_fraction) // PAGE_BYTES * PAGE_BYTES,
            )
            if not on_device:  # on the device, the device keeps the budget
                (cg / "memory.limit_in_bytes").write_text(str(limit))
            limits.append(limit)
        wakers = [OomWaker(memcgs, limits)] if NODE_OOM_WAKER and not on_device else []
        for waker in wakers:
            stack.callback(waker.stop)
        device_traces: dict[int, list[Path]] = {}
        if on_device:
            work.chmod(0o711)  # memcached drops to "nobody": its device log goes here
            assert device_env is not None  # checked on entry
            cluster.placement = _device_placement(
                limits, work / "device", device_traces, device_env
            )

        with UndoStack() as run_stack:
            steps.set_postfix_str("start+load")
            start_attempts = _start_apps(apps, memcgs, run_stack, partial / "logs", steps, wakers)
            steps.update()
            tracker = PidTracker(memcgs)
            run_stack.callback(tracker.stop)

            steps.set_postfix_str("tracing")
            offset_ns = clock_offset_ns()
            t0_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            dumps = [
                Tcpdump(
                    run_stack,
                    f"veth{i}",
                    partial / f"node{i}.pcap",
                    config.pcap_snaplen_bytes,
                    partial / "logs" / f"tcpdump-node{i}.log",
                )
                for i in range(n)
            ]
            devices = {
                kernel_dev(*_dev_numbers(d)): partial / f"node{i}.disk"
                for i, d in enumerate(disk_devs)
            }
            swap_kdev = -1
            if swap_dev is not None:
                swap_kdev = kernel_dev(*_dev_numbers(swap_dev))
                devices[swap_kdev] = partial / ".raw" / "swap"
            with deferred_signals():  # no signal between the arming and the push of its undo
                restore_tracer = arm_blk_tracer(
                    tracefs,
                    [*disk_devs, *([swap_dev] if swap_dev else [])],
                    config.blk_buffer_kb,
                    config.blk_act_mask,
                )
                run_stack.undo("tracefs settings", restore_tracer)
            keep = parse_keep_actions(config.blk_keep_actions)
            splitter = BlkTraceSplitter(
                tracefs.root / "trace_pipe",
                devices,
                n_cpus,
                keep={dev: keep for dev in devices if dev != swap_kdev},
            )
            run_stack.callback(splitter.stop)
            steps.update()

            steps.set_postfix_str("run")
            run_t0 = time.monotonic()
            results = _run_apps(apps, run_stack, config.duration_s, "traced run")
            duration_s = time.monotonic() - run_t0
            end_realtime_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + offset_ns
            steps.update()

            steps.set_postfix_str("stop tracing")
            tracefs.write("tracing_on", "0")
            splitter.stop()
            tracker.stop()
            pcap_counts = [d.stop() for d in dumps]
            memstats = [memcg_stat(cg) for cg in memcgs]
            max_usage = [memcg_read_int(cg, "memory.max_usage_in_bytes") for cg in memcgs]
            failcnt = [memcg_read_int(cg, "memory.failcnt") for cg in memcgs]
        # run_stack closed: applications stopped (the device wrote its logs), tracer restored.

        steps.set_postfix_str("outputs")
        start_realtime_ns = t0_ns + offset_ns
        summary: PagingSummary
        missing = [str(t) for ts in device_traces.values() for t in ts if not t.exists()]
        if on_device:
            # A process killed before it could exit (SIGKILL) leaves no log: listed in meta.
            written = {nd: [t for t in ts if t.exists()] for nd, ts in device_traces.items()}
            summary = write_device_paging(written, n, partial, start_realtime_ns, end_realtime_ns)
        else:
            swap_records = read_blktrace(partial / ".raw" / "swap")
            summary = write_node_paging(
                swap_records,
                tracker.pid_node,
                n,
                n_cpus,
                partial,
                t0_ns,
                start_realtime_ns // 1000,
                parse_keep_actions(config.blk_keep_actions),
            )
        shutil.rmtree(partial / ".raw")
        app_meta = []
        for app in apps:
            d = app.describe()
            d["results"] = results.get(str(d["app"]), {})
            app_meta.append(d)
        nodes = []
        for i in range(n):
            nodes.append(
                {
                    "node": i,
                    "ip": node_ip(i),
                    "pcap": f"node{i}.pcap",
                    "disk_blktrace": f"node{i}.disk",
                    "swap_blktrace": None if on_device else f"node{i}.swap",
                    "paging": f"node{i}.rmem",
                    "disk_device": disk_devs[i],
                    "working_set_bytes": working_set[i],
                    "memory_limit_bytes": limits[i],
                    "memory_limit_floor_applied": limits[i] == config.memory_limit_floor_bytes,
                    # False when the floor lifted the limit to the working set or above: that
                    # node's memory is all local and it does not page (paper §3.1 needs it to).
                    "memory_limit_binding": limits[i] < working_set[i],
                    "max_usage_bytes": max_usage[i],
                    "memcg_failcnt": failcnt[i],
                    # Times the group sat at its limit under OOM (OOM killer off) and was woken.
                    "memcg_oom_wakeups": wakers[0].wakeups_per_group[i] if wakers else 0,
                    "memcg_swap_bytes_at_end": memstats[i].get("swap", -1),
                    "memcg_pgmajfault": memstats[i].get("pgmajfault", -1),
                    "swap_out_requests": summary.swap_outs.get(i, 0),
                    "swap_in_requests": summary.swap_ins.get(i, 0),
                    "pcap_packets": pcap_counts[i]["captured"],
                    "pcap_dropped_by_kernel": pcap_counts[i]["dropped_by_kernel"],
                    "pids": sorted(p for p, nd in tracker.pid_node.items() if nd == i),
                }
            )
        meta: dict[str, Any] = {
            "sample": config.sample,
            "nodes": nodes,
            "trace_clock": "mono",
            "trace_clock_offset_ns": offset_ns,
            "start_monotonic_ns": t0_ns,
            "start_realtime_ns": start_realtime_ns,
            "page_bytes": PAGE_BYTES,
            "swap_bytes": config.swap_bytes,
            "paging_recorder": config.paging_recorder,
            "start_attempts": start_attempts,
            "swap_device": swap_dev,
            "disk_bytes": config.disk_bytes,
            "memory_limit_fraction": config.memory_limit_fraction,
            "working_set_given": config.working_set_bytes is not None,
            "apps": app_meta,
            "duration_s": round(duration_s, 3),
            "n_cpus": n_cpus,
            "pcap_snaplen_bytes": config.pcap_snaplen_bytes,
            "pcap_capture_point": "switch side of each node's veth (both directions)",
            "swap_attribution": {
                "by_method": summary.by_method,
                "unattributed_swap_ins": summary.swap_ins.get(-1, 0),
                "unattributed_swap_outs": summary.swap_outs.get(-1, 0),
                "unattributed_files": []
                if on_device
                else ["unattributed.swap", "unattributed.rmem"],
                **({"device_traces_missing": missing} if on_device else {}),
            },
            "blk_records_other_devices": splitter.n_foreign,
            "blk_keep_actions": config.blk_keep_actions,
            "config": json.loads(config.model_dump_json()),
            "command": command,
            "machine": _machine(),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        (partial / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        _write_readme(partial, meta)
        steps.update()
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(partial, out_dir)
    return out_dir


def _device_placement(
    limits: list[int], trace_dir: Path, traces: dict[int, list[Path]], device_env: DeviceEnv
) -> Callable[[int, str], tuple[Path | None, dict[str, str]]]:
    """``Cluster.placement`` that runs every process on the uffd device (zero delay, its
    node's limit as budget, jemalloc) with its own rmem log in ``trace_dir`` (world-writable:
    memcached drops to "nobody"); records each node's logs in ``traces``."""
    trace_dir.mkdir(parents=True, exist_ok=True)
    trace_dir.chmod(0o777)

    def placement(node: int, log_name: str) -> tuple[Path | None, dict[str, str]]:
        trace = trace_dir / f"{log_name}.rmem"
        traces.setdefault(node, []).append(trace)
        return None, {**device_env(limits[node]), "SWAPDEV_TRACE": str(trace)}

    return placement


def _discard_partial(partial: Path, out_dir: Path) -> None:
    """Remove a failed collection's partial output, keeping its application and tcpdump logs.

    Nothing that looks like a result is left: only ``logs/`` survives, moved to
    ``<out_dir>.failed-logs`` (replacing an older one) so that the failure can be diagnosed
    after the fact. No-op after success (the partial directory was renamed to ``out_dir``).
    """
    if not partial.exists():
        return
    logs = partial / "logs"
    if logs.is_dir() and any(logs.iterdir()):
        kept = out_dir.parent / f"{out_dir.name}.failed-logs"
        shutil.rmtree(kept, ignore_errors=True)
        os.replace(logs, kept)
        print(f"collect: failed; its logs are kept in {kept}", file=sys.stderr)
    shutil.rmtree(partial, ignore_errors=True)


def load_config(path: Path) -> CollectConfig:
    """Read a CollectConfig from a TOML or JSON file.

    Raises:
        ValueError: unparsable file or a field that does not validate (names file + field).
    """
    text = Path(path).read_text()
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from exc
    try:
        return CollectConfig.model_validate(data)
    except Exception as exc:
        raise ValueError(f"{path}: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m disaggsim.testbed.collect (--preset NAME | --config FILE) --out DIR``.

    Returns 0, or 2 after printing a one-line error (bad config, not root, a missing tool,
    a busy machine, a failed application, or the :class:`RestoreError` report), or 128 +
    the signal's number after SIGINT, SIGTERM or SIGHUP (one line; everything undone).
    """
    ap = argparse.ArgumentParser(prog="disaggsim collect", description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=sorted(PRESETS))
    src.add_argument("--config", type=Path, help="TOML/JSON CollectConfig")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--paging-recorder",
        choices=["blktrace", "swapdev-uffd"],
        help="override the config's paging_recorder",
    )
    args = ap.parse_args(argv)
    argv_used = sys.argv[1:] if argv is None else argv
    try:
        with interrupt_on_signals():
            config = PRESETS[args.preset] if args.preset else load_config(args.config)
            if args.paging_recorder:
                config = config.model_copy(update={"paging_recorder": args.paging_recorder})
            out = collect(
                config,
                args.out,
                command="python -m disaggsim.testbed.collect " + shlex.join(argv_used),
            )
    except (RuntimeError, PermissionError, FileExistsError, ValueError) as exc:
        print(f"disaggsim collect: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:  # collect() cleaned up before raising it
        print(f"disaggsim collect: interrupted by {exc.signum.name}", file=sys.stderr)
        return 128 + exc.signum
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
