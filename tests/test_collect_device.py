"""``disaggsim collect --paging-recorder swapdev-uffd``: the latency-injection device records
the paging of a real collection, and the usual converter turns its logs into flows.

Real run on this machine (root, cgroup v1, memcached, tcpdump, blkparse, the built device,
jemalloc); skipped with the reason otherwise. The machine is left as found (autouse fixture).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.swapdev import device
from disaggsim.testbed.collect import PRESETS, collect
from disaggsim.testbed.collect_env import MEMCG_ROOT
from disaggsim.traces.convert import convert
from disaggsim.traces.paging import read_rmem


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, cgroups, userfaultfd, ftrace)"
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return "cgroup v1 memory controller not mounted at /sys/fs/cgroup/memory"
    for tool in ("tcpdump", "memcached", "blkparse", "ip", "losetup"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    if not device.JEMALLOC.exists():
        return f"{device.JEMALLOC} not installed (libjemalloc2)"
    try:
        device.build_dir()
    except FileNotFoundError as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))

RMEM_LINE = re.compile(r"^(\d+) (\d+) ([+-]\d+) ([1-9]\d*)$")


def test_the_device_records_the_paging_and_the_converter_reads_it(tmp_path: Path) -> None:
    """The smoke collection (memcached at 25 % of its working set, YCSB clients on the two
    other nodes) with the uffd device as recorder: memcached pages in and out, its node's
    rmem trace is in the collector's format (relative µs with a .meta start) and within
    the traced phase, there is no swap blktrace, and ``convert`` makes memory flows from
    exactly those records (the same bytes)."""
    cfg = PRESETS["smoke"].model_copy(update={"paging_recorder": "swapdev-uffd"})
    with device.system_lock():
        out = collect(
            cfg, tmp_path / "out", command="pytest device recorder", device_env=device.recorder_env
        )
    meta = json.loads((out / "meta.json").read_text())
    assert meta["paging_recorder"] == "swapdev-uffd"
    assert meta["swap_attribution"]["device_traces_missing"] == []
    node0 = meta["nodes"][0]
    assert node0["swap_blktrace"] is None and not list(out.glob("*.swap.blktrace.*"))
    assert node0["swap_out_requests"] > 0 and node0["swap_in_requests"] > 0
    lines = (out / "node0.rmem").read_text().splitlines()
    assert lines and all(RMEM_LINE.match(ln) for ln in lines)
    df = read_rmem(out / "node0.rmem")  # relative stamps + node0.rmem.meta
    assert set(df["op"]) == {"R", "W"}
    assert (df["op"] == "R").sum() == node0["swap_in_requests"]
    assert (df["op"] == "W").sum() == node0["swap_out_requests"]
    start_ns = meta["start_realtime_ns"]
    assert df["realtime_ns"].min() >= start_ns - 1000
    assert df["realtime_ns"].max() <= start_ns + (meta["duration_s"] + 1) * 1e9
    assert df.loc[df["op"] == "R", "npages"].eq(1).all()  # the device faults page by page
    flows = convert(out)
    mem = flows[flows["kind"].isin(["mem_read", "mem_write"])]
    traces = [read_rmem(out / n["paging"]) for n in meta["nodes"]]
    rows = sum(len(t) for t in traces)
    # Contiguous pieces of one batch merge into one flow (blades.memory_flows); the bytes
    # are exactly the device's pages.
    assert 0 < len(mem) <= rows
    assert mem["size_bytes"].sum() == sum(int(t["size_bytes"].sum()) for t in traces)
    # The device faults page by page, so swap-ins are whole pages in all. Single flows need
    # not be: a page straddling a blade's range boundary (ranges start at
    # ceil(k * space / N), not page-aligned) is split in two (traces/blades.py).
    swap_ins = sum(int((t["op"] == "R").sum()) for t in traces)
    assert mem.loc[mem["kind"] == "mem_read", "size_bytes"].sum() == 4096 * swap_ins
