"""Spark standalone (PyPI ``pyspark``, Debian OpenJDK 17) across the emulated nodes.

Placement, as a standalone deployment (Spark docs, "Spark Standalone Mode"):

- node 0: the master (``org.apache.spark.deploy.master.Master``) and the driver
  (:mod:`disaggsim.testbed.apps.spark_jobs`, PySpark + its JVM);
- every node: a worker (``org.apache.spark.deploy.worker.Worker``, one core) whose executor
  JVM and Python workers it forks, so they run in that node's network namespace and memory
  cgroup; ``SPARK_LOCAL_DIRS`` (shuffle and spill files) and the worker's ``--work-dir``
  (executor working directory, where the jobs write their output) are on the node's disk.

All daemons bind to their node's address (``SPARK_LOCAL_IP``); the logs go to the
collection's ``logs/`` at WARN level. The driver starts and waits for one executor per node
untraced (``start``); the traced phase (``run``) is the job itself, released by a go file.

JVM sizes: Spark refuses executors and drivers under 450 MiB (1.5 x its 300 MiB reserved
memory, ``UnifiedMemoryManager``), so both default to 512 MiB; the daemons get
``SPARK_DAEMON_MEMORY``. Every JVM uses the serial collector (``-XX:+UseSerialGC``: no parallel
GC threads competing on a small machine) and a small young generation
(:attr:`SparkConfig.young_gen_mb`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from disaggsim import owners
from disaggsim.testbed.collect_env import UndoStack, last_json_line, node_ip, wait_tcp

if TYPE_CHECKING:
    from disaggsim.testbed.collect_apps import Cluster

#: Debian's OpenJDK 17 (package openjdk-17-jre-headless).
DEBIAN_JAVA_HOME: Final = Path("/usr/lib/jvm/java-17-openjdk-amd64")
#: Spark's smallest executor/driver heap: 1.5 x 300 MiB reserved (UnifiedMemoryManager).
MIN_JVM_MB: Final = 450
MASTER_CLASS: Final = "org.apache.spark.deploy.master.Master"
WORKER_CLASS: Final = "org.apache.spark.deploy.worker.Worker"
#: The executor JVM a worker starts for an application (Spark standalone).
EXECUTOR_CLASS: Final = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
#: The name under which the executors are placed (``Cluster.adopt``, ``child_env``).
EXECUTOR_LOG_NAME: Final = "spark-executor"
#: The worker's environment variable naming the executors' memory cgroup (may be empty).
EXECUTOR_MEMCG_ENV: Final = "DISAGGSIM_EXECUTOR_MEMCG"
#: ``bin/java`` of the executors' JAVA_HOME (see ``SparkStandalone._executor_java_home``).
EXECUTOR_JAVA_WRAPPER: Final = """#!/bin/sh
if [ -n "${env}" ]; then echo $$ > "${env}/cgroup.procs" || exit 1; fi
exec {java} "$@"
"""


class SparkConfig(BaseModel):
    """A Spark job on a standalone cluster (see module docstring; the jobs and their data
    are documented in :mod:`disaggsim.testbed.apps.spark_jobs`).

    - ``job``: ``wordcount``, ``sort``, ``pagerank`` or ``sql-bdb`` (Spark SQL on the Big
      Data Benchmark: ``rankings_per_split`` rankings and ``uservisits_per_split`` visits
      per split).
    - ``splits_per_node`` / ``reducers_per_node``: map splits and reduce partitions per node.
    - WordCount: ``lines_per_split`` lines of ``words_per_line`` Zipf words over
      ``vocab_size`` words. Sort: ``records_per_split`` 100-byte records. PageRank:
      ``edges_per_split`` R-MAT edges over ``2**graph_scale`` vertices, ``iterations`` steps.
    - ``executor_memory_mb`` / ``driver_memory_mb``: JVM heaps (>= 450 MiB, Spark's minimum);
      ``daemon_memory_mb``: master and worker heaps.
    - ``young_gen_mb``: every JVM's young generation (``-Xmn``). A minor collection walks
      the whole young generation, so with the default (a third of the heap) each GC pages
      the swapped-out part of it back in (the 50 % WordCount sample without it: 360 k swap
      requests in a 36 s job). A small young generation keeps the allocation churn
      resident and leaves the old generation (the cached data) to the pager.
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["spark"] = "spark"
    job: Literal["wordcount", "sort", "pagerank", "sql-bdb"]
    splits_per_node: Annotated[int, Field(ge=1)] = 2
    reducers_per_node: Annotated[int, Field(ge=1)] = 2
    lines_per_split: Annotated[int, Field(ge=1)] = 20_000
    words_per_line: Annotated[int, Field(ge=1)] = 10
    vocab_size: Annotated[int, Field(ge=1)] = 50_000
    records_per_split: Annotated[int, Field(ge=1)] = 100_000
    edges_per_split: Annotated[int, Field(ge=1)] = 100_000
    graph_scale: Annotated[int, Field(ge=2, le=40)] = 16
    iterations: Annotated[int, Field(ge=1)] = 5
    rankings_per_split: Annotated[int, Field(ge=1)] = 20_000
    uservisits_per_split: Annotated[int, Field(ge=1)] = 100_000
    executor_memory_mb: Annotated[int, Field(ge=MIN_JVM_MB)] = 512
    driver_memory_mb: Annotated[int, Field(ge=MIN_JVM_MB)] = 512
    daemon_memory_mb: Annotated[int, Field(ge=64)] = 256
    young_gen_mb: Annotated[int, Field(ge=4)] = 32
    master_port: Annotated[int, Field(ge=1024, le=65535)] = 7077

    @model_validator(mode="after")
    def _job_sizes(self) -> SparkConfig:
        if self.job == "pagerank" and self.edges_per_split > 50 * (1 << self.graph_scale):
            raise ValueError(
                f"edges_per_split {self.edges_per_split} > 50 x 2**graph_scale "
                f"({50 << self.graph_scale}): mostly duplicate R-MAT edges"
            )
        return self


def dataset(cfg: SparkConfig, n_nodes: int, seed: int) -> str:
    """One line describing the generated input of ``cfg`` on ``n_nodes`` nodes."""
    splits = n_nodes * cfg.splits_per_node
    if cfg.job == "wordcount":
        words = splits * cfg.lines_per_split * cfg.words_per_line
        return (
            f"{words} words ({splits} splits x {cfg.lines_per_split} lines x "
            f"{cfg.words_per_line}), Zipf(1) over {cfg.vocab_size} words, seed {seed}"
        )
    if cfg.job == "sort":
        n = splits * cfg.records_per_split
        return f"{n} sort-benchmark records (100 B, {n * 100 / 1e6:.0f} MB), seed {seed}"
    if cfg.job == "sql-bdb":
        return (
            f"Big Data Benchmark tables: {splits * cfg.rankings_per_split} rankings, "
            f"{splits * cfg.uservisits_per_split} uservisits, seed {seed}; queries 1B, "
            f"2A, 3A"
        )
    return (
        f"R-MAT graph (Graph500 a=0.57 b=c=0.19), 2^{cfg.graph_scale} vertices, "
        f"{splits * cfg.edges_per_split} edges drawn, seed {seed}; "
        f"{cfg.iterations} PageRank iterations"
    )


def jvm_options(cfg: SparkConfig) -> str:
    """Options of every Spark JVM: serial collector, ``young_gen_mb`` young generation."""
    return f"-XX:+UseSerialGC -Xmn{cfg.young_gen_mb}m"


def driver_argv(
    cfg: SparkConfig,
    n_nodes: int,
    seed: int,
    go_file: Path,
    executor_env: dict[str, str] | None = None,
) -> list[str]:
    """The driver's command line (run on node 0); ``executor_env``: extra environment of
    the executors (``spark.executorEnv.*``)."""
    env_args = [
        a for k, v in sorted((executor_env or {}).items()) for a in ("--executor-env", f"{k}={v}")
    ]
    return [
        sys.executable,
        "-m",
        "disaggsim.testbed.apps.spark_jobs",
        "--job",
        cfg.job,
        "--master",
        f"spark://{node_ip(0)}:{cfg.master_port}",
        "--driver-host",
        node_ip(0),
        "--executors",
        str(n_nodes),
        "--executor-memory-mb",
        str(cfg.executor_memory_mb),
        "--driver-memory-mb",
        str(cfg.driver_memory_mb),
        "--splits",
        str(n_nodes * cfg.splits_per_node),
        "--reducers",
        str(n_nodes * cfg.reducers_per_node),
        "--seed",
        str(seed),
        "--lines-per-split",
        str(cfg.lines_per_split),
        "--words-per-line",
        str(cfg.words_per_line),
        "--vocab-size",
        str(cfg.vocab_size),
        "--records-per-split",
        str(cfg.records_per_split),
        "--edges-per-split",
        str(cfg.edges_per_split),
        "--graph-scale",
        str(cfg.graph_scale),
        "--iterations",
        str(cfg.iterations),
        "--rankings-per-split",
        str(cfg.rankings_per_split),
        "--uservisits-per-split",
        str(cfg.uservisits_per_split),
        "--jvm-options",
        jvm_options(cfg),
        "--go-file",
        str(go_file),
        *env_args,
    ]


#: log4j2 configuration of every Spark JVM: warnings and errors only, to stderr (the logs).
LOG4J2_PROPERTIES: Final = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""


def java_home() -> Path:
    """Debian's OpenJDK 17, else the JDK of ``java`` on PATH.

    Raises:
        RuntimeError: no Java (names the package to install).
    """
    if (DEBIAN_JAVA_HOME / "bin" / "java").exists():
        return DEBIAN_JAVA_HOME
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("Java not installed (apt-get install openjdk-17-jre-headless)")
    return Path(java).resolve().parent.parent


def spark_home() -> Path:
    """The Spark distribution inside the ``pyspark`` package.

    Raises:
        RuntimeError: pyspark not installed (pip install .[collect]).
    """
    try:
        import pyspark
    except ImportError as exc:
        raise RuntimeError("pyspark not installed (pip install .[collect])") from exc
    return Path(pyspark.__file__).parent


class SparkStandalone:
    """Runs :class:`SparkConfig` on a :class:`~disaggsim.testbed.collect_apps.Cluster`."""

    def __init__(self, cfg: SparkConfig, cluster: Cluster) -> None:
        self.cfg, self.cl = cfg, cluster
        self.spark_home = spark_home()
        self.java_home = java_home()
        self.conf_dir = cluster.data_dirs[0].parent / "spark-conf"
        self.go_file = cluster.data_dirs[0] / "spark-go"

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        import pyspark

        return {
            "app": f"spark-{self.cfg.job}",
            "application": (
                f"Spark {pyspark.__version__} standalone (PyPI pyspark, "
                f"OpenJDK at {self.java_home}) {self.cfg.job}"
            ),
            "dataset": dataset(self.cfg, self.cl.n_nodes, self.cl.seed),
            "placement": {"master": 0, "driver": 0, "workers": list(range(self.cl.n_nodes))},
            "config": self.cfg.model_dump(),
        }

    def _env(self, node: int) -> list[str]:
        d = self.cl.data_dirs[node]
        memcg = self.cl.child_memcg(node, EXECUTOR_LOG_NAME)
        # ``ip netns exec`` mounts a fresh /sys, without the cgroup file systems: the
        # executor's wrapper reaches the group through this process's root instead.
        reach = f"/proc/{os.getpid()}/root{memcg}" if memcg else ""
        return [
            "env",
            f"SPARK_HOME={self.spark_home}",
            f"JAVA_HOME={self.java_home}",
            f"{EXECUTOR_MEMCG_ENV}={reach}",
            f"SPARK_CONF_DIR={self.conf_dir}",
            f"SPARK_LOCAL_IP={node_ip(node)}",
            f"SPARK_LOCAL_HOSTNAME={node_ip(node)}",
            f"SPARK_LOCAL_DIRS={d / 'spark-local'}",
            f"SPARK_DAEMON_MEMORY={self.cfg.daemon_memory_mb}m",
            f"SPARK_DAEMON_JAVA_OPTS={jvm_options(self.cfg)}",
            f"PYSPARK_PYTHON={sys.executable}",
            f"PYSPARK_DRIVER_PYTHON={sys.executable}",
        ]

    def prepare_data(self) -> None:
        """Write the log4j2 configuration and make the nodes' Spark directories (the input
        is generated by the map tasks themselves)."""
        self.conf_dir.mkdir(exist_ok=True)
        (self.conf_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        for d in self.cl.data_dirs:
            for sub in ("spark-local", "spark-work"):
                (d / sub).mkdir(exist_ok=True)

    def start(self, stack: UndoStack) -> None:
        """Start the master and workers, then the driver; wait until it has its executors."""
        self.go_file.unlink(missing_ok=True)
        for d in self.cl.data_dirs:
            for sub in ("spark-local", "spark-work"):
                shutil.rmtree(d / sub, ignore_errors=True)
                (d / sub).mkdir()
        spark_class = str(self.spark_home / "bin" / "spark-class")
        self.cl.spawn(
            stack,
            0,
            self._env(0)
            + [
                spark_class,
                MASTER_CLASS,
                "--host",
                node_ip(0),
                "--port",
                str(self.cfg.master_port),
                "--webui-port",
                "8080",
            ],
            "spark-master",
        )
        wait_tcp(0, node_ip(0), self.cfg.master_port, 120)
        workers = []
        for node in range(self.cl.n_nodes):
            workers.append(
                self.cl.spawn(
                    stack,
                    node,
                    self._env(node)
                    + [
                        spark_class,
                        WORKER_CLASS,
                        f"spark://{node_ip(0)}:{self.cfg.master_port}",
                        "--host",
                        node_ip(node),
                        "--cores",
                        "1",
                        "--memory",
                        f"{self.cfg.executor_memory_mb}m",
                        "--work-dir",
                        str(self.cl.data_dirs[node] / "spark-work"),
                        "--webui-port",
                        "8081",
                    ],
                    f"spark-worker-node{node}",
                )
            )
        executor_env = {
            **self.cl.child_env(EXECUTOR_LOG_NAME),
            "JAVA_HOME": str(self._executor_java_home()),
        }
        self.driver = self.cl.spawn(
            stack,
            0,
            self._env(0)
            + driver_argv(self.cfg, self.cl.n_nodes, self.cl.seed, self.go_file, executor_env),
            "spark-driver",
        )
        log = self.cl.log_dir / "spark-driver.log"
        deadline = time.monotonic() + 300
        while "executors registered" not in log.read_text(errors="replace"):
            if self.driver.poll() is not None or time.monotonic() > deadline:
                self.cl.wait([self.driver], 0, "spark driver start")
                raise RuntimeError(f"spark driver: no executors after 300 s (see {log})")
            time.sleep(0.2)
        for pid in self._executor_pids(workers):
            self.cl.adopt(pid, EXECUTOR_LOG_NAME)

    def _executor_java_home(self) -> Path:
        """A JAVA_HOME for the executors (``spark.executorEnv.JAVA_HOME``: a standalone
        worker starts the executor with ``$JAVA_HOME/bin/java`` of the application's
        environment) whose ``bin/java`` first joins the memory cgroup named by the worker's
        ``$DISAGGSIM_EXECUTOR_MEMCG`` (if set), then execs Debian's java: so the executor
        is charged to the data holders' group from its first page (cgroup v1 on this kernel
        cannot move a process's charges later: ``memory.move_charge_at_immigrate`` is
        gone), while its worker stays in the node's group."""
        home = self.conf_dir / "executor-java"
        (home / "bin").mkdir(parents=True, exist_ok=True)
        java = home / "bin" / "java"
        java.write_text(
            EXECUTOR_JAVA_WRAPPER.format(
                env=EXECUTOR_MEMCG_ENV, java=self.java_home / "bin" / "java"
            )
        )
        java.chmod(0o755)
        return home

    def _executor_pids(self, workers: list[subprocess.Popen[bytes]]) -> list[int]:
        """The executor JVM of each worker (its child running :data:`EXECUTOR_CLASS`), in
        node order.

        Raises:
            RuntimeError: a worker has no executor, or more than one.
        """
        children: dict[int, list[int]] = {w.pid: [] for w in workers}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or (stat := owners.process_stat(int(proc.name))) is None:
                continue
            if stat.ppid not in children:
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:  # exited meanwhile
                continue
            if EXECUTOR_CLASS.encode() in cmdline:
                children[stat.ppid].append(int(proc.name))
        for node, w in enumerate(workers):
            if len(children[w.pid]) != 1:
                raise RuntimeError(
                    f"spark worker on node {node} (pid {w.pid}): expected one "
                    f"executor JVM, found {children[w.pid]}"
                )
        return [children[w.pid][0] for w in workers]

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time: the driver's job time (``job_s``, from the release of
        the job to its last result, executors already registered)."""
        driver = results["driver"]
        assert isinstance(driver, dict)
        return float(driver["job_s"])

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """Release the driver's job and wait for it (timeout 10 x ``duration_s`` + 300 s)."""
        self.go_file.touch()
        self.cl.wait([self.driver], duration_s * 10 + 300, f"spark {self.cfg.job}")
        return {"driver": last_json_line(self.cl.log_dir / "spark-driver.log")}
