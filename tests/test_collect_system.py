"""End-to-end ``disaggsim collect`` on this machine: real namespaces, memcg, swap, ftrace.

Needs root, cgroup v1 memory, tcpdump, memcached, blkparse and pymemcache; skipped with the
reason otherwise. Checks that the machine is left as found (also after a failure and after
SIGTERM) and that every output parses with the standard tools.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.collect import PRESETS, CollectConfig, collect
from disaggsim.testbed.collect_apps import MemcachedYcsbConfig
from disaggsim.testbed.collect_env import MEMCG_ROOT, system_state
from disaggsim.traces.paging import read_rmem_meta


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, cgroups, swap, ftrace)"
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return "cgroup v1 memory controller not mounted at /sys/fs/cgroup/memory"
    for tool in ("tcpdump", "memcached", "blkparse", "ip", "losetup", "mkswap"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    try:
        import pymemcache  # noqa: F401
    except ImportError:
        return "pymemcache not installed (pip install .[collect])"
    if Path("/proc/swaps").read_text().count("\n") > 1:
        return "a swap area is already active"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))

RMEM_LINE = re.compile(r"^(\d+) (\d+) ([+-]\d+) ([1-9]\d*)$")


def test_smoke_collection_restores_state_and_outputs_parse(tmp_path: Path) -> None:
    before = system_state()
    out = collect(PRESETS["smoke"], tmp_path / "out", command="pytest smoke")
    assert system_state() == before
    meta = json.loads((out / "meta.json").read_text())
    assert [n["ip"] for n in meta["nodes"]] == ["10.77.0.1", "10.77.0.2", "10.77.0.3"]
    assert meta["page_bytes"] == 4096 and meta["memory_limit_fraction"] == 0.25
    assert abs(meta["trace_clock_offset_ns"] - (time.time_ns() - time.monotonic_ns())) < 10**9
    # The YCSB clients ran against memcached for the whole traced phase.
    res = meta["apps"][0]["results"]
    assert res["node1"]["ops"] > 100 and res["node2"]["ops"] > 100
    ins = outs = 0
    for node in meta["nodes"]:
        i = node["node"]
        # tcpdump reads the pcap; node i's capture holds memcached packets to/from node i.
        text = subprocess.run(
            ["tcpdump", "-n", "-r", str(out / node["pcap"])],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert text.count(".11211") > 100, i
        assert node["pcap_dropped_by_kernel"] == 0
        for prefix in (node["disk_blktrace"], node["swap_blktrace"]):
            files = sorted(out.glob(prefix + ".blktrace.*"))
            assert [f.name for f in files] == [
                f"{prefix}.blktrace.{c}" for c in range(meta["n_cpus"])
            ]
            if sum(f.stat().st_size for f in files):
                bp = subprocess.run(
                    ["blkparse", "-i", prefix], cwd=out, capture_output=True, text=True, check=True
                ).stdout
                assert "Skips: 0 forward" in bp
        lines = (out / node["paging"]).read_text().splitlines()
        assert all(RMEM_LINE.match(ln) for ln in lines)
        node_outs = sum(ln.split()[2].startswith("+") for ln in lines)
        # One line per run of contiguous pages in a batch: at most one per request.
        assert (node_outs > 0) == (node["swap_out_requests"] > 0)
        assert node_outs <= node["swap_out_requests"]
        assert len(lines) - node_outs <= node["swap_in_requests"]
        ins += len(lines) - node_outs
        outs += node_outs
        assert read_rmem_meta(out / (node["paging"] + ".meta")) == (
            meta["start_realtime_ns"] // 1000
        )
    # memcached (node 0) runs at 25 % of its working set: it swaps out and back in.
    assert meta["nodes"][0]["memory_limit_binding"], meta["nodes"][0]
    assert meta["nodes"][0]["memory_limit_bytes"] < 0.5 * meta["nodes"][0]["working_set_bytes"]
    assert meta["nodes"][0]["swap_out_requests"] > 0 and meta["nodes"][0]["swap_in_requests"] > 0
    assert ins > 0 and outs > 0
    assert meta["swap_attribution"]["by_method"].get("pid", 0) > 0
    assert (out / "README.md").read_text().startswith("# Sample `smoke`")


def test_failure_restores_state_and_writes_nothing(tmp_path: Path) -> None:
    before = system_state()
    bad = CollectConfig(
        sample="bad",
        apps=[MemcachedYcsbConfig(recordcount=100, port=1)],
        duration_s=2,
        working_set_bytes=[64 << 20] * 3,
        disk_bytes=64 << 20,
        swap_bytes=64 << 20,
    )
    with pytest.raises(RuntimeError):  # memcached as nobody cannot bind port 1
        collect(bad, tmp_path / "out")
    assert system_state() == before
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out.partial-*"))


def test_sigterm_restores_state(tmp_path: Path) -> None:
    before = system_state()
    cfg = PRESETS["smoke"].model_copy(update={"duration_s": 60.0})
    (tmp_path / "cfg.json").write_text(cfg.model_dump_json())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "disaggsim.testbed.collect",
            "--config",
            str(tmp_path / "cfg.json"),
            "--out",
            str(tmp_path / "out"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not Path("/sys/fs/cgroup/memory/disaggsim-node0").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(8)  # inside calibration or the traced run
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.decode().strip().splitlines()[-1] == "disaggsim collect: interrupted by SIGTERM"
    assert system_state() == before
    assert not (tmp_path / "out").exists()
