"""The applications ``disaggsim emulate`` runs on the latency-injection device, one run each.

Named presets (``[app] preset = ...``, :data:`PRESETS`) plus any command (``[app] command =
[...]``). Every preset but ``python-sort`` is one of the collector's applications
(:mod:`disaggsim.testbed.collect_apps`), started by the collector's own runner on an
emulated cluster (network namespaces, one memory cgroup per node): one definition of each
application serves ``disaggsim collect`` and ``disaggsim emulate``, including its job
completion time (the runner's ``jct_s``).

The table below is the one place that lists them (paper: Gao et al., OSDI'16, Table 2).
*Working set*: the ``working_set_bytes`` default, per node's data holders: the peak summed
resident set (PSS, sampled every 0.25 s, :class:`_PeakRss`) of the data-holding processes
in a run without a limit on this 2-core VM (``disaggsim emulate`` with ``local_fraction =
1`` on the swap backend, bytes divided by the nodes that hold data), rounded up; it
includes the file pages they map (code, a JVM's jars), which the swap backend's limit does
not cover when another group read them first; *JCT*: the range of that run and its 0 ns
twin, at a load average of 9-16 on the 2 cores (bench/RESULTS.md, "Applications under
emulate (#22 item 1)"). The first three rows keep their earlier sizes and working sets
(``VmHWM`` of each data-holding process, see the comments in :data:`PRESETS`; the PSS
peaks measured now, 73 and 121 MiB, are below them) because the committed sweeps used
them; memcached + YCSB and the Dask sort run shorter than the 10 s the others are sized
for (python-sort: not measured here).

============== ========================== ====================== ============= ===== =====
preset         program (paper Table 2)    data-holding processes JCT           WS    JCT
                                                                 definition    MiB   s
============== ========================== ====================== ============= ===== =====
python-sort    CPython sort of 2 M floats the process            process wall  100   n/m
memcached-ycsb memcached + YCSB A, 50 k   memcached (node 0)     YCSB run      80    5-7
               records, 50 k ops                                 phase
               (Memcached)
dask-sort      Dask sort, 2 x 100 k       the Dask worker, each  driver's      130   0.7-0.8
               100-B records per node     node                   sort job
postgres-      PostgreSQL + pgbench       postmaster + backends  transactions  190   14-18
pgbench        select-only, scale 10,     (node 0)               / tps of the
               4 x 60 k transactions                             slowest client
               (SQL)
spark-         Spark WordCount, 4 x 100 k executor JVM + its     driver's job  310   15-18
wordcount      Zipf lines (Spark WC)      PySpark workers, each  time
                                          node
spark-sort     Spark sortByKey, 400 k     same                   same          330   13-15
               records (Spark Sort)
spark-pagerank Spark PageRank, R-MAT 2^16 same                   same          380   29-30
               vertices, 400 k edges, 5
               steps (GraphLab)
spark-sql-bdb  Spark SQL BDB queries 1B,  same                   same          460   49-61
               2A, 3A: 80 k rankings,
               240 k uservisits (SparkSQL
               BDB)
hadoop-        Hadoop WordCount, 4 x      the job's JVM (local   JVM wall      540   19-21
wordcount      100 k Zipf lines (Hadoop   mode, node 0)
               WC)
hadoop-        Hadoop TeraSort of 2 M     same                   same (TeraGen 660   34-39
terasort       TeraGen records (Hadoop                           untimed)
               Sort)
timely-        Timely dataflow PageRank,  the 2 Timely           slowest       220   17-19
pagerank       R-MAT 2^20 vertices, 2 x   processes              process's
               4 M edges, 20 steps                               job time
               (Timely)
============== ========================== ====================== ============= ===== =====

A config resizes a preset with ``[app] params`` (fields of its collector config above,
validated by that class, :class:`disaggsim.swapdev.emulate.AppSection`) and then gives the
``working_set_bytes`` measured at that size: the application study's Figure 2 configs
(``configs/app-study-*-fig2.toml``) run Timely, Hadoop TeraSort and Spark SQL so, at sizes
whose runs take seconds, not minutes, at 25 % local.

Not here: GraphLab, Spark Streaming and HERD (no package of them runs here; PageRank on
Spark and Timely stands for the graph workload).

Local memory: ``local_fraction`` x ``working_set_bytes`` per node's data holders. On the
``swap`` backend those processes run in their own memory cgroup (v1) with that limit (the
other processes, clients, schedulers, Spark's master, worker and driver, are not
limited) and without its OOM killer: a task whose reclaim found nothing 16 times sleeps
and is woken (:class:`OomWaker`) instead of being killed (memcg v1 killed a process of
the small Timely PageRank at 50 % in 2 runs of 3; with the waker none was, but a system
call that faulted then can fail with EFAULT, and the run is repeated, see
:class:`MemcgOomKill`); on the
``uffd`` backend they get the device preloaded with that budget **as the node's**: each
run creates one node segment per node (:func:`disaggsim.swapdev.device.node_segment`,
``SWAPDEV_NODE_SHM``; unlinked at the run's end, also on a failure or a timeout), and
every process of the node that loads the library (exec'd with ``LD_PRELOAD``, or forked
from one that had it: the device follows ``fork()``) shares it, so the node's device
processes together hold at most the budget locally (plus the faults in flight, less than
an eviction batch), as the swap backend's limit on the node's group. A fault at the
node's budget takes a batch from the process holding the node's oldest local page
(FIFO across the node's processes, the memcg LRU's order in first approximation); a
page a forked child shares copy-on-write with its parent counts once, in the parent,
until it stops being shared, as the kernel charges it (``swapdev/doc/swapdev.md``, "One
budget per node"; before 2026-11-28 it counted in both).
The per-node counters (peak, fallbacks) are in each run's ``detail["node_counters"]``.
The uffd device sees only ``mmap`` calls made through the PLT
(``swapdev/src/uffd_preload.c``):

- glibc malloc's own large mmaps are invisible to it, so memcached's slabs, Dask's NumPy
  buffers and the Timely workers' vectors would stay local: these presets preload
  jemalloc (Debian ``libjemalloc2``) with the device, whose heap comes from ``mmap``
  calls the device sees (``[app] jemalloc`` overrides);
- the JVM's heap is seen: HotSpot (libjvm) reserves it ``PROT_NONE`` and commits it with
  ``mmap(MAP_FIXED, PROT_READ|PROT_WRITE)`` through the PLT, which the device registers.
  Checked: ``java -Xms256m -Xmx256m -XX:+AlwaysPreTouch`` with a 64 MiB budget swaps out
  51 296 pages (200 MiB), and a program growing its heap to 300 MiB under 64 MiB pages
  425 MiB out. The Spark executors get the device through ``spark.executorEnv``
  (:mod:`disaggsim.testbed.apps.spark`) and every process writes its own trace
  (``SWAPDEV_TRACE`` ``%p``). A PySpark RDD job's records live in the Python workers
  that ``pyspark.daemon`` forks; the device follows the fork (each worker runs a device
  of its own, in the node's budget, and writes its own trace, also when it ends with
  ``os._exit``), so the RDD presets (WordCount, Sort, PageRank) run on both backends
  (before the budget was the node's, each of a node's executor JVM, daemon and workers
  had the whole budget and ``spark-wordcount`` at 25 % paged 0 bytes: bench/RESULTS.md,
  "The uffd device follows fork()"); ``spark-sql-bdb`` keeps its tables and operators in
  the executor JVM (cached DataFrames) and runs on both;
- the Timely and Hadoop presets run on both: jemalloc purges whole extents with
  ``madvise(MADV_DONTNEED)`` and HotSpot uncommits heap with ``mmap(MAP_FIXED,
  PROT_NONE)``, which the device once mishandled (a frozen Timely process, a HotSpot crash
  report; fixed, ``swapdev/doc/swapdev.md``, "Limits and known issues");
- PostgreSQL's buffer cache is a shared anonymous mapping that the postmaster makes and
  its forked backends inherit: the device registers it too (:attr:`Preset.shared_memory`,
  ``swapdev/src/uffd_shmem.c``) and counts its local pages in the node's one budget
  above, once however many server processes map them, its oldest pages competing with
  the backends' private ones (as the memcg charges shmem and anonymous pages to one
  limit; before 2026-11-29 the mapping had a budget of its own, ``local_fraction`` of
  it, beside the node's); a page goes remote only once every server process has zapped
  its page-table entry (a fault over the budget only by such pages waits for the zaps;
  ``swapdev/doc/swapdev.md``, "Shared anonymous memory").
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeAlias

from disaggsim.polling import PollingThread
from disaggsim.swapdev import device
from disaggsim.testbed import collect_env as env
from disaggsim.testbed.apps.hadoop_mr import LOG_NAME as HADOOP_LOG_NAME
from disaggsim.testbed.apps.hadoop_mr import HadoopConfig
from disaggsim.testbed.apps.pgbench import PgbenchConfig
from disaggsim.testbed.apps.spark import EXECUTOR_LOG_NAME, SparkConfig
from disaggsim.testbed.apps.timely import LOG_NAME as TIMELY_LOG_NAME
from disaggsim.testbed.apps.timely import TimelyConfig
from disaggsim.testbed.collect_apps import (
    Cluster,
    DaskSortConfig,
    MemcachedYcsbConfig,
    make_app,
)
from disaggsim.testbed.memcg_oom import OomWaker, oom_kills_named
from disaggsim.traces.paging import read_rmem

PYTHON_SORT: Final = (
    "import random\nrandom.seed(1)\na = [random.random() for _ in range(2_000_000)]\n"
    "a.sort()\nprint(sum(a[::1000]))"
)


#: The collector applications ``emulate`` runs (their configs, testbed/collect_apps.py).
AppConfig: TypeAlias = (
    MemcachedYcsbConfig | DaskSortConfig | PgbenchConfig | SparkConfig | TimelyConfig | HadoopConfig
)


@dataclass(frozen=True)
class Preset:
    """One named application: a command, or a collector application on ``n_nodes``.

    ``holders``: log-name prefixes (``Cluster.spawn`` / ``Cluster.adopt``) of the
    processes whose memory is made remote; ``working_set_bytes``: per node's holders;
    ``jemalloc``: preload jemalloc with the uffd device by default; ``shared_memory``:
    its data is in a shared anonymous mapping (PostgreSQL's shared buffers), which the uffd
    device registers too (``SWAPDEV_SHARED_LOCAL_FRACTION``,
    :func:`disaggsim.swapdev.device.uffd_env`), in the node's one budget with the node's
    private pages (the run's node segment; without one, a budget of its own).
    """

    name: str
    working_set_bytes: int
    command: tuple[str, ...] = ()
    app: AppConfig | None = None
    n_nodes: int = 2
    holders: tuple[str, ...] = ()
    jemalloc: bool = False
    shared_memory: bool = False


PRESETS: Final[dict[str, Preset]] = {
    # Peak RSS 103 MB (configs/emulate-python-sort.toml); 100 MiB as in the committed sweeps.
    "python-sort": Preset(
        "python-sort", 100 << 20, command=("/usr/bin/python3", "-c", PYTHON_SORT)
    ),
    # memcached's VmHWM after the YCSB load and run phases without the device, with
    # jemalloc: 80576 kB (79 MiB).
    "memcached-ycsb": Preset(
        "memcached-ycsb",
        80 << 20,
        app=MemcachedYcsbConfig(
            recordcount=50_000,
            workload="a",
            target_ops_per_s=0,
            operationcount=50_000,
            memcached_cache_mb=256,
        ),
        holders=("memcached",),
        jemalloc=True,
    ),
    # A Dask worker's VmHWM during the sort with a budget that never binds (uffd, 4 GiB):
    # 136 MB = 130 MiB (Python runtime, distributed, NumPy buffers; 2 workers: 273 MB).
    "dask-sort": Preset(
        "dask-sort",
        130 << 20,
        app=DaskSortConfig(files_per_node=2, records_per_file=100_000, reducers_per_node=2),
        holders=("dask-worker",),
        jemalloc=True,
    ),
    # The presets below: working set = the table's (module docstring), measured with
    # bench/bench_emulate_apps.py --mode working-set (bench/RESULTS.md).
    "postgres-pgbench": Preset(
        "postgres-pgbench",
        190 << 20,
        app=PgbenchConfig(
            scale=10,
            shared_buffers_mb=192,
            clients_per_node=4,
            rate_tps=0,
            builtin="select-only",
            transactions_per_client=60_000,
        ),
        holders=("postgres",),
        shared_memory=True,
    ),
    "spark-wordcount": Preset(
        "spark-wordcount",
        310 << 20,
        app=SparkConfig(job="wordcount", splits_per_node=2, lines_per_split=100_000),
        holders=(EXECUTOR_LOG_NAME,),
    ),
    "spark-sort": Preset(
        "spark-sort",
        330 << 20,
        app=SparkConfig(job="sort", splits_per_node=2, records_per_split=100_000),
        holders=(EXECUTOR_LOG_NAME,),
    ),
    "spark-pagerank": Preset(
        "spark-pagerank",
        380 << 20,
        app=SparkConfig(
            job="pagerank", splits_per_node=2, edges_per_split=100_000, graph_scale=16, iterations=5
        ),
        holders=(EXECUTOR_LOG_NAME,),
    ),
    "spark-sql-bdb": Preset(
        "spark-sql-bdb",
        460 << 20,
        app=SparkConfig(
            job="sql-bdb", splits_per_node=2, rankings_per_split=20_000, uservisits_per_split=60_000
        ),
        holders=(EXECUTOR_LOG_NAME,),
    ),
    "hadoop-wordcount": Preset(
        "hadoop-wordcount",
        540 << 20,
        app=HadoopConfig(job="wordcount", splits=4, lines_per_split=100_000),
        n_nodes=1,
        holders=(HADOOP_LOG_NAME,),
    ),
    "hadoop-terasort": Preset(
        "hadoop-terasort",
        660 << 20,
        app=HadoopConfig(job="terasort", splits=4, records=2_000_000),
        n_nodes=1,
        holders=(HADOOP_LOG_NAME,),
    ),
    "timely-pagerank": Preset(
        "timely-pagerank",
        220 << 20,
        app=TimelyConfig(graph_scale=20, edges_per_worker=4_000_000, iterations=20),
        holders=(TIMELY_LOG_NAME,),
        jemalloc=True,
    ),
}

# --- COMEX (#23): a sequential-heavy numeric preset -------------------------------------
#: NumPy sorts 4 M random float64 (32 MiB): its introsort partitions the array by
#: sequential scans from both ends, level after level; the stand-in for PBBS FSORT
#: (floating-point sort, COMEX Table 1; NPB and PBBS are not packaged here).
NUMPY_SORT: Final = (
    "import numpy as np\na = np.random.default_rng(1).random(4 << 20)\na.sort()\n"
    "print(float(a[:: 1 << 16].sum()))"
)
# The array is 32 MiB and sorted in place; the working set is the array (jemalloc serves
# it from one mmap the uffd device sees). The venv's interpreter: NumPy is a dependency.
PRESETS["numpy-sort"] = Preset(
    "numpy-sort", 32 << 20, command=(sys.executable, "-c", NUMPY_SORT), jemalloc=True
)
# -------------------------------------------------------------------------------------------

_COUNTERS = re.compile(
    r"swapdev (?:uffd|fuse): (\d+) swap-ins \((\d+) pages\), (\d+) swap-outs \((\d+) pages\)"
)


def device_counters(text: str) -> tuple[int, int]:
    """Swap-in and swap-out bytes from the device's exit summaries in ``text`` (one line
    per process that paged, ``sd_run_finish`` in ``swapdev/src/sd_user.c``), summed."""
    pages_in = pages_out = 0
    for m in _COUNTERS.finditer(text):
        pages_in += int(m.group(2))
        pages_out += int(m.group(4))
    return pages_in * 4096, pages_out * 4096


def swap_bytes_in_window(trace: Path, start_ns: int, end_ns: int) -> tuple[int, int]:
    """Swap-in and swap-out bytes of the device's rmem trace (absolute epoch µs stamps)
    between ``start_ns`` and ``end_ns`` (epoch ns): the job's own paging, without the
    set-up's (a preset's load phase). Read with the converter's reader
    (:func:`disaggsim.traces.paging.read_rmem`). Raises FileNotFoundError if the device
    wrote no trace (it did not exit cleanly). A trace whose last line is cut (no final
    newline: a forked worker killed while its device wrote, as a PySpark worker dies by its
    daemon's SIGHUP; ``sd_run_forked_child`` writes it in place) is read up to its last
    whole line."""
    if trace.stat().st_size == 0:
        return 0, 0
    data = trace.read_bytes()
    if data.endswith(b"\n"):
        return _swap_bytes_between(trace, start_ns, end_ns)
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / trace.name
        whole.write_bytes(data[: data.rfind(b"\n") + 1])
        return _swap_bytes_between(whole, start_ns, end_ns) if whole.stat().st_size else (0, 0)


def _swap_bytes_between(trace: Path, start_ns: int, end_ns: int) -> tuple[int, int]:
    """:func:`swap_bytes_in_window` of a trace of whole lines."""
    df = read_rmem(trace, time_base="absolute")
    inside = df[(df["realtime_ns"] >= start_ns) & (df["realtime_ns"] <= end_ns)]
    by_op = inside.groupby("op")["size_bytes"].sum()
    return int(by_op.get("R", 0)), int(by_op.get("W", 0))


@dataclass
class Outcome:
    """One run: ``status`` ``ok`` or ``timeout``; JCT (None on timeout), the device's swap
    bytes, the wall time of the timed part (s) and the data-holding processes' peak
    summed resident set (PSS sampled by :class:`_PeakRss`, bytes; None for a command)."""

    status: str
    jct_s: float | None
    swap_in_bytes: int | None
    swap_out_bytes: int | None
    wall_s: float
    peak_rss_bytes: int | None = None
    detail: dict[str, object] = field(default_factory=dict)


#: Runs of :func:`run_command` by this process so far: with the pid, the name of each
#: run's process cgroup.
_RUNS: Final = itertools.count()


def _run_cgroup_name(pid: int | str, run: int | str) -> str:
    """The name of run ``run``'s process cgroup (in ``collect_env.PIDS_ROOT``) of
    :func:`run_command` called by process ``pid``: the pid tells one engineer's groups from
    another's on a shared machine (the group's owner is its record,
    :data:`disaggsim.testbed.collect_env.RUN_CGROUP`)."""
    return f"disaggsim-run-{pid}-{run}"


def run_cgroups(pid: int) -> list[Path]:
    """The process cgroups of :func:`run_command` runs by process ``pid`` that exist now
    (none once its runs ended)."""
    return sorted(env.PIDS_ROOT.glob(_run_cgroup_name(pid, "*")))


def run_command(
    argv: list[str], timeout_s: float, extra_env: dict[str, str], memcg: Path | None = None
) -> tuple[str, float, subprocess.CompletedProcess[str]]:
    """Run ``argv`` (in ``memcg`` if given) in a process cgroup of its own
    (:func:`disaggsim.testbed.collect_env.run_cgroup`); on ``timeout_s`` kill every
    process in that cgroup with SIGKILL until it is empty, and remove it.

    The one way a run's processes are killed, on every backend: a process the command
    started is in the cgroup whatever its session or process group (``setsid``, a
    daemon), where a kill of the process group missed it (it ran on after the timeout on
    the uffd backend, which has no memory cgroup to sweep). The cgroup is removed when
    the run ends, on success, failure, timeout and interrupt (SIGINT, SIGTERM, SIGHUP
    under :func:`disaggsim.signals.interrupt_on_signals`: whatever is still in it is
    killed first, SIGTERM then SIGKILL; so is a process the command left running when it
    exited). The group records this process as its owner: groups that runs of a process
    killed with SIGKILL left are removed first, and what still runs in them killed
    (:func:`disaggsim.testbed.collect_env.run_cgroup`, :func:`disaggsim.owners.reap_dead`);
    before, a later process that got the same pid failed to make its first group
    ("exists"). Root (cgroups).

    Returns (``"ok"`` or ``"timeout"``, wall seconds, the completed process with output).
    Raises RuntimeError if the pids cgroup hierarchy is missing or a killed process
    outlives SIGKILL for 5 s.
    """
    name = _run_cgroup_name(os.getpid(), next(_RUNS))
    with env.UndoStack() as stack:
        run = env.run_cgroup(stack, name)
        groups = [run] if memcg is None else [memcg, run]
        # The shell joins the groups before it execs: all the command's processes are in.
        join = " && ".join(f"echo $$ > {shlex.quote(str(g / 'cgroup.procs'))}" for g in groups)
        cmd = ["sh", "-c", f'{join} && exec "$@"', "sh", *argv]
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, **extra_env},
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
            status = "ok"
        except subprocess.TimeoutExpired:
            proc.kill()  # in case the shell has not joined the group yet
            # Every process of the run at once; the group's undo step finds it gone.
            env.remove_cgroup(run, first=signal.SIGKILL)
            out, err = proc.communicate()
            status = "timeout"
        wall = time.monotonic() - start
    return status, wall, subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@dataclass
class ClusterSession:
    """A collector cluster set up for a series of preset runs (network, memcgs, data)."""

    preset: Preset
    cluster: Cluster
    holder_memcgs: list[Path]
    work: Path


@contextmanager
def cluster_session(stack: env.UndoStack, preset: Preset, work: Path) -> Iterator[ClusterSession]:
    """Set up the preset's emulated cluster with the collector's code (root; undone on
    ``stack``): node namespaces, per-node memcgs (unlimited), a limited memcg per node for
    the data-holding processes, and the application's input data (Dask)."""
    assert preset.app is not None
    n = preset.n_nodes
    env.make_cluster_network(stack, n)
    memcgs = [env.memcg_group(stack, f"disaggsim-node{i}") for i in range(n)]
    holders = [env.memcg_group(stack, f"disaggsim-emulate-node{i}") for i in range(n)]
    data_dirs = []
    for i in range(n):
        d = work / f"node{i}"
        d.mkdir(parents=True, exist_ok=True)
        data_dirs.append(d)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    cluster = Cluster(n, memcgs, data_dirs, logs, seed=1)
    make_app(preset.app, cluster).prepare_data()
    yield ClusterSession(preset, cluster, holders, work)


