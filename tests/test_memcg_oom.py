"""The memcg v1 OOM handling the collector and emulate share (``testbed/memcg_oom.py``),
against fake cgroup directories whose control files hold what the kernel would show.

The oracle is the cgroup v1 interface (Documentation/admin-guide/cgroup-v1/memory.rst,
section 10 "OOM Control"): ``echo 1 > memory.oom_control`` turns a group's OOM killer off;
reading it gives ``oom_kill_disable``, ``under_oom`` (1 while its tasks sleep at the limit)
and ``oom_kill`` (processes its killer ended); a write to ``memory.limit_in_bytes`` is the
limit in bytes (the kernel keeps it rounded down to a page). The kernel wakes tasks asleep
under OOM when the limit is raised (``memcg1_oom_recover``), so a wake-up is the write of
limit + 1 page and then the limit. No root, no real cgroup: runs in a fraction of a second.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from disaggsim.testbed.collect import _start_apps
from disaggsim.testbed.collect_env import UndoStack
from disaggsim.testbed.memcg_oom import OOM_ATTEMPTS, MemcgOomKill, OomWaker, oom_kills_named

PAGE = 4096
#: The collector's smoke preset limit: its 24 MiB floor (testbed/collect.py).
LIMIT = 24 << 20
#: A group's memory.oom_control as the kernel shows it (mm/memcontrol-v1.c).
OOM_CONTROL = "oom_kill_disable {disable}\nunder_oom {under}\noom_kill {kills}\n"


def fake_group(root: Path, name: str, limit: int = LIMIT) -> Path:
    """A directory with the two control files the waker uses, killer on, not under OOM."""
    cg = root / name
    cg.mkdir()
    (cg / "memory.oom_control").write_text(OOM_CONTROL.format(disable=0, under=0, kills=0))
    (cg / "memory.limit_in_bytes").write_text(str(limit))
    return cg


def kernel_shows(cg: Path, under: int, kills: int = 0) -> None:
    """What the kernel would show in ``cg``'s memory.oom_control with the killer off."""
    (cg / "memory.oom_control").write_text(OOM_CONTROL.format(disable=1, under=under, kills=kills))


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Every write to a control file: (group, file, text), in order."""
    log: list[tuple[str, str, str]] = []
    real = Path.write_text

    def record(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.name.startswith("memory."):
            log.append((self.parent.name, self.name, data))
        return real(self, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", record)
    return log


def idle_waker(memcgs: list[Path], limits: list[int]) -> OomWaker:
    """A waker whose thread does not poll during the test (:meth:`OomWaker.poll` by hand)."""
    return OomWaker(memcgs, limits, period_s=3600.0)


def test_the_waker_turns_the_killer_off_and_wakes_only_a_group_under_oom(
    tmp_path: Path, writes: list[tuple[str, str, str]]
) -> None:
    a, b = fake_group(tmp_path, "node0"), fake_group(tmp_path, "node1", 32 << 20)
    writes.clear()
    waker = idle_waker([a, b], [LIMIT, (32 << 20) + 100])  # b's: not a page multiple
    try:
        # echo 1 > memory.oom_control in each group, nothing else.
        assert writes == [
            ("node0", "memory.oom_control", "1"),
            ("node1", "memory.oom_control", "1"),
        ]
        writes.clear()
        kernel_shows(a, under=1)
        kernel_shows(b, under=0)
        writes.clear()
        assert waker.poll() == 1
        # node0's limit raised one page (wakes its sleepers) then set back; node1 untouched.
        assert writes == [
            ("node0", "memory.limit_in_bytes", str(LIMIT + PAGE)),
            ("node0", "memory.limit_in_bytes", str(LIMIT)),
        ]
        assert waker.wakeups_per_group == [1, 0] and waker.wakeups == 1
        # The kernel refused the write back (EBUSY: nothing reclaimed), the limit stayed
        # raised; the group woke and left OOM: the next poll sets the limit back only.
        (a / "memory.limit_in_bytes").write_text(str(LIMIT + PAGE))
        kernel_shows(a, under=0)
        writes.clear()
        assert waker.poll() == 0
        assert writes == [("node0", "memory.limit_in_bytes", str(LIMIT))]
        writes.clear()
        assert waker.poll() == 0 and writes == []  # nothing to do: nothing written
    finally:
        waker.stop()
    # Limits back (node1's rounded down to a page, as the kernel keeps it), killer on.
    assert writes[-4:] == [
        ("node0", "memory.limit_in_bytes", str(LIMIT)),
        ("node0", "memory.oom_control", "0"),
        ("node1", "memory.limit_in_bytes", str(32 << 20)),
        ("node1", "memory.oom_control", "0"),
    ]


def test_the_waker_thread_wakes_a_group_that_stays_under_oom(tmp_path: Path) -> None:
    cg = fake_group(tmp_path, "node0")
    waker = OomWaker([cg], [LIMIT], period_s=0.001)
    kernel_shows(cg, under=1)  # every poll sees it: one wake-up each
    try:
        for _ in range(5000):
            if waker.wakeups >= 3:
                break
            time.sleep(0.001)
    finally:
        waker.stop()
    assert waker.wakeups >= 3
    assert (cg / "memory.oom_control").read_text() == "0"
    assert (cg / "memory.limit_in_bytes").read_text() == str(LIMIT)


def test_a_failed_poll_reaches_stop_after_the_groups_are_set_back(tmp_path: Path) -> None:
    """A group whose memory.oom_control cannot be read (removed under the waker): the
    thread's poll fails, and stop raises that error after it set the limit back and the
    killer on, instead of the groups going unwatched with nobody told."""
    cg = fake_group(tmp_path, "node0")
    waker = OomWaker([cg], [LIMIT], period_s=0.001)
    (cg / "memory.limit_in_bytes").write_text(str(LIMIT + PAGE))  # left raised by a nudge
    (cg / "memory.oom_control").unlink()
    for _ in range(6000):  # the next poll fails and ends the thread
        if not waker._thread.is_alive():
            break
        time.sleep(0.01)
    with pytest.raises(FileNotFoundError, match="memory.oom_control"):
        waker.stop()
    assert (cg / "memory.oom_control").read_text() == "0"
    assert (cg / "memory.limit_in_bytes").read_text() == str(LIMIT)


def test_a_failure_is_named_an_oom_kill_only_with_a_kill_or_a_wakeup(tmp_path: Path) -> None:
    cg = fake_group(tmp_path, "disaggsim-node0")
    waker = idle_waker([cg], [LIMIT])
    try:
        with pytest.raises(MemcgOomKill, match="disaggsim-node0 OOM-killed a process"):
            with oom_kills_named([cg], [waker]):
                kernel_shows(cg, under=0, kills=1)  # the group's killer ended a process
                raise RuntimeError("YCSB load: memcached exited -9")
        with pytest.raises(MemcgOomKill, match="under OOM"):
            with oom_kills_named([cg], [waker]):
                kernel_shows(cg, under=1, kills=1)  # no new kill, but asleep at the limit
                waker.poll()
                raise RuntimeError("YCSB load: Connection reset by peer")
        # The earlier kill and wake-up happened before this block: a plain failure.
        kernel_shows(cg, under=0, kills=1)
        with pytest.raises(RuntimeError, match="bad port") as info:
            with oom_kills_named([cg], [waker]):
                raise RuntimeError("bad port")
        assert type(info.value) is RuntimeError
    finally:
        waker.stop()


class _App:
    """An application whose first start fails while its group sits under OOM (as
    memcached's ``recv`` failing with EFAULT ends the YCSB load), the second succeeds."""

    def __init__(self, cg: Path, waker: OomWaker) -> None:
        self.cg, self.waker, self.calls = cg, waker, 0

    def start(self, stack: UndoStack) -> None:
        self.calls += 1
        if self.calls == 1:
            kernel_shows(self.cg, under=1)
            self.waker.poll()
            kernel_shows(self.cg, under=0)
            raise RuntimeError("YCSB load: [...] exited 1")


class _Steps:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)


