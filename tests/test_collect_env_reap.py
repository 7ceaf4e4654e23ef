"""State a SIGKILLed command left is reaped by the next one, and only if its owner is gone
(``disaggsim/owners.py``; ``testbed/collect_env.py`` ``make_cluster_network`` and
``memcg_group``).

The root tests make the cluster's network namespaces and memory cgroups for a moment: run
them under the machine lock (``flock /tmp/disaggsim-machine.lock``). The autouse fixture
checks that the machine is as it was after each test (``collect_env.system_state``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _own_processes import kill_processes, live_processes, tag_environment
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim import owners
from disaggsim.testbed import collect_env as env

needs_root = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("ip") is None
    or not (env.MEMCG_ROOT / "memory.limit_in_bytes").exists(),
    reason="needs root, ip and the cgroup v1 memory hierarchy",
)

#: The cluster presets' fixed names for two nodes (emulate_apps.cluster_session).
NETNS = ["dsim-sw", "dsim-n0", "dsim-n1"]
MEMCGS = [
    "disaggsim-node0",
    "disaggsim-node1",
    "disaggsim-emulate-node0",
    "disaggsim-emulate-node1",
]

#: A command that sets up the cluster's network and memory cgroups, starts a process in
#: node 0's namespace and memcg and one in a holder memcg only (as the presets' servers
#: and data holders), prints their pids and waits; SIGTERM unwinds it.
OWNER = """\
import subprocess, sys, time
from disaggsim.signals import interrupt_on_signals
from disaggsim.testbed import collect_env as env
with interrupt_on_signals(), env.UndoStack() as stack:
    env.make_cluster_network(stack, 2)
    groups = [env.memcg_group(stack, name) for name in sys.argv[2:]]
    server = env.spawn_in_node(stack, groups[0], env.node_ns(0), ["sleep", "600"],
                               sys.argv[1])
    holder = subprocess.Popen(["sh", "-c", 'echo $$ > "$0" && exec sleep 600',
                               str(groups[2] / "cgroup.procs")], start_new_session=True)
    stack.callback(env.stop_process, holder)
    print(server.pid, holder.pid, flush=True)
    time.sleep(600)
"""


def _start_owner(tmp_path: Path) -> tuple[subprocess.Popen[str], int, int]:
    """The owner command, once its state is up and both processes joined their groups.
    Returns it and the pids of its server (namespace dsim-n0, memcg disaggsim-node0) and
    its holder (memcg disaggsim-emulate-node0 only)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "server.log"), *MEMCGS],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the owner command failed (exit {proc.wait()})"
    server, holder = (int(p) for p in line.split())
    deadline = time.monotonic() + 10
    while holder not in env.memcg_tasks(env.MEMCG_ROOT / MEMCGS[2]):
        assert time.monotonic() < deadline, "the holder did not join its memcg"
        time.sleep(0.05)
    return proc, server, holder


def _netns() -> list[str]:
    return [n for n in env.sh(["ip", "netns", "list"]).split() if n in NETNS]


def _require_names_free() -> None:
    """Fail, touching nothing, if another run holds the cluster's names (a collection or
    a test not under the machine lock): the tests below would reap or remove its state."""
    taken = _netns() + [n for n in MEMCGS if (env.MEMCG_ROOT / n).exists()]
    if taken:
        pytest.fail(
            f"{taken} exist: another run holds the cluster's names; run under "
            "flock /tmp/disaggsim-machine.lock"
        )


def _remove_leftovers(tag: str) -> None:
    """Remove whatever a failed test left, and nothing of another run's: the processes it
    started (by ``tag``: the owner command and its server and holder) are killed, then
    the state of every owner that is gone is reaped, as the next command would
    (``collect_env.reap_dead_state``), so that the next test and the fixture start clean.
    This process's own state is its undo stacks'."""
    kill_processes(tag)
    env.reap_dead_state()


@dataclass
class OwnerCommand:
    """The owner command of a test, the pids of its server and holder, the tag of the
    processes the test started."""

    proc: subprocess.Popen[str]
    server: int
    holder: int
    tag: str


@pytest.fixture
def owner_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OwnerCommand]:
    """The owner command with its cluster up (:func:`_start_owner`); what is left of it
    after the test is removed (:func:`_remove_leftovers`)."""
    tag = tag_environment(monkeypatch)
    _require_names_free()
    try:
        proc, server, holder = _start_owner(tmp_path)
        with proc:
            try:
                yield OwnerCommand(proc, server, holder, tag)
            finally:
                proc.kill()
    finally:
        _remove_leftovers(tag)


