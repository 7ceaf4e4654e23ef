"""What a SIGKILLed ``disaggsim emulate`` leaves of its runs (the process cgroup of each
run of a command, ``disaggsim-run-PID-N``, the uffd device's node segments in /dev/shm,
the swap backend's device chain and ``vm.page-cluster``) is reaped by the next command,
and only if its recorded owner is gone (``disaggsim/owners.py``; ``collect_env.run_cgroup``,
``device.per_node_segments``, ``device.fuse_daemon``, ``collect_env.change_setting``).

Root (cgroups, owner records under /run): run under the machine lock
(``flock /tmp/disaggsim-machine.lock``). Every object a test makes is named with this
process's pid, or its child's, so another suite's state is never touched; each test
leaves the machine as it found it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from _own_processes import kill_processes, live_processes, tag_environment

from disaggsim import owners
from disaggsim.swapdev import device, emulate_apps
from disaggsim.testbed import collect_env as env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (env.PIDS_ROOT / "cgroup.procs").exists(),
    reason="needs root (cgroups, /run) and the cgroup v1 pids hierarchy",
)

#: What an emulate run of a command on the uffd backend holds while the command runs
#: (``emulate._run_command_once``): a node segment, and the run's process cgroup with the
#: command in it (a sleep).
RUN = """\
from disaggsim.swapdev import device, emulate_apps
with device.node_segment() as segment:
    print(segment.path, flush=True)
    emulate_apps.run_command(["sleep", "600"], 600, {})
"""


def _owned_by(pid: int) -> dict[str, list[str]]:
    """The run cgroups, node segments and owner records of process ``pid``."""
    return {
        "run cgroups": [str(p) for p in emulate_apps.run_cgroups(pid)],
        "node segments": [str(p) for p in device.node_segments(pid)],
        "owner records": sorted(
            str(p) for p in owners.OWNERS_DIR.glob("*/*") if p.read_text().split()[:1] == [str(pid)]
        ),
    }


def _remove_leftovers(run: subprocess.Popen[str], tag: str) -> None:
    """What a failed test left of its killed run ``run`` and of the processes it started
    (by ``tag``) is removed, and nothing of another suite's: the processes are killed,
    then every dead owner's state reaped as the next command would."""
    run.kill()
    run.wait()
    kill_processes(tag)
    env.reap_dead_state()


def _snapshot() -> dict[str, list[str]]:
    with device.system_lock():
        return env.system_state()


