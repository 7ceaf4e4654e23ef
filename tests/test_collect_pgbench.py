"""PostgreSQL + pgbench in ``disaggsim collect`` (testbed/apps/pgbench.py).

Pure parts (config validation, command lines, the report parser) always run; one real
collection of a small pgbench configuration (~40 s: PostgreSQL, pgbench, namespaces, memcg,
swap, ftrace) runs as root on a machine with the collector's tools and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture
from pydantic import ValidationError

from disaggsim.testbed.apps.pgbench import (
    PG_USER,
    PgbenchConfig,
    hba_line,
    init_argv,
    parse_report,
    pg_bindir,
    prewarm_argv,
    run_argv,
    server_settings,
)
from disaggsim.testbed.collect import PRESETS, CollectConfig, collect
from disaggsim.testbed.collect_env import MEMCG_ROOT, system_state

#: A pgbench 15 report, as written by the bundled sample's client on node 1.
REPORT_15 = """\
pgbench: setting random seed to 1001
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 10
query mode: simple
number of clients: 4
number of threads: 1
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 1014
number of failed transactions: 0 (0.000%)
latency average = 8.887 ms
latency stddev = 26.343 ms
rate limit schedule lag: avg 0.641 (max 34.414) ms
initial connection time = 56.152 ms
tps = 98.985496 (without initial connection time)
"""


def test_parse_report_reads_every_statistic() -> None:
    assert parse_report(REPORT_15) == {
        "transactions": 1014,
        "failed_transactions": 0,
        "latency_average_ms": 8.887,
        "latency_stddev_ms": 26.343,
        "schedule_lag_average_ms": 0.641,
        "tps": 98.985496,
    }


def test_parse_report_names_the_log_when_the_run_did_not_finish() -> None:
    cut = REPORT_15.split("number of transactions")[0]
    with pytest.raises(ValueError, match=r"pgbench-node1\.log: no transactions / tps"):
        parse_report(cut, "logs/pgbench-node1.log")


def test_run_argv_paces_and_seeds_each_client() -> None:
    cfg = PgbenchConfig(clients_per_node=3, rate_tps=50, builtin="select-only", port=6000)
    argv = run_argv(cfg, "/bin/pgbench", "10.77.0.1", 7.6, seed=2001)
    assert argv == [
        "/bin/pgbench",
        "-h",
        "10.77.0.1",
        "-p",
        "6000",
        "-U",
        PG_USER,
        "-b",
        "select-only",
        "-c",
        "3",
        "-j",
        "1",
        "-T",
        "8",
        "--random-seed",
        "2001",
        "-n",
        "-R",
        "50",
        PG_USER,
    ]
    # rate 0: unthrottled (no -R); a sub-second duration still runs pgbench for 1 s.
    unpaced = run_argv(PgbenchConfig(rate_tps=0), "pgbench", "h", 0.2, seed=1)
    assert "-R" not in unpaced and unpaced[unpaced.index("-T") + 1] == "1"


def test_init_and_prewarm_commands() -> None:
    cfg = PgbenchConfig(scale=7)
    assert init_argv(cfg, "pgbench", "10.77.0.1") == [
        "pgbench",
        "-i",
        "-s",
        "7",
        "-q",
        "-h",
        "10.77.0.1",
        "-p",
        "5432",
        "-U",
        PG_USER,
        PG_USER,
    ]
    argv = prewarm_argv(cfg, "psql", "10.77.0.1")
    assert argv[-1] == PG_USER and "ON_ERROR_STOP=1" in argv
    sql = argv[argv.index("-c") + 1]
    assert "pg_prewarm('pgbench_accounts')" in sql and "pg_prewarm('pgbench_accounts_pkey')" in sql


def test_server_listens_on_the_node_only() -> None:
    s = server_settings(PgbenchConfig(shared_buffers_mb=192, clients_per_node=40), "10.77.0.1")
    assert s["listen_addresses"] == "10.77.0.1" and s["unix_socket_directories"] == ""
    assert s["shared_buffers"] == "192MB" and s["huge_pages"] == "off"
    assert s["max_connections"] == "180"  # 4 x 40 clients + 20 spare
    assert hba_line("10.77.0.0/24") == "host all all 10.77.0.0/24 trust\n"


def test_config_validation() -> None:
    cfg = CollectConfig.model_validate(
        {"sample": "s", "apps": [{"kind": "postgres-pgbench", "scale": 3}]}
    )
    assert isinstance(cfg.apps[0], PgbenchConfig) and cfg.apps[0].scale == 3
    with pytest.raises(ValidationError, match="shared_bufers"):
        PgbenchConfig.model_validate({"shared_bufers_mb": 64})
    with pytest.raises(ValidationError, match="scale"):
        PgbenchConfig(scale=0)
    with pytest.raises(ValidationError, match="builtin"):
        PgbenchConfig.model_validate({"builtin": "tpch"})
    assert PRESETS["postgres-pgbench"].apps[0].kind == "postgres-pgbench"


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, cgroups, swap, ftrace)"
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return "cgroup v1 memory controller not mounted at /sys/fs/cgroup/memory"
    for tool in ("tcpdump", "blkparse", "ip", "losetup", "mkswap", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    try:
        pg_bindir()
    except RuntimeError as exc:
        return str(exc)
    if Path("/proc/swaps").read_text().count("\n") > 1:
        return "a swap area is already active"
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_real_pgbench_collection(tmp_path: Path) -> None:
    """A small database (scale 2, ~30 MB, all prewarmed into 48 MB of shared_buffers) at
    25 % of node 0's working set: the server pages, the clients' packets reach it."""
    cfg = CollectConfig(
        sample="pg-smoke",
        apps=[PgbenchConfig(scale=2, shared_buffers_mb=48, clients_per_node=2, rate_tps=50)],
        duration_s=4,
        calibration_duration_s=3,
        disk_bytes=256 << 20,
        swap_bytes=512 << 20,
        memory_limit_floor_bytes=16 << 20,
        pcap_snaplen_bytes=64,
        blk_keep_actions="QDC",
    )
    before = system_state()
    out = collect(cfg, tmp_path / "out", command="pytest pg-smoke")
    assert system_state() == before
    meta = json.loads((out / "meta.json").read_text())
    res = meta["apps"][0]["results"]
    # 2 clients x 50 tps for 4 s per node: ~200 transactions each (Poisson schedule).
    for node in ("node1", "node2"):
        assert 100 < res[node]["transactions"] < 300, res
        assert res[node]["failed_transactions"] == 0
    server = meta["nodes"][0]
    assert server["memory_limit_binding"] and server["swap_out_requests"] > 0, server
    text = subprocess.run(
        ["tcpdump", "-n", "-r", str(out / "node1.pcap")], capture_output=True, text=True, check=True
    ).stdout
    assert text.count("10.77.0.1.5432") > 200  # the server's replies to node 1
    # WAL and heap writes of the server land on node 0's disk.
    assert sum(f.stat().st_size for f in out.glob("node0.disk.blktrace.*")) > 0
