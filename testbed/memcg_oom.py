"""Memory cgroup v1 groups at their limit without their OOM killer: the one mechanism that
``disaggsim collect`` (the node groups) and ``disaggsim emulate``'s swap backend (the data
holders' groups) use against memcg v1's reclaim failures.

Under memcg v1 a group at its limit whose pages are all active and partly in the swap
cache can fail to reclaim 16 times in a row (``try_charge_memcg``'s
``MAX_RECLAIM_RETRIES``), and its OOM killer then ends a process although swap is free.
Seen: memcached of the collector's smoke preset killed during its YCSB load (24 MiB limit
for ~80 MiB, under CPU load; dmesg "Memory cgroup out of memory": usage = limit,
``active_anon`` = all of it, ``inactive_anon`` 0, ``writeback`` 0, ``swapcached`` 8 of
24 MiB, 57 MiB in swap), memcached during the YCSB run of emulate's swap backend at 50 %
local, the small Timely PageRank at 50 % (2 runs of 3). ``memory.swappiness`` 200 did not
help (bench/RESULTS.md, "Swap backend, memcg v1 OOM", and "The collector's memcg v1 OOM
under load").

- :class:`OomWaker` turns the groups' OOM killer off (``memory.oom_control`` = 1) and wakes
  their tasks that sleep at the limit;
- :func:`oom_kills_named` turns an application's failure into :class:`MemcgOomKill` when a
  group OOM-killed a process or was under OOM meanwhile: the run measured nothing and its
  caller repeats it, at most :data:`OOM_ATTEMPTS` times.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

from disaggsim.polling import PollingThread
from disaggsim.testbed.collect_env import memcg_oom_kills

#: Attempts at a run (the collector's untraced start, an emulate run) whose application a
#: memory cgroup OOM-killed or failed while under OOM.
OOM_ATTEMPTS: Final = 3
#: The unit of memcg v1 limits (the kernel rounds ``memory.limit_in_bytes`` down to it).
PAGE_BYTES: Final = 4096


class MemcgOomKill(RuntimeError):
    """A run failed because a node's memory cgroup OOM-killed one of its processes, or
    while one of its groups was under OOM (its OOM killer off, :class:`OomWaker`).

    With the OOM killer off, memcg v1 still fails a charge made by a fault inside a system
    call (``memcg1_oom_prepare`` parks only user-mode faults) and the call returns EFAULT
    (seen: the small Timely PageRank's ``recv``, 1 run of 3 at 50 % on emulate's swap
    backend). Either way the run measured nothing; the caller repeats it.
    """


class OomWaker:
    """Memory cgroups v1 without their OOM killer, their sleeping tasks woken.

    A task whose charge finds nothing to reclaim 16 times in a row (``try_charge_memcg``'s
    ``MAX_RECLAIM_RETRIES``) meets the group's OOM killer; with ``memory.oom_control`` =
    1 it sleeps instead (``mem_cgroup_oom_synchronize``) until a page of the group is
    uncharged or its limit is raised (``memcg1_oom_recover``). When every task of the
    group sleeps so, nothing is uncharged any more: a thread calls :meth:`poll` every
    ``period_s``, which wakes them by raising the limit one page and setting it back (the
    write back reclaims that page). ``wakeups_per_group[i]`` counts those of ``memcgs[i]``,
    ``wakeups`` all.

    ``memcgs[i]``'s limit is ``limits_bytes[i]`` (the caller has written it to
    ``memory.limit_in_bytes``; kept here rounded down to a page, as the kernel keeps it).
    Construction turns the OOM killers off and starts the thread; :meth:`stop` sets the
    limits back and the OOM killers on.

    Raises:
        ValueError: ``memcgs`` and ``limits_bytes`` differ in length.
    """

    def __init__(
        self, memcgs: Sequence[Path], limits_bytes: Sequence[int], period_s: float = 0.05
    ) -> None:
        if len(memcgs) != len(limits_bytes):
            raise ValueError(f"OomWaker: {len(memcgs)} groups but {len(limits_bytes)} limits")
        self.memcgs, self.period_s = list(memcgs), period_s
        self.limits_bytes = [b - b % PAGE_BYTES for b in limits_bytes]
        self.wakeups_per_group = [0] * len(self.memcgs)
        for cg in self.memcgs:
            (cg / "memory.oom_control").write_text("1")
        self._thread = PollingThread(self.poll, period_s, "oom-waker")
        self._thread.start()

    def poll(self) -> int:
        """One look at every group: wake the tasks of those under OOM (``under_oom 1``),
        set back a limit a previous nudge left raised; return the groups woken."""
        woken = 0
        for i, (cg, limit_bytes) in enumerate(zip(self.memcgs, self.limits_bytes, strict=True)):
            limit = cg / "memory.limit_in_bytes"
            if "under_oom 1" in (cg / "memory.oom_control").read_text().splitlines():
                woken += 1
                self.wakeups_per_group[i] += 1
                limit.write_text(str(limit_bytes + PAGE_BYTES))
            elif int(limit.read_text()) == limit_bytes:
                continue
            with suppress(OSError):  # EBUSY (nothing reclaimed): again at the next poll
                limit.write_text(str(limit_bytes))
        return woken

    @property
    def wakeups(self) -> int:
        """Wake-ups of every group so far."""
        return sum(self.wakeups_per_group)

    def stop(self) -> None:
        """Stop polling, set the limits back and the OOM killers on again.

        Raises:
            OSError: (or whatever else) a poll of the thread raised, after the limits and
                killers are back: the groups went unwatched from then on.
        """
        try:
            self._thread.stop()
        finally:
            for cg, limit_bytes in zip(self.memcgs, self.limits_bytes, strict=True):
                with suppress(OSError):
                    (cg / "memory.limit_in_bytes").write_text(str(limit_bytes))
                (cg / "memory.oom_control").write_text("0")


@contextmanager
def oom_kills_named(memcgs: Sequence[Path], wakers: Sequence[OomWaker]) -> Iterator[None]:
    """Re-raise a RuntimeError of the block as :class:`MemcgOomKill` if one of ``memcgs``
    OOM-killed a process meanwhile (``memory.oom_control`` ``oom_kill``) or one of
    ``wakers`` (which the block may fill) woke a group under OOM meanwhile; any other
    exception passes unchanged."""
    kills_before = [memcg_oom_kills(cg) for cg in memcgs]
    wakeups_before = {id(w): w.wakeups for w in wakers}
    try:
        yield
    except RuntimeError as exc:
        killed = [
            cg.name
            for cg, before in zip(memcgs, kills_before, strict=True)
            if memcg_oom_kills(cg) > before
        ]
        if killed:
            raise MemcgOomKill(
                f"{exc}\n(the memory cgroup of {', '.join(killed)} OOM-killed a process)"
            ) from exc
        if any(w.wakeups > wakeups_before.get(id(w), 0) for w in wakers):
            raise MemcgOomKill(
                f"{exc}\n(a memory cgroup was under OOM: a system call that "
                f"faulted meanwhile may have failed with EFAULT)"
            ) from exc
        raise
