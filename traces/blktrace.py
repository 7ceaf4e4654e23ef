"""Block-layer traces (paper §4.1, the ``blktrace`` disk trace) -> disk access table.

Binary format: the kernel's ``struct blk_io_trace`` (include/uapi/linux/blktrace_api.h),
48 bytes in the tracing host's byte order, followed by ``pdu_len`` bytes of payload::

    u32 magic     BLK_IO_TRACE_MAGIC 0x65617400 | version (0x07)
    u32 sequence  u64 time (ns, trace clock)  u64 sector (512 B units)
    u32 bytes     u32 action (low 16 bits: action, high 16: category bits)
    u32 pid       u32 device (kernel dev_t: major << 20 | minor)
    u32 cpu       u16 error    u16 pdu_len

``blktrace`` writes one file per CPU, ``NAME.blktrace.<cpu>``, which ``blkparse``/``btt``
read and merge by time; the ftrace ``blk`` tracer with ``options/bin`` emits the same
records on one stream (sequence 0), which :func:`split_ftrace_stream` turns into that
per-CPU layout.

Constants below are from include/uapi/linux/blktrace_api.h (Linux 6.x): categories
``BLK_TC_READ = 1 << 0``, ``BLK_TC_WRITE = 1 << 1``, ``BLK_TC_NOTIFY = 1 << 10``,
``BLK_TC_DISCARD = 1 << 13``, shifted left by ``BLK_TC_SHIFT = 16`` into ``action``;
actions ``__BLK_TA_QUEUE = 1`` ... ``__BLK_TA_ISSUE = 7``, ``__BLK_TA_COMPLETE = 8``,
flag ``__BLK_TA_CGROUP = 1 << 8``. The kernel sets exactly one of READ/WRITE on every
request record (``ddir_act[op_is_write(op)]`` in kernel/trace/blktrace.c).

Wall-clock anchor: when ``blktrace`` starts a trace the kernel emits one notify record
``BLK_TN_TIMESTAMP`` (``__BLK_TN_TIMESTAMP = 1`` | ``BLK_TC_NOTIFY`` category,
``trace_note_time`` in kernel/trace/blktrace.c) whose ``time`` is the trace clock and
whose 8-byte payload is ``u32 words[2] = {tv_sec, tv_nsec}`` of CLOCK_REALTIME at that
instant, so ``realtime - time`` moves the whole trace to the wall clock
(:func:`wallclock_offset_ns`). The original artifact's per-node blktraces (2015, Linux
3.14) hold one such record in one of the node's per-CPU files; the ftrace ``blk``
tracer used by ``disaggsim collect`` emits none.

Limits: record times must be < :data:`MAX_TRACE_TIME_NS` (2**62 ns, 146 years of
uptime) and sectors < 2**53 (so ``sector * 512`` fits int64); a larger value is a
corrupt record and an error naming its byte offset.
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd

from disaggsim.atomic import atomic_path
from disaggsim.bounds import check_declared
from disaggsim.guards import open_regular, read_regular
from disaggsim.traces.errors import TraceFormatError

BLK_IO_TRACE_MAGIC: Final = 0x65617400
BLK_IO_TRACE_VERSION: Final = 0x07
BLK_TC_SHIFT: Final = 16
BLK_TC_READ: Final = 1 << 0
BLK_TC_WRITE: Final = 1 << 1
BLK_TC_NOTIFY: Final = 1 << 10
BLK_TC_DISCARD: Final = 1 << 13
BLK_TA_CGROUP_FLAG: Final = 1 << 8
SECTOR_BYTES: Final = 512

#: blkparse's one-letter action names (blkparse.c / blkparse_fmt.c) -> __BLK_TA_* codes.
ACTION_CODES: Final = {
    "Q": 1,
    "M": 2,
    "F": 3,
    "G": 4,
    "S": 5,
    "R": 6,
    "D": 7,
    "C": 8,
    "P": 9,
    "U": 10,
    "T": 11,
    "I": 12,
    "X": 13,
    "B": 14,
    "A": 15,
}

RECORD_BYTES: Final = 48
BLK_TN_TIMESTAMP: Final = 1
MAX_TRACE_TIME_NS: Final = 2**62
MAX_SECTOR: Final = 2**53
RECORD_DTYPE_LE: Final = np.dtype(
    [
        ("magic", "<u4"),
        ("sequence", "<u4"),
        ("time", "<u8"),
        ("sector", "<u8"),
        ("bytes", "<u4"),
        ("action", "<u4"),
        ("pid", "<u4"),
        ("device", "<u4"),
        ("cpu", "<u4"),
        ("error", "<u2"),
        ("pdu_len", "<u2"),
    ]
)
RECORD_DTYPE_BE: Final = RECORD_DTYPE_LE.newbyteorder(">")

ACCESS_COLUMNS: Final = (
    "time_ns",
    "sector",
    "size_bytes",
    "op",
    "pid",
    "device",
    "cpu",
    "source_file",
    "source_record",
)


def blktrace_files(prefix_or_files: str | Path | Sequence[str | Path]) -> list[Path]:
    """Resolve ``NAME`` (or ``dir/NAME``) to its per-CPU files ``NAME.blktrace.<cpu>``.

    A sequence is taken as the explicit list of files; a path to an existing file is that
    one file. Raises FileNotFoundError if a prefix matches no file or a listed file is missing.
    """
    if isinstance(prefix_or_files, (str, Path)):
        p = Path(prefix_or_files)
        if (p.exists() or p.is_symlink()) and (
            not p.is_dir() or re.search(r"\.blktrace\.[0-9]+$", p.name)
        ):
            return [p]  # one file (read_records refuses a FIFO, device or directory by name)
        pattern = re.compile(re.escape(p.name) + r"\.blktrace\.(\d+)$")
        parent = p.parent
        found = (
            sorted(
                ((int(m.group(1)), q) for q in parent.iterdir() if (m := pattern.match(q.name))),
                key=lambda t: t[0],
            )
            if parent.is_dir()
            else []
        )
        if not found:
            raise FileNotFoundError(f"{p}: no per-CPU files {p.name}.blktrace.<cpu> in {parent}")
        return [q for _, q in found]
    files = [Path(f) for f in prefix_or_files]
    for f in files:
        if not (f.exists() or f.is_symlink()):
            raise FileNotFoundError(f"{f}: blktrace file not found")
    return files


def _offsets_by_magic(buf: np.ndarray, little: bool) -> np.ndarray | None:
    """Record offsets found by searching the magic, or None if they do not chain.

    Every occurrence of the 3 magic bytes is a candidate; the candidates are the records
    exactly when they chain: the first is at 0, each next one starts at
    ``offset + 48 + pdu_len`` and the last ends at the end of the file (a false candidate
    inside a payload would break the chain). Vectorised; the caller falls back to the
    header walk if this returns None.
    """
    n = buf.shape[0]
    if n < RECORD_BYTES:
        return None
    if little:  # bytes: version, 0x74, 0x61, 0x65
        hit = (buf[1:-2] == 0x74) & (buf[2:-1] == 0x61) & (buf[3:] == 0x65)
    else:  # bytes: 0x65, 0x61, 0x74, version
        hit = (buf[:-3] == 0x65) & (buf[1:-2] == 0x61) & (buf[2:-1] == 0x74)
    cand = np.flatnonzero(hit).astype(np.int64)
    cand = cand[cand <= n - RECORD_BYTES]
    if cand.size == 0 or cand[0] != 0:
        return None
    lo, hi = buf[cand + 46].astype(np.int64), buf[cand + 47].astype(np.int64)
    nxt = cand + RECORD_BYTES + (lo | (hi << 8) if little else (lo << 8) | hi)
    if nxt[-1] != n or not np.array_equal(nxt[:-1], cand[1:]):
        return None
    return cand


def read_records(path: str | Path) -> np.ndarray:
    """All ``struct blk_io_trace`` records of one file as a structured array (host order).

    Returns an array with the fields of ``RECORD_DTYPE_LE`` plus ``offset`` (byte offset of
    the record). Raises TraceFormatError for a bad magic/version or a truncated record.
    """
    p = Path(path)
    data = read_regular(p, "a blktrace file")
    if not data:
        return np.zeros(0, dtype=RECORD_DTYPE_LE.descr + [("offset", "<i8")])
    if len(data) < RECORD_BYTES:
        raise TraceFormatError(
            p, "byte 0", "record", "a complete 48-byte struct blk_io_trace", f"{len(data)} bytes"
        )
    magic_le = struct.unpack_from("<I", data, 0)[0]
    if (magic_le & 0xFFFFFF00) == BLK_IO_TRACE_MAGIC:
        endian, dtype = "<", RECORD_DTYPE_LE
    elif (struct.unpack_from(">I", data, 0)[0] & 0xFFFFFF00) == BLK_IO_TRACE_MAGIC:
        endian, dtype = ">", RECORD_DTYPE_BE
    else:
        raise TraceFormatError(
            p, "byte 0", "magic", "0x654174xx (BLK_IO_TRACE_MAGIC)", hex(magic_le)
        )
    buf = np.frombuffer(data, dtype=np.uint8)
    offs = _offsets_by_magic(buf, endian == "<")
    if offs is None:  # walk the headers (pdu_len says where the next record starts)
        unpack_pdu = struct.Struct(endian + "46xH").unpack_from
        n = len(data)
        offsets: list[int] = []
        append = offsets.append
        off = 0
        while off + RECORD_BYTES <= n:
            append(off)
            off += RECORD_BYTES + unpack_pdu(data, off)[0]
        if off != n:
            where = offsets[-1] if off > n else off
            raise TraceFormatError(
                p, f"byte {where}", "record", "a complete 48-byte record and its pdu"
            )
        offs = np.asarray(offsets, dtype=np.int64)
    rows = np.lib.stride_tricks.sliding_window_view(buf, RECORD_BYTES)[offs]
    raw = np.ascontiguousarray(rows).view(dtype).reshape(-1)
    magic = raw["magic"]
    bad = np.flatnonzero((magic & 0xFFFFFF00) != BLK_IO_TRACE_MAGIC)
    if bad.size:
        i = int(bad[0])
        raise TraceFormatError(
            p, f"byte {offs[i]} (record {i})", "magic", "BLK_IO_TRACE_MAGIC", hex(int(magic[i]))
        )
    version = magic & 0xFF
    bad = np.flatnonzero((version != BLK_IO_TRACE_VERSION) & (version != 0x06))
    if bad.size:
        i = int(bad[0])
        raise TraceFormatError(
            p, f"byte {offs[i]} (record {i})", "magic", "version 6 or 7", int(version[i])
        )
    out = np.empty(raw.shape[0], dtype=RECORD_DTYPE_LE.descr + [("offset", "<i8")])
    for name in RECORD_DTYPE_LE.names or ():
        out[name] = raw[name]
    out["offset"] = offs
    _check_cpu_of_file(p, out["cpu"])
    return out


def _check_cpu_of_file(p: Path, cpu: np.ndarray) -> None:
    """Header versus content (issue #21, class 6): ``NAME.blktrace.<cpu>`` holds the records
    of that CPU (blktrace reads each CPU's relay buffer into its own file, and the kernel
    writes ``t->cpu`` = the CPU whose buffer the record is in, kernel/trace/blktrace.c
    ``__blk_add_trace``/``trace_note``), so a file whose records name another CPU was
    renamed or mixed up (``disaggsim.bounds.check_declared``)."""
    m = re.search(r"\.blktrace\.([0-9]+)$", p.name)
    if m is None or not cpu.shape[0]:
        return
    values, counts = np.unique(cpu, return_counts=True)
    explained = {int(v): int(c) for v, c in zip(values, counts, strict=True)}
    declared = int(m.group(1))
    check_declared(
        p,
        "file name",
        "cpu",
        declared,
        explained,
        int(cpu.shape[0]),
        {v: f"CPU {v}" for v in [*explained, declared]},
        error=TraceFormatError,
    )


def wallclock_offset_ns(
    prefix_or_files: str | Path | Sequence[str | Path],
) -> tuple[int, Path, int] | None:
    """CLOCK_REALTIME - trace clock, from the first ``BLK_TN_TIMESTAMP`` notify record.

    Returns ``(offset_ns, file, byte_offset)`` of the anchor record (the earliest by trace
    time over the per-CPU files), or None if no file has one.

    Raises:
        TraceFormatError: malformed file, or an anchor whose payload is not 8 bytes or
            whose times are out of range (names the file and byte offset).
    """
    best: tuple[int, int, Path, int] | None = None
    for f in blktrace_files(prefix_or_files):
        rec = read_records(f)
        action = rec["action"]
        is_anchor = (((action >> BLK_TC_SHIFT) & BLK_TC_NOTIFY) != 0) & (
            (action & 0xFF) == BLK_TN_TIMESTAMP
        )
        idx = np.flatnonzero(is_anchor)
        if not idx.size:
            continue
        i = int(idx[np.argmin(rec["time"][idx])])
        off = int(rec["offset"][i])
        if int(rec["pdu_len"][i]) != 8:
            raise TraceFormatError(
                f, f"byte {off}", "pdu_len", "8 (u32 tv_sec, u32 tv_nsec)", int(rec["pdu_len"][i])
            )
        with f.open("rb") as fh:
            fh.seek(off)
            head = fh.read(RECORD_BYTES + 8)
        little = struct.unpack_from("<I", head, 0)[0] >> 8 == BLK_IO_TRACE_MAGIC >> 8
        endian = "<" if little else ">"
        sec, nsec = struct.unpack_from(endian + "II", head, RECORD_BYTES)
        t = int(rec["time"][i])
        if nsec >= 1_000_000_000 or t >= MAX_TRACE_TIME_NS:
            raise TraceFormatError(
                f, f"byte {off}", "timestamp", "tv_nsec < 10**9 and time < 2**62", (sec, nsec, t)
            )
        if best is None or t < best[0]:
            best = (t, sec * 1_000_000_000 + nsec - t, f, off)
    return None if best is None else (best[1], best[2], best[3])


def first_record_ns(prefix_or_files: str | Path | Sequence[str | Path]) -> int | None:
    """Trace time of the earliest record of any kind (notify records included) over the
    per-CPU files, i.e. when tracing started; None if every file is empty.

    Raises TraceFormatError (malformed file) or FileNotFoundError like :func:`read_records`.
    """
    times = [
        int(r["time"].min()) for f in blktrace_files(prefix_or_files) if len(r := read_records(f))
    ]
    first = min(times, default=None)
    if first is not None and first >= MAX_TRACE_TIME_NS:
        raise TraceFormatError(
            Path(str(prefix_or_files)), None, "time", "record times < 2**62 ns", first
        )
    return first


def read_blktrace(
    prefix_or_files: str | Path | Sequence[str | Path],
    actions: str = "D",
) -> pd.DataFrame:
    """Read binary blktrace files into a table of data-carrying block requests.

    Args:
        prefix_or_files: ``NAME`` prefix of the per-CPU files, one file, or a list of files.
        actions: blkparse action letters to keep; default ``"D"`` (``__BLK_TA_ISSUE``, the
            request sent to the driver: one record per device access). The original
            artifact kept ``"Q"`` (queued bios; NetSys/disaggregation rmem/get_disk_io.py).

    Returns:
        DataFrame sorted by (time_ns, file order, record) with columns ``time_ns`` (trace
        clock ns), ``sector`` (512 B), ``size_bytes``, ``op`` ('R'/'W'), ``pid``,
        ``device`` (dev_t), ``cpu``, ``source_file``, ``source_record`` (0-based record
        index in its file). Notify records, discards and zero-byte requests (flushes)
        are dropped.

    Raises:
        TraceFormatError: malformed file (see :func:`read_records`); unknown action letter.
        FileNotFoundError: no matching file.
    """
    codes = []
    for letter in actions:
        if letter not in ACTION_CODES:
            raise ValueError(
                f"unknown blkparse action {letter!r}; expected one of {sorted(ACTION_CODES)}"
            )
        codes.append(ACTION_CODES[letter])
    frames = []
    for file_order, f in enumerate(blktrace_files(prefix_or_files)):
        rec = read_records(f)
        action = rec["action"]
        category = action >> BLK_TC_SHIFT
        code = action & 0xFF
        keep = (
            np.isin(code, codes)
            & ((category & BLK_TC_NOTIFY) == 0)
            & ((category & BLK_TC_DISCARD) == 0)
            & ((category & (BLK_TC_READ | BLK_TC_WRITE)) != 0)
            & (rec["bytes"] > 0)
        )
        idx = np.flatnonzero(keep)
        sel = rec[idx]
        bad = np.flatnonzero((sel["time"] >= MAX_TRACE_TIME_NS) | (sel["sector"] >= MAX_SECTOR))
        if bad.size:
            i = int(bad[0])
            raise TraceFormatError(
                f,
                f"byte {int(sel['offset'][i])} (record {int(idx[i])})",
                "time/sector",
                "time < 2**62 ns and sector < 2**53",
                (int(sel["time"][i]), int(sel["sector"][i])),
            )
        frames.append(
            pd.DataFrame(
                {
                    "time_ns": sel["time"].astype(np.int64),
                    "sector": sel["sector"].astype(np.int64),
                    "size_bytes": sel["bytes"].astype(np.int64),
                    "op": np.where((sel["action"] >> BLK_TC_SHIFT) & BLK_TC_WRITE, "W", "R"),
                    "pid": sel["pid"].astype(np.int64),
                    "device": sel["device"].astype(np.int64),
                    "cpu": sel["cpu"].astype(np.int64),
                    "source_file": str(f),
                    "source_record": idx.astype(np.int64),
                    "_file_order": file_order,
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    df = df.sort_values(["time_ns", "_file_order", "source_record"], kind="stable")
    return df.drop(columns="_file_order").reset_index(drop=True)


_BLKPARSE_LINE = re.compile(
    r"^\s*(?P<major>\d+),(?P<minor>\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+"
    r"(?P<sec>\d+)\.(?P<nsec>\d{9})\s+(?P<pid>\d+)\s+(?P<action>[A-Z]{1,2})\s+(?P<rwbs>[A-Z]+)"
    r"(?:\s+(?P<rest>.*))?$"
)
_SECTOR_PART = re.compile(r"^(?P<sector>\d+) \+ (?P<nsect>\d+)\b")


def read_blkparse_text(path: str | Path, actions: str = "D") -> pd.DataFrame:
    """Read blkparse's default text output (``blkparse -i NAME``).

    Lines look like ``  7,1    1   0   0.000146557  7327  D  WS 0 + 8 [dd]``. Only the
    record lines before blkparse's summary (which starts at the first line beginning with
    ``CPU``, ``Total`` or a blank line) are read; ``actions`` as in :func:`read_blktrace`.
    Times are blkparse's: seconds since the trace's first record.

    Returns the same columns as :func:`read_blktrace` (``device`` = major << 20 | minor,
    ``source_record`` = 1-based line number).

    Raises:
        TraceFormatError: a record line that does not parse (file:line and the field).
    """
    p = Path(path)
    rows: list[tuple[int, int, int, str, int, int, int, int]] = []
    with io.TextIOWrapper(open_regular(p, "blkparse text output")) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.rstrip("\n")
            if not text.strip() or text.startswith(("CPU", "Total", "Events", "Skips", "Input")):
                break
            m = _BLKPARSE_LINE.match(text)
            if m is None:
                raise TraceFormatError(
                    p,
                    lineno,
                    None,
                    "a blkparse record 'MAJ,MIN CPU SEQ SEC.NSEC PID ACTION RWBS ...'",
                    text,
                )
            if m["action"] not in actions:
                continue
            rwbs = m["rwbs"]
            if "D" in rwbs or not ("R" in rwbs or "W" in rwbs):
                continue  # discard, or no data (flush)
            sm = _SECTOR_PART.match(m["rest"] or "")
            if sm is None:
                raise TraceFormatError(p, lineno, "sector", "'SECTOR + NSECTORS'", m["rest"])
            nsect = int(sm["nsect"])
            if nsect == 0:
                continue
            rows.append(
                (
                    int(m["sec"]) * 1_000_000_000 + int(m["nsec"]),
                    int(sm["sector"]),
                    nsect * SECTOR_BYTES,
                    "W" if "W" in rwbs else "R",
                    int(m["pid"]),
                    (int(m["major"]) << 20) | int(m["minor"]),
                    int(m["cpu"]),
                    lineno,
                )
            )
    cols = ["time_ns", "sector", "size_bytes", "op", "pid", "device", "cpu", "source_record"]
    df = pd.DataFrame(rows, columns=cols)
    for c in cols:
        if c != "op":
            df[c] = df[c].astype(np.int64)
    df.insert(7, "source_file", str(p))
    return df


def split_ftrace_stream(
    stream: str | Path, out_prefix: str | Path, device: int | None = None
) -> list[Path]:
    """Split an ftrace ``blk`` tracer binary stream (``options/bin``, read from
    ``trace_pipe``) into per-CPU files ``OUT_PREFIX.blktrace.<cpu>`` for blkparse/btt.

    ftrace merges all CPUs into one stream; blkparse expects each file to hold only its
    CPU's records and stops at the first missing CPU number, so a file is written for
    every CPU from 0 to the highest seen (empty if that CPU logged nothing). Each file is
    written atomically. ``device`` (kernel dev_t, ``major << 20 | minor``) keeps only that
    device's records (the tracer logs every device whose ``trace/enable`` is set).
    Returns the written paths.
    """
    src = Path(stream)
    data = read_regular(src, "an ftrace blk stream")
    rec = read_records(src)
    if device is not None:
        rec = rec[rec["device"] == device]
    prefix = Path(out_prefix)
    n_cpus = int(rec["cpu"].max()) + 1 if rec.shape[0] else 1
    pdu = rec["pdu_len"].astype(np.int64)
    written = []
    for cpu in range(n_cpus):
        sel = np.flatnonzero(rec["cpu"] == cpu)
        chunks = [
            data[o : o + RECORD_BYTES + n]
            for o, n in zip(rec["offset"][sel], pdu[sel], strict=True)
        ]
        target = prefix.parent / f"{prefix.name}.blktrace.{cpu}"
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"".join(chunks))
        written.append(target)
    return written