def run_preset_once(
    session: ClusterSession,
    backend: str,
    model: device.DelayModel,
    local_bytes: int,
    timeout_s: float,
    run_dir: Path,
    page_cluster: int,
    jemalloc: bool,
    eviction: device.EvictionPolicy = "fifo",
    paging: device.PagingPolicy = "demand",
    queue_depth: int = 1,
    device_env: dict[str, str] | None = None,
) -> Outcome:
    """One run of a cluster preset: start the application (untimed: memcached + YCSB load,
    Dask scheduler + workers), run its job under ``timeout_s`` (then every process of the
    run is killed and the run reported as ``timeout``), stop it, read the device counters.
    ``eviction`` and ``paging`` are the uffd backend's policies (``SWAPDEV_EVICTION``,
    ``SWAPDEV_PAGING``), ``device_env`` more uffd ``SWAPDEV_*`` variables (the comex
    parameters), ``queue_depth`` the swap backend's (``SWAPDEV_QUEUE_DEPTH``).

    Raises RuntimeError if the application fails (its log's last lines quoted);
    memcg_oom.MemcgOomKill, a RuntimeError, if a node's memory cgroup OOM-killed one of its
    processes.
    """
    preset, cluster = session.preset, session.cluster
    assert preset.app is not None
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o777)  # memcached drops to "nobody"; the device writes at its exit
    cluster.log_dir, cluster.procs, cluster.logs, cluster.adopted = run_dir, [], {}, {}
    memcgs = [*cluster.memcgs, *session.holder_memcgs]
    for cg in memcgs:
        env.memcg_reset(cg)
    timed_out = threading.Event()
    fuse_trace: Path | None = None
    wakers: list[OomWaker] = []
    node_counters: list[device.NodeCounters | None] = []
    with oom_kills_named(memcgs, wakers), env.UndoStack() as stack:
        if backend == "swap":
            stack.enter_context(device.page_cluster(page_cluster))
            size = max(4 * preset.working_set_bytes * max(1, len(preset.holders)), 256 << 20)
            dev = device.fuse_loop_device(
                stack, run_dir / "dev", size - size % 4096, model, queue_depth
            )
            env.disable_zswap(stack)
            env.swap_area(stack, os.path.basename(dev.loop))
            fuse_trace = dev.trace
            for cg in session.holder_memcgs:
                (cg / "memory.limit_in_bytes").write_text(str(local_bytes))
            wakers.append(
                OomWaker(session.holder_memcgs, [local_bytes] * len(session.holder_memcgs))
            )
            stack.callback(wakers[-1].stop)
            extra: dict[str, str] = {}
        else:
            for cg in session.holder_memcgs:
                (cg / "memory.limit_in_bytes").write_text("-1")
            # Shared mappings are registered (PostgreSQL's buffers), in the node's budget
            # (the segment below); the fraction is their own budget only off a node.
            shared = (
                min(1.0, local_bytes / preset.working_set_bytes) if preset.shared_memory else None
            )
            extra = {
                **device.uffd_env(
                    model, local_bytes, jemalloc, eviction, paging, shared_local_fraction=shared
                ),
                **(device_env or {}),
            }
            # One budget per node, as the memory cgroup's limit on the swap backend: a
            # segment per node, shared by its device processes (forked workers included).
            # Spark passes one environment to every node's executor: the name has "%n", the
            # node's network namespace (device.per_node_segments).
            shm, segments = stack.enter_context(
                device.per_node_segments(
                    [
                        device.netns_inode(env.NETNS_DIR / env.node_ns(node))
                        for node in range(len(session.holder_memcgs))
                    ]
                )
            )
            # Read after the application stopped (its exit is popped from the stack first),
            # before the segments are unlinked.
            stack.callback(lambda: node_counters.extend(s.counters() for s in segments))

        def placement(node: int, log_name: str) -> tuple[Path | None, dict[str, str]]:
            if not log_name.startswith(preset.holders):
                return None, {}
            if backend == "uffd":  # one trace per process: the job's window is counted
                return session.holder_memcgs[node], {
                    **extra,
                    "SWAPDEV_TRACE": str(run_dir / f"{log_name}.%p.rmem"),
                    "SWAPDEV_NODE_SHM": shm,
                }
            return session.holder_memcgs[node], extra

        cluster.placement = placement
        app = make_app(preset.app, cluster)
        app.start(stack)

        def expire() -> None:
            timed_out.set()
            for proc in cluster.procs:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            for pid in cluster.adopted:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

        peaks = _PeakRss(session.holder_memcgs)
        timer = threading.Timer(timeout_s, expire)
        start = time.monotonic()
        window_ns = [time.time_ns(), 0]
        timer.start()
        try:
            results = app.run(stack, timeout_s)
        except RuntimeError:
            if not timed_out.is_set():
                raise
            results = {}
        finally:
            timer.cancel()
            peaks.stop()
        wall = time.monotonic() - start
        window_ns[1] = time.time_ns()
        peak_rss = peaks.total_bytes()
        peak_memcg = sum(
            int((cg / "memory.max_usage_in_bytes").read_text()) for cg in session.holder_memcgs
        )
        holder_pids = {pid: name for pid, name in _holders(cluster, preset.holders)}
    # The stack stopped every process (SIGTERM): the device wrote its outputs; after a
    # timeout the holders were SIGKILLed and wrote nothing.
    if timed_out.is_set():
        return Outcome(
            "timeout", None, None, None, wall, peak_rss or None, {"peak_memcg_bytes": peak_memcg}
        )
    if fuse_trace is not None:
        swap_in, swap_out = swap_bytes_in_window(fuse_trace, window_ns[0], window_ns[1])
    else:
        for pid, name in holder_pids.items():
            if not (run_dir / f"{name}.{pid}.rmem").exists():
                raise RuntimeError(
                    f"{run_dir / f'{name}.{pid}.rmem'}: the device wrote no "
                    f"trace (process {pid} did not exit cleanly; see the logs "
                    f"in {run_dir})"
                )
        # Every process that inherited the device wrote one (a Spark executor's PySpark
        # daemon and the workers it forks too): all are the holders' paging.
        swap_in = swap_out = 0
        for trace in sorted(run_dir.glob("*.rmem")):
            got = swap_bytes_in_window(trace, window_ns[0], window_ns[1])
            swap_in, swap_out = swap_in + got[0], swap_out + got[1]
    return Outcome(
        "ok",
        app.jct_s(results),
        swap_in,
        swap_out,
        wall,
        peak_rss or None,
        {"results": results, "peak_memcg_bytes": peak_memcg, "node_counters": node_counters},
    )


