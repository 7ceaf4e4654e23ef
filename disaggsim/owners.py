"""Who owns a piece of machine state, and whether that owner is gone: the one check behind
every reaping of state a killed process left.

A ``disaggsim`` command undoes what it set up on the machine on success, on an error and on
SIGINT/SIGTERM/SIGHUP (:mod:`disaggsim.signals`); SIGKILL (the OOM killer, Slurm's
``KillWait`` expiry, ``kill -9``, a CI runner's timeout) cannot be caught and leaves it.
The next command tells state it may remove from state a running command still uses by
its owner, the process that made it: each piece records its owner (:func:`write_record`),
a file ``OWNERS_DIR/KIND/NAME`` holding :class:`Owner`, written before the piece is made
and removed after it is undone; :func:`reap_dead` removes every piece whose owner is gone
(:meth:`Owner.alive`), one line on stderr each, and :func:`taken_error` is the one-line
refusal naming a live owner's pid. The kinds (:class:`Kind`, registered where the state
is made; reaped in the order registered, namespaces and cgroups first, so the processes
in them are gone before the devices they used):

- ``netns``: the network namespaces ``dsim-*`` (``testbed/collect_env.py``
  ``make_cluster_network``);
- ``memcg``: memory cgroups v1 (``collect_env.memcg_group``: the cluster's
  ``disaggsim-node0``, ``disaggsim-emulate-node0``, ..., the swap backend's
  ``disaggsim-swapdev``);
- ``pids``: the process cgroups ``disaggsim-run-PID-N`` of each run of a command
  (``collect_env.run_cgroup``, ``swapdev/emulate_apps.py`` ``run_command``);
- ``shm``: files and directories in ``/dev/shm``: the uffd device's node segments
  ``swapdev-node-*`` (``swapdev/device.py`` ``per_node_segments``) and the directory of
  the memory reference's file of ``disaggsim emulate`` with ``[hpe_cm]``
  (``disaggsim-hpecm-*``, ``swapdev/hpe_cm.py``): tmpfs, RAM until removed;
- ``setting``: a machine-wide setting changed for a run, named ``SETTING=OLD`` with the
  value to restore (percent-encoded, ``collect_env.setting_record_name``):
  ``vm.page-cluster`` and ``zswap.enabled`` (``collect_env.change_setting``), and by
  absolute path the collector's tracefs files (``testbed/collect_blk.py``
  ``TRACEFS_SETTINGS``: ``current_tracer``, ``buffer_size_kb`` or the per-CPU sizes,
  ``options/*`` ..., saved in the forms they can be written back in,
  ``testbed/collect_tracefs.py``) and the block trace enables of its devices
  (``/sys/block/DEV/trace/enable``; ``collect_env.own_settings``, called by
  ``collect_blk.arm_blk_tracer``); reaped in name order: the devices first, tracefs'
  ``tracing_on`` after its other files;
- ``swapdev``: the swap backend's device chain on one mount point (``swapdev/device.py``
  ``fuse_daemon``: the ``swapdev-fuse`` daemon, in a session of its own, its FUSE mount
  in the work directory, the loop device on its file and the swap area on that), undone
  whole and in its undo's order (``swapoff`` while the daemon still serves, detach, stop
  the daemon, unmount);
- ``collect-work``: a collection's work directory (``testbed/collect_env.py``
  ``work_dir``) with what the collector puts under it: the loop devices on its files (the
  swap area, the nodes' disks) and the nodes' ext4 mounts, undone in its undo's order
  (unmount, ``swapoff`` and detach, remove the directory);
- ``tracefs-mount``: the tracefs mount at ``/sys/kernel/tracing`` that a collector
  makes when tracefs is not mounted (``collect_env.ensure_tracefs``); after ``setting``,
  whose tracefs files are restored through it;
- ``mount``: the bind mount of ``/run/netns`` that the first ``ip netns add`` makes: not
  reaped but taken over (``collect_env._netns_dir_undo``): other programs' namespaces may
  live under it.

State without a record (made by hand, or by a disaggsim from before the records) is
never touched: a command that needs its name fails (:func:`taken_error`). The processes
a command starts are in one of these namespaces or cgroups, and are killed (SIGKILL)
with it: the applications of a run (its ``pids`` group, a node's ``memcg``), the
collector's servers and ``tcpdump`` (a ``netns``); the swap device's daemon is stopped
with its chain. The one process outside them, a run's system-wide ``perf stat``
(``swapdev/emulate.py`` ``_perf_stat``), needs no record: it gets SIGINT when its parent
dies, even by SIGKILL (``setpriv --pdeathsig``), and exits.

What a SIGKILLed command leaves outside this mechanism, and why:

- files under a work directory (``/var/tmp/disaggsim-emulate-PID-*``,
  ``disaggsim-hpecm-*``, a collection's ``.partial``): named uniquely (``mkdtemp``), so no
  later command collides with them, and no kernel object; disk space, removed by hand
  (``swapdev/doc/swapdev.md``, "Limits and known issues").
- state a disaggsim from before its records left: a collection killed before 2026-11-28
  left its loop devices, mounts and swap area without a record, and one killed before
  the tracefs records (also 2026-11-28) its tracefs settings and block trace enables:
  removed or set back by hand (the same doc section; a device still traced makes the
  next arming stop, naming its ``enable`` file).
- a tracefs setting whose tracefs was unmounted by hand after its collector died: its
  record names a file that is gone, and is removed without restoring it (tracefs keeps
  its settings unmounted; mount it again before the next command to have them
  restored).

A process is its pid, its start time and the boot: pids are reused once the pid space
wraps (``/proc/sys/kernel/pid_max``, 32768 by default), so a pid alone may name a newer,
unrelated process; the start time (field 22, ``starttime``, of ``/proc/PID/stat``: clock
ticks after boot, proc(5)) tells the two apart, and the boot id
(``/proc/sys/kernel/random/boot_id``, random(4)) a record from an earlier boot (where
``/run`` is not a tmpfs and outlives a reboot). A zombie (state ``Z``/``X``: exited, not
yet waited for) is gone too: it runs nothing and undoes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple

from disaggsim.atomic import write_text_atomic
from disaggsim.signals import deferred_signals

#: Where owner records live: ``/run`` holds run-time state of this boot (FHS 3.0, 3.15),
#: as the network namespaces' own ``/run/netns`` does.
OWNERS_DIR: Final = Path("/run/disaggsim/owners")
BOOT_ID: Final = Path("/proc/sys/kernel/random/boot_id")


class ProcessStat(NamedTuple):
    """Fields of ``/proc/PID/stat`` (proc(5), numbered from 1): ``state`` (3, a letter:
    ``R``, ``S``, ``D``, ``Z`` ...), ``ppid`` (4, the parent's pid) and ``start_ticks``
    (22, ``starttime``: clock ticks after boot, ``os.sysconf("SC_CLK_TCK")`` a second)."""

    state: str
    ppid: int
    start_ticks: int


def process_stat(pid: int) -> ProcessStat | None:
    """The :class:`ProcessStat` of process ``pid``; None if no process has that pid (or it
    exited while being read). Fields are counted after the command name, which is in
    parentheses and may itself hold ``)`` or spaces: the one parser of ``/proc/PID/stat``
    in the project."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields 3, 4, ... of proc(5)
    return ProcessStat(fields[0], int(fields[4 - 3]), int(fields[22 - 3]))