@needs_root
def test_state_of_a_sigkilled_owner_is_reaped_by_the_next_creator(
    owner_command: OwnerCommand, capfd: pytest.CaptureFixture[str]
) -> None:
    # The owner makes the cluster (3 namespaces, 4 memcgs, 2 processes) and is SIGKILLed:
    # no undo step runs, everything stays. The next creator's first step (the network)
    # finds the names' recorded owner dead, reaps all of its state (killing the 2
    # processes) and makes its own; its unwinding then leaves the machine as before the
    # owner started (the fixture's check). Where /run/netns was no mount point (a new
    # machine), the owner's first `ip netns add` made the mount, and the next creator
    # takes its undo over too, one line after the reaping.
    owner = owner_command.proc
    owner.kill()
    assert owner.wait() == -signal.SIGKILL
    mount_owners = [
        owners.read_record(owners.record_path("mount", name))
        for name in ("run-netns", "run-netns-and-dir")
    ]
    made_mount = any(o is not None and o.pid == owner.pid for o in mount_owners)
    assert sorted(_netns()) == sorted(NETNS)
    assert all((env.MEMCG_ROOT / name).is_dir() for name in MEMCGS)
    assert owners.pid_alive(owner_command.server)  # left running
    assert owners.pid_alive(owner_command.holder)
    capfd.readouterr()
    with env.UndoStack() as stack:
        env.make_cluster_network(stack, 2)
        err = capfd.readouterr().err.splitlines()
        groups = [env.memcg_group(stack, name) for name in MEMCGS]
        assert capfd.readouterr().err == ""  # all reaped already
        # The new state is this process's: its own network, empty groups.
        assert "10.77.0.2/24" in env.sh(env.ns_exec("dsim-n1") + ["ip", "addr", "show", "eth0"])
        assert all(env.memcg_tasks(group) == [] for group in groups)
        assert owners.read_record(owners.record_path("netns", "dsim-sw")) == owners.Owner.current()
    # Namespaces first, each kind in name order. The server ran in dsim-n0 (killed with
    # the namespace, so its memcg is empty by then); the holder ran in
    # disaggsim-emulate-node0 only.
    killed = {"dsim-n0": 1, "dsim-n1": 0, "dsim-sw": 0}
    assert err[:3] == [
        f"disaggsim: reaped network namespace {name} left by dead pid "
        f"{owner.pid} (killed {n} process(es) in it)"
        for name, n in killed.items()
    ]
    killed = {
        "disaggsim-emulate-node0": 1,
        "disaggsim-emulate-node1": 0,
        "disaggsim-node0": 0,
        "disaggsim-node1": 0,
    }
    assert (
        err[3:]
        == [
            f"disaggsim: reaped memory cgroup {env.MEMCG_ROOT / name} left "
            f"by dead pid {owner.pid} (killed {n} process(es) in it)"
            for name, n in killed.items()
        ]
        + [
            f"disaggsim: took over the mount of {env.NETNS_DIR} left by dead pid {owner.pid} "
            "(unmounted when this command ends)"
        ]
        * made_mount
    )
    assert not owners.pid_alive(owner_command.server)
    assert not owners.pid_alive(owner_command.holder)
    assert live_processes(owner_command.tag) == {}
    assert not any(
        owners.record_path(kind, name).exists()
        for kind, names in (("netns", NETNS), ("memcg", MEMCGS))
        for name in names
    )


@needs_root
def test_state_of_a_live_owner_is_not_reaped(owner_command: OwnerCommand) -> None:
    # The owner runs: a second creator fails with one line naming the owner's pid, and
    # reaps nothing (the owner's namespaces, groups and processes are all still there).
    # SIGTERM then unwinds the owner, which removes its state itself.
    owner = owner_command.proc
    with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
        env.make_cluster_network(stack, 2)
    assert str(err.value) == (
        f"network namespace dsim-sw exists, owned by pid "
        f"{owner.pid}, which runs: is another disaggsim command "
        "running?"
    )
    with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
        env.memcg_group(stack, MEMCGS[2])
    assert str(err.value) == (
        f"memory cgroup {env.MEMCG_ROOT / MEMCGS[2]} exists, owned "
        f"by pid {owner.pid}, which runs: is another disaggsim "
        "command running?"
    )
    assert sorted(_netns()) == sorted(NETNS)
    assert str(owner_command.server) in env.sh(["ip", "netns", "pids", "dsim-n0"]).split()
    assert env.memcg_tasks(env.MEMCG_ROOT / MEMCGS[2]) == [owner_command.holder]
    owner.send_signal(signal.SIGTERM)
    assert owner.wait(30) == 1  # Interrupted, uncaught once the stack has unwound
    assert _netns() == [] and live_processes(owner_command.tag) == {}