def test_the_collector_repeats_a_start_that_failed_under_oom(tmp_path: Path) -> None:
    cg = fake_group(tmp_path, "disaggsim-node0")
    (cg / "memory.force_empty").write_text("")
    (cg / "memory.max_usage_in_bytes").write_text("0")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "memcached.log").write_text("attempt 1\n")
    waker = idle_waker([cg], [LIMIT])
    app, steps = _App(cg, waker), _Steps()
    try:
        with UndoStack() as run_stack:
            attempts = _start_apps([app], [cg], run_stack, logs, steps, [waker])  # type: ignore[arg-type]
    finally:
        waker.stop()
    assert (attempts, app.calls) == (2, 2)
    assert len(steps.lines) == 1 and "under OOM" in steps.lines[0]
    assert (logs / "attempt1-memcached.log").read_text() == "attempt 1\n"


def test_the_collector_gives_up_after_the_last_attempt_under_oom(tmp_path: Path) -> None:
    cg = fake_group(tmp_path, "disaggsim-node0")
    (cg / "memory.force_empty").write_text("")
    (cg / "memory.max_usage_in_bytes").write_text("0")
    waker = idle_waker([cg], [LIMIT])

    class AlwaysUnderOom(_App):
        def start(self, stack: UndoStack) -> None:
            self.calls = 0  # every attempt is a first one
            super().start(stack)

    app = AlwaysUnderOom(cg, waker)
    try:
        with pytest.raises(MemcgOomKill, match=f"in each of {OOM_ATTEMPTS} attempts"):
            with UndoStack() as run_stack:
                _start_apps([app], [cg], run_stack, tmp_path, _Steps(), [waker])  # type: ignore[arg-type]
    finally:
        waker.stop()
    assert waker.wakeups == OOM_ATTEMPTS
