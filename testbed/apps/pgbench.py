"""PostgreSQL (Debian) on node 0 driven by ``pgbench`` clients on the other nodes.

The SQL workload of the collector, standing in for the paper's Big Data Benchmark queries
(Gao et al., OSDI'16 Table 2, "SQL": Spark SQL over the AMPLab benchmark): those need a
Hadoop/Hive stack, here it is a real SQL server with its real data path:

- server: Debian's PostgreSQL (``postgres`` of ``/usr/lib/postgresql/<ver>/bin``) on node 0,
  run as the ``postgres`` user (``setpriv``), its data directory on node 0's data disk (so
  WAL writes, checkpoints and table reads are the disk trace), listening on node 0's address
  only; ``shared_buffers`` is shared anonymous memory charged to node 0's memcg, the part the
  memory limit pushes to swap;
- dataset: ``pgbench -i -s SCALE`` (the TPC-B-like schema: ``pgbench_accounts`` holds
  100 000 x SCALE rows, ~15 MB per scale unit; PostgreSQL docs, "pgbench"), loaded untraced
  from node 1 over the network, then (``prewarm``) read into ``shared_buffers`` with the
  ``pg_prewarm`` extension (PostgreSQL contrib), the steady state of a server whose buffer
  cache holds its hot table: at the memory limit much of that cache sits in swap and the
  transactions' random account reads page it back in (the remote-memory traffic);
- workload: ``pgbench`` built-in ``tpcb-like`` (or ``select-only``) transactions from every
  other node, ``clients_per_node`` connections each, paced with ``--rate`` (pgbench's
  Poisson-schedule throttling) for the traced duration; uniform random account ids drawn by
  pgbench's own PRNG seeded with ``--random-seed``.

This module holds the pure parts: the config, the server's settings, the command lines and
the parser of pgbench's report. The runner is :class:`PostgresPgbench`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from disaggsim.testbed.collect_env import UndoStack, node_ip, sh, wait_tcp

if TYPE_CHECKING:
    from disaggsim.testbed.collect_apps import Cluster

#: Where Debian installs each PostgreSQL major version's server binaries.
PG_LIB: Final = Path("/usr/lib/postgresql")
#: Bytes of ``pgbench_accounts`` + indexes per scale unit, roughly (100 000 rows of ~120 B
#: plus the primary key): PostgreSQL docs, pgbench "-s scale_factor" (~15 MB per unit).
BYTES_PER_SCALE: Final = 15 << 20
PG_USER: Final = "postgres"


class PgbenchConfig(BaseModel):
    """PostgreSQL on node 0, pgbench clients on nodes 1..n-1 (see module docstring).

    - ``scale``: ``pgbench -i -s`` scale factor (100 000 accounts per unit, ~15 MB).
    - ``shared_buffers_mb``: PostgreSQL ``shared_buffers`` (its buffer cache, MiB).
    - ``clients_per_node``: pgbench ``--client`` per client node (one thread each node).
    - ``rate_tps``: pgbench ``--rate`` per client node (transactions/s; 0: as fast as it can).
    - ``builtin``: pgbench ``--builtin`` script.
    - ``prewarm``: load ``pgbench_accounts`` and its primary key into ``shared_buffers``
      (``pg_prewarm``) after the load, so the buffer cache is full when the run starts.
    - ``transactions_per_client``: a fixed amount of work instead of a duration.
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["postgres-pgbench"] = "postgres-pgbench"
    scale: Annotated[int, Field(ge=1, le=10_000)] = 10
    shared_buffers_mb: Annotated[int, Field(ge=16)] = 128
    clients_per_node: Annotated[int, Field(ge=1, le=256)] = 4
    rate_tps: Annotated[float, Field(ge=0)] = 200.0
    builtin: Literal["tpcb-like", "select-only", "simple-update"] = "tpcb-like"
    prewarm: bool = True
    #: Transactions per client connection (pgbench ``--transactions``); 0: run for the
    #: traced duration. ``disaggsim emulate`` sets it so the run phase is a job.
    transactions_per_client: Annotated[int, Field(ge=0)] = 0
    port: Annotated[int, Field(ge=1024, le=65535)] = 5432


def pg_bindir() -> Path:
    """The newest installed PostgreSQL server's bin directory (Debian layout).

    Raises:
        RuntimeError: no ``/usr/lib/postgresql/<ver>/bin/postgres`` (names the package).
    """
    found = sorted(
        (p for p in PG_LIB.glob("*/bin/postgres") if p.parent.parent.name.isdigit()),
        key=lambda p: int(p.parent.parent.name),
    )
    if not found:
        raise RuntimeError(
            f"PostgreSQL server not installed (no {PG_LIB}/<version>/bin/postgres;"
            " apt-get install postgresql)"
        )
    return found[-1].parent


