"""A signal to ``disaggsim emulate`` leaves nothing behind (root; run under the machine lock).

- SIGTERM (or SIGHUP, then a SIGINT while it cleans up) to a ``disaggsim emulate`` process
  running the memcached + YCSB cluster preset, once the cluster is up and the application
  runs: the command exits with 128 + the signal's number and one line naming it, and its
  network namespaces, memory cgroups (and their owner records), process cgroups, node
  segments, work directory and application processes are gone, the machine's state as
  before. Before the fix SIGTERM ended the process at once: dsim-sw/dsim-n0/dsim-n1,
  memcached and the disaggsim-node / disaggsim-emulate-node cgroups stayed (the test then
  reaps them, as the next command would: ``collect_env.reap_dead_state``).

What SIGKILL leaves, and its reaping: ``tests/test_emulate_reap.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _own_processes import kill_processes, live_processes, tag_environment

from disaggsim import owners
from disaggsim.swapdev import device, emulate_apps
from disaggsim.testbed import collect_env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("memcached") is None
    or not (collect_env.PIDS_ROOT / "cgroup.procs").exists(),
    reason="needs root (namespaces, cgroups), memcached and the v1 pids hierarchy",
)

#: The smallest cluster preset, on the uffd backend (no swap area), with a run phase far
#: longer than the test waits (2 M operations; 50 k take 5-7 s here), so the signal
#: arrives while the application runs (a resized preset needs its working set: the
#: preset's 80 MiB, its data being the same).
CONFIG = """\
[emulate]
name = "signal"
out_dir = "out"
backend = "uffd"
repeats = 1
timeout_s = 600
[app]
preset = "memcached-ycsb"
params = { operationcount = 2000000 }
working_set_bytes = 83886080
local_fraction = 0.5
[[models]]
kind = "fixed"
latency_ns = 1000
"""


def _netns() -> list[str]:
    return sorted(
        line.split()[0]
        for line in collect_env.sh(["ip", "netns", "list"]).splitlines()
        if line.startswith("dsim-")
    )


def _memcgs() -> list[str]:
    return sorted(p.name for p in collect_env.MEMCG_ROOT.glob("disaggsim-*"))


def _work_dirs(pid: int) -> list[Path]:
    """The work directories of emulate process ``pid`` (named with its pid)."""
    return sorted(Path("/var/tmp").glob(f"disaggsim-emulate-{pid}-*"))


def _leftovers(tag: str, pid: int) -> dict[str, list[str]]:
    """What the emulate process ``pid`` (started with environment tag ``tag``) left."""
    return {
        "netns": _netns(),
        "memcg": _memcgs(),
        "run cgroups": [p.name for p in emulate_apps.run_cgroups(pid)],
        "node segments": [p.name for p in device.node_segments(pid)],
        "work dirs": [str(p) for p in _work_dirs(pid)],
        "processes": list(live_processes(tag).values()),
        "owner records": sorted(
            str(p) for p in owners.OWNERS_DIR.glob("*/*") if p.read_text().split()[:1] == [str(pid)]
        ),
    }


def _remove_leftovers(tag: str, pid: int) -> None:
    """Undo what a failed test left of the emulate process ``pid`` (dead by now), and
    nothing of another run's: the processes the test started (by ``tag``) are killed,
    then every piece of state whose recorded owner is gone is reaped as the next command
    would (``collect_env.reap_dead_state``: the namespaces, cgroups, node segments and
    ``/run/netns`` mount of ``pid``, a live suite's kept), and ``pid``'s work directory
    removed."""
    kill_processes(tag)
    collect_env.reap_dead_state()
    for work in _work_dirs(pid):
        shutil.rmtree(work, ignore_errors=True)


def _terminal_dispositions() -> None:
    """Start emulate with the signal dispositions a terminal gives a command: the test may
    run in a background job, whose SIGINT is ignored and would stay ignored."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize(
    "signals",
    [
        (signal.SIGTERM,),
        (signal.SIGHUP, signal.SIGINT),  # the second arrives while the first one's cleanup runs
    ],
)
def test_a_signal_to_emulate_undoes_its_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signals: tuple[signal.Signals, ...]
) -> None:
    tag = tag_environment(monkeypatch)
    config = tmp_path / "signal.toml"
    config.write_text(CONFIG)
    with device.system_lock():
        before = collect_env.system_state()
    assert not _netns(), f"a cluster exists already: {_netns()}"
    assert not _memcgs(), f"disaggsim memory cgroups exist already: {_memcgs()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "disaggsim.cli", "emulate", "--quiet", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_terminal_dispositions,
    )
    try:
        # Up: memcached runs on node 0 and a YCSB client drives it (load or run phase).
        deadline = time.monotonic() + 180
        while not (
            any("memcached" in c for c in live_processes(tag).values())
            and any("ycsb" in c for c in live_processes(tag).values())
        ):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the cluster did not come up in 180 s"
            time.sleep(0.2)
        assert _netns() == ["dsim-n0", "dsim-n1", "dsim-sw"]
        assert _memcgs() == [
            "disaggsim-emulate-node0",
            "disaggsim-emulate-node1",
            "disaggsim-node0",
            "disaggsim-node1",
        ]
        time.sleep(1.0)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
        assert _leftovers(tag, proc.pid) == {
            "netns": [],
            "memcg": [],
            "run cgroups": [],
            "node segments": [],
            "work dirs": [],
            "processes": [],
            "owner records": [],
        }, f"returncode {proc.returncode}"
        lines = err.strip().splitlines()
        # Exit status 128 + the first signal's number, its name on the last line.
        assert proc.returncode == 128 + signals[0], err
        assert lines[-1] == f"disaggsim emulate: interrupted by {signals[0].name}", err
        assert "Traceback" not in err
        for later in signals[1:]:
            assert f"{later.name} received while cleaning up" in err
        with device.system_lock():
            assert collect_env.system_state() == before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _remove_leftovers(tag, proc.pid)
