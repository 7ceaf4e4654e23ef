"""A signal to ``disaggsim emulate`` leaves nothing behind (root; run under the machine lock).

- SIGTERM (or SIGHUP, then a SIGINT while it cleans up) to a ``disaggsim emulate`` process
  running the memcached + YCSB cluster preset, once the cluster is up and the application
  runs: the command exits with 128 + the signal's number and one line naming it, and its
  network namespaces, memory cgroups (and their owner records), process cgroups, node
  segments, work directory and application processes are gone, the machine's state as
  before. Before the fix SIGTERM ended the process at once: dsim-sw/dsim-n0/dsim-n1,
  memcached and the disaggsim-node / disaggsim-emulate-node cgroups stayed (the test then
  removes them itself).
- The process cgroups of ``run_command`` runs whose owner was SIGKILLed are reaped at the
  next run (their leftover processes killed), a live owner's kept.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _own_processes import live_processes, tag_environment

from disaggsim import owners
from disaggsim.swapdev import device, emulate_apps
from disaggsim.testbed import collect_env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("memcached") is None
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
    return sorted(line.split()[0] for line in collect_env.sh(["ip", "netns", "list"])
                  .splitlines() if line.startswith("dsim-"))


def _memcgs() -> list[str]:
    return sorted(p.name for p in collect_env.MEMCG_ROOT.glob("disaggsim-*"))


def _work_dirs() -> set[Path]:
    return set(Path("/var/tmp").glob("disaggsim-emulate-*"))


def _leftovers(tag: str, pid: int, work_before: set[Path]) -> dict[str, list[str]]:
    """What the emulate process ``pid`` (started with environment tag ``tag``) left."""
    return {
        "netns": _netns(),
        "memcg": _memcgs(),
        "run cgroups": [p.name for p in emulate_apps.run_cgroups(pid)],
        "node segments": [p.name for p in device.node_segments(pid)],
        "work dirs": sorted(str(p) for p in _work_dirs() - work_before),
        "processes": list(live_processes(tag).values()),
        "owner records": sorted(str(p) for p in owners.OWNERS_DIR.glob("*/*")
                                if p.read_text().split()[:1] == [str(pid)]),
    }


def _remove_leftovers(tag: str, pid: int, mounts_before: list[str],
                      work_before: set[Path]) -> None:
    """Undo by hand what a killed emulate left (the old code's SIGTERM): the test checked
    beforehand that none of these existed, so all of them are the run's. Only functions
    the code before the fix had too, so that the test runs against it."""
    for p in live_processes(tag):
        os.kill(p, signal.SIGKILL)
    for ns in _netns():
        for p in collect_env.sh(["ip", "netns", "pids", ns]).split():
            os.kill(int(p), signal.SIGKILL)
        collect_env.sh(["ip", "netns", "del", ns], check=False)
    groups = [collect_env.MEMCG_ROOT / name for name in _memcgs()]
    for group in [*groups, *emulate_apps.run_cgroups(pid)]:
        collect_env.kill_tasks(group, first=signal.SIGKILL)
        for _ in range(50):  # EBUSY while the kernel still counts a task that just died
            with contextlib.suppress(OSError):
                group.rmdir()
            if not group.exists():
                break
            time.sleep(0.1)
    for segment in device.node_segments(pid):
        segment.unlink(missing_ok=True)
    for work in _work_dirs() - work_before:
        shutil.rmtree(work, ignore_errors=True)
    # `ip netns add` bind-mounts /run/netns on first use (collect_env._unmount_netns_dir).
    if not any(" /run/netns " in m for m in mounts_before) and not collect_env.sh(
            ["ip", "netns", "list"]).split():
        collect_env.sh(["umount", "/run/netns"], check=False)


def _terminal_dispositions() -> None:
    """Start emulate with the signal dispositions a terminal gives a command: the test may
    run in a background job, whose SIGINT is ignored and would stay ignored."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("signals", [
    (signal.SIGTERM,),
    (signal.SIGHUP, signal.SIGINT),  # the second arrives while the first one's cleanup runs
])
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
    work_before = _work_dirs()
    proc = subprocess.Popen(
        [sys.executable, "-m", "disaggsim.cli", "emulate", "--quiet", str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_terminal_dispositions,
    )
    try:
        # Up: memcached runs on node 0 and a YCSB client drives it (load or run phase).
        deadline = time.monotonic() + 180
        while not (any("memcached" in c for c in live_processes(tag).values())
                   and any("ycsb" in c for c in live_processes(tag).values())):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the cluster did not come up in 180 s"
            time.sleep(0.2)
        assert _netns() == ["dsim-n0", "dsim-n1", "dsim-sw"]
        assert _memcgs() == ["disaggsim-emulate-node0", "disaggsim-emulate-node1",
                             "disaggsim-node0", "disaggsim-node1"]
        time.sleep(1.0)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
        assert _leftovers(tag, proc.pid, work_before) == {
            "netns": [], "memcg": [], "run cgroups": [], "node segments": [],
            "work dirs": [], "processes": [], "owner records": [],
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
        _remove_leftovers(tag, proc.pid, before["mounts"], work_before)


def test_run_cgroups_of_a_dead_owner_are_reaped_and_a_live_owners_kept(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Three groups as SIGKILLed runs leave them: one of a process that has exited, with
    the run's command (a sleep) still in it; one whose pid is this process's (an earlier
    holder of the pid made it: it has this process's next run number, so without the
    reaping run_command fails with "exists"); one of a live owner (a sleep standing for
    another engineer's emulate), with its command in it. A run then succeeds; the first
    two groups are gone, with the sleep in the first killed, one stderr line each; the
    live owner's group and its command are untouched."""
    tag = tag_environment(monkeypatch)
    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(ProcessLookupError):
        os.kill(gone.pid, 0)
    owner = subprocess.Popen(["sleep", "60"])
    left = subprocess.Popen(["sleep", "60"])
    live_command = subprocess.Popen(["sleep", "60"])
    next_run = int(re.sub(r"\D", "", repr(emulate_apps._RUNS)))  # count(N): N is next
    dead_group = collect_env.PIDS_ROOT / f"disaggsim-run-{gone.pid}-0"
    own_group = collect_env.PIDS_ROOT / f"disaggsim-run-{os.getpid()}-{next_run}"
    live_group = collect_env.PIDS_ROOT / f"disaggsim-run-{owner.pid}-0"
    try:
        for group, task in ((dead_group, left), (own_group, None), (live_group, live_command)):
            group.mkdir()
            if task is not None:
                (group / "cgroup.procs").write_text(str(task.pid))
        status, _, proc = emulate_apps.run_command(["true"], 30, {})
        assert (status, proc.returncode) == ("ok", 0)
        assert not dead_group.exists() and not own_group.exists()
        assert left.wait(timeout=10) == -signal.SIGKILL
        assert live_group.exists() and live_command.poll() is None and owner.poll() is None
        assert (live_group / "cgroup.procs").read_text().split() == [str(live_command.pid)]
        err = capfd.readouterr().err
        for group, pid, killed in ((dead_group, gone.pid, 1), (own_group, os.getpid(), 0)):
            assert (f"removed the stale process cgroup {group} (its owner, pid {pid}, is "
                    f"gone; killed the {killed} process(es) left in it)") in err
        assert str(live_group) not in err
    finally:
        for p in (owner, left, live_command):
            p.kill()
            p.wait()
        for group in (dead_group, own_group, live_group):
            collect_env.remove_cgroup(group, first=signal.SIGKILL)
    assert live_processes(tag) == {}
