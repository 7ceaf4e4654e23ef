"""The collector's tracefs mount, tracefs settings and block-trace enables that a SIGKILLed
collector left are restored by the next command that reaps (``disaggsim/owners.py``;
``testbed/collect_env.py`` ``ensure_tracefs``, ``own_settings``; ``testbed/collect_blk.py``
``arm_blk_tracer``), and a live collector's make a second one refuse.

The root test changes the kernel's tracefs and a loop device's block trace for a few
seconds: run it under the machine lock (``flock /tmp/disaggsim-machine.lock``). The autouse
fixture checks that the machine is as it was after the test (``collect_env.system_state``:
tracefs, block traces, mounts, loop devices, owner records).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _own_processes import kill_processes, tag_environment
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed import collect_env as env
from disaggsim.testbed.collect_blk import arm_blk_tracer
from disaggsim.testbed.collect_tracefs import (
    STATE_FILES,
    TRACEFS,
    Tracefs,
    parse_choice,
    read_tracefs_state,
    restore_tracefs,
    save_tracefs,
)

needs_root = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("losetup") is None
    or "tracefs" not in Path("/proc/filesystems").read_text(),
    reason="needs root, losetup and tracefs",
)

#: A collector's tracing set-up (testbed/collect.py): its work directory, a loop device
#: there, tracefs mounted if it is not, the blk tracer armed on the device; prints the
#: device and waits.
ARMED_COLLECTOR = """\
import sys, time
from pathlib import Path
from disaggsim.signals import interrupt_on_signals
from disaggsim.testbed import collect_env as env
from disaggsim.testbed.collect_blk import arm_blk_tracer
with interrupt_on_signals(), env.UndoStack() as stack:
    work = env.work_dir(stack, Path(sys.argv[1]))
    dev = env.loop_device(stack, work / "node0.disk.img", 16 << 20)
    fs = env.ensure_tracefs(stack)
    stack.undo("tracefs settings", arm_blk_tracer(fs, [dev], 4096, "0xffff"))
    print(dev, flush=True)
    time.sleep(600)
