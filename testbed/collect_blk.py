"""Block-layer tracing for ``disaggsim collect`` through the ftrace ``blk`` tracer.

Native ``blktrace`` (the relay-channel ``BLKTRACESETUP`` ioctl) is refused on the collection
machine, so the collector drives the kernel's ftrace flavour of the same tracer
(kernel/trace/blktrace.c, "blk" tracer) and writes the files ``blkparse``/``btt`` read:

1. ``/sys/block/DEV/trace/enable = 1`` arms the tracer for one device (``act_mask`` filters
   the action categories, default all);
2. ``current_tracer = blk``, ``options/bin = 1`` and ``options/context-info = 0`` make every
   line of ``trace_pipe`` one ``struct blk_io_trace`` (48 bytes, little-endian, magic
   ``0x65617400 | version``) followed by ``pdu_len`` payload bytes; the kernel leaves the
   ``sequence`` field 0 and fills ``time`` from ``trace_clock``;
3. :class:`BlkTraceSplitter` splits that merged stream by device and by ``cpu`` field into the
   per-CPU files ``NAME.blktrace.<cpu>`` with per-CPU sequence numbers 1, 2, ... (the layout
   ``blktrace -o NAME`` writes, include/uapi/linux/blktrace_api.h).

Record layout and action codes: include/uapi/linux/blktrace_api.h (Linux 6.x).
"""

from __future__ import annotations

import errno
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from disaggsim.testbed.collect_env import SYS_BLOCK, RestoreError, own_settings, release_setting
from disaggsim.testbed.collect_tracefs import SavedTracefs, Tracefs, restore_tracefs, save_tracefs
from disaggsim.traces.blktrace import (  # the kernel ABI, defined once
    BLK_IO_TRACE_MAGIC,
    BLK_IO_TRACE_VERSION,
    BLK_TC_SHIFT,
    BLK_TC_WRITE,
)

#: ``struct blk_io_trace``: magic, sequence, time, sector, bytes, action, pid, device, cpu,
#: error, pdu_len (include/uapi/linux/blktrace_api.h).
BLK_IO_TRACE: Final = struct.Struct("<IIQQIIIIIHH")
BLK_IO_TRACE_BYTES: Final = BLK_IO_TRACE.size  # 48

# Action categories (upper 16 bits of ``action``) and actions (lower 16 bits).
BLK_TC_QUEUE_BIT: Final = 1 << 4
BLK_TA_QUEUE: Final = 1
BLK_TA_BACKMERGE: Final = 2
BLK_TA_FRONTMERGE: Final = 3
BLK_TA_GETRQ: Final = 4
BLK_TA_ISSUE: Final = 7
BLK_TA_COMPLETE: Final = 8
BLK_TA_PLUG: Final = 9
BLK_TA_UNPLUG_IO: Final = 10
BLK_TA_UNPLUG_TIMER: Final = 11
BLK_TA_INSERT: Final = 12

#: Kernel-internal dev_t encoding used in the ``device`` field (MINORBITS = 20).
MINOR_BITS: Final = 20


#: blkparse's one-letter names of the actions (blkparse_fmt.c), for ``keep_actions`` filters.
ACTION_LETTERS: Final = {
    "Q": BLK_TA_QUEUE,
    "M": BLK_TA_BACKMERGE,
    "F": BLK_TA_FRONTMERGE,
    "G": BLK_TA_GETRQ,
    "S": 5,
    "R": 6,
    "D": BLK_TA_ISSUE,
    "C": BLK_TA_COMPLETE,
    "P": BLK_TA_PLUG,
    "U": BLK_TA_UNPLUG_IO,
    "T": BLK_TA_UNPLUG_TIMER,
    "I": BLK_TA_INSERT,
    "X": 13,
    "B": 14,
    "A": 15,
}


def parse_keep_actions(letters: str) -> frozenset[int] | None:
    """``"all"`` -> None (keep everything); else e.g. ``"QDC"`` -> their action codes.

    Raises:
        ValueError: a letter that is not a blkparse action.
    """
    if letters == "all":
        return None
    bad = [c for c in letters if c not in ACTION_LETTERS]
    if bad or not letters:
        raise ValueError(
            f"blk_keep_actions: expected 'all' or letters of "
            f"{''.join(ACTION_LETTERS)}, got {letters!r}"
        )
    return frozenset(ACTION_LETTERS[c] for c in letters)


def kernel_dev(major: int, minor: int) -> int:
    """Return the kernel-internal ``dev_t`` (``major << 20 | minor``) the tracer records."""
    return (major << MINOR_BITS) | minor


