"""The applications ``disaggsim collect`` runs on the emulated cluster, and their configs.

Each application is started inside the nodes' network namespaces and memory cgroups
(:func:`disaggsim.testbed.collect_env.spawn_in_node`) in three steps the collector calls:

- ``prepare_data``: once, before any run (e.g. write the sort input to the nodes' disks);
- ``start``: start servers and load data, untraced (the YCSB load phase);
- ``run``: the traced phase; blocks until the workload finished; returns its statistics.

Applications (both real programs from Debian/PyPI, with traffic crossing nodes):

- ``memcached-ycsb``: Debian's memcached on node 0, YCSB core workload A/B clients
  (:mod:`disaggsim.testbed.apps.ycsb`, pymemcache) on every other node;
- ``dask-sort``: a Dask distributed scheduler on node 0, one worker per node with its local
  directory on the node's data disk, sorting sort-benchmark records
  (:mod:`disaggsim.testbed.apps.dask_sort`);
- ``postgres-pgbench``: Debian's PostgreSQL on node 0, ``pgbench`` TPC-B-like clients on every
  other node, the SQL workload (:mod:`disaggsim.testbed.apps.pgbench`);
- ``spark``: a Spark standalone cluster (PyPI pyspark, Debian OpenJDK), master and driver on
  node 0, a worker and its executor on every node, running WordCount, Sort or PageRank
  (:mod:`disaggsim.testbed.apps.spark`, :mod:`disaggsim.testbed.apps.spark_jobs`);
- ``timely-pagerank``: PageRank as a Timely dataflow (crates.io ``timely``), one process per
  node (:mod:`disaggsim.testbed.apps.timely`).
- ``hadoop-mapreduce``: Hadoop MapReduce WordCount or TeraSort (Maven Central jars) in
  local mode, one JVM on node 0 (:mod:`disaggsim.testbed.apps.hadoop_mr`).

Each runner also defines its job completion time (``jct_s``), which ``disaggsim emulate``
reports (:mod:`disaggsim.swapdev.emulate_apps`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from disaggsim.testbed.apps.hadoop_mr import HadoopConfig, HadoopMapReduce
from disaggsim.testbed.apps.pgbench import PgbenchConfig, PostgresPgbench
from disaggsim.testbed.apps.spark import SparkConfig, SparkStandalone
from disaggsim.testbed.apps.timely import TimelyConfig, TimelyPagerank
from disaggsim.testbed.collect_env import (
    UndoStack,
    last_json_line,
    node_ip,
    node_ns,
    sh,
    spawn_in_node,
    wait_tcp,
)


class MemcachedYcsbConfig(BaseModel):
    """memcached on node 0 driven by YCSB clients on the other nodes.

    ``recordcount`` x ~1.1 KB records are loaded (untraced), then each client runs the
    workload for the traced duration at ``target_ops_per_s`` (YCSB ``-target``, per client).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["memcached-ycsb"] = "memcached-ycsb"
    recordcount: Annotated[int, Field(ge=1)] = 60_000
    workload: Literal["a", "b"] = "a"
    target_ops_per_s: Annotated[float, Field(ge=0)] = 300.0
    #: Operations per client in the run phase (YCSB ``operationcount``); 0: run for the
    #: whole duration. ``disaggsim emulate`` sets it so the run phase is a job.
    operationcount: Annotated[int, Field(ge=0)] = 0
    memcached_cache_mb: Annotated[int, Field(ge=16)] = 1024
    memcached_threads: Annotated[int, Field(ge=1)] = 2
    #: memcached ``-o`` options. Default: no LRU crawler / maintainer threads, as memcached
    #: 1.4 (the paper's era) ran by default; 1.5+'s background threads walk the whole cache
    #: every second, which at 25 % memory turns into ~6000 swap requests/s at 200 ops/s.
    memcached_options: str = "no_lru_crawler,no_lru_maintainer"
    port: int = 11211


