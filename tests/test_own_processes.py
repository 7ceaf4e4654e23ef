"""``tests/_own_processes.py``: a test finds the processes its code under test started and
only those, whatever else runs on the machine."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from _own_processes import TAG_VARIABLE, live_processes, tag_environment

from disaggsim import owners


def _wait_zombie(pid: int) -> None:
    """Wait (at most 10 s) until ``pid`` has exited (a zombie, not yet reaped)."""
    for _ in range(1000):
        stat = owners.process_stat(pid)
        assert stat is not None, f"pid {pid} was reaped"
        if stat.state == "Z":
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} did not exit")


def test_finds_the_tagged_descendants_and_no_other_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three identical ``sleep 61`` commands: one started before the tag (another
    engineer's), one started after it as a grandchild in its own session (``setsid``: out
    of the test's process group, as a daemon would be), one started with the tag removed
    from its environment. Only the tagged one is found, by pid, with its command line; once
    killed (a zombie until reaped) it is no longer listed."""
    other = subprocess.Popen(["sleep", "61"])
    tag = tag_environment(monkeypatch)
    assert os.environ[TAG_VARIABLE] == tag and live_processes(tag) == {}
    shell = subprocess.Popen(
        ["sh", "-c", "setsid sleep 61 & echo $!; wait"], stdout=subprocess.PIPE, text=True
    )
    untagged = subprocess.Popen(
        ["sleep", "61"], env={k: v for k, v in os.environ.items() if k != TAG_VARIABLE}
    )
    try:
        assert shell.stdout is not None
        daemon = int(shell.stdout.readline())
        for _ in range(1000):  # until setsid has exec'd the sleep
            with open(f"/proc/{daemon}/cmdline", "rb") as fh:
                if fh.read() == b"sleep\x0061\x00":
                    break
            time.sleep(0.01)
        found = live_processes(tag)
        assert found == {shell.pid: "sh -c setsid sleep 61 & echo $!; wait", daemon: "sleep 61"}, (
            found
        )
        assert os.getsid(daemon) == daemon != os.getsid(0)
        # the same value under another variable name is not a match
        assert live_processes(tag, variable="DISAGGSIM_OTHER_TAG") == {}
        os.kill(daemon, signal.SIGKILL)
        shell.wait(timeout=10)  # its `wait` returns once the sleep is gone (reaped)
        assert live_processes(tag) == {}
    finally:
        for p in (other, untagged, shell):
            p.kill()
            p.wait()


def test_a_zombie_is_not_a_live_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tagged child that exited but was not reaped yet (state Z) holds nothing: not
    listed; while it runs it is."""
    tag = tag_environment(monkeypatch)
    child = subprocess.Popen(["sleep", "61"])
    try:
        assert list(live_processes(tag)) == [child.pid]
        os.kill(child.pid, signal.SIGKILL)
        _wait_zombie(child.pid)
        assert live_processes(tag) == {}
    finally:
        child.kill()
        child.wait()