def _holders(cluster: Cluster, prefixes: tuple[str, ...]) -> list[tuple[int, str]]:
    """(pid, log name) of the cluster's data-holding processes: those it spawned and those
    the application adopted (a Spark executor) whose name starts with one of ``prefixes``."""
    out = [
        (p.pid, cluster.logs[p.pid].stem)
        for p in cluster.procs
        if cluster.logs[p.pid].name.startswith(prefixes)
    ]
    return out + [(pid, name) for pid, name in cluster.adopted.items() if name.startswith(prefixes)]


class _PeakRss:
    """Samples the resident memory of the processes in ``memcgs`` every ``period_s`` in a
    thread: per sample the sum of their proportional set sizes (``Pss`` of
    ``/proc/PID/smaps_rollup``: a page shared by k processes counts 1/k in each, so
    PostgreSQL's shared buffers count once, not once per backend), and
    :meth:`total_bytes` is the largest sum seen. Sampling, not ``VmHWM``, so that processes
    that exit with the job (a Spark executor stops with its driver) are counted and shared
    pages are not."""

    def __init__(self, memcgs: list[Path], period_s: float = 0.25) -> None:
        self.memcgs, self.period_s = memcgs, period_s
        self.peak = 0
        self._thread = PollingThread(self._sample, period_s, "peak-pss")
        self._thread.start()

    def _sample(self) -> None:
        total = 0
        for cg in self.memcgs:
            try:
                pids = [int(p) for p in (cg / "cgroup.procs").read_text().split()]
            except FileNotFoundError:
                continue
            total += sum(_pss_bytes(pid) for pid in pids)
        self.peak = max(self.peak, total)

    def stop(self) -> None:
        """Stop the thread, then one last sample; raises what a sample raised."""
        self._thread.stop(last_poll=True)

    def total_bytes(self) -> int:
        """The largest summed ``Pss`` seen (bytes)."""
        return self.peak


def _pss_bytes(pid: int) -> int:
    """Proportional set size of a live process (``smaps_rollup`` ``Pss``), 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0
