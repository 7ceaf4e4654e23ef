"""The device's two output files, ``SWAPDEV_TRACE`` (the rmem trace, ``%p`` = pid) and
``SWAPDEV_HIST`` (the delay histograms), follow the rule of :mod:`disaggsim.atomic` over
every kind of target: a Hypothesis property over ``sd-outputs-driver``
(``swapdev/test/outputs_driver.c``: ``swapdev/src/sd_user.c`` with no device around it, so
no root and no userfaultfd).

The rule: a target that exists and is neither a regular file nor a directory
(:func:`disaggsim.atomic.is_special_file`: a FIFO, a character device such as
``/dev/null``; symlinks followed) is written through in place; anything else is written to
a temporary file beside it (beside the file a symlink ends at, so the link stays a link)
and renamed onto it; a target that cannot be written (a directory, a missing directory)
fails with one line on stderr naming the path, leaving nothing partial behind.

The oracle does not run the code under test: the trace lines and histogram sections are
derived by hand from the driver's three requests; whether a target is written through
(the same inode before and after) or replaced (a new inode, and a reader holding the old
file still reads the old bytes) is what ``is_special_file`` says of it before the run;
the failures and their messages follow from the kind of target alone.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from disaggsim.atomic import is_special_file
from disaggsim.swapdev import device

try:
    DRIVER: Path | None = device.build_dir() / "sd-outputs-driver"
except FileNotFoundError:  # pragma: no cover - `make test` builds first
    DRIVER = None
pytestmark = pytest.mark.skipif(
    DRIVER is None or not DRIVER.exists(),
    reason="swapdev/test/outputs_driver.c is not built (make build, or set "
    "DISAGGSIM_SWAPDEV_BUILD to a swapdev build directory holding sd-outputs-driver)",
)

KINDS = (
    "missing",
    "regular",
    "symlink-to-regular",
    "fifo",
    "symlink-to-fifo",
    "devnull",
    "devfull",
    "directory",
    "missing-parent",
)
#: The kinds of target the device cannot write, and the reason its stderr line gives.
FAILS = {
    "directory": "Is a directory",
    "missing-parent": "No such file or directory",
    "devfull": "No space left on device",  # /dev/full: written through, every write fails
}
#: The kinds written through in place by the rule (the others get a temporary renamed).
THROUGH = {"fifo", "symlink-to-fifo", "devnull", "devfull"}
#: The character devices a target may be.
DEVICES = {"devnull": Path(os.devnull), "devfull": Path("/dev/full")}
OLD = b"old content\n"

# The driver's requests (outputs_driver.c), each logged as a batch of its own:
#   read  bytes 0..4095       -> page 0, 1 page      -> "0 <us> -0 1"  (a read is signed '-')
#   write bytes 8192..16383   -> pages 2-3           -> "1 <us> 2 2"
#   read  bytes 40960..53247  -> pages 10-12         -> "2 <us> -10 3"
TRACE = re.compile(rb"0 (\d+) -0 1\n1 (\d+) 2 2\n2 (\d+) -10 3\n")
# SWAPDEV_MODEL=fixed, SWAPDEV_LATENCY_NS=1000: each request is asked 1000 ns. 1000 lies in
# [2^9, 2^10), where the histogram has 64 buckets of 2^9 / 64 = 8 ns: 1000 = 125 * 8 opens
# the bucket [1000, 1008). The busy-wait takes at least the 1000 ns, so every applied time
# lies in a bucket starting at >= 1000.
HIST = re.compile(
    rb"# applied n=3 sum_ns=(\d+) min_ns=(\d+) max_ns=(\d+)\n"
    rb"((?:applied \d+ \d+ \d+\n)+)"
    rb"# target n=3 sum_ns=3000 min_ns=1000 max_ns=1000\n"
    rb"target 1000 1008 3\n"
)
ENV = {"SWAPDEV_MODEL": "fixed", "SWAPDEV_LATENCY_NS": "1000", "SWAPDEV_BANDWIDTH_BPS": "0"}
SUMMARY = re.compile(
    r"swapdev outputs-driver: 2 swap-ins \(4 pages\), 1 swap-outs \(2 pages\), "
    r"mean applied delay \d+ ns"
)


def check_trace(data: bytes, t0_us: int, t1_us: int) -> None:
    """``data`` is the driver's trace: its three lines, stamped in order within the run."""
    m = TRACE.fullmatch(data)
    assert m, data
    stamps = [int(s) for s in m.groups()]
    assert t0_us <= stamps[0] <= stamps[1] <= stamps[2] <= t1_us, (t0_us, stamps, t1_us)