def pid_alive(pid: int, start_ticks: int | None = None) -> bool:
    """Whether process ``pid`` is still there: it exists (``kill(pid, 0)``; one we may not
    signal exists too), is no zombie, and, if ``start_ticks`` is given, started at that
    time (:func:`process_stat`): else the pid was reused by a newer process and the one it
    named is gone. How the owner of an owner record (:meth:`Owner.alive`) is found
    gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = process_stat(pid)
    if stat is None or stat.state in ("Z", "X"):
        return False
    return start_ticks is None or stat.start_ticks == start_ticks


def boot_id() -> str:
    """This boot's id (random(4)); a process of another boot is gone."""
    return BOOT_ID.read_text().strip()


@dataclass(frozen=True)
class Owner:
    """A process that owns a piece of machine state: ``pid``, its ``start_ticks``
    (:func:`process_stat`) and the ``boot_id`` it ran in."""

    pid: int
    start_ticks: int
    boot_id: str

    @classmethod
    def current(cls) -> Owner:
        """This process."""
        stat = process_stat(os.getpid())
        assert stat is not None  # this process exists
        return cls(os.getpid(), stat.start_ticks, boot_id())

    def alive(self) -> bool:
        """Whether this owner still runs (same boot, :func:`pid_alive` with its start)."""
        return self.boot_id == boot_id() and pid_alive(self.pid, self.start_ticks)

    def text(self) -> str:
        """The record's one line: ``PID START_TICKS BOOT_ID``."""
        return f"{self.pid} {self.start_ticks} {self.boot_id}\n"


def record_path(kind: str, name: str) -> Path:
    """The owner record of the piece of state ``name`` of ``kind`` (``netns``, ``memcg``,
    ``pids``, ``shm``, ``mount``): ``OWNERS_DIR/KIND/NAME``."""
    return OWNERS_DIR / kind / name


def records(kind: str) -> list[Path]:
    """The owner records of ``kind``, sorted by name (not the temporary files of a write
    that a SIGKILL cut short, which start with a dot)."""
    return sorted((OWNERS_DIR / kind).glob("[!.]*"))