@dataclass(frozen=True, slots=True)
class BlkRecord:
    """One ``struct blk_io_trace`` record (times in trace-clock ns, sizes in bytes).

    ``raw`` holds the 48-byte header plus the ``pdu_len`` payload bytes, as read.
    """

    sequence: int
    time_ns: int
    sector: int
    size_bytes: int
    action: int
    pid: int
    device: int
    cpu: int
    error: int
    pdu_len: int
    raw: bytes

    @property
    def act(self) -> int:
        """The action code (lower 16 bits), e.g. :data:`BLK_TA_QUEUE`."""
        return self.action & 0xFFFF

    @property
    def category(self) -> int:
        """The action category bits (upper 16 bits), e.g. ``BLK_TC_WRITE``."""
        return self.action >> BLK_TC_SHIFT

    @property
    def is_write(self) -> bool:
        """True for a write (``BLK_TC_WRITE``) record."""
        return bool(self.category & BLK_TC_WRITE)

    def with_sequence(self, sequence: int) -> bytes:
        """Return ``raw`` with the ``sequence`` field replaced by ``sequence``."""
        return self.raw[:4] + struct.pack("<I", sequence) + self.raw[8:]


def parse_blk_stream(data: bytes, source: str = "<stream>") -> tuple[list[BlkRecord], int]:
    """Parse concatenated ``blk_io_trace`` records from ``data``.

    Returns ``(records, consumed_bytes)``; a trailing partial record is left unconsumed so a
    streaming reader can prepend it to the next chunk.

    Raises:
        ValueError: a record's magic is not ``0x65617400 | 7``, naming ``source`` and the byte
            offset.
    """
    records: list[BlkRecord] = []
    offset = 0
    end = len(data)
    while offset + BLK_IO_TRACE_BYTES <= end:
        (magic, seq, time_ns, sector, nbytes, action, pid, device, cpu, error, pdu_len) = (
            BLK_IO_TRACE.unpack_from(data, offset)
        )
        if magic != BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION:
            raise ValueError(
                f"{source}: byte {offset}: field magic: expected "
                f"0x{BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION:08x} (blk_io_trace v7), "
                f"got 0x{magic:08x}"
            )
        rec_end = offset + BLK_IO_TRACE_BYTES + pdu_len
        if rec_end > end:
            break
        records.append(
            BlkRecord(
                seq,
                time_ns,
                sector,
                nbytes,
                action,
                pid,
                device,
                cpu,
                error,
                pdu_len,
                bytes(data[offset:rec_end]),
            )
        )
        offset = rec_end
    return records, offset


def read_blktrace(prefix: Path) -> list[BlkRecord]:
    """Read every per-CPU file ``PREFIX.blktrace.<cpu>`` and return the records by time.

    Raises:
        FileNotFoundError: no ``PREFIX.blktrace.0``.
        ValueError: a bad record (see :func:`parse_blk_stream`) or a truncated file.
    """
    files = sorted(prefix.parent.glob(prefix.name + ".blktrace.*"), key=lambda p: int(p.suffix[1:]))
    if not files or files[0].suffix != ".0":
        raise FileNotFoundError(f"{prefix}.blktrace.0: no per-CPU blktrace file")
    records: list[BlkRecord] = []
    for path in files:
        data = path.read_bytes()
        recs, used = parse_blk_stream(data, str(path))
        if used != len(data):
            raise ValueError(f"{path}: byte {used}: truncated blk_io_trace record")
        records.extend(recs)
    records.sort(key=lambda r: (r.time_ns, r.cpu, r.sequence))
    return records


class PerCpuWriter:
    """Writes records to ``PREFIX.blktrace.<cpu>`` files, renumbering per-CPU sequences.

    A file exists for every CPU ``0 .. n_cpus-1`` (empty if that CPU logged nothing), as
    ``blkparse -i PREFIX`` expects.
    """

    def __init__(self, prefix: Path, n_cpus: int) -> None:
        self.prefix = prefix
        self._files: dict[int, BinaryIO] = {}
        self._seq: dict[int, int] = {}
        for cpu in range(n_cpus):
            self._open(cpu)

    def _open(self, cpu: int) -> BinaryIO:
        fh = open(f"{self.prefix}.blktrace.{cpu}", "wb")  # noqa: SIM115 - closed in close()
        self._files[cpu] = fh
        self._seq[cpu] = 0
        return fh

    def write(self, rec: BlkRecord) -> None:
        """Append ``rec`` to its CPU's file with the next sequence number of that CPU."""
        fh = self._files.get(rec.cpu) or self._open(rec.cpu)
        self._seq[rec.cpu] += 1
        fh.write(rec.with_sequence(self._seq[rec.cpu]))

    @property
    def n_records(self) -> int:
        """Records written so far over all CPUs."""
        return sum(self._seq.values())

    def close(self) -> None:
        """Close all files."""
        for fh in self._files.values():
            fh.close()