def check_hist(data: bytes) -> None:
    """``data`` is the driver's histogram file: the exact target section and an applied
    section of three waits of at least 1000 ns, its buckets ascending."""
    m = HIST.fullmatch(data)
    assert m, data
    sum_ns, min_ns, max_ns = (int(g) for g in m.groups()[:3])
    assert 1000 <= min_ns <= max_ns and 3 * min_ns <= sum_ns <= 3 * max_ns
    buckets = [tuple(map(int, line.split()[1:])) for line in m.group(4).splitlines()]
    assert sum(c for _, _, c in buckets) == 3
    assert all(1000 <= lo < hi for lo, hi, _ in buckets)
    assert [lo for lo, _, _ in buckets] == sorted({lo for lo, _, _ in buckets})


def _lstat_type(path: Path) -> int | None:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


@dataclass
class Target:
    """One output's target: made before the run, its state recorded, checked after."""

    output: str  # "trace" or "hist"
    kind: str
    env_path: str  # as SWAPDEV_TRACE / SWAPDEV_HIST give it (maybe with %p)
    real_dir: Path  # where a symlink's file is
    path: Path = Path()  # env_path with the driver's pid
    through: bool = False  # is_special_file(path) before the run: the rule's verdict
    type_before: int | None = None
    ino_before: int | None = None
    old_fd: int | None = None  # the old regular file, held open across the run
    fifo: Path | None = None
    got: list[bytes] = field(default_factory=list)
    reader: threading.Thread | None = None

    def make(self, pid: int) -> None:
        """Create the target (its name may hold the pid) and record its state."""
        self.path = Path(self.env_path.replace("%p", str(pid)))
        real = self.real_dir / ("pipe" if "fifo" in self.kind else "real")
        if self.kind == "regular":
            self.path.write_bytes(OLD)
        elif self.kind == "symlink-to-regular":
            real.write_bytes(OLD)
            self.path.symlink_to(real)
        elif self.kind in ("fifo", "symlink-to-fifo"):
            self.fifo = real if self.kind == "symlink-to-fifo" else self.path
            os.mkfifo(self.fifo)
            if self.kind == "symlink-to-fifo":
                self.path.symlink_to(real)
        elif self.kind == "directory":
            self.path.mkdir()
            (self.path / "keep").write_bytes(OLD)
        self.through = is_special_file(self.path)
        assert self.through == (self.kind in THROUGH), self.kind
        self.type_before = _lstat_type(self.path)
        if self.type_before is not None:
            self.ino_before = os.stat(self.path).st_ino
        if self.kind in ("regular", "symlink-to-regular"):
            self.old_fd = os.open(self.path, os.O_RDONLY)
        if self.fifo is not None:
            fifo = self.fifo
            self.reader = threading.Thread(
                target=lambda: self.got.append(fifo.read_bytes()), daemon=True
            )
            self.reader.start()

    def end_reader(self) -> None:
        """Join the FIFO's reader; if the driver never opened the FIFO, open it for
        writing once so the reader sees end-of-file (an empty read) instead of blocking."""
        if self.reader is None or self.fifo is None:
            return
        deadline = time.monotonic() + 10
        while self.reader.is_alive() and time.monotonic() < deadline:
            try:
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError as e:  # ENXIO: the reader has not opened its end yet
                assert e.errno == errno.ENXIO, e
            self.reader.join(timeout=0.05)
        assert not self.reader.is_alive(), f"{self.fifo}: reader still blocked"

    def check(self, written: bool, content_ok: Callable[[bytes], None]) -> None:
        """After the run: the target kept its kind; if ``written`` it holds (or its reader
        got) exactly the expected content, written through iff the rule said so; else it
        is as before; nothing temporary is left beside it or beside a symlink's file."""
        assert _lstat_type(self.path) == (
            stat.S_IFREG if self.type_before is None and written else self.type_before
        ), (self.kind, written)
        for dev in DEVICES.values():
            assert stat.S_ISCHR(os.stat(dev).st_mode)
        if self.kind == "directory":
            assert [p.name for p in self.path.iterdir()] == ["keep"]
            assert (self.path / "keep").read_bytes() == OLD
        if self.kind in ("symlink-to-regular", "symlink-to-fifo"):
            assert os.readlink(self.path) == str(self.real_dir / ("pipe" if self.fifo else "real"))
        if self.fifo is not None:
            assert len(self.got) == 1
            if written:
                content_ok(self.got[0])
            else:  # the driver never opened it: end_reader's empty write
                assert self.got == [b""]
        elif written and self.kind not in DEVICES:
            content_ok(self.path.read_bytes())
        if self.ino_before is not None and self.kind != "directory":
            same_inode = os.stat(self.path).st_ino == self.ino_before
            # The single rule: written through exactly when is_special_file said so.
            assert same_inode == (self.through or not written), (self.kind, written)
        if self.old_fd is not None:
            # Renamed onto, never truncated: a reader of the old file still has it whole.
            assert os.pread(self.old_fd, 4096, 0) == OLD
            os.close(self.old_fd)
            if not written:
                assert self.path.read_bytes() == OLD
        parent = self.path.parent
        if self.kind in DEVICES:
            assert not list(Path("/dev").glob(f"{self.path.name}.tmp.*"))
        elif self.kind == "missing-parent":
            assert not parent.exists()
            assert not list(parent.parent.iterdir())
        else:
            want = {self.path.name} if self.type_before is not None or written else set()
            assert {p.name for p in parent.iterdir()} == want
        want_real = {"symlink-to-fifo": {"pipe"}, "symlink-to-regular": {"real"}}.get(
            self.kind, set()
        )
        assert {p.name for p in self.real_dir.iterdir()} == want_real