@needs_root
def test_a_recycled_pid_is_a_dead_owner(capfd: pytest.CaptureFixture[str]) -> None:
    # A record naming this (live) process's pid with another start time: the process it
    # names is gone, its pid reused by this one; the group is reaped. The same record with
    # this process's own start time makes the creation fail instead.
    path = env.MEMCG_ROOT / "disaggsim-test-reap"
    record = owners.record_path("memcg", path.name)
    me = owners.Owner.current()
    try:
        path.mkdir()
        owners.write_record(record, owners.Owner(me.pid, me.start_ticks - 1, me.boot_id))
        with env.UndoStack() as stack:
            assert env.memcg_group(stack, path.name) == path
            assert owners.read_record(record) == me
        assert capfd.readouterr().err == (
            f"disaggsim: reaped memory cgroup {path} left by "
            f"dead pid {me.pid} (killed 0 process(es) in it)\n"
        )
        assert not path.exists() and not record.exists()
        # A dead owner's record whose state is gone (SIGKILLed after the removal, before
        # the record's) goes silently.
        owners.write_record(record, owners.Owner(me.pid, me.start_ticks - 1, me.boot_id))
        with env.UndoStack() as stack:
            env.memcg_group(stack, "disaggsim-test-reap-other")
            assert not record.exists()
        assert capfd.readouterr().err == ""
        path.mkdir()
        owners.write_record(record, me)
        with (
            pytest.raises(RuntimeError, match=f"owned by pid {me.pid}, which runs"),
            env.UndoStack() as stack,
        ):
            env.memcg_group(stack, path.name)
        assert path.is_dir()
        record.unlink()
        with pytest.raises(RuntimeError) as err, env.UndoStack() as stack:
            env.memcg_group(stack, path.name)
        assert str(err.value).startswith(
            f"memory cgroup {path} exists and records no owner ({record} missing)"
        )
    finally:
        record.unlink(missing_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.rmdir()


def test_owner_alive_checks_pid_start_time_and_boot() -> None:
    # A process's start is in clock ticks after boot (proc(5)): a child started now
    # started between the machine's uptimes (/proc/uptime, seconds) before and after.
    tick_hz = os.sysconf("SC_CLK_TCK")
    before_s = float(Path("/proc/uptime").read_text().split()[0])
    child = subprocess.Popen(["sleep", "60"])
    after_s = float(Path("/proc/uptime").read_text().split()[0])
    try:
        stat = owners.process_stat(child.pid)
        # The child's parent is this process (fork), its state running or sleeping.
        assert stat is not None and stat.state in "RSD" and stat.ppid == os.getpid()
        assert int(before_s * tick_hz) - 1 <= stat.start_ticks <= int(after_s * tick_hz) + 1
        assert owners.pid_alive(child.pid, stat.start_ticks)
    finally:
        child.kill()
        child.wait()
    me = owners.Owner.current()
    assert me.pid == os.getpid() and me.alive()
    assert not owners.Owner(me.pid, me.start_ticks + 1, me.boot_id).alive()  # pid reused
    assert not owners.Owner(me.pid, me.start_ticks, "another-boot").alive()
    # A child that exited and is not waited for yet (a zombie) is gone; so is its pid
    # once waited for.
    child = subprocess.Popen(["true"])
    start = owners.process_stat(child.pid)
    deadline = time.monotonic() + 10
    while (stat := owners.process_stat(child.pid)) is not None and stat.state != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert os.path.exists(f"/proc/{child.pid}")  # still there, as a zombie
    assert not owners.pid_alive(child.pid)
    child.wait()
    assert start is not None and not owners.pid_alive(child.pid, start.start_ticks)


def test_process_stat_reads_past_a_command_name_with_parentheses_and_spaces() -> None:
    # The command name (field 2) is the process's to set (prctl PR_SET_NAME, 15 bytes):
    # one that looks like the fields after it must not shift them. The child runs
    # (state S, sleeping in its read of stdin) and its parent is this process.
    name = "x) Z 1 2 3"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import ctypes, sys; ctypes.CDLL(None).prctl(15, "
            f"{name.encode()!r}, 0, 0, 0); print(flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "\n"
        assert Path(f"/proc/{child.pid}/comm").read_text() == name + "\n"
        stat = owners.process_stat(child.pid)
        assert stat is not None and stat.state in "RS" and stat.ppid == os.getpid()
        assert owners.pid_alive(child.pid, stat.start_ticks)
    finally:
        child.kill()
        child.wait()
    assert owners.process_stat(child.pid) is None  # reaped: no such process


def test_owner_record_round_trip_and_bad_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(owners, "OWNERS_DIR", tmp_path)
    record = owners.record_path("netns", "dsim-sw")
    assert record == tmp_path / "netns" / "dsim-sw" and owners.read_record(record) is None
    owner = owners.Owner(4242, 123456, "b0b3c2a8-8b36-4a6b-bb5e-6f0c7a3e9d11")
    owners.write_record(record, owner)
    assert record.read_text() == "4242 123456 b0b3c2a8-8b36-4a6b-bb5e-6f0c7a3e9d11\n"
    assert owners.read_record(record) == owner
    record.write_text("4242\n")
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            f"{record}: expected an owner record 'PID START_TICKS BOOT_ID', got '4242\\n'"
        ),
    ):
        owners.read_record(record)