class DaskSortConfig(BaseModel):
    """Dask distributed sort of ``files_per_node * records_per_file`` 100-byte records per
    node (sort-benchmark format), range-partitioned into ``reducers_per_node`` per node."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["dask-sort"] = "dask-sort"
    files_per_node: Annotated[int, Field(ge=1)] = 4
    records_per_file: Annotated[int, Field(ge=1)] = 100_000
    reducers_per_node: Annotated[int, Field(ge=1)] = 2
    port: int = 8786


AppConfig = Annotated[
    MemcachedYcsbConfig
    | DaskSortConfig
    | PgbenchConfig
    | SparkConfig
    | TimelyConfig
    | HadoopConfig,
    Field(discriminator="kind"),
]


#: ``Cluster.placement(node, log_name)``: the memory cgroup (None: the node's) and the extra
#: environment of one process, e.g. the latency-injection device's LD_PRELOAD.
Placement = Callable[[int, str], tuple[Path | None, dict[str, str]]]


@dataclass
class Cluster:
    """What an application needs to know about the emulated cluster.

    ``placement`` (optional) changes where one process runs: ``disaggsim emulate`` puts the
    processes that hold an application's data in their own limited memory cgroup or on the
    userfaultfd device, and ``disaggsim collect --paging-recorder swapdev-uffd`` preloads the
    device into every process (:mod:`disaggsim.swapdev`).
    """

    n_nodes: int
    memcgs: list[Path]
    data_dirs: list[Path]
    log_dir: Path
    seed: int
    #: pid -> the log file its output goes to (for the error message when it fails).
    logs: dict[int, Path] = field(default_factory=dict)
    placement: Placement | None = None
    #: Every process started, in order (a time limit stops them all).
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    #: pid -> log name of the processes an application's own daemon started and the
    #: application handed to :meth:`adopt` (a Spark worker's executor JVM).
    adopted: dict[int, str] = field(default_factory=dict)

    def child_env(self, log_name: str) -> dict[str, str]:
        """The extra environment ``placement`` gives processes named ``log_name`` that an
        application's own daemon starts (it must pass it on, e.g. Spark's
        ``spark.executorEnv``); the same on every node."""
        return self.placement(0, log_name)[1] if self.placement else {}

    def adopt(self, pid: int, log_name: str) -> None:
        """Record a running process that an application's own daemon started (not
        :meth:`spawn`), placed by the application as ``placement`` places ``log_name``
        (:meth:`child_env`, :meth:`child_memcg`); a time limit kills it too."""
        self.adopted[pid] = log_name

    def child_memcg(self, node: int, log_name: str) -> Path | None:
        """The memory cgroup ``placement`` gives processes named ``log_name`` on ``node``
        that an application's own daemon starts (None: the daemon's own group)."""
        return self.placement(node, log_name)[0] if self.placement else None

    def spawn(
        self, stack: UndoStack, node: int, argv: list[str], log_name: str
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` on ``node`` (its netns and memcg), logging to ``log_dir``."""
        log = self.log_dir / f"{log_name}.log"
        memcg, extra = self.placement(node, log_name) if self.placement else (None, {})
        proc = spawn_in_node(
            stack,
            memcg or self.memcgs[node],
            node_ns(node),
            argv,
            log,
            env={"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", **extra},
        )
        self.logs[proc.pid] = log
        self.procs.append(proc)
        return proc

    def _log_tail(self, proc: subprocess.Popen[bytes], lines: int = 8) -> str:
        """The last ``lines`` lines of ``proc``'s log, indented, for an error message."""
        log = self.logs.get(proc.pid)
        if log is None or not log.exists():
            return ""
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        return f"\n  last lines of {log.name}:\n" + "\n".join(f"    {t}" for t in tail)

    def wait(self, procs: list[subprocess.Popen[bytes]], timeout_s: float, what: str) -> None:
        """Wait for ``procs`` to exit 0 within ``timeout_s``.

        Raises:
            RuntimeError: a process failed or timed out (names the log file to read).
        """
        deadline = time.monotonic() + timeout_s
        for proc in procs:
            try:
                rc = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(
                    f"{what}: timed out after {timeout_s:.0f} s{self._log_tail(proc)}"
                ) from exc
            if rc != 0:
                raise RuntimeError(f"{what}: {proc.args!r} exited {rc}{self._log_tail(proc)}")