class BlkTraceSplitter:
    """Reads the ftrace ``trace_pipe`` binary stream in a thread, split per device and CPU.

    ``devices`` maps the kernel ``dev_t`` (:func:`kernel_dev`) to an output prefix; records of
    other devices are counted in ``n_foreign`` and dropped. ``keep`` maps a device to the
    action codes written for it (None or absent: all).

    Raises (from :meth:`stop`): ValueError if the stream had a record that is not a
    ``blk_io_trace`` (e.g. another tracer was switched on concurrently).
    """

    def __init__(
        self,
        trace_pipe: Path,
        devices: dict[int, Path],
        n_cpus: int,
        on_record: Callable[[BlkRecord], None] | None = None,
        keep: dict[int, frozenset[int] | None] | None = None,
    ) -> None:
        self.trace_pipe = trace_pipe
        self.writers = {dev: PerCpuWriter(prefix, n_cpus) for dev, prefix in devices.items()}
        self.n_foreign = 0
        self._keep = keep or {}
        self._on_record = on_record
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._fd = os.open(trace_pipe, os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="blk-trace-pipe", daemon=True)
        self._thread.start()

    def _drain_once(self, pending: bytes) -> tuple[bytes, bool]:
        try:
            chunk = os.read(self._fd, 1 << 20)
        except BlockingIOError:
            return pending, False
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return pending, True
            raise
        if not chunk:
            return pending, False
        data = pending + chunk
        records, used = parse_blk_stream(data, str(self.trace_pipe))
        for rec in records:
            writer = self.writers.get(rec.device)
            if writer is None:
                self.n_foreign += 1
                continue
            keep = self._keep.get(rec.device)
            if keep is not None and rec.act not in keep:
                continue
            writer.write(rec)
            if self._on_record is not None:
                self._on_record(rec)
        return data[used:], True

    def _run(self) -> None:
        pending = b""
        try:
            while True:
                pending, got = self._drain_once(pending)
                if not got:
                    if self._stop.is_set():
                        break
                    time.sleep(0.02)
            if pending:
                raise ValueError(
                    f"{self.trace_pipe}: stream ended inside a record ({len(pending)} bytes)"
                )
        except BaseException as exc:  # surfaced by stop()
            self._error = exc

    @property
    def n_records(self) -> int:
        """Records written so far over all devices."""
        return sum(w.n_records for w in self.writers.values())

    def stop(self) -> None:
        """Drain what is left in the pipe, close the files, re-raise a reader error.

        Idempotent: a second call does nothing."""
        if self._fd < 0:
            return
        self._stop.set()
        self._thread.join()
        os.close(self._fd)
        self._fd = -1
        for writer in self.writers.values():
            writer.close()
        if self._error is not None:
            raise self._error


def iter_device_records(records: list[BlkRecord], device: int) -> Iterator[BlkRecord]:
    """Yield the records of one device (kernel ``dev_t``) in the given order."""
    return (r for r in records if r.device == device)


#: tracefs files the collector changes, restored to their old values afterwards
#: (:func:`disaggsim.testbed.collect_tracefs.save_tracefs` reads each file's format), each
#: with an owner record holding that value while changed (:func:`arm_blk_tracer`).
TRACEFS_SETTINGS: Final = (
    "tracing_on",
    "current_tracer",
    "trace_clock",
    "buffer_size_kb",
    "options/bin",
    "options/context-info",
    "options/blk_classic",
    "options/blk_cgroup",
)


def _device_enables(sys_block: Path, block_devices: list[str]) -> list[tuple[Path, str]]:
    """``(SYS_BLOCK/DEV/trace/enable, "0")`` for each device: the value its undo writes.

    Raises:
        RuntimeError: a device is traced already (enable reads ``1``): by ``blktrace``, or
            left by a collector killed before its trace enables had owner records; that
            trace's ``act_mask`` and LBA range cannot be saved (they read ``disabled``
            once it is off), so it is not taken over.
    """
    enables = []
    for dev in block_devices:
        path = sys_block.absolute() / dev / "trace" / "enable"
        value = path.read_text().strip()
        if value != "0":
            raise RuntimeError(
                f"{path}: expected 0 (no block trace on {dev}), got {value!r}: another "
                f"trace runs on it (blktrace?) or a collector killed before owner records "
                f"left it; stop it, or 'echo 0 > {path}'"
            )
        enables.append((path, "0"))
    return enables


