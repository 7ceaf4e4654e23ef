"""The processes a test's code under test started, told apart from every other process of
the machine by a variable of their environment.

Several engineers run tests on one machine at once: a check by name or command line
(``pgrep -f '^sleep 60$'``, ``ps -e``) also sees another engineer's ``sleep 60`` or
daemon and fails a test that did nothing wrong. A process inherits its parent's
environment through fork and exec, across ``setsid``, process groups, memory cgroups and
network namespaces, so a variable set in the test's environment before the code under test
starts its children marks exactly those children and their descendants
(``/proc/PID/environ`` holds the environment a process was exec'd with, proc(5)).

Use :func:`tag_environment` (a value unique to the test run, in :data:`TAG_VARIABLE`) or a
variable the code under test already sets to a value unique to the run (``SLURM_CONF`` of
``sim/slurm-local.sh``), then :func:`live_processes` to list the ones still alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from disaggsim import owners

#: The environment variable :func:`tag_environment` sets.
TAG_VARIABLE = "DISAGGSIM_TEST_TAG"


def tag_environment(monkeypatch: pytest.MonkeyPatch) -> str:
    """Set :data:`TAG_VARIABLE` in this process's environment (undone after the test) to a
    value no other test run uses, and return it: every process started from here on
    carries it."""
    tag = f"{os.getpid()}-{uuid.uuid4().hex}"
    monkeypatch.setenv(TAG_VARIABLE, tag)
    return tag


def live_processes(value: str, variable: str = TAG_VARIABLE) -> dict[int, str]:
    """Every live process other than this one whose environment has ``variable=value``.

    Zombies (exited, not yet reaped: they hold no memory and run nothing) are left out, as
    are processes whose environment this user may not read (another user's: a process
    started by this one's code under test has this user's identity, or root's).

    Returns: pid -> command line (arguments joined by spaces), in pid order.
    """
    entry = f"{variable}={value}".encode()
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if entry not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            stat = owners.process_stat(int(proc.name))
            argv = (proc / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:  # exited meanwhile (ENOENT, ESRCH), or not ours (EACCES)
            continue
        if stat is not None and stat.state not in ("Z", "X"):
            found[int(proc.name)] = b" ".join(argv).decode(errors="replace")
    return dict(sorted(found.items()))


def kill_processes(value: str, variable: str = TAG_VARIABLE, timeout_s: float = 10.0) -> None:
    """SIGKILL every process :func:`live_processes` finds and wait until none is left
    (the cleanup of a test that failed with its processes running).

    Raises AssertionError naming them if some are left after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while left := live_processes(value, variable):
        assert time.monotonic() < deadline, f"left after SIGKILL: {left}"
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