class MemcachedYcsb:
    """Runs :class:`MemcachedYcsbConfig` (see module docstring)."""

    def __init__(self, cfg: MemcachedYcsbConfig, cluster: Cluster) -> None:
        if cluster.n_nodes < 2:
            raise ValueError("memcached-ycsb: needs >= 2 nodes (server + clients)")
        self.cfg, self.cl = cfg, cluster
        self.server = f"{node_ip(0)}:{cfg.port}"

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        return {
            "app": "memcached-ycsb",
            "application": "memcached (Debian) + YCSB core workload clients (pymemcache)",
            "dataset": f"{self.cfg.recordcount} YCSB records, 10 fields x 100 B (JSON, ~1.1 KB)",
            "placement": {"server": 0, "clients": list(range(1, self.cl.n_nodes))},
            "config": self.cfg.model_dump(),
        }

    def prepare_data(self) -> None:
        """Nothing: memcached keeps its data in memory."""

    def start(self, stack: UndoStack) -> None:
        """Start memcached on node 0 and run the YCSB load phase from the clients."""
        mc = shutil.which("memcached")
        if mc is None:
            raise RuntimeError("memcached not installed (apt-get install memcached)")
        self.cl.spawn(
            stack,
            0,
            [
                mc,
                "-u",
                "nobody",
                "-l",
                node_ip(0),
                "-p",
                str(self.cfg.port),
                "-U",
                "0",
                "-m",
                str(self.cfg.memcached_cache_mb),
                "-t",
                str(self.cfg.memcached_threads),
                "-c",
                "1024",
                *(["-o", self.cfg.memcached_options] if self.cfg.memcached_options else []),
            ],
            "memcached",
        )
        wait_tcp(1, node_ip(0), self.cfg.port, 20)
        clients = list(range(1, self.cl.n_nodes))
        procs = [
            self.cl.spawn(
                stack,
                node,
                [
                    sys.executable,
                    "-m",
                    "disaggsim.testbed.apps.ycsb",
                    "load",
                    "--server",
                    self.server,
                    "--recordcount",
                    str(self.cfg.recordcount),
                    "--client-id",
                    str(i),
                    "--clients",
                    str(len(clients)),
                ],
                f"ycsb-load-node{node}",
            )
            for i, node in enumerate(clients)
        ]
        self.cl.wait(procs, 600, "YCSB load")

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """YCSB run phase from every client node for ``duration_s``."""
        procs = []
        for node in range(1, self.cl.n_nodes):
            procs.append(
                self.cl.spawn(
                    stack,
                    node,
                    [
                        sys.executable,
                        "-m",
                        "disaggsim.testbed.apps.ycsb",
                        "run",
                        "--server",
                        self.server,
                        "--recordcount",
                        str(self.cfg.recordcount),
                        "--workload",
                        self.cfg.workload,
                        "--duration-s",
                        str(duration_s),
                        "--target-ops-per-s",
                        str(self.cfg.target_ops_per_s),
                        "--operationcount",
                        str(self.cfg.operationcount),
                        "--seed",
                        str(self.cl.seed * 1000 + node),
                    ],
                    f"ycsb-run-node{node}",
                )
            )
        self.cl.wait(procs, duration_s + 300, "YCSB run")
        return {
            f"node{n}": last_json_line(self.cl.log_dir / f"ycsb-run-node{n}.log")
            for n in range(1, self.cl.n_nodes)
        }

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time of :meth:`run`'s ``results``: the slowest client's YCSB
        run phase (``run_s``; with ``operationcount`` set the run phase is a job)."""
        return max(
            float(r["run_s"])
            for r in results.values()  # type: ignore[index]
            if isinstance(r, dict)
        )


class DaskSort:
    """Runs :class:`DaskSortConfig` (see module docstring)."""

    def __init__(self, cfg: DaskSortConfig, cluster: Cluster) -> None:
        self.cfg, self.cl = cfg, cluster
        self.scheduler = f"tcp://{node_ip(0)}:{cfg.port}"

    @property
    def total_records(self) -> int:
        """Records sorted over all nodes."""
        return self.cl.n_nodes * self.cfg.files_per_node * self.cfg.records_per_file

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        mb = self.total_records * 100 / 1e6
        return {
            "app": "dask-sort",
            "application": "Dask distributed (PyPI) TeraSort-style range-partitioned sort",
            "dataset": (
                f"{self.total_records} sort-benchmark records (100 B, 10-byte random "
                f"key; {mb:.0f} MB, generated with seed {self.cl.seed})"
            ),
            "placement": {"scheduler": 0, "driver": 0, "workers": list(range(self.cl.n_nodes))},
            "config": self.cfg.model_dump(),
        }

    def _dirs(self) -> list[Path]:
        return [d / "sort" for d in self.cl.data_dirs]

    def prepare_data(self) -> None:
        """Write each node's input files to its data disk (page cache dropped after)."""
        for node, d in enumerate(self._dirs()):
            sh(
                [
                    sys.executable,
                    "-m",
                    "disaggsim.testbed.apps.dask_sort",
                    "gen",
                    "--dir",
                    str(d),
                    "--node",
                    str(node),
                    "--files",
                    str(self.cfg.files_per_node),
                    "--records-per-file",
                    str(self.cfg.records_per_file),
                    "--seed",
                    str(self.cl.seed),
                ]
            )

    def start(self, stack: UndoStack) -> None:
        """Start the scheduler on node 0 and a worker per node; clear old outputs."""
        for d in self._dirs():
            for f in (d / "output").glob("*"):
                f.unlink()
            shutil.rmtree(d / "spill", ignore_errors=True)
            (d / "spill").mkdir()
        dask = str(Path(sys.executable).with_name("dask"))
        env_cmd = [
            "env",
            "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False",
            "DASK_DISTRIBUTED__WORKER__MEMORY__TARGET=False",
            "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL=False",
            "DASK_DISTRIBUTED__WORKER__MEMORY__PAUSE=False",
            "DASK_DISTRIBUTED__WORKER__MEMORY__TERMINATE=False",
        ]
        self.cl.spawn(
            stack,
            0,
            env_cmd
            + [
                dask,
                "scheduler",
                "--host",
                node_ip(0),
                "--port",
                str(self.cfg.port),
                "--no-dashboard",
            ],
            "dask-scheduler",
        )
        wait_tcp(0, node_ip(0), self.cfg.port, 60)
        for node, d in enumerate(self._dirs()):
            self.cl.spawn(
                stack,
                node,
                env_cmd
                + [
                    dask,
                    "worker",
                    self.scheduler,
                    "--host",
                    node_ip(node),
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--no-nanny",
                    "--memory-limit",
                    "0",
                    "--no-dashboard",
                    "--local-directory",
                    str(d / "spill"),
                    "--name",
                    f"node{node}",
                ],
                f"dask-worker-node{node}",
            )

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """Run the sort job from node 0 (``duration_s`` bounds it: timeout 10x + 300 s)."""
        for d in self._dirs():
            for f in (d / "input").glob("*"):
                _drop_cache(f)
        proc = self.cl.spawn(
            stack,
            0,
            [
                sys.executable,
                "-m",
                "disaggsim.testbed.apps.dask_sort",
                "sort",
                "--scheduler",
                self.scheduler,
                "--node-ips",
                ",".join(node_ip(n) for n in range(self.cl.n_nodes)),
                "--data-dirs",
                ",".join(str(d) for d in self._dirs()),
                "--files-per-node",
                str(self.cfg.files_per_node),
                "--reducers-per-node",
                str(self.cfg.reducers_per_node),
                "--expect-records",
                str(self.total_records),
            ],
            "dask-sort-driver",
        )
        self.cl.wait([proc], duration_s * 10 + 300, "dask sort")
        return {"driver": last_json_line(self.cl.log_dir / "dask-sort-driver.log")}

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time: the driver's sort job time (``sort_s``)."""
        driver = results["driver"]
        assert isinstance(driver, dict)
        return float(driver["sort_s"])


def _drop_cache(path: Path) -> None:
    from disaggsim.testbed.apps.dask_sort import drop_cache

    drop_cache(path)


def make_app(
    cfg: MemcachedYcsbConfig
    | DaskSortConfig
    | PgbenchConfig
    | SparkConfig
    | TimelyConfig
    | HadoopConfig,
    cluster: Cluster,
) -> (
    MemcachedYcsb | DaskSort | PostgresPgbench | SparkStandalone | TimelyPagerank | HadoopMapReduce
):
    """Instantiate the runner of an application config."""
    if isinstance(cfg, HadoopConfig):
        return HadoopMapReduce(cfg, cluster)
    if isinstance(cfg, TimelyConfig):
        return TimelyPagerank(cfg, cluster)
    if isinstance(cfg, MemcachedYcsbConfig):
        return MemcachedYcsb(cfg, cluster)
    if isinstance(cfg, PgbenchConfig):
        return PostgresPgbench(cfg, cluster)
    if isinstance(cfg, SparkConfig):
        return SparkStandalone(cfg, cluster)
    return DaskSort(cfg, cluster)
