"""A failed collection keeps its application logs and its error quotes the failing log.

Seen on a freshly booted machine: the smoke collection failed with ``YCSB load: ... exited 1;
see <dir>/logs``, but ``<dir>`` was the partial output, deleted while unwinding, so the cause
could not be read afterwards. These tests run real processes but change no machine state.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from disaggsim.testbed.collect import _discard_partial
from disaggsim.testbed.collect_apps import Cluster


def test_failed_collection_keeps_logs_and_nothing_else(tmp_path: Path) -> None:
    out_dir = tmp_path / "sample"
    partial = tmp_path / ".sample.partial-x"
    (partial / "logs").mkdir(parents=True)
    (partial / "logs" / "ycsb-load-node1.log").write_text("ConnectionRefusedError\n")
    (partial / "node0.pcap").write_bytes(b"\xd4\xc3\xb2\xa1")
    _discard_partial(partial, out_dir)
    kept = tmp_path / "sample.failed-logs"
    assert (kept / "ycsb-load-node1.log").read_text() == "ConnectionRefusedError\n"
    assert not partial.exists() and not out_dir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.failed-logs"]


def test_successful_collection_leaves_no_failed_logs(tmp_path: Path) -> None:
    # After success the partial directory was renamed to out_dir: nothing to do.
    _discard_partial(tmp_path / ".sample.partial-x", tmp_path / "sample")
    assert list(tmp_path.iterdir()) == []


def test_failed_process_error_quotes_its_log(tmp_path: Path) -> None:
    cluster = Cluster(n_nodes=1, memcgs=[], data_dirs=[], log_dir=tmp_path, seed=1)
    log = tmp_path / "app.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            ["sh", "-c", "echo line1; echo 'boom: refused'; exit 3"],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    cluster.logs[proc.pid] = log
    with pytest.raises(RuntimeError, match=r"(?s)app: .*exited 3.*app\.log.*boom: refused"):
        cluster.wait([proc], timeout_s=10, what="app")
