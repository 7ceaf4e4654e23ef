"""Who owns a piece of machine state, and whether that owner is gone: the one check behind
every reaping of state a killed process left.

A ``disaggsim`` command undoes what it set up on the machine on success, on an error and on
SIGINT/SIGTERM/SIGHUP (:mod:`disaggsim.signals`); SIGKILL (the OOM killer, Slurm's
``KillWait`` expiry, ``kill -9``, a CI runner's timeout) cannot be caught and leaves it.
The next command tells state it may remove from state a running command still uses by
its owner, the process that made it:

- state named by its owner's pid (node segments ``swapdev-node-PID-*``, process cgroups
  ``disaggsim-run-PID-N``): :func:`pid_alive` of that pid;
- state with a fixed name (network namespaces ``dsim-*``, the memory cgroups of
  ``testbed/collect_env.memcg_group``): an owner record (:func:`write_record`), a file
  ``OWNERS_DIR/KIND/NAME`` holding :class:`Owner`, checked with :meth:`Owner.alive`.

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from disaggsim.atomic import write_text_atomic

#: Where owner records live: ``/run`` holds run-time state of this boot (FHS 3.0, 3.15),
#: as the network namespaces' own ``/run/netns`` does.
OWNERS_DIR: Final = Path("/run/disaggsim/owners")
BOOT_ID: Final = Path("/proc/sys/kernel/random/boot_id")


def process_stat(pid: int) -> tuple[str, int] | None:
    """The state letter (field 3) and start time in clock ticks after boot (field 22) of
    ``/proc/PID/stat`` (proc(5)); None if no process has that pid. Fields are counted
    after the command name, which is in parentheses and may itself hold ``)`` or spaces."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields 3, 4, ... of proc(5)
    return fields[0], int(fields[22 - 3])


def pid_alive(pid: int, start_ticks: int | None = None) -> bool:
    """Whether process ``pid`` is still there: it exists (``kill(pid, 0)``; one we may not
    signal exists too), is no zombie, and, if ``start_ticks`` is given, started at that
    time (:func:`process_stat`): else the pid was reused by a newer process and the one it
    named is gone. How the owner of a node segment
    (:func:`disaggsim.swapdev.device.per_node_segments`), of a run's process cgroup
    (:func:`disaggsim.swapdev.emulate_apps.reap_stale_run_cgroups`) and of an owner
    record (:meth:`Owner.alive`) is found gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = process_stat(pid)
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return start_ticks is None or stat[1] == start_ticks


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
        return cls(os.getpid(), stat[1], boot_id())

    def alive(self) -> bool:
        """Whether this owner still runs (same boot, :func:`pid_alive` with its start)."""
        return self.boot_id == boot_id() and pid_alive(self.pid, self.start_ticks)

    def text(self) -> str:
        """The record's one line: ``PID START_TICKS BOOT_ID``."""
        return f"{self.pid} {self.start_ticks} {self.boot_id}\n"


def record_path(kind: str, name: str) -> Path:
    """The owner record of the piece of state ``name`` of ``kind`` (``netns``, ``memcg``,
    ``mount``): ``OWNERS_DIR/KIND/NAME``."""
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
        raise RuntimeError(f"{path}: expected an owner record 'PID START_TICKS BOOT_ID', "
                           f"got {text[:80]!r}")
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
