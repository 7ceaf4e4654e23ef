"""The collector's undo machinery (testbed/collect_env.py): UndoStack semantics by hand-made
steps, and the real undo steps (network namespaces, loop devices) on this machine as root.

The root tests change machine state for a moment: run them under
``flock /run/lock/disaggsim-system.lock``. The autouse fixture checks that the machine is as
it was after each test.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import urllib.parse
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture
from hypothesis import given
from hypothesis import strategies as st

from disaggsim.testbed import collect_env
from disaggsim.testbed.collect import main as collect_main
from disaggsim.testbed.collect_env import (
    LOOP_CTL_REMOVE,
    NETNS_DIR,
    SYS_BLOCK,
    RestoreError,
    UndoStack,
    _remove_loop_device,
    loop_device,
    make_cluster_network,
    mount_points,
    node_ns,
    ns_exec,
    sh,
)

#: ``LOOP_CTL_ADD`` (include/uapi/linux/loop.h); REMOVE is 0x4C81, GET_FREE 0x4C82.
LOOP_CTL_ADD = 0x4C80

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("losetup") is None or shutil.which("ip") is None,
    reason="needs root, losetup and ip",
)


def test_undo_stack_runs_every_step_and_reports_once() -> None:
    done: list[str] = []

    def fail(msg: str) -> None:
        done.append(msg)
        raise OSError(msg)

    with pytest.raises(RestoreError) as err, UndoStack() as stack:
        stack.undo("first", done.append, "first")
        stack.undo("swap area /dev/loop9", fail, "swapoff failed")
        stack.undo("memory cgroup x", fail, "rmdir failed")
        raise ValueError("the application failed")
    assert done == ["rmdir failed", "swapoff failed", "first"]  # reverse order, all ran
    assert err.value.failures == [
        "memory cgroup x: rmdir failed",
        "swap area /dev/loop9: swapoff failed",
    ]
    assert isinstance(err.value.during, ValueError)
    assert "while unwinding after ValueError: the application failed" in str(err.value)
    assert err.value.__cause__ is err.value.during


def test_plain_exit_stack_reports_only_the_last_failure() -> None:
    # Why UndoStack: ExitStack runs every callback but raises only the last error; the first
    # one is lost (not even in __context__: the callbacks do not run inside an except block).
    def fail(msg: str) -> None:
        raise OSError(msg)

    with pytest.raises(OSError) as err, contextlib.ExitStack() as stack:
        stack.callback(fail, "b")
        stack.callback(fail, "a")
    assert str(err.value) == "b" and err.value.__context__ is None


def test_nested_undo_stacks_merge_into_one_report() -> None:
    def fail(msg: str) -> None:
        raise OSError(msg)

    with pytest.raises(RestoreError) as err, UndoStack() as outer:
        outer.undo("outer", fail, "o")
        with UndoStack() as inner:
            inner.undo("inner", fail, "i")
            inner.undo("tracefs settings", fail_many)
    assert err.value.failures == [
        "tracefs settings: x: EINVAL",
        "tracefs settings: y: EIO",
        "inner: i",
        "outer: o",
    ]
    assert err.value.during is None


def fail_many() -> None:
    raise RestoreError(["x: EINVAL", "y: EIO"])


def test_interrupted_undo_step_is_reported_and_the_rest_run() -> None:
    ran: list[str] = []

    def interrupted() -> None:
        raise KeyboardInterrupt("signal SIGTERM")

    with pytest.raises(RestoreError) as err, UndoStack() as stack:
        stack.undo("swap area /dev/loop9", ran.append, "swapoff")
        stack.undo("memory cgroup x", interrupted)
    assert ran == ["swapoff"]
    assert err.value.failures == [
        "memory cgroup x: interrupted (KeyboardInterrupt: signal SIGTERM)"
    ]


def test_undo_stack_without_failures_propagates_the_error() -> None:
    ran: list[int] = []
    with pytest.raises(KeyError), UndoStack() as stack:
        stack.undo("one", ran.append, 1)
        raise KeyError("k")
    assert ran == [1]


@needs_root
def test_cluster_network_and_netns_dir_undone() -> None:
    # 2 nodes: namespaces, bridge, veths; the fixture checks namespaces and mounts (including
    # the /run/netns bind mount `ip netns add` makes on first use) are back.
    with UndoStack() as stack:
        make_cluster_network(stack, 2)
        assert "dsim-n1" in sh(["ip", "netns", "list"])
        assert "10.77.0.2/24" in sh(ns_exec(node_ns(1)) + ["ip", "addr", "show", "eth0"])
        assert NETNS_DIR.is_dir()
    assert "dsim-" not in sh(["ip", "netns", "list"])


@needs_root
def test_loop_device_undo_failure_is_reported(tmp_path: Path) -> None:
    # Detach the device behind the collector's back: its undo step fails and is reported by
    # name, while the backing file is still deleted.
    backing = tmp_path / "disk.img"
    with pytest.raises(RestoreError) as err, UndoStack() as stack:
        dev = loop_device(stack, backing, 64 << 20)
        assert (SYS_BLOCK / dev / "loop" / "backing_file").read_text().strip() == str(backing)
        sh(["losetup", "-d", f"/dev/{dev}"])
    assert len(err.value.failures) == 1
    assert err.value.failures[0].startswith(f"loop device /dev/{dev} attached to {backing}: ")
    assert not backing.exists()


@needs_root
def test_remove_created_loop_device() -> None:
    index = max(int(p.name[4:]) for p in SYS_BLOCK.glob("loop[0-9]*")) + 1
    fd = os.open("/dev/loop-control", os.O_RDWR)
    try:
        assert fcntl.ioctl(fd, LOOP_CTL_ADD, index) == index
    finally:
        os.close(fd)
    try:
        assert (SYS_BLOCK / f"loop{index}").exists()
    finally:
        _remove_loop_device(f"loop{index}")
    assert not (SYS_BLOCK / f"loop{index}").exists()
    assert LOOP_CTL_REMOVE == LOOP_CTL_ADD + 1


def test_collect_cli_reports_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text('sample = "x"\napps = []\n')
    assert collect_main(["--config", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"disaggsim collect: error: {bad}: ") and "apps" in err
    assert "Traceback" not in err


def _kernel_mangle(path: str) -> str:
    """A mount point as the kernel writes it into /proc/self/mounts (fs/proc_namespace.c
    show_vfsmnt; fs/seq_file.c mangle_path): each of space, tab, newline and backslash as
    a backslash and its three octal digits."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