def arm_blk_tracer(
    fs: Tracefs,
    block_devices: list[str],
    buffer_kb: int,
    act_mask: str,
    sys_block: Path = SYS_BLOCK,
) -> Callable[[], None]:
    """Switch ftrace to the binary ``blk`` tracer on ``block_devices`` (e.g. ``["loop3"]``).

    Sets ``trace_clock = mono``, ``options/bin = 1``, ``options/context-info = 0``,
    ``options/blk_classic = 0``, ``options/blk_cgroup = 0`` (classic 48-byte records without
    cgroup ids), ``buffer_size_kb`` per CPU, ``SYS_BLOCK/DEV/trace/act_mask`` and
    ``SYS_BLOCK/DEV/trace/enable = 1``, then ``tracing_on = 1``.

    Before changing anything, every file it changes (:data:`TRACEFS_SETTINGS` that exist,
    each device's trace ``enable``) records this process as its owner with the value to
    restore (:func:`~disaggsim.testbed.collect_env.own_settings`, which first reaps dead
    owners' state, so the values saved are the machine's own, not those a SIGKILLed
    collector left); after a SIGKILL the next command that reaps restores them.

    Returns a callback that disables the devices and restores every changed tracefs file to
    its old value, in whatever format the kernel showed it
    (:func:`~disaggsim.testbed.collect_tracefs.save_tracefs`), removing each file's record
    once it is restored; it does every step and then raises one
    :class:`~disaggsim.testbed.collect_env.RestoreError` listing the steps that failed
    (their records kept, so a later command retries them). Files that do not exist on this
    kernel (``options/blk_cgroup`` without CONFIG_BLK_CGROUP) are skipped. If arming fails,
    what was changed is restored before the error propagates.

    Raises:
        RuntimeError: the ``blk`` tracer is not in ``available_tracers``
            (kernel without CONFIG_BLK_DEV_IO_TRACE); a device is traced already; a live
            owner (another collection) changed one of the files
            (:func:`disaggsim.owners.taken_error`, naming its pid). Nothing changed then.
        ValueError: a setting in a format the restore does not know (nothing changed yet).
        OSError: the kernel refused a setting (after restoring).
        RestoreError: arming failed and so did part of the restore.
    """
    if "blk" not in fs.read("available_tracers").split():
        raise RuntimeError(
            f"{fs.root / 'available_tracers'}: no 'blk' tracer (needs CONFIG_BLK_DEV_IO_TRACE)"
        )
    saved = SavedTracefs(())
    enables: list[tuple[Path, str]] = []

    def read_old() -> list[tuple[Path, str]]:
        nonlocal saved, enables
        enables = _device_enables(sys_block, block_devices)
        saved = save_tracefs(fs, TRACEFS_SETTINGS)
        # Absolute paths: a record's setting is its file wherever the next command runs.
        return enables + [(fs.root.absolute() / name, value) for name, value in saved.writes]

    records = own_settings(read_old)
    device_records = records[: len(enables)]
    tracefs_records = records[len(enables) :]
    armed: list[str] = []

    def restore() -> None:
        failures = []
        for dev, (path, old), record in zip(block_devices, enables, device_records, strict=True):
            if dev in armed:
                try:
                    path.write_text(old)
                except OSError as exc:
                    failures.append(f"{path}: writing {old!r}: {exc.strerror or exc}")
                    continue
            release_setting(record)
        for (name, value), record in zip(saved.writes, tracefs_records, strict=True):
            failed = restore_tracefs(fs, SavedTracefs(((name, value),)))
            if failed:
                failures += failed
            else:
                release_setting(record)
        if failures:
            raise RestoreError(failures)

    try:
        fs.write("tracing_on", "0")
        fs.write("current_tracer", "nop")
        fs.write("trace_clock", "mono")
        fs.write("buffer_size_kb", str(buffer_kb))
        for name, value in (
            ("options/bin", "1"),
            ("options/context-info", "0"),
            ("options/blk_classic", "0"),
            ("options/blk_cgroup", "0"),
        ):
            if fs.exists(name):
                fs.write(name, value)
        for dev in block_devices:
            trace_dir = sys_block / dev / "trace"
            armed.append(dev)  # writing act_mask alone already sets up the device's trace
            (trace_dir / "act_mask").write_text(act_mask)
            (trace_dir / "enable").write_text("1")
        fs.write("current_tracer", "blk")
        fs.write("trace", "")  # clear the ring buffer
        fs.write("tracing_on", "1")
    except BaseException as exc:
        try:
            restore()
        except RestoreError as rexc:
            raise RestoreError(rexc.failures, exc) from exc
        raise
    return restore