def test_a_sigkilled_runs_cgroup_and_node_segment_are_reaped_by_the_next_run(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The run is SIGKILLed while its command runs: no undo step runs, its process cgroup
    # (with the sleep still in it), its node segment and their owner records stay. The
    # next run's first step reaps both (killing the sleep), one line each, process
    # cgroups before files (owners.KINDS order); then the machine is as before the run.
    tag = tag_environment(monkeypatch)
    before = _snapshot()
    run = subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        segment = run.stdout.readline().strip()
        assert segment, f"the run failed (exit {run.wait()})"
        group = env.PIDS_ROOT / f"disaggsim-run-{run.pid}-0"
        deadline = time.monotonic() + 30
        while not (group.is_dir() and (group / "cgroup.procs").read_text().split()):
            assert time.monotonic() < deadline, "the command did not join its cgroup"
            time.sleep(0.05)
        [command] = live_processes(tag).keys() - {run.pid}
        run.kill()
        assert run.wait() == -signal.SIGKILL
        left = _owned_by(run.pid)
        assert left == {
            "run cgroups": [str(group)],
            "node segments": [segment],
            "owner records": [
                str(owners.record_path("pids", group.name)),
                str(owners.record_path("shm", Path(segment).name)),
            ],
        }
        assert (group / "cgroup.procs").read_text().split() == [str(command)]
        capfd.readouterr()
        status, _, proc = emulate_apps.run_command(["true"], 30, {})
        assert (status, proc.returncode) == ("ok", 0)
        said = [line for line in capfd.readouterr().err.splitlines() if str(run.pid) in line]
        assert said == [
            f"disaggsim: reaped process cgroup {group} left by dead pid {run.pid} (killed 1 "
            "process(es) in it)",
            f"disaggsim: reaped shared memory file {segment} left by dead pid {run.pid}",
        ]
        assert _owned_by(run.pid) == {"run cgroups": [], "node segments": [], "owner records": []}
        assert live_processes(tag) == {}  # the sleep was killed with its group
        assert _snapshot() == before
    finally:
        _remove_leftovers(run, tag)


@contextlib.contextmanager
def _sleeps(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` ``sleep 60`` processes, killed after the block."""
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_live_owner_is_refused_and_a_recycled_pid_is_gone(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Four pieces of state, each with a record: a process cgroup owned by a live process
    # (a sleep standing for another engineer's run, with its command in it); one whose
    # record names this process's pid with another start time (an earlier holder of the
    # pid, SIGKILLed: the pid was recycled), with its command left in it; a directory in
    # /dev/shm of that earlier holder too (as hpe-cm's memory reference); and a process
    # cgroup with no record (by hand). Making a new run cgroup reaps the recycled pid's
    # two, killing the command, one line each; the live owner's group, its command, and
    # the group without a record stay. Making a group of the live owner's name fails
    # with one line naming its pid; of the name without a record, one line saying so.
    me = owners.Owner.current()
    earlier = owners.Owner(me.pid, me.start_ticks - 1, me.boot_id)
    live_group = env.PIDS_ROOT / f"disaggsim-run-{me.pid}-test-live"
    dead_group = env.PIDS_ROOT / f"disaggsim-run-{me.pid}-test-dead"
    bare_group = env.PIDS_ROOT / f"disaggsim-run-{me.pid}-test-bare"
    new_group = env.PIDS_ROOT / f"disaggsim-run-{me.pid}-test-new"
    dead_dir = device.SHM_DIR / f"disaggsim-test-reap-{me.pid}"
    groups = (live_group, dead_group, bare_group, new_group)
    records = [owners.record_path("pids", g.name) for g in groups] + [
        owners.record_path("shm", dead_dir.name)
    ]
    before = _snapshot()
    try:
        with _sleeps(3) as (owner, live_command, left_command):
            stat = owners.process_stat(owner.pid)
            assert stat is not None
            live = owners.Owner(owner.pid, stat.start_ticks, me.boot_id)
            for group, record_owner, task in (
                (live_group, live, live_command),
                (dead_group, earlier, left_command),
                (bare_group, None, None),
            ):
                if record_owner is not None:
                    owners.write_record(owners.record_path("pids", group.name), record_owner)
                group.mkdir()
                if task is not None:
                    (group / "cgroup.procs").write_text(str(task.pid))
            owners.write_record(owners.record_path("shm", dead_dir.name), earlier)
            dead_dir.mkdir()
            (dead_dir / "file").write_bytes(b"\1" * 4096)
            capfd.readouterr()
            with env.UndoStack() as stack:
                assert env.run_cgroup(stack, new_group.name) == new_group
                assert owners.read_record(records[3]) == me
            said = capfd.readouterr().err.splitlines()
            assert [line for line in said if str(me.pid) in line] == [
                f"disaggsim: reaped process cgroup {dead_group} left by dead pid {me.pid} "
                "(killed 1 process(es) in it)",
                f"disaggsim: reaped shared memory file {dead_dir} left by dead pid {me.pid}",
            ]
            assert left_command.wait(timeout=10) == -signal.SIGKILL
            assert not dead_group.exists() and not dead_dir.exists()
            assert not new_group.exists() and not records[3].exists()  # its undo ran
            assert (live_group / "cgroup.procs").read_text().split() == [str(live_command.pid)]
            assert live_command.poll() is None and owner.poll() is None
            assert bare_group.is_dir()
            with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
                env.run_cgroup(stack, live_group.name)
            assert str(err.value) == (
                f"process cgroup {live_group} exists, owned by pid "
                f"{owner.pid}, which runs: is another disaggsim "
                "command running?"
            )
            with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
                env.run_cgroup(stack, bare_group.name)
            assert str(err.value).startswith(
                f"process cgroup {bare_group} exists and records no owner ({records[2]} missing)"
            )
            assert live_group.is_dir() and bare_group.is_dir()
            assert capfd.readouterr().err == ""
    finally:
        for record in records:
            record.unlink(missing_ok=True)
        for group in groups:
            env.remove_cgroup(group, first=signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            device.remove_shm_file(dead_dir.name)
    assert _snapshot() == before


#: What a swap-backend run holds while its application pages (``device.run_memtouch_swap``,
#: ``emulate._run_command_once``): ``vm.page-cluster`` 0, the device chain (daemon, FUSE
#: mount, loop device, swap area) and its memory cgroup (16 MiB) with memtouch in it
#: touching 48 MiB over and over, so a third of its pages are on the device.
SWAP_RUN = """\
import subprocess, sys, time
from pathlib import Path
from disaggsim.swapdev import device
from disaggsim.testbed import collect_env as env
with env.UndoStack() as stack:
    stack.enter_context(device.page_cluster(0))
    dev = device.swap_device(stack, Path(sys.argv[1]), 128 << 20, 16 << 20,
                             device.DelayModel("none"))
    proc = subprocess.Popen(
        ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(dev.memcg / "cgroup.procs"),
         str(device.build_dir() / "memtouch"), "48", "100000"], stdout=subprocess.DEVNULL)
    print(dev.loop, dev.daemon.pid, proc.pid, flush=True)
    time.sleep(600)
"""


def _swap_state() -> dict[str, list[str]]:
    """The machine's state a swap run changes (``tests/test_swapdev_swap.py``)."""
    with device.system_lock():
        state = env.system_state()
    state["fuse_mounts"] = [
        line for line in Path("/proc/mounts").read_text().splitlines() if "fuse" in line
    ]
    state["page_cluster"] = [device.PAGE_CLUSTER.read_text().strip()]
    return state


@pytest.mark.skipif(
    not (env.MEMCG_ROOT / "memory.limit_in_bytes").exists(),
    reason="needs the cgroup v1 memory controller",
)
def test_a_sigkilled_swap_runs_device_and_page_cluster_are_reaped_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The swap run is SIGKILLed while memtouch pages: its undo stack never runs, so the
    # swap area (pages on it), loop device, daemon, FUSE mount, memory cgroup with
    # memtouch, vm.page-cluster = 0 and their records stay. The next swap run's first
    # owned step reaps them in order, one line each: the memory cgroup (memtouch killed,
    # its swapped pages freed), vm.page-cluster (restored to the machine's value), the
    # device chain (swapoff, detach, daemon stopped, unmounted); then it runs as usual
    # (memtouch's pages all read back intact) and the machine is as before.
    device.build_dir()
    tag = tag_environment(monkeypatch)
    before = _swap_state()
    [page_cluster] = before["page_cluster"]
    work = tmp_path / "killed"
    run = subprocess.Popen(
        [sys.executable, "-c", SWAP_RUN, str(work)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert run.stdout is not None
        line = run.stdout.readline().split()
        assert line, f"the swap run failed (exit {run.wait()})"
        loop, daemon, memtouch = line[0], int(line[1]), int(line[2])
        deadline = time.monotonic() + 60
        while (
            int(
                next(
                    s.split()[3]
                    for s in Path("/proc/swaps").read_text().splitlines()
                    if s.startswith(loop + " ") or s.startswith(loop + "\t")
                )
            )
            == 0
        ):
            assert time.monotonic() < deadline, "memtouch did not swap in 60 s"
            time.sleep(0.1)
        run.kill()
        assert run.wait() == -signal.SIGKILL
        mnt = work.resolve() / "mnt"
        assert owners.pid_alive(daemon) and owners.pid_alive(memtouch)
        assert env.is_mountpoint(mnt) and device.PAGE_CLUSTER.read_text().strip() == "0"
        assert _owned_by(run.pid)["owner records"] == sorted(
            str(owners.record_path(kind, name))
            for kind, name in (
                ("memcg", "disaggsim-swapdev"),
                ("setting", f"vm.page-cluster={page_cluster}"),
                ("swapdev", urllib.parse.quote(str(mnt), safe="")),
            )
        )
        capfd.readouterr()
        result = device.run_memtouch_swap(
            tmp_path / "next", 32, 16 << 20, device.DelayModel("none")
        )
        assert result.report["bad_pages"] == 0 and result.report["majflt"] > 0
        said = [
            line for line in capfd.readouterr().err.splitlines() if f"dead pid {run.pid}" in line
        ]
        assert said == [
            f"disaggsim: reaped memory cgroup {env.MEMCG_ROOT / 'disaggsim-swapdev'} left "
            f"by dead pid {run.pid} (killed 1 process(es) in it)",
            f"disaggsim: reaped setting vm.page-cluster left by dead pid {run.pid} "
            f"(restored {page_cluster})",
            f"disaggsim: reaped swap device on {mnt} left by dead pid {run.pid} (swapped "
            f"off and detached {loop}, stopped 1 daemon(s))",
        ]
        assert not owners.pid_alive(daemon) and not owners.pid_alive(memtouch)
        assert live_processes(tag) == {}
        assert _owned_by(run.pid)["owner records"] == []
        assert _swap_state() == before
    finally:
        _remove_leftovers(run, tag)


#: A run's system-wide ``perf stat`` (``emulate._perf_stat``, the memory-traffic counter of
#: a run), here of a software event every machine has.
PERF_RUN = """\
import sys, time
from pathlib import Path
from disaggsim.swapdev import emulate
with emulate._perf_stat(["cpu-clock"], Path(sys.argv[1])):
    print(flush=True)
    time.sleep(600)
"""


def _counting(tag: str) -> bool:
    """Whether a ``perf stat`` of ``tag`` has opened its counters (a perf_event_open(2)
    file descriptor, ``anon_inode:[perf_event]``)."""
    for pid, cmd in live_processes(tag).items():
        if cmd.startswith("perf stat"):
            with contextlib.suppress(OSError):
                return any(
                    os.readlink(fd) == "anon_inode:[perf_event]"
                    for fd in Path(f"/proc/{pid}/fd").iterdir()
                )
    return False


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
def test_a_sigkilled_runs_perf_stat_ends_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``perf stat -a`` counts the whole machine: left running by a SIGKILLed emulate, it
    # would load every later run. At its parent's death it gets SIGINT
    # (PR_SET_PDEATHSIG), as at the block's normal end, so it exits and writes its count
    # (perf writes the count line only when it ends by SIGINT: SIGKILL would leave the
    # "# started on" header alone).
    tag = tag_environment(monkeypatch)
    out = tmp_path / "perf.csv"
    run = subprocess.Popen(
        [sys.executable, "-c", PERF_RUN, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert run.stdout is not None and run.stdout.readline() == "\n"
        deadline = time.monotonic() + 30
        while not _counting(tag):  # counters open: perf handles SIGINT by then
            assert time.monotonic() < deadline, "perf stat did not start in 30 s"
            time.sleep(0.1)
        run.kill()
        assert run.wait() == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while live_processes(tag):
            assert time.monotonic() < deadline, f"left running: {live_processes(tag)}"
            time.sleep(0.1)
        counts = [line.split(",") for line in out.read_text().splitlines() if ",cpu-clock," in line]
        assert len(counts) == 1 and float(counts[0][0]) > 0, out.read_text()
    finally:
        _remove_leftovers(run, tag)