@given(
    st.lists(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/"),
            min_size=1,
            max_size=12,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_mount_points_undo_the_kernels_escapes(parts: list[str]) -> None:
    # Any directory name (spaces, tabs, newlines, backslashes, a literal "\040" included)
    # comes back as it was from a /proc/self/mounts line, between two ordinary lines.
    path = "/" + "/".join(parts)
    text = (
        f"proc /proc proc rw 0 0\ntmpfs {_kernel_mangle(path)} tmpfs rw,relatime 0 0\n"
        "sysfs /sys sysfs rw 0 0\n"
    )
    assert mount_points(text) == [Path("/proc"), Path(path), Path("/sys")]


def test_a_loop_device_that_cannot_be_detached_does_not_stop_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Hand-made case: three loop devices (none a swap area), the middle one busy. The
    # first and last are still detached, in order; one RestoreError names the busy one.
    calls: list[str] = []

    def fake_sh(cmd: list[str], check: bool = True) -> str:
        calls.append(" ".join(cmd))
        if cmd == ["losetup", "-d", "/dev/loop91"]:
            raise RuntimeError("command failed (1): losetup -d /dev/loop91: busy")
        return ""

    monkeypatch.setattr(collect_env, "sh", fake_sh)
    with pytest.raises(RestoreError) as err:
        collect_env.swapoff_and_detach(["loop90", "loop91", "loop92"])
    assert calls == ["losetup -d /dev/loop90", "losetup -d /dev/loop91", "losetup -d /dev/loop92"]
    assert err.value.failures == ["/dev/loop91: command failed (1): losetup -d /dev/loop91: busy"]


def test_a_mount_that_cannot_be_unmounted_keeps_the_work_dir_and_the_others_go(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Hand-made case: two mounts under a dead collector's work dir, the deeper one busy.
    # The other is still unmounted; the directory is kept (it holds a mount); one
    # RestoreError names the busy mount.
    calls: list[str] = []
    busy, other = tmp_path / "mnt1" / "inner", tmp_path / "mnt0"

    def fake_sh(cmd: list[str], check: bool = True) -> str:
        calls.append(" ".join(cmd))
        if cmd == ["umount", str(busy)]:
            raise RuntimeError(f"command failed (32): umount {busy}: target is busy")
        return ""

    monkeypatch.setattr(collect_env, "sh", fake_sh)
    monkeypatch.setattr(collect_env, "mount_points", lambda: [Path("/"), other, busy])
    monkeypatch.setattr(collect_env, "loops_backed_by", lambda match: [])
    with pytest.raises(RestoreError) as err:
        collect_env._reap_work_dir(urllib.parse.quote(str(tmp_path), safe=""))
    assert calls == [f"umount {busy}", f"umount {other}"]
    assert err.value.failures == [f"{busy}: command failed (32): umount {busy}: target is busy"]
    assert tmp_path.is_dir()
