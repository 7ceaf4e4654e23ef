"""The swap backend (``swapdev-fuse`` behind a direct-I/O loop swap device, memcg v1
limit) with unmodified memtouch: data intact at 4x the memory limit, the delay per request
equal to the model (exactly, device side) and visible end to end, an rmem trace readable by
``traces/paging.py``, and the machine left as found (swap, loop devices, mounts, memory
cgroups, zswap, vm.page-cluster), on failure too. Root only; runs under the machine-state
lock shared with the collector's system tests.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from disaggsim.swapdev import device
from disaggsim.testbed import collect_env
from disaggsim.traces import paging

MIB = 256
LIMIT = 64 << 20  # 1/4 of the working set
PAGES = MIB * 256

try:
    device.build_dir()
    BUILT = True
except FileNotFoundError:  # pragma: no cover
    BUILT = False
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="swap, loop and memcg need root"),
    pytest.mark.skipif(not BUILT, reason="swapdev not built (make build)"),
    pytest.mark.skipif(
        not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists(),
        reason="needs the cgroup v1 memory controller",
    ),
]


def machine_state() -> dict[str, list[str]]:
    state = collect_env.system_state()
    state["fuse_mounts"] = [
        line for line in Path("/proc/mounts").read_text().splitlines() if "fuse" in line
    ]
    state["page_cluster"] = [device.PAGE_CLUSTER.read_text().strip()]
    return state


@pytest.fixture(scope="module")
def locked() -> Iterator[dict[str, list[str]]]:
    """The machine-state lock for the module; checks the machine is left as found."""
    with device.system_lock():
        before = machine_state()
        yield before
        assert machine_state() == before


@pytest.fixture(scope="module")
def runs(
    locked: dict[str, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, device.RunResult]:
    out = {}
    for name, model in (
        ("none", device.DelayModel("none")),
        ("fixed", device.DelayModel("fixed", latency_ns=10_000, bandwidth_bps=40 * 10**9)),
    ):
        out[name] = device.run_memtouch_swap(
            tmp_path_factory.mktemp(f"swap-{name}"), MIB, LIMIT, model, timeout_s=600
        )
        assert machine_state() == locked
    return out


def test_pattern_survives_4x_memory_limit(runs: dict[str, device.RunResult]) -> None:
    for result in runs.values():
        report = result.report
        assert report["bad_pages"] == 0  # memtouch checked every word of every page
        # page-cluster=0: one major fault per page read back from swap; at least the
        # pages beyond the limit came back.
        assert report["majflt"] >= PAGES - LIMIT // 4096
        df = paging.read_rmem(result.trace)
        reads, writes = df[df["op"] == "R"], df[df["op"] == "W"]
        assert len(reads) >= report["majflt"] * 0.99
        assert writes["npages"].sum() >= PAGES - LIMIT // 4096
        assert (df["realtime_ns"] > 0).all()
        assert result.histograms["target"].n == len(df)


def test_fixed_delay_per_request(runs: dict[str, device.RunResult]) -> None:
    """Device side, exactly: target sum = model over the trace's requests; applied median
    of the 4 KiB swap-ins within 2% + 300 ns of 10 us + 819 ns (4096 B at 40 Gbps)."""
    result = runs["fixed"]
    df = paging.read_rmem(result.trace)
    lat, bw = 10_000, 40 * 10**9
    expected = sum(device.fixed_delay_ns(lat, bw, int(n) * 4096) for n in df["npages"])
    target, applied = result.histograms["target"], result.histograms["applied"]
    assert target.sum_ns == expected
    assert target.min_ns == 10_819
    assert applied.min_ns >= 10_819
    assert applied.quantile_ns(0.5) - 10_819 < 0.02 * 10_819 + 300


def test_swap_in_latency_moves_by_the_injected_delay(
    runs: dict[str, device.RunResult],
    locked: dict[str, list[str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """End to end, the injected 10.8 us (10 us + 4 KiB at 40 Gbps) is on the application's
    path: the median over 3 interleaved pairs (the fixture's and 2 more) of the swap-in
    fault latency's p50 with the delay minus without it is at least 8 us.

    Pairs, because one pair's p50s drift apart by several us between runs: on the VM of
    2026-11-28 (fault p50 37-44 us without delay) 4 pairs gave shifts of 9.0-17.0 us and
    one CI run 4.6 us. Only a lower bound is asserted: CPU contention and a slow mode where
    every fault takes ~60 us more (the guest's adaptive halt-polling: bench/RESULTS.md
    "Latency-injection device") mostly add to the shift (+9.8 us measured on a quiet
    machine). The device-side accuracy is exact and tested in test_fixed_delay_per_request."""
    shifts = [runs["fixed"].report["p50_ns"] - runs["none"].report["p50_ns"]]
    for pair in range(2):
        p50 = {}
        for name, model in (
            ("none", device.DelayModel("none")),
            ("fixed", device.DelayModel("fixed", latency_ns=10_000, bandwidth_bps=40 * 10**9)),
        ):
            p50[name] = device.run_memtouch_swap(
                tmp_path_factory.mktemp(f"swap-pair{pair}-{name}"), MIB, LIMIT, model, timeout_s=600
            ).report["p50_ns"]
            assert machine_state() == locked
        shifts.append(p50["fixed"] - p50["none"])
    assert statistics.median(shifts) >= 8_000, shifts


def test_failures_leave_the_machine_as_found(locked: dict[str, list[str]], tmp_path: Path) -> None:
    bad_table = tmp_path / "bad.txt"
    bad_table.write_text("4096 x\n")
    with pytest.raises(RuntimeError, match="exited"):
        device.run_memtouch_swap(
            tmp_path / "a", 16, LIMIT, device.DelayModel("fct-mean", fct_file=bad_table)
        )
    assert machine_state() == locked
    assert f"{bad_table}:1: field 2" in (tmp_path / "a" / "swapdev-fuse.log").read_text()
    with pytest.raises(RuntimeError, match="memtouch"):
        device.run_memtouch_swap(tmp_path / "b", 16, LIMIT, device.DelayModel("none"), passes=0)
    assert machine_state() == locked