def server_settings(cfg: PgbenchConfig, listen_ip: str) -> dict[str, str]:
    """``postgres -c`` settings: listen on ``listen_ip`` only, no Unix socket, no logging
    collector, no huge pages (so shared_buffers are ordinary swappable pages)."""
    return {
        "listen_addresses": listen_ip,
        "port": str(cfg.port),
        "unix_socket_directories": "",
        "shared_buffers": f"{cfg.shared_buffers_mb}MB",
        "huge_pages": "off",
        "max_connections": str(max(100, 4 * cfg.clients_per_node + 20)),
        "logging_collector": "off",
        "fsync": "on",
        "synchronous_commit": "on",
    }


def hba_line(subnet_cidr: str) -> str:
    """The ``pg_hba.conf`` line letting the cluster's nodes in without a password (a
    throwaway server reachable only inside the collector's namespaces)."""
    return f"host all all {subnet_cidr} trust\n"


def init_argv(cfg: PgbenchConfig, pgbench: str, host: str) -> list[str]:
    """``pgbench -i``: create and fill the tables (client-side data generation, COPY)."""
    return [
        pgbench,
        "-i",
        "-s",
        str(cfg.scale),
        "-q",
        "-h",
        host,
        "-p",
        str(cfg.port),
        "-U",
        PG_USER,
        PG_USER,
    ]


#: SQL run after the load when ``prewarm`` is set (pg_prewarm's "buffer" mode reads the
#: relation into shared_buffers; PostgreSQL docs, F.30 pg_prewarm).
PREWARM_SQL: Final = (
    "CREATE EXTENSION IF NOT EXISTS pg_prewarm; "
    "SELECT pg_prewarm('pgbench_accounts'), pg_prewarm('pgbench_accounts_pkey');"
)


def prewarm_argv(cfg: PgbenchConfig, psql: str, host: str) -> list[str]:
    """``psql`` running :data:`PREWARM_SQL` (stops at the first error)."""
    return [
        psql,
        "-h",
        host,
        "-p",
        str(cfg.port),
        "-U",
        PG_USER,
        "-v",
        "ON_ERROR_STOP=1",
        "-X",
        "-c",
        PREWARM_SQL,
        PG_USER,
    ]


def run_argv(
    cfg: PgbenchConfig, pgbench: str, host: str, duration_s: float, seed: int
) -> list[str]:
    """``pgbench`` run phase of one client node: ``transactions_per_client`` transactions
    per connection, or (0) for ``duration_s`` (rounded up to >= 1 s)."""
    amount = (
        ["-t", str(cfg.transactions_per_client)]
        if cfg.transactions_per_client
        else ["-T", str(max(1, round(duration_s)))]
    )
    argv = [
        pgbench,
        "-h",
        host,
        "-p",
        str(cfg.port),
        "-U",
        PG_USER,
        "-b",
        cfg.builtin,
        "-c",
        str(cfg.clients_per_node),
        "-j",
        "1",
        *amount,
        "--random-seed",
        str(seed),
        "-n",
    ]
    if cfg.rate_tps > 0:
        argv += ["-R", f"{cfg.rate_tps:g}"]
    return argv + [PG_USER]


_REPORT_FIELDS: Final = {
    "transactions": (r"number of transactions actually processed: (\d+)", int),
    "failed_transactions": (r"number of failed transactions: (\d+)", int),
    "latency_average_ms": (r"latency average = ([\d.]+) ms", float),
    "latency_stddev_ms": (r"latency stddev = ([\d.]+) ms", float),
    "schedule_lag_average_ms": (r"rate limit schedule lag: avg ([\d.]+)", float),
    "tps": (r"tps = ([\d.]+) \(without initial connection time\)", float),
}


def parse_report(text: str, source: str = "pgbench output") -> dict[str, float]:
    """The statistics of a pgbench run report (PostgreSQL 14+ wording).

    Returns ``transactions``, ``tps`` and, when printed, ``failed_transactions``,
    ``latency_average_ms``, ``latency_stddev_ms``, ``schedule_lag_average_ms``.

    Raises:
        ValueError: no transaction count or tps line (names ``source``).
    """
    out: dict[str, float] = {}
    for key, (pattern, typ) in _REPORT_FIELDS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = typ(m.group(1))
    missing = [k for k in ("transactions", "tps") if k not in out]
    if missing:
        raise ValueError(f"{source}: no {' / '.join(missing)} in the pgbench report")
    return out