"""


def _armed(dev: str) -> bool:
    """Whether the collector's last arming steps are visible: ``tracing_on`` and the
    device's trace enable are 1, ``current_tracer`` is ``blk`` (collect_blk.py writes
    them in that order, ``tracing_on`` last)."""
    try:
        return (
            (env.SYS_BLOCK / dev / "trace" / "enable").read_text().strip() == "1"
            and (TRACEFS / "current_tracer").read_text().strip() == "blk"
            and (TRACEFS / "tracing_on").read_text().strip() == "1"
        )
    except OSError:
        return False


def _put_back(before: dict[str, str], mounted_before: bool, dev: str | None) -> None:
    """The test's safety net, for a failing test only: write the values ``before``
    (:func:`read_tracefs_state`: choices and buffer sizes as a tracer runs with them, all
    writable as shown) back to the kernel's tracefs, ``tracing_on`` last, disable ``dev``'s
    block trace, and unmount tracefs if it was not mounted before."""
    if dev is not None:
        with contextlib.suppress(OSError):
            (env.SYS_BLOCK / dev / "trace" / "enable").write_text("0")
    mounted_now = (TRACEFS / "trace_pipe").exists()
    if not mounted_now:
        env.sh(["mount", "-t", "tracefs", "nodev", str(TRACEFS)])
    fs = Tracefs(TRACEFS)
    names = [n for n in STATE_FILES if n in before and n != "tracing_on"]
    names += sorted(n for n in before if n.startswith("per_cpu/"))
    for name in [*names, "tracing_on"]:
        if before.get(name, "X") != "X" and parse_choice(fs.read(name)) != before[name]:
            with contextlib.suppress(OSError):
                fs.write(name, before[name])
    if not mounted_before:
        env.sh(["umount", str(TRACEFS)])


@pytest.fixture(params=["as-found", "per-cpu-sizes-differ"])
def machine_tracing(request: pytest.FixtureRequest) -> Iterator[None]:
    """The machine's tracefs as found, or set as a machine whose tracing someone tuned:
    CPU 0's ring buffer bigger than the others' (``buffer_size_kb`` reads ``X``: only the
    per-CPU files tell the sizes), ``trace_clock`` global, ``tracing_on`` 0; tracefs is
    mounted for that (and unmounted after, with the old values written back)."""
    if request.param == "as-found":
        yield
        return
    if len(os.sched_getaffinity(0)) < 2 or not (TRACEFS.parent.is_dir()):
        pytest.skip("needs 2 CPUs and /sys/kernel")
    mounted = (TRACEFS / "trace_pipe").exists()
    if not mounted:
        env.sh(["mount", "-t", "tracefs", "nodev", str(TRACEFS)])
    try:
        fs = Tracefs(TRACEFS)
        saved = save_tracefs(fs, ("trace_clock", "buffer_size_kb", "tracing_on"))
        try:
            top = int(fs.read("per_cpu/cpu1/buffer_size_kb"))
            fs.write("per_cpu/cpu0/buffer_size_kb", str(top + 2048))
            fs.write("trace_clock", "global")
            fs.write("tracing_on", "0")
            assert fs.read("buffer_size_kb") == "X"
            yield
        finally:
            assert restore_tracefs(fs, saved) == []
    finally:
        if not mounted:
            env.sh(["umount", str(TRACEFS)])


@needs_root
@pytest.mark.usefixtures("machine_tracing")
def test_a_sigkilled_collectors_tracefs_is_restored_by_the_next_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # A collector arms the blk tracer (tracefs mounted by it if it was not, its settings
    # changed, a loop device's block trace enabled). While it runs, a second collector
    # refuses, one line naming its pid, and changes nothing. SIGKILL then runs no undo
    # step: everything stays. The next command's reaping (as every command does first)
    # puts every tracefs file (per CPU where the sizes differ) and the block trace back to
    # the values read before the collector started, and unmounts tracefs if the collector
    # mounted it.
    tag = tag_environment(monkeypatch)
    mounted_before = (TRACEFS / "trace_pipe").exists()
    before = read_tracefs_state()
    assert before.get("current_tracer") != "blk", "another job uses the blk tracer"
    blk_before = env.system_state()["blk_trace"]
    collector = subprocess.Popen(
        [sys.executable, "-c", ARMED_COLLECTOR, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    dev = None
    try:
        assert collector.stdout is not None
        dev = collector.stdout.readline().strip()
        assert dev, f"the collector failed (exit {collector.wait()})"
        deadline = time.monotonic() + 10
        while not _armed(dev):
            assert time.monotonic() < deadline, "the collector did not arm the blk tracer"
            time.sleep(0.01)
        # A live owner: a second collector refuses at its first tracefs step.
        second = Tracefs(TRACEFS)
        with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
            if not mounted_before:
                env.ensure_tracefs(stack)
            arm_blk_tracer(second, [], 4096, "0xffff")
        assert str(err.value).endswith(
            f"exists, owned by pid {collector.pid}, which runs: is another disaggsim "
            "command running?"
        ), err.value
        assert "\n" not in str(err.value) and _armed(dev)
        collector.kill()
        assert collector.wait() == -signal.SIGKILL
        assert _armed(dev)  # SIGKILL ran no undo step
        capfd.readouterr()
        env.reap_dead_state()
        err_lines = capfd.readouterr().err.splitlines()
        assert read_tracefs_state() == before
        assert env.system_state()["blk_trace"] == blk_before
        assert (TRACEFS / "trace_pipe").exists() == mounted_before
        said = [line for line in err_lines if f"left by dead pid {collector.pid}" in line]
        assert any(f"/sys/block/{dev}/trace/enable" in line for line in said), said
        assert any(f"{TRACEFS}/current_tracer" in line for line in said), said
        if before["buffer_size_kb"] == "X":  # restored per CPU, each its own record
            assert any(f"{TRACEFS}/per_cpu/cpu0/buffer_size_kb" in line for line in said)
        assert any(f"tracefs mount at {TRACEFS}" in line for line in said) != mounted_before
    finally:
        collector.kill()
        collector.wait()
        kill_processes(tag)
        with contextlib.suppress(Exception):
            env.reap_dead_state()
        if read_tracefs_state() != before or (TRACEFS / "trace_pipe").exists() != mounted_before:
            _put_back(before, mounted_before, dev)
        elif dev is not None:
            with contextlib.suppress(OSError):
                (env.SYS_BLOCK / dev / "trace" / "enable").write_text("0")
