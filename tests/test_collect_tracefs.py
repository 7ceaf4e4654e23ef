"""tracefs save/restore (testbed/collect_tracefs.py, arm_blk_tracer) against a fake tracefs
that shows and rejects what the kernel does (tests/fake_tracefs.py names its kernel sources)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture
from fake_tracefs import FakeTracefs, fake_block_device

from disaggsim.testbed.collect_blk import TRACEFS_SETTINGS, arm_blk_tracer
from disaggsim.testbed.collect_env import RestoreError
from disaggsim.testbed.collect_tracefs import (
    TRACEFS,
    BufferSize,
    Tracefs,
    parse_buffer_size_kb,
    parse_choice,
    read_tracefs_state,
    restore_tracefs,
    ring_buffer_kb,
    save_tracefs,
    tracefs_state,
)


def test_parse_every_buffer_size_format() -> None:
    assert parse_buffer_size_kb("1410") == BufferSize(1410)
    assert parse_buffer_size_kb("7 (expanded: 1408)\n") == BufferSize(7, 1408)
    assert parse_buffer_size_kb("X") == BufferSize(None)
    with pytest.raises(ValueError, match=r"/t/buffer_size_kb: expected 'N', .* got 'big'"):
        parse_buffer_size_kb("big", "/t/buffer_size_kb")


def test_parse_choice_files() -> None:
    assert parse_choice("[local] global counter mono") == "local"
    assert parse_choice("local global [mono] mono_raw") == "mono"
    assert parse_choice("nop") == "nop"


def test_ring_buffer_rounding() -> None:
    # 32768 KiB -> ceil(33554432 / 4080) = 8225 sub-buffers -> 33558000 B -> 32771 (measured
    # on this machine: `echo 32768 > buffer_size_kb` reads back 32771).
    assert ring_buffer_kb(32768) == 32771
    assert ring_buffer_kb(1408) == 1410  # 354 sub-buffers
    assert ring_buffer_kb(1) == 7  # at least 2 sub-buffers: 8160 B
    assert all(ring_buffer_kb(ring_buffer_kb(k)) == ring_buffer_kb(k) for k in range(1, 3000))


def test_fake_shows_the_kernel_formats(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path)
    assert fs.read("buffer_size_kb") == "7 (expanded: 1408)"
    with pytest.raises(OSError, match="Invalid argument"):
        fs.write("buffer_size_kb", "7 (expanded: 1408)")
    fs.write("current_tracer", "nop")  # first use of tracing grows the buffer
    assert fs.read("buffer_size_kb") == "1410"
    fs.write("per_cpu/cpu1/buffer_size_kb", "2048")
    assert fs.read("buffer_size_kb") == "X"
    with pytest.raises(OSError, match="Invalid argument"):
        fs.write("trace_clock", "[local]")


def test_unexpanded_buffer_restores_on_fresh_boot(tmp_path: Path) -> None:
    # The issue-6 failure: on a freshly booted machine buffer_size_kb reads
    # "7 (expanded: 1408)"; writing that back fails with EINVAL and left 32771 KiB behind.
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    assert before["buffer_size_kb"] == "1410"  # the size a tracer gets: M, rounded
    restore = arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    assert fs.read("buffer_size_kb") == "32771"
    assert fs.read("current_tracer") == "blk" and parse_choice(fs.read("trace_clock")) == "mono"
    assert (loop / "enable").read_text() == "1"
    restore()
    assert tracefs_state(fs) == before
    # The kernel cannot un-expand: the restored buffer is the boot size M it would grow to.
    assert fs.read("buffer_size_kb") == "1410"
    assert fs.read("per_cpu/cpu0/buffer_size_kb") == "1410"
    assert (loop / "enable").read_text() == "0"
    assert fs.read("trace_clock").startswith("[local] ")
    assert fs.read("options/bin") == "0" and fs.read("options/context-info") == "1"


def test_per_cpu_sizes_restored_when_they_differ(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path, n_cpus=3, expanded=True)
    fs.write("per_cpu/cpu1/buffer_size_kb", "4096")
    fs.write("tracing_on", "0")
    fs.write("trace_clock", "global")
    fs.write("current_tracer", "function")
    before = tracefs_state(fs)
    assert fs.read("buffer_size_kb") == "X"
    saved = save_tracefs(fs, TRACEFS_SETTINGS)
    assert saved.writes[-1] == ("tracing_on", "0")
    # 4096 KiB -> ceil(4194304 / 4080) = 1029 sub-buffers -> 4198320 B -> 4099 KiB.
    assert ("per_cpu/cpu1/buffer_size_kb", "4099") in saved.writes
    restore = arm_blk_tracer(fs, [], 32768, "0xffff")
    assert fs.read("buffer_size_kb") == "32771"
    restore()
    assert tracefs_state(fs) == before
    assert [fs.read(f"per_cpu/cpu{c}/buffer_size_kb") for c in range(3)] == ["1410", "4099", "1410"]
    assert fs.read("current_tracer") == "function" and fs.read("tracing_on") == "0"


def test_restore_does_every_step_and_reports_all_failures(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing", expanded=True)
    fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    restore = arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    fs.refuse = {"trace_clock": {"local"}, "options/bin": {"0"}}
    with pytest.raises(RestoreError) as err:
        restore()
    assert len(err.value.failures) == 2
    assert "trace_clock: writing 'local': Input/output error" in str(err.value)
    assert "options/bin: writing '0': Input/output error" in str(err.value)
    after = tracefs_state(fs)
    assert {k for k in before if before[k] != after[k]} == {"trace_clock", "options/bin"}
    assert (tmp_path / "block/loop3/trace/enable").read_text() == "0"


def test_failed_arming_restores_what_it_changed(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    fs.refuse = {"current_tracer": {"blk"}}
    with pytest.raises(OSError, match="Input/output error"):
        arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    assert tracefs_state(fs) == before
    assert (loop / "enable").read_text() == "0"


@pytest.mark.skipif(os.geteuid() != 0, reason="reading tracefs needs root")
def test_real_tracefs_state_parses() -> None:
    # Read-only: mounted tracefs is read in place, else through a private mount namespace.
    state = read_tracefs_state()
    assert int(state["buffer_size_kb"]) >= 7
    assert state["tracing_on"] in ("0", "1") and " " not in state["trace_clock"]
    assert int(state["per_cpu/cpu0/buffer_size_kb"]) >= 7


@pytest.fixture
def kernel_instance(tmp_path: Path) -> Iterator[Tracefs]:
    """A fresh tracefs instance (``instances/NAME``: its own ring buffer, clock, tracer and
    options) of the real kernel, removed afterwards; tracefs is mounted at a temp dir for the
    test if it is not mounted. Changes kernel state for the test: run under the system lock."""
    if os.geteuid() != 0 or "tracefs" not in Path("/proc/filesystems").read_text():
        pytest.skip("needs root and tracefs")
    root, mounted = TRACEFS, False
    if not (TRACEFS / "trace_pipe").exists():
        root = tmp_path / "tracing"
        root.mkdir()
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)], check=True)
        mounted = True
    inst = root / "instances" / f"dsim-test-{os.getpid()}"
    try:
        inst.mkdir()
        try:
            yield Tracefs(inst)
        finally:
            inst.rmdir()
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=True)


def test_fake_matches_the_kernel(kernel_instance: Tracefs, tmp_path: Path) -> None:
    # Same writes on a real (expanded) instance and on the fake: same texts, same refusals.
    fake = FakeTracefs(tmp_path / "fake", n_cpus=len(kernel_instance.cpus()), expanded=True)
    files = ("buffer_size_kb", "per_cpu/cpu0/buffer_size_kb", "trace_clock", "tracing_on")
    writes = [
        ("buffer_size_kb", "4096"),
        ("trace_clock", "mono"),
        ("buffer_size_kb", "1408"),
        ("per_cpu/cpu0/buffer_size_kb", "7"),
        ("tracing_on", "0"),
    ]
    for name, value in writes:
        kernel_instance.write(name, value)
        fake.write(name, value)
        assert [kernel_instance.read(f) for f in files] == [fake.read(f) for f in files], name
    for name, value in (
        ("buffer_size_kb", "X"),
        ("buffer_size_kb", "7 (expanded: 1408)"),
        ("trace_clock", "[local]"),
        ("current_tracer", "nosuch"),
        ("buffer_size_kb", "0"),
    ):
        for fs in (kernel_instance, fake):
            with pytest.raises(OSError) as err:
                fs.write(name, value)
            assert err.value.errno == errno.EINVAL, (fs, name, value)


def test_kernel_round_trip_per_cpu_sizes_and_clock(kernel_instance: Tracefs) -> None:
    fs = kernel_instance
    fs.write("per_cpu/cpu0/buffer_size_kb", "2048")
    fs.write("trace_clock", "global")
    fs.write("tracing_on", "0")
    before = tracefs_state(fs)
    # 2048 KiB -> ceil(2097152 / 4080) = 515 sub-buffers -> 2101200 B -> 2051 KiB.
    assert fs.read("buffer_size_kb") == "X" and before["per_cpu/cpu0/buffer_size_kb"] == "2051"
    saved = save_tracefs(
        fs,
        ("tracing_on", "current_tracer", "trace_clock", "buffer_size_kb", "options/context-info"),
    )
    fs.write("buffer_size_kb", "4096")
    fs.write("trace_clock", "mono")
    fs.write("options/context-info", "0")
    fs.write("tracing_on", "1")
    assert tracefs_state(fs) != before
    assert restore_tracefs(fs, saved) == []
    assert tracefs_state(fs) == before