def test_a_dead_owners_netns_dir_mount_is_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Where /run/netns is no mount point, the first `ip netns add` bind-mounts it and the
    # owner's undo unmounts it (and removes the directory if it made it). A SIGKILLed
    # owner leaves the mount: the next owner takes its undo over, with the directory flag
    # the record's name keeps. Not on this machine's real /run/netns (a mount of the
    # container's, which no test may unmount): the mount point test and the unmount are
    # stand-ins that record their calls; the records are real files under tmp_path.
    monkeypatch.setattr(owners, "OWNERS_DIR", tmp_path)
    monkeypatch.setattr(env, "NETNS_DIR", tmp_path / "run-netns")  # exists, as on a machine
    env.NETNS_DIR.mkdir()  # that has used ip netns
    mounted = [True]
    unmounts: list[bool] = []
    monkeypatch.setattr(env, "is_mountpoint", lambda path: mounted[0])
    monkeypatch.setattr(env, "_unmount_netns_dir", unmounts.append)
    me = owners.Owner.current()
    dead = owners.Owner(me.pid, me.start_ticks - 1, me.boot_id)
    made_dir = owners.record_path("mount", "run-netns-and-dir")
    owners.write_record(made_dir, dead)
    with env.UndoStack() as stack:
        env._netns_dir_undo(stack)
        assert owners.read_record(made_dir) == me
        assert capfd.readouterr().err == (
            f"disaggsim: took over the mount of {env.NETNS_DIR} "
            f"left by dead pid {me.pid} (unmounted when this "
            "command ends)\n"
        )
    assert unmounts == [False] and not made_dir.exists()  # existed=False: rmdir too
    # A dead owner's record that outlived its mount goes; a mount that is not there is
    # this owner's to make (the directory exists here: existed=True).
    owners.write_record(made_dir, dead)
    mounted[0] = False
    with env.UndoStack() as stack:
        env._netns_dir_undo(stack)
        assert not made_dir.exists()
        assert owners.read_record(owners.record_path("mount", "run-netns")) == me
    assert unmounts == [False, True] and owners.records("mount") == []
    # A mount with no record (the system's) is left alone: no undo, no record.
    mounted[0] = True
    with env.UndoStack() as stack:
        env._netns_dir_undo(stack)
    assert unmounts == [False, True] and owners.records("mount") == []


