"""PageRank as a Timely dataflow (the ``timely`` crate) across the emulated nodes.

The paper's "Parallel Dataflow" workload (Gao et al., OSDI'16, Table 2: PageRank on Timely
Dataflow, ref. [23]; Naiad, Murray et al., SOSP'13). The program is
``testbed/apps/timely_pagerank`` (Rust, timely 0.12, built by ``make build`` into
``build/timely``); its module comment documents the iteration (the Spark job's, so
:func:`disaggsim.testbed.apps.spark_jobs.pagerank_local` is its oracle), the R-MAT input
each worker draws in memory, and the JSON line it prints.

Placement: one process per node (``timely-node<i>``), ``workers_per_node`` worker threads
each, connected over TCP by timely's own communication layer (``-n`` processes, ``-p``
index, ``-h`` a host file of every node's ``ip:port``): the contributions exchanged each
step cross the nodes. Every process holds its workers' adjacency lists and contributions:
these are the data-holding processes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from disaggsim.paths import BUILD_DIR
from disaggsim.testbed.collect_env import UndoStack, last_json_line, node_ip

if TYPE_CHECKING:
    from disaggsim.testbed.collect_apps import Cluster

#: The binary ``make build`` makes (cargo, ``CARGO_TARGET_DIR=build/timely``).
BINARY: Final = BUILD_DIR / "timely" / "release" / "timely-pagerank"
LOG_NAME: Final = "timely"


class TimelyConfig(BaseModel):
    """Timely PageRank: ``edges_per_worker`` R-MAT edges drawn by each of the
    ``workers_per_node`` workers of every node over ``2**graph_scale`` vertices,
    ``iterations`` steps; processes talk on ``port`` (one per node)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["timely-pagerank"] = "timely-pagerank"
    graph_scale: Annotated[int, Field(ge=2, le=40)] = 18
    edges_per_worker: Annotated[int, Field(ge=1)] = 1_000_000
    iterations: Annotated[int, Field(ge=1)] = 10
    workers_per_node: Annotated[int, Field(ge=1, le=64)] = 1
    port: Annotated[int, Field(ge=1024, le=65535)] = 2101


def binary() -> Path:
    """The built program (``DISAGGSIM_TIMELY_BIN`` overrides).

    Raises:
        RuntimeError: not built (names the make target).
    """
    path = Path(os.environ.get("DISAGGSIM_TIMELY_BIN", BINARY))
    if not path.exists():
        raise RuntimeError(f"{path}: the Timely PageRank is not built (run `make build`)")
    return path


def process_argv(
    cfg: TimelyConfig, n_nodes: int, node: int, hostfile: Path, seed: int
) -> list[str]:
    """The command line of node ``node``'s process."""
    return [
        str(binary()),
        "--scale",
        str(cfg.graph_scale),
        "--edges-per-worker",
        str(cfg.edges_per_worker),
        "--iterations",
        str(cfg.iterations),
        "--seed",
        str(seed),
        "--",
        "-w",
        str(cfg.workers_per_node),
        "-n",
        str(n_nodes),
        "-p",
        str(node),
        "-h",
        str(hostfile),
    ]


class TimelyPagerank:
    """Runs :class:`TimelyConfig` on a :class:`~disaggsim.testbed.collect_apps.Cluster`."""

    def __init__(self, cfg: TimelyConfig, cluster: Cluster) -> None:
        self.cfg, self.cl = cfg, cluster
        self.hostfile = cluster.data_dirs[0].parent / "timely-hosts.txt"

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        workers = self.cl.n_nodes * self.cfg.workers_per_node
        return {
            "app": "timely-pagerank",
            "application": "Timely dataflow (crates.io timely 0.12) PageRank",
            "dataset": (
                f"R-MAT graph (Graph500 a=0.57 b=c=0.19), 2^{self.cfg.graph_scale} "
                f"vertices, {workers * self.cfg.edges_per_worker} edges drawn, seed "
                f"{self.cl.seed}; {self.cfg.iterations} PageRank iterations"
            ),
            "placement": {"processes": list(range(self.cl.n_nodes))},
            "config": self.cfg.model_dump(),
        }

    def prepare_data(self) -> None:
        """Write the host file (the input is drawn in memory by the workers)."""
        binary()
        self.hostfile.write_text(
            "".join(f"{node_ip(n)}:{self.cfg.port}\n" for n in range(self.cl.n_nodes))
        )

    def start(self, stack: UndoStack) -> None:
        """Nothing: the processes start with the job (a Rust program starts in ms)."""

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """Start one process per node and wait for all (timeout 10 x ``duration_s`` +
        300 s); their JSON lines."""
        procs = [
            self.cl.spawn(
                stack,
                node,
                process_argv(self.cfg, self.cl.n_nodes, node, self.hostfile, self.cl.seed),
                f"{LOG_NAME}-node{node}",
            )
            for node in range(self.cl.n_nodes)
        ]
        self.cl.wait(procs, duration_s * 10 + 300, "timely pagerank")
        return {
            f"node{n}": last_json_line(self.cl.log_dir / f"{LOG_NAME}-node{n}.log")
            for n in range(self.cl.n_nodes)
        }

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time: the slowest process's ``job_s`` (from its workers'
        start, every process connected, to the last step)."""
        return max(
            float(r["job_s"])
            for r in results.values()  # type: ignore[index]
            if isinstance(r, dict)
        )
