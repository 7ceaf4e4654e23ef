"""System resources of an emulated cluster, each set up with its undo on an :class:`UndoStack`.

Every function here changes one piece of machine state and pushes the step that undoes it
onto the caller's :class:`UndoStack`, so the collector leaves the machine as it found it on
success, on an exception and on SIGINT/SIGTERM/SIGHUP (the stack unwinds in reverse; the
signals raise under :func:`disaggsim.signals.interrupt_on_signals`, and a change and the
push of its undo are one step for them, :func:`disaggsim.signals.deferred_signals`). A plain
:class:`contextlib.ExitStack` runs every callback even when one raises, but raises only the
last error (an earlier callback's error is dropped, not even chained; Python 3.11), and a
callback that ignores errors hides them all; an :class:`UndoStack` records every failed undo
step and raises one :class:`RestoreError` listing them all, after all steps ran.

SIGKILL runs no undo step. The namespaces, the memory and process cgroups, the
``/run/netns`` and tracefs mounts, the work directory and the settings a run changes (with
the values to restore: :func:`change_setting`, :func:`own_settings` for the tracefs files
and block trace enables) record the process that made them (:mod:`disaggsim.owners`,
:func:`make_owned`); the next process that makes such state first reaps every piece
whose owner is gone, and fails naming the owner's pid if a name it needs is a running
owner's (:func:`make_cluster_network`, :func:`memcg_group`, :func:`run_cgroup`,
:func:`ensure_tracefs`, :func:`own_settings`).

- network: one namespace per node (``dsim-nN``, address ``10.77.0.(N+1)/24`` on ``eth0``)
  and a switch namespace (``dsim-sw``) holding a Linux bridge and the host ends of the veth
  pairs (``vethN``); the root namespace is not touched, nothing is routed outside.
- memory: a memcg v1 group per node (``/sys/fs/cgroup/memory/disaggsim-nodeN``).
- processes: a pids v1 group per run of a command (:func:`run_cgroup`), the set of
  processes a timeout or an interrupt kills.
- storage: loop devices on sparse files, an ext4 data disk per node, one swap area.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from disaggsim import owners
from disaggsim.signals import deferred_signals
from disaggsim.testbed.collect_tracefs import (
    TRACEFS,
    Tracefs,
    parse_buffer_size_kb,
    parse_choice,
    read_tracefs_state,
)

MEMCG_ROOT: Final = Path("/sys/fs/cgroup/memory")
#: The cgroup v1 ``pids`` hierarchy (Documentation/admin-guide/cgroup-v1/pids.rst): where
#: :func:`run_cgroup` makes its groups.
PIDS_ROOT: Final = Path("/sys/fs/cgroup/pids")
NETNS_DIR: Final = Path("/run/netns")
SYS_BLOCK: Final = Path("/sys/block")
#: ``LOOP_CTL_REMOVE`` ioctl of ``/dev/loop-control`` (include/uapi/linux/loop.h).
LOOP_CTL_REMOVE: Final = 0x4C81
#: Sysctls of the root namespace the snapshot watches: the collector sets the IPv6 ones only
#: inside its own namespaces, and none of the vm ones; a change would show here.
WATCHED_SYSCTLS: Final = (
    "net.ipv6.conf.all.disable_ipv6",
    "net.ipv6.conf.default.disable_ipv6",
    "net.ipv4.ip_forward",
    "vm.swappiness",
    "vm.page-cluster",
    "vm.overcommit_memory",
)
#: ``/sys/block/DEV/trace`` attributes (block/blk-sysfs via kernel/trace/blktrace.c).
BLK_TRACE_ATTRS: Final = ("enable", "act_mask", "start_lba", "end_lba", "pid")
SWITCH_NS: Final = "dsim-sw"
SUBNET_PREFIX: Final = "10.77.0."


def sh(cmd: Sequence[str], check: bool = True) -> str:
    """Run ``cmd``; return stdout. Raises RuntimeError with the command and stderr on failure."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}: {proc.stderr.strip()}"
        )
    return proc.stdout


class RestoreError(RuntimeError):
    """Some machine state could not be restored; ``failures`` names each piece and why.

    Raised after every other undo step ran. ``during`` is the error the collector was
    unwinding from, if any (also chained as ``__cause__``).
    """

    def __init__(self, failures: Sequence[str], during: BaseException | None = None) -> None:
        self.failures = list(failures)
        self.during = during
        msg = (
            f"could not restore {len(self.failures)} piece(s) of machine state (every "
            "other undo step ran):\n  - " + "\n  - ".join(self.failures)
        )
        if during is not None:
            msg += f"\n(while unwinding after {type(during).__name__}: {during})"
        super().__init__(msg)