def write_record(path: Path, owner: Owner) -> None:
    """Write ``owner`` to record ``path``, atomically (a reader, or a SIGKILL during the
    write, never leaves half a record)."""
    write_text_atomic(path, owner.text())


def read_record(path: Path) -> Owner | None:
    """The owner record ``path`` says; None if there is none.

    Raises RuntimeError naming the file if it is not one ``PID START_TICKS BOOT_ID`` line.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    parts = text.split()
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        raise RuntimeError(
            f"{path}: expected an owner record 'PID START_TICKS BOOT_ID', got {text[:80]!r}"
        )
    return Owner(int(parts[0]), int(parts[1]), parts[2])


@contextlib.contextmanager
def records_lock() -> Iterator[None]:
    """Hold the owner records' lock (``flock`` on ``OWNERS_DIR/.lock``) for the block: two
    processes that find the same dead owner's state do not both reap it, one of them the
    state the other just made. Hold it only for a check, reap and claim (seconds)."""
    OWNERS_DIR.mkdir(parents=True, exist_ok=True)
    with open(OWNERS_DIR / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Kind:
    """A kind of machine state whose pieces record their owner: ``name`` is its records'
    folder (``OWNERS_DIR/NAME``); ``describe(piece)`` names a piece in messages
    ("network namespace dsim-sw"); ``exists(piece)`` says whether it is there;
    ``reap(piece)`` removes a dead owner's piece, killing (SIGKILL) what runs in it, and
    returns what it did besides (" (killed 2 process(es) in it)", or ""). Made once per
    kind, at import of the module that makes such state: it is then in :data:`KINDS`."""

    name: str
    describe: Callable[[str], str]
    exists: Callable[[str], bool]
    reap: Callable[[str], str]

    def __post_init__(self) -> None:
        if self.name in KINDS:
            raise ValueError(f"owner record kind {self.name!r} registered twice")
        KINDS[self.name] = self


#: Every :class:`Kind` made so far, by name, in the order made (the modules' import order:
#: namespaces first, whose reaping kills the processes in them, then cgroups, then files).
KINDS: Final[dict[str, Kind]] = {}


def reap_dead(kinds: list[Kind] | None = None) -> list[str]:
    """Remove every piece of state of ``kinds`` (default: all of :data:`KINDS`) whose
    recorded owner is gone (:meth:`Owner.alive`), then its record; one line on stderr
    each, ``disaggsim: reaped network namespace dsim-sw left by dead pid N (killed 1
    process(es) in it)``. A dead owner's record whose piece is gone (a SIGKILL between
    the removal and the record's) is removed silently. A live owner's piece and a piece
    without a record are never touched. What every command calls before it makes a piece
    of such state, and what a test's cleanup calls. Call under :func:`records_lock`; a
    signal waits for the end of each reaping (a cleanup, as an undo step).

    A piece that cannot be reaped (a process outlives SIGKILL, a device stays busy) keeps
    its record, is said on stderr, and does not stop the others: every piece is tried.

    Returns the lines said. Raises RuntimeError once all were tried if any piece could not
    be reaped (one line each, naming it, its owner and why), or a record is malformed
    (naming it).
    """
    said, failed = [], []
    for kind in list(KINDS.values()) if kinds is None else kinds:
        for record in records(kind.name):
            owner = read_record(record)
            if owner is None or owner.alive():
                continue
            with deferred_signals():
                try:
                    done = kind.reap(record.name) if kind.exists(record.name) else None
                except Exception as exc:  # noqa: BLE001 - said, and the others still tried
                    failed.append(
                        f"disaggsim: could not reap {kind.describe(record.name)} "
                        f"left by dead pid {owner.pid}: {exc}"
                    )
                    print(failed[-1], file=sys.stderr, flush=True)
                    continue
                record.unlink(missing_ok=True)
            if done is not None:
                said.append(
                    f"disaggsim: reaped {kind.describe(record.name)} left by dead "
                    f"pid {owner.pid}{done}"
                )
                print(said[-1], file=sys.stderr, flush=True)
    if failed:
        raise RuntimeError("\n".join(failed))
    return said


def taken_error(kind: Kind, piece: str) -> RuntimeError:
    """The one-line error for piece ``piece`` of ``kind`` that exists after
    :func:`reap_dead`: its recorded owner runs (naming its pid), or none is recorded."""
    record = record_path(kind.name, piece)
    owner = read_record(record)
    what = kind.describe(piece)
    if owner is None:
        return RuntimeError(
            f"{what} exists and records no owner ({record} missing): made "
            "by hand or by a disaggsim older than owner records; remove it by "
            'hand (swapdev/doc/swapdev.md, "Limits and known issues")'
        )
    return RuntimeError(
        f"{what} exists, owned by pid {owner.pid}, which runs: is another "
        "disaggsim command running?"
    )
