"""Hadoop MapReduce WordCount and TeraSort (Apache Hadoop 3.3.6 jars, Debian OpenJDK 17).

The paper's Hadoop workloads (Gao et al., OSDI'16, Table 2: Hadoop WordCount and Sort, its
"dolphins"), run with Hadoop's own example programs (``hadoop-mapreduce-examples``:
``org.apache.hadoop.examples.WordCount``, ``terasort.TeraGen``/``TeraSort``/
``TeraValidate``) in Hadoop's local mode: one JVM runs the job with the ``LocalJobRunner``
(map and reduce tasks as threads, ``mapreduce.local.map.tasks.maximum`` at once), reading
and writing the node's disk through ``file:///`` (no HDFS daemons, no YARN). That JVM
holds the job's data (map output buffers, ``mapreduce.task.io.sort.mb``; the merge): it
is the data-holding process.

Jars: the shaded Hadoop client (``hadoop-client-api`` and ``hadoop-client-runtime``: every
Hadoop class with its third-party dependencies relocated), the examples, the two logging
APIs the client leaves out and SLF4J's simple binding (warnings and errors to the job's
log), from Maven Central; ``make build`` fetches them into
``build/hadoop`` and checks each against the SHA-256 pinned in
``testbed/apps/hadoop_jars.sha256`` (:data:`JARS`). Hadoop 3.3 declares Java 8 and 11;
its local mode runs here on Debian's OpenJDK 17 unchanged (checked by the tests: the
outputs match their oracles).

Data, generated untraced before the job (``prepare_data``/``start``) on node 0's disk:

- WordCount: ``splits`` text files of ``lines_per_split`` lines of ``words_per_line``
  Zipf words, the Spark WordCount's text
  (:func:`disaggsim.testbed.apps.spark_jobs.gen_words`), one map task per file;
- TeraSort: ``TeraGen`` writes ``records`` 100-byte sort-benchmark records (the
  ``teragen`` program of the examples, ``splits`` map tasks); ``TeraSort`` sorts them into
  ``reducers`` partitions; ``TeraValidate`` checks the order after the job (untimed).

JCT: the wall time of the job's JVM (WordCount, or TeraSort) from its start to its exit,
measured by :meth:`HadoopMapReduce.run` (JVM start-up, ~0.5 s, included: the job driver
is the same JVM).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from disaggsim.paths import BUILD_DIR
from disaggsim.testbed.apps.spark import java_home
from disaggsim.testbed.apps.spark_jobs import gen_words
from disaggsim.testbed.collect_env import UndoStack

if TYPE_CHECKING:
    from disaggsim.testbed.collect_apps import Cluster

#: ``<sha256>  <path under Maven Central>`` per jar; ``make build`` fetches them.
JARS: Final = Path(__file__).with_name("hadoop_jars.sha256")
JAR_DIR: Final = BUILD_DIR / "hadoop"
MAVEN_CENTRAL: Final = "https://repo1.maven.org/maven2"
EXAMPLES_MAIN: Final = "org.apache.hadoop.examples.ExampleDriver"
LOG_NAME: Final = "hadoop"
#: Heap beyond the map tasks' sort buffers (the job's other objects), MiB.
HEAP_HEADROOM_MB: Final = 128
#: ``mapreduce.client.progressmonitor.pollinterval`` (ms): how often the job client's
#: ``Job.monitorAndPrintJob`` (``waitForCompletion(true)``, as WordCount and TeraSort call
#: it) checks whether the job is done; Hadoop's default, 1000 ms, quantized the JVM's wall
#: time (the JCT) in ~1.05 s steps (TeraSort at 25 % local: 72 JCTs in clusters at 7.2,
#: 8.1-8.6, 9.0-9.5 and 10.5-11.2 s, bench/RESULTS.md "Application study (#22)").
PROGRESS_POLL_MS: Final = 50


class HadoopConfig(BaseModel):
    """A Hadoop MapReduce job in local mode on node 0 (see module docstring).

    - ``job``: ``wordcount`` or ``terasort``.
    - ``splits``: input files (WordCount) / TeraGen map tasks; ``reducers``: reduce tasks.
    - WordCount: ``lines_per_split`` x ``words_per_line`` Zipf words over ``vocab_size``.
    - TeraSort: ``records`` 100-byte records.
    - ``heap_mb``: the job JVM's heap (``-Xmx``); ``sort_mb``:
      ``mapreduce.task.io.sort.mb`` (a map task's output buffer); ``parallel_maps``:
      ``mapreduce.local.map.tasks.maximum``.
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["hadoop-mapreduce"] = "hadoop-mapreduce"
    job: Literal["wordcount", "terasort"]
    splits: Annotated[int, Field(ge=1)] = 4
    reducers: Annotated[int, Field(ge=1)] = 2
    lines_per_split: Annotated[int, Field(ge=1)] = 100_000
    words_per_line: Annotated[int, Field(ge=1)] = 10
    vocab_size: Annotated[int, Field(ge=1)] = 50_000
    records: Annotated[int, Field(ge=1)] = 2_000_000
    heap_mb: Annotated[int, Field(ge=128)] = 1024
    sort_mb: Annotated[int, Field(ge=1)] = 100
    parallel_maps: Annotated[int, Field(ge=1)] = 2

    @model_validator(mode="after")
    def _heap_holds_the_sort_buffers(self) -> HadoopConfig:
        # Each running map task allocates its whole sort buffer in the one JVM (seen: 2 x
        # 100 MiB in a 256 MiB heap, OutOfMemoryError in TeraValidate's maps).
        need = self.parallel_maps * self.sort_mb + HEAP_HEADROOM_MB
        if self.heap_mb < need:
            raise ValueError(
                f"heap_mb {self.heap_mb}: expected >= parallel_maps x sort_mb + "
                f"{HEAP_HEADROOM_MB} = {need} (the map tasks' sort buffers)"
            )
        return self


def jar_paths() -> list[tuple[str, str]]:
    """(sha256, Maven path) of every jar, from :data:`JARS`.

    Raises:
        ValueError: a line is not ``<64 hex digits>  <path>`` (names file and line).
    """
    out = []
    for n, line in enumerate(JARS.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64 or not parts[1].endswith(".jar"):
            raise ValueError(f"{JARS}:{n}: expected '<sha256>  <maven path>.jar', got {line!r}")
        out.append((parts[0], parts[1]))
    return out


def classpath() -> str:
    """The job JVM's class path: every jar of :data:`JARS` in :data:`JAR_DIR`.

    Raises:
        RuntimeError: a jar is missing (run ``make build``).
    """
    jars = [JAR_DIR / Path(path).name for _, path in jar_paths()]
    missing = [str(j) for j in jars if not j.exists()]
    if missing:
        raise RuntimeError(f"Hadoop jars missing: {', '.join(missing)} (run `make build`)")
    return ":".join(str(j) for j in jars)


def job_argv(cfg: HadoopConfig, tmp_dir: Path, program: str, *args: str) -> list[str]:
    """``java ... ExampleDriver <program> -D... <args>``: one example program in local
    mode with the config's JVM heap and MapReduce settings, its scratch files
    (``hadoop.tmp.dir``: staging, map outputs) in ``tmp_dir``, run from ``tmp_dir``'s
    parent (``env -C``): the LocalJobRunner links distributed-cache files such as
    TeraSort's ``_partition.lst`` into its working directory, and a link left in a shared
    directory by an earlier job would point to a removed file."""
    return [
        "env",
        "-C",
        str(tmp_dir.parent),
        str(java_home() / "bin" / "java"),
        f"-Xmx{cfg.heap_mb}m",
        "-XX:+UseSerialGC",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        classpath(),
        EXAMPLES_MAIN,
        program,
        "-Dmapreduce.framework.name=local",
        "-Dfs.defaultFS=file:///",
        f"-Dhadoop.tmp.dir={tmp_dir}",
        f"-Dmapreduce.job.reduces={cfg.reducers}",
        f"-Dmapreduce.task.io.sort.mb={cfg.sort_mb}",
        f"-Dmapreduce.local.map.tasks.maximum={cfg.parallel_maps}",
        f"-Dmapreduce.local.reduce.tasks.maximum={cfg.parallel_maps}",
        f"-Dmapreduce.job.maps={cfg.splits}",
        f"-Dmapreduce.client.progressmonitor.pollinterval={PROGRESS_POLL_MS}",
        *args,
    ]


class HadoopMapReduce:
    """Runs :class:`HadoopConfig` on node 0 of a
    :class:`~disaggsim.testbed.collect_apps.Cluster`."""

    def __init__(self, cfg: HadoopConfig, cluster: Cluster) -> None:
        self.cfg, self.cl = cfg, cluster
        self.dir = cluster.data_dirs[0] / "hadoop"

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        c = self.cfg
        data = (
            f"{c.splits * c.lines_per_split * c.words_per_line} Zipf words in {c.splits} files"
            if c.job == "wordcount"
            else f"{c.records} TeraGen records (100 B, {c.records * 100 / 1e6:.0f} MB)"
        )
        return {
            "app": f"hadoop-{c.job}",
            "application": f"Hadoop 3.3.6 MapReduce {c.job} (local mode, OpenJDK)",
            "dataset": data,
            "placement": {"job": 0},
            "config": c.model_dump(),
        }

    def prepare_data(self) -> None:
        """WordCount: write the text files (seeded, the Spark WordCount's generator).
        TeraSort: nothing (TeraGen runs in :meth:`start`)."""
        classpath()
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.cfg.job == "wordcount":
            text = self.dir / "input"
            text.mkdir(exist_ok=True)
            for s in range(self.cfg.splits):
                lines = gen_words(
                    self.cl.seed,
                    s,
                    self.cfg.lines_per_split,
                    self.cfg.words_per_line,
                    self.cfg.vocab_size,
                )
                (text / f"split-{s:04d}.txt").write_text("\n".join(lines) + "\n")

    def start(self, stack: UndoStack) -> None:
        """Clear old outputs; TeraSort: TeraGen the input on node 0 (untimed)."""
        for sub in ("output", "validate", "tmp"):
            shutil.rmtree(self.dir / sub, ignore_errors=True)
        if self.cfg.job == "terasort":
            shutil.rmtree(self.dir / "input", ignore_errors=True)
            argv = job_argv(
                self.cfg,
                self.dir / "tmp",
                "teragen",
                str(self.cfg.records),
                str(self.dir / "input"),
            )
            gen = self.cl.spawn(stack, 0, argv, "teragen")
            self.cl.wait([gen], 900, "hadoop teragen")

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """The job's JVM on node 0 (timeout 10 x ``duration_s`` + 300 s); TeraSort's
        output is then checked with TeraValidate (untimed). Returns ``job_s``."""
        program = "wordcount" if self.cfg.job == "wordcount" else "terasort"
        t0 = time.monotonic()
        argv = job_argv(
            self.cfg, self.dir / "tmp", program, str(self.dir / "input"), str(self.dir / "output")
        )
        proc = self.cl.spawn(stack, 0, argv, f"{LOG_NAME}-{program}")
        self.cl.wait([proc], duration_s * 10 + 300, f"hadoop {program}")
        out: dict[str, object] = {"job_s": round(time.monotonic() - t0, 3)}
        parts = sorted((self.dir / "output").glob("part-r-*"))
        if len(parts) != self.cfg.reducers:
            raise RuntimeError(
                f"hadoop {program}: {len(parts)} output partitions in "
                f"{self.dir / 'output'}, expected {self.cfg.reducers}"
            )
        out["output_bytes"] = sum(p.stat().st_size for p in parts)
        if self.cfg.job == "terasort":
            check = self.cl.spawn(
                stack,
                0,
                job_argv(
                    self.cfg,
                    self.dir / "tmp",
                    "teravalidate",
                    str(self.dir / "output"),
                    str(self.dir / "validate"),
                ),
                "teravalidate",
            )
            self.cl.wait([check], 900, "hadoop teravalidate")
            report = (self.dir / "validate" / "part-r-00000").read_text()
            if "error" in report.lower() or "checksum" not in report:
                raise RuntimeError(
                    f"hadoop teravalidate: {report.strip()!r} in {self.dir / 'validate'}"
                )
            out["checksum"] = report.split()[-1]
        return {"driver": out}

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time: the job JVM's wall time (``job_s``)."""
        driver = results["driver"]
        assert isinstance(driver, dict)
        return float(driver["job_s"])