class UndoStack(contextlib.ExitStack):
    """An ExitStack whose :meth:`undo` steps all run and whose failures are reported together.

    On exit, after every callback ran (in reverse order), a :class:`RestoreError` lists each
    failed undo step; a :class:`RestoreError` of a nested UndoStack that is unwinding through
    this one is merged into it, so the caller gets one report.
    """

    def __init__(self) -> None:
        super().__init__()
        self.failures: list[str] = []

    def undo(self, what: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """Push ``fn(*args, **kwargs)``, the step undoing ``what``; a failure is recorded
        (a :class:`RestoreError` with all its entries), not raised at once. A signal
        during the unwinding does not cut a step short under
        :func:`disaggsim.signals.interrupt_on_signals` (``disaggsim``'s commands): it
        waits for the unwinding's end (:func:`disaggsim.signals.deferred_signals`); a
        KeyboardInterrupt raised otherwise (Python's own SIGINT handler) ends the step,
        is recorded, and the remaining steps still run."""

        def step() -> None:
            try:
                fn(*args, **kwargs)
            except RestoreError as exc:
                self.failures += [f"{what}: {f}" for f in exc.failures]
            except Exception as exc:
                self.failures.append(f"{what}: {exc}")
            except KeyboardInterrupt as exc:  # a second Ctrl-C/SIGTERM: finish the others
                self.failures.append(f"{what}: interrupted ({type(exc).__name__}: {exc})")

        self.callback(step)

    def _error(self, during: BaseException | None) -> RestoreError:
        if isinstance(during, RestoreError):
            return RestoreError(during.failures + self.failures, during.during)
        return RestoreError(self.failures, during)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # A signal during the unwinding waits for its end (disaggsim.signals).
        with deferred_signals(exc):
            return self._unwind(exc_type, exc, tb)

    def _unwind(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        try:
            suppressed = super().__exit__(exc_type, exc, tb)
        except BaseException as raised:
            if self.failures:
                raise self._error(raised) from raised
            raise
        if self.failures:
            during = None if suppressed else exc
            raise self._error(during) from during
        return bool(suppressed)


def node_ns(node: int) -> str:
    """Network namespace name of ``node``."""
    return f"dsim-n{node}"


def node_ip(node: int) -> str:
    """IPv4 address of ``node`` (``10.77.0.(node+1)``)."""
    return f"{SUBNET_PREFIX}{node + 1}"


def ns_exec(ns: str) -> list[str]:
    """Command prefix running a program inside network namespace ``ns``."""
    return ["ip", "netns", "exec", ns]


def ensure_tracefs(stack: UndoStack) -> Tracefs:
    """Mount tracefs at ``TRACEFS`` (/sys/kernel/tracing) unless mounted; unmount on unwind
    if we did. The mount records this process as its owner (:data:`TRACEFS_MOUNT`,
    :func:`_make_owned`): a SIGKILLed collector's mount is unmounted by the next command
    that reaps, one stderr line. Dead owners' state is reaped first.

    Raises:
        RuntimeError: tracefs is mounted by a live owner (another collection, named by its
            pid: :func:`disaggsim.owners.taken_error`), or ``mount`` failed.
    """
    name = urllib.parse.quote(str(TRACEFS), safe="")
    with owners.records_lock():
        owners.reap_dead()
        if owners.record_path(TRACEFS_MOUNT.name, name).exists():
            raise owners.taken_error(TRACEFS_MOUNT, name)
        if not (TRACEFS / "trace_pipe").exists():
            _make_owned(
                stack,
                TRACEFS_MOUNT.name,
                name,
                TRACEFS_MOUNT.describe(name),
                functools.partial(sh, ["mount", "-t", "tracefs", "nodev", str(TRACEFS)]),
                functools.partial(sh, ["umount", str(TRACEFS)]),
            )
    return Tracefs(TRACEFS)


#: The kernel's escape of a mount point in /proc/self/mounts: space, tab, newline and
#: backslash as a backslash and three octal digits (fs/proc_namespace.c, show_vfsmnt:
#: ``seq_path_root(m, &mnt_path, &p->root, " \t\n\\")``).
_MOUNTS_ESCAPE: Final = re.compile(r"\\([0-7]{3})")


def mount_points(mounts: str | None = None) -> list[Path]:
    """The mount points of this mount namespace, in /proc/self/mounts order (or of
    ``mounts``, a text in its format), unescaped (:data:`_MOUNTS_ESCAPE`): a directory
    named "a b" is listed as ``a\\040b`` and returned as ``a b``. Lines end at "\\n"
    only (a name may hold any other line break) and bytes that are not UTF-8 come back
    as they were (:func:`os.fsdecode`)."""
    text = os.fsdecode(Path("/proc/self/mounts").read_bytes()) if mounts is None else mounts
    return [
        Path(_MOUNTS_ESCAPE.sub(lambda m: chr(int(m[1], 8)), line.split(" ")[1]))
        for line in text.split("\n")
        if line
    ]


def is_mountpoint(path: Path) -> bool:
    """Whether ``path`` is a mount point of this mount namespace (:func:`mount_points`)."""
    return path in mount_points()


def loops_backed_by(match: Callable[[Path], bool]) -> list[str]:
    """The loop devices (e.g. ``loop3``) whose backing file satisfies ``match``
    (``/sys/block/loopN/loop/backing_file``; a deleted file's " (deleted)" suffix removed)."""
    loops = []
    for dev in sorted(SYS_BLOCK.glob("loop[0-9]*")):
        with contextlib.suppress(OSError):
            backing = os.fsdecode((dev / "loop" / "backing_file").read_bytes().removesuffix(b"\n"))
            if match(Path(backing.removesuffix(" (deleted)"))):
                loops.append(dev.name)
    return loops


def swapoff_and_detach(loops: Sequence[str]) -> list[str]:
    """``swapoff`` each of ``loops`` that is a swap area (/proc/swaps), then detach it
    (``losetup -d``). Returns what it did per device, "swapped off and detached
    /dev/loop3" or "detached /dev/loop4". Raises :class:`RestoreError` naming each device
    a command failed on (:func:`sh`), after every other device was tried."""
    swaps = {line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]}
    done, failures = [], []
    for loop in loops:
        try:
            if f"/dev/{loop}" in swaps:
                sh(["swapoff", f"/dev/{loop}"])
            sh(["losetup", "-d", f"/dev/{loop}"])
        except RuntimeError as exc:
            failures.append(f"/dev/{loop}: {exc}")
            continue
        done.append(
            ("swapped off and detached" if f"/dev/{loop}" in swaps else "detached")
            + f" /dev/{loop}"
        )
    if failures:
        raise RestoreError(failures)
    return done


def _unmount_netns_dir(existed: bool) -> None:
    """Undo what ``ip netns add`` did to /run/netns on first use (iproute2 ip/ipnetns.c
    bind-mounts it onto itself, shared): unmount it (and remove it if it was created), unless
    another program's namespaces live there now."""
    if sh(["ip", "netns", "list"]).split():
        return
    if is_mountpoint(NETNS_DIR):
        sh(["umount", str(NETNS_DIR)])
    if not existed:
        NETNS_DIR.rmdir()


def _netns_exists(name: str) -> bool:
    return name in sh(["ip", "netns", "list"]).split()


def _make_owned(
    stack: UndoStack,
    kind: str,
    name: str,
    what: str,
    create: Callable[[], object],
    remove: Callable[[], object],
) -> None:
    """``create()`` the piece of state ``name`` of ``kind`` (``what``, for messages) with
    this process as its recorded owner; its undo ``remove()``s it, then the record.

    The record (:func:`disaggsim.owners.record_path`, a file under ``/run/disaggsim``) is
    written before the state is made and removed after it is gone, all in one
    :func:`disaggsim.signals.deferred_signals` block and one undo step: no state exists
    without its record, whenever a SIGKILL lands (a record without its state is
    overwritten by the next owner). Not in the state itself: a memcg v1 directory holds
    only the kernel's files and a namespace's ``/run/netns`` file only the namespace;
    ``/run`` is this boot's run-time state, as the namespaces and cgroups are, and a
    record that outlives a reboot names another boot's process, which is gone
    (:meth:`disaggsim.owners.Owner.alive`). Call under :func:`disaggsim.owners.records_lock`.
    """
    record = owners.record_path(kind, name)
    with deferred_signals():
        owners.write_record(record, owners.Owner.current())
        try:
            create()
        except BaseException:
            record.unlink(missing_ok=True)
            raise
        stack.undo(what, _remove_owned, remove, record)


def make_owned(
    stack: UndoStack,
    kind: owners.Kind,
    names: Sequence[str],
    create: Callable[[str], object],
    remove: Callable[[str], object],
) -> None:
    """Make the pieces ``names`` of ``kind`` (``create(name)`` each), each recording this
    process as its owner (:func:`_make_owned`), with the undo ``remove(name)``: first,
    under :func:`disaggsim.owners.records_lock`, the state of every owner that is gone (a
    SIGKILLed command) is reaped, one stderr line each (:func:`disaggsim.owners.reap_dead`,
    every kind). How every piece of owned state is made.

    Raises:
        RuntimeError: a piece of that name exists and its owner runs, or it records no
            owner (made by hand): :func:`disaggsim.owners.taken_error`; nothing is made
            then.
    """
    with owners.records_lock():
        owners.reap_dead()
        for name in names:
            if kind.exists(name):
                raise owners.taken_error(kind, name)
        for name in names:
            _make_owned(
                stack,
                kind.name,
                name,
                kind.describe(name),
                functools.partial(create, name),
                functools.partial(remove, name),
            )


def _remove_owned(remove: Callable[[], object], record: Path) -> None:
    """Undo step of :func:`_make_owned`: ``remove()``, then the owner record (kept if the
    removal failed: the state is still there, and its owner will be gone)."""
    remove()
    record.unlink(missing_ok=True)


def _reap_netns(name: str, timeout_s: float = 5.0) -> str:
    """SIGKILL every process in network namespace ``name`` (``ip netns pids``) until none
    is left, then delete it. Returns " (killed N process(es) in it)".

    Raises RuntimeError if processes outlive SIGKILL for ``timeout_s``."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while pids := [int(p) for p in sh(["ip", "netns", "pids", name]).split()]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"network namespace {name}: processes left after SIGKILL: {pids}")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.05)
    sh(["ip", "netns", "del", name])
    return f" (killed {len(killed)} process(es) in it)"


#: The owner records of the bind mount of /run/netns, by whether the directory existed
#: before it (the undo removes a directory it created).
_NETNS_DIR_RECORDS: Final = {True: "run-netns", False: "run-netns-and-dir"}


def _take_over_netns_dir(stack: UndoStack) -> bool:
    """If the bind mount of ``/run/netns`` is a dead owner's (its record), take over its
    undo (:func:`_unmount_netns_dir`, one line on stderr) and return True; a dead owner's
    record that outlived the mount is removed. Call under
    :func:`disaggsim.owners.records_lock`."""
    for existed, name in _NETNS_DIR_RECORDS.items():
        record = owners.record_path("mount", name)
        owner = owners.read_record(record)
        if owner is None or owner.alive():
            continue
        if not is_mountpoint(NETNS_DIR):  # the record outlived the mount
            record.unlink(missing_ok=True)
            continue
        with deferred_signals():
            owners.write_record(record, owners.Owner.current())
            stack.undo(
                f"mount of {NETNS_DIR}",
                _remove_owned,
                functools.partial(_unmount_netns_dir, existed),
                record,
            )
        print(
            f"disaggsim: took over the mount of {NETNS_DIR} left by dead pid {owner.pid} "
            "(unmounted when this command ends)",
            file=sys.stderr,
            flush=True,
        )
        return True
    return False


def _netns_dir_undo(stack: UndoStack) -> None:
    """Push the undo of the bind mount of ``/run/netns`` that the first ``ip netns add``
    makes (:func:`_unmount_netns_dir`) if it is not mounted yet, with an owner record; if
    the mount is a dead owner's (its record), take over its undo
    (:func:`_take_over_netns_dir`). A mount without a record (the system's, another
    program's) is left alone."""
    if not _take_over_netns_dir(stack) and not is_mountpoint(NETNS_DIR):
        existed = NETNS_DIR.exists()
        _make_owned(
            stack,
            "mount",
            _NETNS_DIR_RECORDS[existed],
            f"mount of {NETNS_DIR}",
            lambda: None,
            functools.partial(_unmount_netns_dir, existed),
        )


def reap_dead_state() -> list[str]:
    """Reap every piece of owned state whose owner is gone, now, as the next command would
    before it makes its own: :func:`disaggsim.owners.reap_dead` (every kind: namespaces,
    cgroups, /dev/shm files), and the bind mount of ``/run/netns`` a dead owner made is
    taken over and undone at once (:func:`_take_over_netns_dir`: unmounted unless other
    namespaces live under it). A live owner's state, and state without a record, are left
    alone. The cleanup of a test that may have left a killed command's state, in place of
    removing names by pattern (another suite's running state has the same names).

    Returns the lines said on stderr. Raises as :func:`disaggsim.owners.reap_dead`, and
    :class:`RestoreError` if the unmount fails.
    """
    with owners.records_lock():
        said = owners.reap_dead()
        with UndoStack() as stack:
            _take_over_netns_dir(stack)
    return said


def make_cluster_network(stack: UndoStack, n_nodes: int) -> None:
    """Create the switch namespace with bridge ``br0`` and one namespace + veth per node.

    IPv6 is disabled inside the new namespaces so that the captures hold only the cluster's
    IPv4 traffic (no router solicitations). Deleting a namespace deletes its interfaces.
    Each namespace records this process as its owner (:func:`_make_owned`); the state of
    owners that are gone (a SIGKILLed command) is reaped first, the processes in it
    killed, one line on stderr each (:func:`disaggsim.owners.reap_dead`), and the bind mount of
    ``/run/netns`` such an owner made is taken over (:func:`_netns_dir_undo`).

    Raises:
        RuntimeError: a namespace of that name exists and its owner runs (another
            collection), or records no owner (made by hand); nothing is reaped then.
    """
    names = [SWITCH_NS] + [node_ns(i) for i in range(n_nodes)]
    with owners.records_lock():
        owners.reap_dead()
        existing = sh(["ip", "netns", "list"]).split()
        for name in names:
            if name in existing:
                raise owners.taken_error(NETNS, name)
        _netns_dir_undo(stack)
        for name in names:
            _make_owned(
                stack,
                NETNS.name,
                name,
                NETNS.describe(name),
                functools.partial(sh, ["ip", "netns", "add", name]),
                functools.partial(sh, ["ip", "netns", "del", name]),
            )
    for name in names:
        sh(ns_exec(name) + ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
        sh(ns_exec(name) + ["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        sh(ns_exec(name) + ["ip", "link", "set", "lo", "up"])
    sw = ns_exec(SWITCH_NS)
    sh(sw + ["ip", "link", "add", "br0", "type", "bridge"])
    sh(sw + ["ip", "link", "set", "br0", "up"])
    for i in range(n_nodes):
        ns = node_ns(i)
        sh(
            sw
            + ["ip", "link", "add", f"veth{i}", "type", "veth", "peer", "name", "eth0", "netns", ns]
        )
        sh(sw + ["ip", "link", "set", f"veth{i}", "master", "br0", "up"])
        sh(ns_exec(ns) + ["ip", "addr", "add", f"{node_ip(i)}/24", "dev", "eth0"])
        sh(ns_exec(ns) + ["ip", "link", "set", "eth0", "up"])
    # Bridge ports forward at once (STP off); wait until every link reports carrier.
    deadline = time.monotonic() + 10
    for i in range(n_nodes):
        while "LOWER_UP" not in sh(ns_exec(node_ns(i)) + ["ip", "link", "show", "eth0"]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node_ns(i)}: eth0 has no carrier")
            time.sleep(0.05)


def _loop_devices() -> set[str]:
    return {p.name for p in SYS_BLOCK.glob("loop[0-9]*")}


def _remove_loop_device(name: str) -> None:
    """Delete the (detached) loop device ``name`` (``LOOP_CTL_REMOVE``), e.g. ``loop8``."""
    fd = os.open("/dev/loop-control", os.O_RDWR)
    try:
        fcntl.ioctl(fd, LOOP_CTL_REMOVE, int(name.removeprefix("loop")))
    finally:
        os.close(fd)


def loop_device(stack: UndoStack, backing: Path, size_bytes: int) -> str:
    """Create a sparse file of ``size_bytes`` and attach a loop device (direct I/O) to it.

    Returns the device name (e.g. ``loop3``); on unwind detaches it, deletes the file, and
    removes the device itself if ``losetup --find`` had to create it (no free one existed).
    """
    with deferred_signals():
        stack.undo(f"backing file {backing}", backing.unlink, missing_ok=True)
        with open(backing, "wb") as fh:
            fh.truncate(size_bytes)
    with deferred_signals():
        before = _loop_devices()
        dev = sh(["losetup", "--find", "--show", "--direct-io=on", str(backing)]).strip()
        name = os.path.basename(dev)
        if name not in before:
            stack.undo(f"loop device {name} (created)", _remove_loop_device, name)
        stack.undo(f"loop device {dev} attached to {backing}", sh, ["losetup", "-d", dev])
    return name


def ext4_disk(stack: UndoStack, dev: str, mountpoint: Path) -> None:
    """Make an ext4 file system on ``/dev/DEV`` and mount it at ``mountpoint`` (unmounted on
    unwind)."""
    sh(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", f"/dev/{dev}"])
    mountpoint.mkdir(parents=True, exist_ok=True)
    with deferred_signals():
        sh(["mount", "-o", "noatime", f"/dev/{dev}", str(mountpoint)])
        stack.undo(f"ext4 mount of /dev/{dev} at {mountpoint}", sh, ["umount", str(mountpoint)])


def swap_area(stack: UndoStack, dev: str) -> None:
    """``mkswap`` + ``swapon`` on ``/dev/DEV`` at the highest priority; ``swapoff`` on unwind.

    Raises:
        RuntimeError: another swap area is active (the paging trace would miss its pages).
    """
    active = Path("/proc/swaps").read_text().splitlines()[1:]
    if active:
        raise RuntimeError(
            f"/proc/swaps: swap already active ({active[0].split()[0]}); "
            "swapoff it first so every swap-out lands on the traced device"
        )
    sh(["mkswap", "-q", f"/dev/{dev}"])
    with deferred_signals():
        sh(["swapon", "-p", "32767", f"/dev/{dev}"])
        stack.undo(f"swap area /dev/{dev}", sh, ["swapoff", f"/dev/{dev}"])


#: The machine-wide settings a command changes for its run and restores
#: (:func:`change_setting`), by name: the file that holds each.
SETTING_FILES: Final = {
    "vm.page-cluster": Path("/proc/sys/vm/page-cluster"),
    "zswap.enabled": Path("/sys/module/zswap/parameters/enabled"),
}


def setting_record_name(setting: str, old: str) -> str:
    """The owner record name of a changed setting, ``SETTING=OLD`` (:data:`SETTING`):
    ``setting`` is a name of :data:`SETTING_FILES` or a file's absolute path, ``old`` the
    value to restore; both percent-encoded (``urllib.parse.quote``, nothing kept but
    letters, digits and ``_.-~``), so a path's "/" and any "=" or "%" in a value survive
    and names of :data:`SETTING_FILES` with plain values read as before
    (``vm.page-cluster=3``). Inverse: :func:`parse_setting_record_name`.

    Raises:
        ValueError: ``setting`` is empty, or the name is longer than a file name may be
            (255 bytes, ``NAME_MAX`` of include/uapi/linux/limits.h).
    """
    if not setting:
        raise ValueError(f"setting record name: expected a setting, got {setting!r}")
    name = f"{urllib.parse.quote(setting, safe='')}={urllib.parse.quote(old, safe='')}"
    if len(os.fsencode(name)) > 255:
        raise ValueError(
            f"{setting}: the owner record name of value {old!r} is {len(os.fsencode(name))} "
            "bytes; expected at most 255 (NAME_MAX)"
        )
    return name


def parse_setting_record_name(name: str) -> tuple[str, str]:
    """``(setting, old)`` of a record name of :func:`setting_record_name`."""
    setting, _, old = name.partition("=")
    return urllib.parse.unquote(setting), urllib.parse.unquote(old)


def setting_path(setting: str) -> Path | None:
    """The file of ``setting``: its :data:`SETTING_FILES` entry, or the setting itself if
    it is an absolute path (a tracefs file, a block device's trace enable); None for any
    other name."""
    if setting in SETTING_FILES:
        return SETTING_FILES[setting]
    return Path(setting) if setting.startswith("/") else None


def read_setting(path: Path) -> str:
    """A setting's value as it is saved and restored: the current choice of a choice file
    (:func:`~disaggsim.testbed.collect_tracefs.parse_choice`: ``[local] global`` ->
    ``local``; a plain value, stripped); a ``buffer_size_kb`` file the size a tracer runs
    with (``N (expanded: M)`` -> ``M``, ``X`` as is; the formats of
    :mod:`disaggsim.testbed.collect_tracefs`).

    Raises:
        OSError: the file cannot be read.
        ValueError: a ``buffer_size_kb`` in another format (naming the file).
    """
    text = path.read_text()
    if path.name == "buffer_size_kb":
        size = parse_buffer_size_kb(text, str(path))
        return "X" if size.kb is None else str(size.expanded_kb or size.kb)
    return parse_choice(text)


def write_setting(path: Path, value: str) -> None:
    """Write ``value`` to setting file ``path`` in one ``write(2)``, as ``echo VALUE >
    PATH`` does (and :meth:`~disaggsim.testbed.collect_tracefs.Tracefs.write`). Raises the
    kernel's OSError (EINVAL for a value the file does not take)."""
    path.write_text(f"{value}\n")


def _owned_settings(setting: str) -> list[Path]:
    """The owner records of ``setting`` (:data:`SETTING`), whatever value each holds."""
    return [
        r for r in owners.records(SETTING.name) if parse_setting_record_name(r.name)[0] == setting
    ]


def own_settings(read_old: Callable[[], Sequence[tuple[Path | str, str]]]) -> list[Path]:
    """Record this process as the owner of settings it is about to change, each with the
    value to restore, before any is changed: under :func:`disaggsim.owners.records_lock`,
    dead owners' state is reaped first (:func:`disaggsim.owners.reap_dead`: a SIGKILLed
    run's settings are restored), then ``read_old()`` reads the ``(setting, old value)``
    pairs, so that what it saves is the machine's own, not a dead run's; one record
    ``SETTING=OLD`` (:func:`setting_record_name`; the setting is a file's absolute path or
    a name of :data:`SETTING_FILES`) is written for each. The one mechanism of every
    changed machine setting (:func:`change_setting` is built on it). The caller changes
    the files, and after restoring each, removes its record (:func:`release_setting`);
    after a SIGKILL, the next command that reaps writes the old values back in
    record-name order, one stderr line each (``disaggsim: reaped setting
    /sys/kernel/tracing/current_tracer left by dead pid N (restored nop)``).

    Returns the records, in the order of ``read_old()``.

    Raises:
        RuntimeError: one of the files is a live owner's changed setting already (another
            collection, named by its pid: :func:`disaggsim.owners.taken_error`); nothing
            is recorded then.
        ValueError: a record name too long (:func:`setting_record_name`).
    """
    with owners.records_lock():
        owners.reap_dead()
        olds = list(read_old())
        names = [setting_record_name(str(setting), old) for setting, old in olds]
        for setting, _ in olds:
            taken = _owned_settings(str(setting))
            if taken:
                raise owners.taken_error(SETTING, taken[0].name)
        records = [owners.record_path(SETTING.name, name) for name in names]
        owner = owners.Owner.current()
        with deferred_signals():
            try:
                for record in records:
                    owners.write_record(record, owner)
            except BaseException:
                for record in records:  # nothing is changed yet: no record may stay
                    record.unlink(missing_ok=True)
                raise
    return records


def release_setting(record: Path) -> None:
    """Remove the owner record of a setting that is restored (:func:`own_settings`)."""
    record.unlink(missing_ok=True)


def change_setting(
    stack: UndoStack, setting: str, value: str, already: tuple[str, ...] = ()
) -> None:
    """Set machine-wide ``setting`` (a name of :data:`SETTING_FILES`) to ``value``, unless
    it is ``value`` or one of ``already`` (the same setting spelled otherwise); restore
    the value it had on unwind. The change records this process as its owner, under the
    name ``SETTING=OLD`` (the value to restore: a record holds only its owner;
    :func:`setting_record_name`), so that a SIGKILLed owner's change is undone by the
    next command that makes owned state (:func:`disaggsim.owners.reap_dead`, one stderr
    line: ``disaggsim: reaped setting vm.page-cluster left by dead pid N (restored 3)``).
    Dead owners' state is reaped before the old value is read, so it is the machine's
    own, not a dead run's.

    The record is written (:func:`own_settings`) before the value changes, and removed
    after the old value is back, in the undo step.

    Raises:
        RuntimeError: a live owner changed the setting already, from whatever value
            (:func:`disaggsim.owners.taken_error`, naming its record).
        OSError: the kernel refused ``value`` (the record is removed, nothing changed).
    """
    path = SETTING_FILES[setting]

    def read_old() -> list[tuple[Path | str, str]]:
        old = path.read_text().strip()
        return [] if old == value or old in already else [(setting, old)]

    records = own_settings(read_old)
    if not records:
        return
    (record,) = records
    old = parse_setting_record_name(record.name)[1]
    with deferred_signals():
        try:
            write_setting(path, value)
        except BaseException:
            release_setting(record)
            raise
        stack.undo(
            f"{path} = {old}", _remove_owned, functools.partial(write_setting, path, old), record
        )


def _restore_setting(name: str) -> str:
    """Reaper of :data:`SETTING`: write back the value ``name`` (``SETTING=OLD``) holds."""
    setting, old = parse_setting_record_name(name)
    path = setting_path(setting)
    if path is None:
        raise RuntimeError(
            f"setting {setting}: expected a name of SETTING_FILES or an absolute path"
        )
    write_setting(path, old)
    return f" (restored {old})"


def _setting_changed(name: str) -> bool:
    setting, old = parse_setting_record_name(name)
    path = setting_path(setting)
    return path is not None and path.exists() and read_setting(path) != old


def disable_zswap(stack: UndoStack) -> None:
    """Turn zswap off (it would keep swap-outs in RAM, off the traced device); restore
    (:func:`change_setting`)."""
    if SETTING_FILES["zswap.enabled"].exists():
        change_setting(stack, "zswap.enabled", "N", already=("0",))


def kill_tasks(
    cgroup: Path, timeout_s: float = 5.0, first: signal.Signals = signal.SIGTERM
) -> None:
    """Signal every task in cgroup ``cgroup`` (a directory of any v1 hierarchy: memory,
    pids) with ``first`` (SIGTERM: a chance to exit cleanly), after half of ``timeout_s``
    with SIGKILL, until the group is empty: a task forked meanwhile is born in the group
    and is killed on the next pass. A group that does not exist has no tasks.

    Raises RuntimeError if tasks are left after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    sig = first
    while True:
        try:
            pids = [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(0.1)
        if time.monotonic() > deadline - timeout_s / 2:
            sig = signal.SIGKILL
        if time.monotonic() > deadline:
            raise RuntimeError(f"{cgroup}: tasks left after SIGKILL: {pids}")


def remove_cgroup(cgroup: Path, first: signal.Signals = signal.SIGTERM) -> None:
    """Kill every task of v1 cgroup directory ``cgroup`` (:func:`kill_tasks`, ``first``
    signal first) and remove the directory, retrying for 5 s while the kernel still counts
    a task that just exited (``rmdir``: EBUSY). Nothing to do if it is gone already (an
    earlier, explicit removal: the undo step of :func:`memcg_group` and
    :func:`run_cgroup` is this function).

    Raises RuntimeError if tasks outlive SIGKILL, OSError if the group stays busy."""
    kill_tasks(cgroup, first=first)
    for _ in range(50):
        try:
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    cgroup.rmdir()


def memcg_group(stack: UndoStack, name: str) -> Path:
    """Create memory cgroup ``/sys/fs/cgroup/memory/NAME``; on unwind kill its tasks, rmdir
    (:func:`remove_cgroup`). The group records this process as its owner
    (:func:`make_owned`); the state of owners that are gone (a SIGKILLed command) is
    reaped first, its tasks killed, one line on stderr each.

    Raises:
        RuntimeError: cgroup v1 memory controller not mounted, or the group exists and its
            owner runs (another collection) or records no owner (made by hand).
    """
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        raise RuntimeError(f"{MEMCG_ROOT}: cgroup v1 memory controller not mounted")
    make_owned(
        stack,
        MEMCG,
        [name],
        lambda n: (MEMCG_ROOT / n).mkdir(),
        lambda n: remove_cgroup(MEMCG_ROOT / n),
    )
    return MEMCG_ROOT / name


def _reap_cgroup(path: Path) -> str:
    """Remove cgroup ``path`` of a dead owner, SIGKILLing its tasks first. Returns
    " (killed N process(es) in it)"."""
    try:
        procs = (path / "cgroup.procs").read_text().split()
    except FileNotFoundError:
        procs = []
    remove_cgroup(path, first=signal.SIGKILL)
    return f" (killed {len(procs)} process(es) in it)"


def run_cgroup(stack: UndoStack, name: str) -> Path:
    """Create cgroup ``/sys/fs/cgroup/pids/NAME`` (no limit set); on unwind kill its tasks,
    rmdir (:func:`remove_cgroup`). A process written to its ``cgroup.procs`` and every
    process it starts after are in it whatever their session, process group or parent
    (``setsid``, a daemon's double fork): the group is how a run's processes are all found
    and killed. The ``pids`` hierarchy, not ``memory``: moving a process there changes
    neither the memory cgroup it is charged to nor its cpuset, nor the groups
    :func:`system_state` lists.

    The group records this process as its owner (:func:`make_owned`, kind ``pids``); the
    state of owners that are gone (a SIGKILLed ``disaggsim emulate``'s run groups, the
    commands still in them killed) is reaped first, one line on stderr each.

    Raises:
        RuntimeError: cgroup v1 pids controller not mounted, or the group exists and its
            owner runs or records no owner (:func:`disaggsim.owners.taken_error`).
    """
    if not (PIDS_ROOT / "cgroup.procs").exists():
        raise RuntimeError(f"{PIDS_ROOT}: cgroup v1 pids controller not mounted")
    make_owned(
        stack,
        RUN_CGROUP,
        [name],
        lambda n: (PIDS_ROOT / n).mkdir(),
        lambda n: remove_cgroup(PIDS_ROOT / n),
    )
    return PIDS_ROOT / name


#: The owned kinds of state made here (:class:`disaggsim.owners.Kind`), in the order
#: :func:`disaggsim.owners.reap_dead` reaps them: namespaces (whose processes the reaping
#: kills), then the memory and process cgroups, then settings.
NETNS: Final = owners.Kind(
    "netns", lambda name: f"network namespace {name}", _netns_exists, lambda name: _reap_netns(name)
)
MEMCG: Final = owners.Kind(
    "memcg",
    lambda name: f"memory cgroup {MEMCG_ROOT / name}",
    lambda name: (MEMCG_ROOT / name).is_dir(),
    lambda name: _reap_cgroup(MEMCG_ROOT / name),
)
RUN_CGROUP: Final = owners.Kind(
    "pids",
    lambda name: f"process cgroup {PIDS_ROOT / name}",
    lambda name: (PIDS_ROOT / name).is_dir(),
    lambda name: _reap_cgroup(PIDS_ROOT / name),
)
#: A machine-wide setting changed for a run, named ``SETTING=OLD``
#: (:func:`setting_record_name`): ``vm.page-cluster`` and ``zswap.enabled``
#: (:func:`change_setting`), the collector's tracefs files and block-device trace enables
#: by absolute path (:func:`own_settings`). Reaped in name order: ``/sys/block/...``
#: before ``/sys/kernel/tracing/...``, and there ``tracing_on`` after the other files
#: (collect_blk.TRACEFS_SETTINGS), as the collector's own restore does.
SETTING: Final = owners.Kind(
    "setting",
    lambda name: f"setting {parse_setting_record_name(name)[0]}",
    lambda name: _setting_changed(name),
    lambda name: _restore_setting(name),
)


def _mounts_under(root: Path) -> list[Path]:
    """The mount points at or under ``root`` (:func:`mount_points`), deepest first."""
    return sorted((p for p in mount_points() if p.is_relative_to(root)), reverse=True)


def _reap_work_dir(name: str) -> str:
    """Reaper of :data:`WORK_DIR`: undo a dead collector's device chain in its work
    directory ``unquote(name)`` in the order of its undo stack: unmount each file system
    mounted under it (the nodes' ext4 disks; their processes were killed with the owner's
    namespaces and cgroups, reaped first), ``swapoff`` and detach each loop device on a
    file under it (the swap area and the disks), then remove the directory. Returns what
    it did, " (unmounted .../mnt0, swapped off and detached /dev/loop3, removed it)".

    Raises :class:`RestoreError` naming each mount and loop device a command failed on
    (:func:`sh`), after every other one was tried; the directory is then kept."""
    root = Path(urllib.parse.unquote(name))
    done, failures = [], []
    for point in _mounts_under(root):
        try:
            sh(["umount", str(point)])
            done.append(f"unmounted {point}")
        except RuntimeError as exc:
            failures.append(f"{point}: {exc}")
    try:
        done += swapoff_and_detach(loops_backed_by(lambda b: b.is_relative_to(root)))
    except RestoreError as exc:
        failures += exc.failures
    if failures:
        raise RestoreError(failures)
    shutil.rmtree(root)
    return f" ({', '.join([*done, 'removed it'])})"


#: A collector's work directory (:func:`work_dir`) with what it puts under it: the loop
#: devices on the backing files there (the swap area, the nodes' disks) and the nodes'
#: ext4 mounts. Named by the directory (``urllib.parse.quote``, no "/"). After the
#: namespaces and cgroups, whose processes use the disks.
WORK_DIR: Final = owners.Kind(
    "collect-work",
    lambda name: f"collector work directory {urllib.parse.unquote(name)}",
    lambda name: Path(urllib.parse.unquote(name)).is_dir(),
    _reap_work_dir,
)


def work_dir(stack: UndoStack, parent: Path) -> Path:
    """A new work directory ``parent/disaggsim-collect-PID-XXXXXXXX`` (mode 0700) with this
    process as its recorded owner (:func:`make_owned`): if the command is SIGKILLed, the
    next command that makes owned state unmounts, swaps off and detaches what is left under
    it and removes it (:data:`WORK_DIR`). Removed on unwind (after everything made in it,
    which its undo steps, pushed later, remove first).

    Raises RuntimeError if such a directory exists already (:func:`make_owned`)."""
    path = parent.resolve() / f"disaggsim-collect-{os.getpid()}-{os.urandom(4).hex()}"
    make_owned(
        stack,
        WORK_DIR,
        [urllib.parse.quote(str(path), safe="")],
        lambda n: Path(urllib.parse.unquote(n)).mkdir(mode=0o700),
        lambda n: shutil.rmtree(urllib.parse.unquote(n)),
    )
    return path


def _reap_tracefs_mount(name: str) -> str:
    """Reaper of :data:`TRACEFS_MOUNT`: unmount the tracefs at ``unquote(name)``."""
    sh(["umount", urllib.parse.unquote(name)])
    return " (unmounted it)"


#: The tracefs mount a collector made (:func:`ensure_tracefs`), named by its mount point
#: (``urllib.parse.quote``). After :data:`SETTING`, whose tracefs files the reaper
#: restores through this mount.
TRACEFS_MOUNT: Final = owners.Kind(
    "tracefs-mount",
    lambda name: f"tracefs mount at {urllib.parse.unquote(name)}",
    lambda name: is_mountpoint(Path(urllib.parse.unquote(name))),
    _reap_tracefs_mount,
)


def memcg_read_int(memcg: Path, name: str) -> int:
    """Read an integer control file ``memcg/NAME``."""
    return int((memcg / name).read_text().split()[0])


def memcg_oom_kills(memcg: Path) -> int:
    """Processes the group's own OOM killer has killed (``oom_kill`` of memcg v1's
    ``memory.oom_control``; 0 where the kernel does not report it)."""
    for line in (memcg / "memory.oom_control").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def memcg_stat(memcg: Path) -> dict[str, int]:
    """Parse ``memory.stat`` into ``{key: value}``."""
    out = {}
    for line in (memcg / "memory.stat").read_text().splitlines():
        key, value = line.split()
        out[key] = int(value)
    return out


def memcg_tasks(memcg: Path) -> list[int]:
    """Thread ids (as in block records' ``pid``) currently in ``memcg`` (``tasks`` file)."""
    try:
        return [int(t) for t in (memcg / "tasks").read_text().split()]
    except FileNotFoundError:
        return []


def memcg_reset(memcg: Path) -> None:
    """Empty the group's charges (``force_empty``) and reset its peak usage counter."""
    with contextlib.suppress(OSError):
        (memcg / "memory.force_empty").write_text("0")
    (memcg / "memory.max_usage_in_bytes").write_text("0")


def spawn_in_node(
    stack: UndoStack,
    memcg: Path,
    ns: str,
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` inside memory cgroup ``memcg`` and network namespace ``ns``.

    The process joins the cgroup before it execs (a shell writes its own pid to
    ``cgroup.procs``), so all its memory is charged to the node. Output goes to ``log``.
    On unwind the process group is killed.
    """
    script = 'echo $$ > "$0" && exec "$@"'
    cmd = ["sh", "-c", script, str(memcg / "cgroup.procs"), *ns_exec(ns), *argv]
    with deferred_signals():
        logf = open(log, "ab")  # noqa: SIM115 - closed by the stack
        stack.callback(logf.close)
        proc = subprocess.Popen(
            cmd,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        stack.undo(f"process {proc.pid} ({argv[0]}) in {ns}", stop_process, proc)
    return proc


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> None:
    """SIGTERM the process group of ``proc``, SIGKILL after ``timeout_s``, reap it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _sysctl(name: str) -> str:
    path = Path("/proc/sys") / name.replace(".", "/")
    try:
        return path.read_text().strip()
    except OSError as exc:
        return f"(unreadable: {exc.strerror})"


def _blk_trace_state() -> list[str]:
    out = []
    for dev in sorted(SYS_BLOCK.iterdir()):
        for attr in BLK_TRACE_ATTRS:
            path = dev / "trace" / attr
            with contextlib.suppress(OSError):
                out.append(f"{dev.name}/trace/{attr}={path.read_text().strip()}")
    return out


def system_state() -> dict[str, list[str]]:
    """Snapshot of everything the collector changes, for comparing before and after a run.

    Keys: ``netns`` (``ip netns list``), ``swaps`` (/proc/swaps), ``loop`` (``losetup -a``),
    ``loop_devices`` (/sys/block/loop*), ``mounts`` (/proc/self/mounts), ``memcg`` (groups
    under /sys/fs/cgroup/memory and the root group's swappiness/use_hierarchy), ``zswap``,
    ``sysctls`` (:data:`WATCHED_SYSCTLS` of the root namespace), ``blk_trace``
    (``/sys/block/*/trace/{enable,act_mask,start_lba,end_lba,pid}``), ``owner_records``
    (the files under :data:`disaggsim.owners.OWNERS_DIR` but its lock) and ``tracefs``
    (:func:`disaggsim.testbed.collect_tracefs.tracefs_state`: tracing_on, current_tracer,
    trace_clock, buffer sizes incl. per CPU, options, events/block/enable; read through a
    private mount when tracefs is not mounted). Buffer sizes are the size a tracer runs with,
    so an unexpanded boot-time buffer and its restored expanded size compare equal (the
    kernel cannot un-expand it; see :mod:`disaggsim.testbed.collect_tracefs`).

    Needs root (tracefs, cgroups).
    """
    zswap = Path("/sys/module/zswap/parameters/enabled")
    tracefs = read_tracefs_state()
    return {
        "netns": sorted(sh(["ip", "netns", "list"]).split()),
        "swaps": Path("/proc/swaps").read_text().splitlines()[1:],
        "loop": sorted(sh(["losetup", "-a"]).splitlines()),
        "loop_devices": sorted(_loop_devices()),
        "mounts": sorted(Path("/proc/self/mounts").read_text().splitlines()),
        "memcg": sorted(p.name for p in MEMCG_ROOT.iterdir() if p.is_dir())
        + [
            f"{f}={(MEMCG_ROOT / f).read_text().strip()}"
            for f in ("memory.swappiness", "memory.use_hierarchy")
            if (MEMCG_ROOT / f).exists()
        ],
        "zswap": [zswap.read_text().strip()] if zswap.exists() else [],
        "sysctls": [f"{n}={_sysctl(n)}" for n in WATCHED_SYSCTLS],
        "blk_trace": _blk_trace_state(),
        "owner_records": sorted(
            str(p.relative_to(owners.OWNERS_DIR)) for p in owners.OWNERS_DIR.glob("*/*")
        ),
        "tracefs": [f"{k}={v}" for k, v in sorted(tracefs.items())] or ["(no tracefs)"],
    }


def wait_tcp(node: int, ip: str, port: int, timeout_s: float) -> None:
    """Wait until ``ip:port`` accepts TCP connections from inside ``node``'s namespace.

    Raises:
        RuntimeError: not accepting after ``timeout_s`` seconds.
    """
    probe = (
        f"import socket,sys; s=socket.socket(); s.settimeout(1); "
        f"sys.exit(s.connect_ex(('{ip}',{port})))"
    )
    deadline = time.monotonic() + timeout_s
    while (
        subprocess.run(
            ns_exec(node_ns(node)) + [sys.executable, "-c", probe], capture_output=True
        ).returncode
        != 0
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{ip}:{port} not accepting connections after {timeout_s} s")
        time.sleep(0.2)


def last_json_line(log: Path) -> dict[str, float]:
    """The last line of an application log that starts with ``{``, parsed as JSON (the
    statistics line the applications print last).

    Raises:
        RuntimeError: no such line.
    """
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"{log}: no JSON statistics line")