@settings(max_examples=200, deadline=None)
@given(
    trace_kind=st.sampled_from(KINDS),
    hist_kind=st.sampled_from(KINDS),
    pid_in_name=st.booleans(),
)
@example(trace_kind="symlink-to-regular", hist_kind="symlink-to-regular", pid_in_name=False)
@example(trace_kind="fifo", hist_kind="symlink-to-fifo", pid_in_name=True)
@example(trace_kind="missing-parent", hist_kind="fifo", pid_in_name=True)
@example(trace_kind="directory", hist_kind="missing-parent", pid_in_name=False)
@example(trace_kind="devnull", hist_kind="devfull", pid_in_name=False)
def test_outputs_follow_the_atomic_rule_of_disaggsim_atomic(
    trace_kind: str, hist_kind: str, pid_in_name: bool
) -> None:
    """For any target of either output (module docstring): the target keeps its file
    type (a FIFO stays a FIFO, a symlink a symlink, /dev/null a character device); a
    regular or missing target then holds exactly the expected trace or histogram, renamed
    onto it; a FIFO's reader receives it; no ``*.tmp.*`` is left anywhere; a directory or
    a missing directory fails with one stderr line naming the path and a nonzero status;
    written through (same inode) exactly when :func:`is_special_file` says so.

    ``%p`` in SWAPDEV_TRACE stands for the driver's pid (not for /dev/null and /dev/full,
    named as they are); a trace that cannot be opened (a missing directory) stops the driver
    before anything runs, so the histogram's target is then left as it was."""
    assert DRIVER is not None
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        targets = []
        for output, kind in (("trace", trace_kind), ("hist", hist_kind)):
            (base / output).mkdir()
            (base / f"{output}-real").mkdir()
            name = f"{output}.%p" if pid_in_name and output == "trace" else f"{output}.out"
            parent = base / output / ("missing" if kind == "missing-parent" else "")
            env_path = str(DEVICES[kind] if kind in DEVICES else parent / name)
            targets.append(Target(output, kind, env_path, base / f"{output}-real"))
        trace, hist = targets
        t0_us = time.time_ns() // 1000
        proc = subprocess.Popen(
            [str(DRIVER)],
            env={
                **os.environ,
                **ENV,
                "SWAPDEV_TRACE": trace.env_path,
                "SWAPDEV_HIST": hist.env_path,
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            for t in targets:
                t.make(proc.pid)
            _, err = proc.communicate(b"", timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        t1_us = time.time_ns() // 1000
        for t in targets:
            t.end_reader()

        # The trace is opened at the start (its temporary, or a device in place): only a
        # missing directory fails there; a directory in the way fails at the rename, a full
        # device at the flush, both at the end.
        init_ok = trace_kind != "missing-parent"
        failed = [t for t in targets if t.kind in FAILS and (init_ok or t is trace)]
        want_status = 1 if not init_ok else 2 if failed else 0
        lines = err.decode().splitlines()
        assert proc.returncode == want_status, lines
        assert lines[: len(failed)] == [f"swapdev: {t.path}: {FAILS[t.kind]}" for t in failed]
        assert len(lines) == len(failed) + (1 if init_ok else 0), lines
        if init_ok:
            assert SUMMARY.fullmatch(lines[-1]), lines
        trace.check(init_ok and trace_kind not in FAILS, lambda b: check_trace(b, t0_us, t1_us))
        hist.check(init_ok and hist_kind not in FAILS, check_hist)