class PostgresPgbench:
    """Runs :class:`PgbenchConfig` on a :class:`~disaggsim.testbed.collect_apps.Cluster`."""

    def __init__(self, cfg: PgbenchConfig, cluster: Cluster) -> None:
        if cluster.n_nodes < 2:
            raise ValueError("postgres-pgbench: needs >= 2 nodes (server + clients)")
        self.cfg, self.cl = cfg, cluster
        self.bindir = pg_bindir()

    @property
    def datadir(self) -> Path:
        """The server's data directory, on node 0's data disk."""
        return self.cl.data_dirs[0] / "pgdata"

    def describe(self) -> dict[str, object]:
        """Application, dataset and placement for meta.json/README."""
        return {
            "app": "postgres-pgbench",
            "application": (
                f"PostgreSQL {self.bindir.parent.name} (Debian) + pgbench "
                f"{self.cfg.builtin} clients"
            ),
            "dataset": (
                f"pgbench scale {self.cfg.scale} ({100_000 * self.cfg.scale} accounts, "
                f"~{self.cfg.scale * BYTES_PER_SCALE >> 20} MB)"
            ),
            "placement": {"server": 0, "clients": list(range(1, self.cl.n_nodes))},
            "config": self.cfg.model_dump(),
        }

    def _as_pg(self, preload: str = "") -> list[str]:
        """The command prefix running a program as the ``postgres`` user (setpriv).

        ``preload``: the ``LD_PRELOAD`` the program gets (``disaggsim emulate``'s uffd
        device, ``swapdev/src/uffd_preload.c``). It must skip setpriv itself: glibc aborts a
        multithreaded set*id whose threads disagree, and setpriv keeps its capabilities
        across the uid change on its own thread only (the device's threads lose them). The
        program keeps ``CAP_SYS_PTRACE`` (ambient), which userfaultfd(2) asks of an
        unprivileged process while ``vm.unprivileged_userfaultfd`` is 0.
        """
        base = ["setpriv", f"--reuid={PG_USER}", f"--regid={PG_USER}", "--init-groups"]
        if not preload:
            return base
        return [
            "env",
            "-u",
            "LD_PRELOAD",
            *base,
            "--inh-caps=+sys_ptrace",
            "--ambient-caps=+sys_ptrace",
            "env",
            f"LD_PRELOAD={preload}",
        ]

    def prepare_data(self) -> None:
        """``initdb`` the data directory on node 0's disk (owned by ``postgres``)."""
        if shutil.which("setpriv") is None:
            raise RuntimeError("setpriv not installed (apt-get install util-linux)")
        # The collector's work directory is 0700 root; the server runs as postgres and must
        # reach its data directory below it.
        for d in (self.cl.data_dirs[0].parent, self.cl.data_dirs[0]):
            d.chmod(d.stat().st_mode | 0o711)
        self.datadir.mkdir()
        shutil.chown(self.datadir, PG_USER, PG_USER)
        sh(
            self._as_pg()
            + [
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-U",
                PG_USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        with open(self.datadir / "pg_hba.conf", "a") as fh:
            fh.write(hba_line(node_ip(0).rsplit(".", 1)[0] + ".0/24"))

    def start(self, stack: UndoStack) -> None:
        """Start the server on node 0, load the tables from node 1 and prewarm (untraced)."""
        preload = self.cl.child_env("postgres").get("LD_PRELOAD", "")
        argv = self._as_pg(preload) + [str(self.bindir / "postgres"), "-D", str(self.datadir)]
        for key, value in server_settings(self.cfg, node_ip(0)).items():
            argv += ["-c", f"{key}={value}"]
        proc = self.cl.spawn(stack, 0, argv, "postgres")
        # Pushed after the spawn's own undo, so it runs first: a fast shutdown (SIGINT:
        # abort transactions, checkpoint) instead of the process-group SIGTERM/SIGKILL.
        stack.undo(f"PostgreSQL server {proc.pid}", _fast_shutdown, proc)
        wait_tcp(1, node_ip(0), self.cfg.port, 60)
        pgbench = str(self.bindir / "pgbench")
        load = self.cl.spawn(stack, 1, init_argv(self.cfg, pgbench, node_ip(0)), "pgbench-init")
        self.cl.wait([load], 900, "pgbench -i")
        if self.cfg.prewarm:
            warm = self.cl.spawn(
                stack,
                1,
                prewarm_argv(self.cfg, str(self.bindir / "psql"), node_ip(0)),
                "pg-prewarm",
            )
            self.cl.wait([warm], 900, "pg_prewarm")

    def run(self, stack: UndoStack, duration_s: float) -> dict[str, object]:
        """pgbench from every client node for ``duration_s``; their reports' statistics."""
        pgbench = str(self.bindir / "pgbench")
        procs = [
            self.cl.spawn(
                stack,
                node,
                run_argv(self.cfg, pgbench, node_ip(0), duration_s, self.cl.seed * 1000 + node),
                f"pgbench-node{node}",
            )
            for node in range(1, self.cl.n_nodes)
        ]
        self.cl.wait(procs, duration_s + 300, "pgbench run")
        out: dict[str, object] = {}
        for node in range(1, self.cl.n_nodes):
            log = self.cl.log_dir / f"pgbench-node{node}.log"
            out[f"node{node}"] = parse_report(log.read_text(errors="replace"), str(log))
        return out

    def jct_s(self, results: dict[str, object]) -> float:
        """The job completion time: the slowest client node's transactions over its
        throughput (pgbench's tps "without initial connection time"), i.e. the time its
        fixed ``transactions_per_client`` took once connected."""
        return max(
            float(r["transactions"]) / float(r["tps"])  # type: ignore[index]
            for r in results.values()
            if isinstance(r, dict)
        )


def _fast_shutdown(proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    """SIGINT the postmaster (PostgreSQL "fast" shutdown) and wait for it to exit."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, 2)
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL {proc.pid}: no fast shutdown in {timeout_s:.0f} s")
        time.sleep(0.1)