def test_a_piece_that_cannot_be_reaped_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three dead owners' pieces of two kinds, the first piece's reap failing: the other
    two are still reaped (their records gone), the failing one keeps its record, and the
    error, raised once all were tried, names it, its owner and why (stderr says each)."""
    monkeypatch.setattr(owners, "OWNERS_DIR", tmp_path)
    monkeypatch.setattr(owners, "KINDS", {})
    reaped: list[str] = []

    def reap(piece: str) -> str:
        if piece == "stuck":
            raise OSError(16, "Device or resource busy")
        reaped.append(piece)
        return ""

    first = owners.Kind("alpha", lambda p: f"alpha {p}", lambda p: True, reap)
    second = owners.Kind("beta", lambda p: f"beta {p}", lambda p: True, reap)
    me = owners.Owner.current()
    dead = owners.Owner(me.pid, me.start_ticks + 1, me.boot_id)  # the pid, reused
    for kind, piece in [(first, "stuck"), (first, "zz"), (second, "b")]:
        owners.write_record(owners.record_path(kind.name, piece), dead)
    with pytest.raises(RuntimeError) as err:
        owners.reap_dead()
    assert str(err.value) == (
        f"disaggsim: could not reap alpha stuck left by dead pid "
        f"{me.pid}: [Errno 16] Device or resource busy"
    )
    assert reaped == ["zz", "b"]
    assert [p.name for p in owners.records("alpha")] == ["stuck"]
    assert owners.records("beta") == []
    assert capsys.readouterr().err.splitlines() == [
        str(err.value),
        f"disaggsim: reaped alpha zz left by dead pid {me.pid}",
        f"disaggsim: reaped beta b left by dead pid {me.pid}",
    ]


#: A collector's device chain (testbed/collect.py: its work directory, a swap area on a
#: loop device there, a node's ext4 disk on another, mounted there); prints the work
#: directory, the two loop devices and waits.
COLLECT_CHAIN = """\
import json, sys, time
from pathlib import Path
from disaggsim.testbed import collect_env as env
with env.UndoStack() as stack:
    work = env.work_dir(stack, Path(sys.argv[1]))
    swap = env.loop_device(stack, work / "swap.img", 16 << 20)
    env.swap_area(stack, swap)
    disk = env.loop_device(stack, work / "node0.disk.img", 64 << 20)
    env.ext4_disk(stack, disk, work / "mnt0")
    print(json.dumps([str(work), swap, disk]), flush=True)
    time.sleep(600)
"""


@needs_root
@pytest.mark.parametrize(
    "parent_name", ["", "a dir\twith\\escapes"], ids=["plain", "escaped-in-proc-mounts"]
)
def test_a_sigkilled_collectors_device_chain_is_undone_by_the_next_creator(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    parent_name: str,
) -> None:
    # The collector is SIGKILLed with its chain up: the swap area stays active, both loop
    # devices attached, the disk mounted, the work directory there. The next command's
    # first owned state (here its own work directory) reaps it in its undo order: unmount,
    # swapoff + detach, detach, remove; one line on stderr. The fixture then finds the
    # machine as before (no swap, no loop device attached, no mount). A parent directory
    # whose name /proc/self/mounts escapes (space, tab, backslash as \ooo) is found too.
    if Path("/proc/swaps").read_text().splitlines()[1:]:
        pytest.skip("a swap area is active (the collector's swap_area refuses to run)")
    tmp_path = tmp_path / parent_name
    tmp_path.mkdir(exist_ok=True)
    tag = tag_environment(monkeypatch)
    owner = subprocess.Popen(
        [sys.executable, "-c", COLLECT_CHAIN, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, f"the collector's chain failed (exit {owner.wait()})"
        work_text, swap, disk = json.loads(line)
        work = Path(work_text)
        owner.kill()
        assert owner.wait() == -signal.SIGKILL
        swaps = Path("/proc/swaps").read_text()
        assert f"/dev/{swap}" in swaps
        attached = env.sh(["losetup", "-a"])
        assert str(work / "swap.img") in attached and str(work / "node0.disk.img") in attached
        assert env.is_mountpoint(work / "mnt0")
        capfd.readouterr()
        with env.UndoStack() as stack:
            mine = env.work_dir(stack, tmp_path)
            err = capfd.readouterr().err.splitlines()
            assert mine.is_dir() and mine != work
        assert not mine.exists()
        parts = [
            f"unmounted {work / 'mnt0'}",
            *(
                ("swapped off and detached" if loop == swap else "detached") + f" /dev/{loop}"
                for loop in sorted([swap, disk])
            ),
            "removed it",
        ]
        assert err == [
            f"disaggsim: reaped collector work directory {work} left by dead pid "
            f"{owner.pid} ({', '.join(parts)})"
        ]
        assert f"/dev/{swap}" not in Path("/proc/swaps").read_text()
        assert str(work) not in env.sh(["losetup", "-a"])
        assert not env.is_mountpoint(work / "mnt0") and not work.exists()
        assert not any(owners.OWNERS_DIR.glob("collect-work/*"))
    finally:
        owner.kill()
        owner.wait()
        kill_processes(tag)
        env.reap_dead_state()
