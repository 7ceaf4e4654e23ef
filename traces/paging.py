"""Remote-memory paging traces (paper §3.1/§4.1, the ``rmem`` swap-device trace).

The original artifact (NetSys/disaggregation, ``rmem/rmem.c``) logs, for every request
batch its block driver dequeues, one record per run of contiguous pages::

    struct { long timestamp; int page; int length; int batch; }  // 20 bytes, packed

``timestamp`` is ``do_gettimeofday`` in µs; ``page`` is the start page, positive for a
write (swap-out, ``rq_data_dir == WRITE``) and negative for a read (swap-in); ``length``
is the run length in pages (4 KiB, ``PAGE_SIZE``). Text forms read here:

- batch form (what the artifact's analysis reads, akshayknarayan/disaggregation-flowgen
  ``preprocessTrace.py``: "memory format: <batch id> <ts> <addr start> <length>")::

      <batch_id> <timestamp_us> <±start_page> <npages>

  all records of one batch share a timestamp.
- older form (disaggregation-flowgen ``makeFlowTrace.py`` ``readMemoryLine``)::

      <idx> <±timestamp_us> <page> <npages> <page_size>

  where a negative timestamp marks a read.

Note: disaggregation-flowgen's ``flowgen-spark/ProcessTrace.scala`` labels a '-' page as
``memWrite``, the opposite of the kernel module that wrote the trace; we follow rmem.c
(the producer): '-' = read (swap-in), '+' = write (swap-out).

Meta file: the start time of the trace, ``<trace>.meta``. Three forms are read:

- the artifact's (``rmem/ec2_get_log.sh``, the script that wrote the published
  ``rmem/results/<run>/<n>-meta-<host>`` files, e.g. ``150520220825.125099223``)::

      echo "$(date +%y%m%d%H%M%S.%N)" > .metadata   # local wall-clock time, ns digits

  written just before ``blktrace`` is started on the node. ``date`` prints local time,
  so the reader needs the hosts' time zone: ``meta_tz`` (default ``"UTC"``, an IANA zone
  name). The artifact's EC2 hosts ran in UTC: in run 150520220958 the metas read
  22:08:25-22:08:31 and the paging trace's own epoch timestamps end at 22:09:31 UTC,
  before the results directory (named by ``date`` on the master) at 22:09:58, and the
  metas are 34-94 ms before each node's blktrace wall-clock stamp. A local time that
  occurs twice (the end of summer time) is read as its first occurrence.
- one integer line, µs since the Unix epoch (an older artifact script,
  ``start_time=$(date +%s%N); echo ${start_time:0:-3}``);
- JSON ``{"start_time_us": N}`` (written by ``testbed/collect_paging.py``).

Timestamps in the trace are either absolute (epoch µs, as rmem.c logs them) or relative
to that start time; ``time_base="auto"`` tells them apart from all the records, and a
file that mixes the two is an error (see :func:`read_rmem`). So the meta only matters
for relative traces (and, in ``convert``, as the node's trace start, see there).

Limits (checked by both parsers, so no value can overflow int64 later): ``page`` and
``npages`` fit rmem.c's ``int`` (< 2**31); timestamps are < :data:`MAX_EPOCH_US`
(2100-01-01); an absolute meta lies in [:data:`ABSOLUTE_US_THRESHOLD`, ``MAX_EPOCH_US``).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import zoneinfo
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from disaggsim.atomic import atomic_path
from disaggsim.bounds import BLOCK_REQUEST_MAX_BYTES, check_records
from disaggsim.guards import read_regular
from disaggsim.schemas import RMEM_RECORDS
from disaggsim.traces.errors import TraceFormatError

PAGE_BYTES: Final = 4096  # x86 PAGE_SIZE; paper §2.2 "page-level remote memory access"
#: Timestamps at or above this (µs since the epoch: 2001-09-09) are absolute, below relative.
ABSOLUTE_US_THRESHOLD: Final = 10**15
#: Upper bound of any timestamp, µs since the epoch (2100-01-01T00:00:00Z): a larger value
#: is a corrupt record (and would overflow int64 ns once offsets are added).
MAX_EPOCH_US: Final = 4_102_444_800_000_000
#: rmem.c stores ``page`` and ``length`` in a C ``int``.
MAX_PAGE: Final = 2**31 - 1
#: Bound of ``batch_id``/``idx`` (a line counter; any int64-safe bound works).
MAX_BATCH: Final = 2**53
_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
_META_DATE_RE: Final = re.compile(r"([0-9]{12})\.([0-9]{1,9})")

#: Columns of :func:`read_rmem`'s result (schema ``disaggsim.schemas.RMEM_RECORDS``).
RMEM_COLUMNS: Final = tuple(RMEM_RECORDS.names)


def meta_path(trace: str | Path) -> Path:
    """The meta file of a paging trace: ``<trace>.meta``."""
    p = Path(trace)
    return p.with_name(p.name + ".meta")


def _read_text_file(p: Path, what: str) -> str:
    """The text of ``p``, or a TraceFormatError saying why it cannot be read as ``what``."""
    data = read_regular(p, what)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceFormatError(
            p, line, None, f"{what} (ASCII text)", data[exc.start : exc.start + 1]
        ) from exc


def read_rmem_meta_ns(path: str | Path, tz: str = "UTC") -> int:
    """Read a meta file (any of the three forms above): the trace start in epoch ns.

    Args:
        path: the meta file.
        tz: IANA time zone of the ``date +%y%m%d%H%M%S.%N`` form (the tracing host's
            local time); ignored by the integer and JSON forms, which are epoch µs.

    Raises:
        TraceFormatError: not one of the forms, or a time outside 2001-09-09..2100-01-01
            (e.g. an integer in ns instead of µs); names the file, line and field.
        ValueError: unknown time zone name.
    """
    p = Path(path)
    text = _read_text_file(p, "a meta file").strip()
    expected = (
        "one line: 'yymmddHHMMSS.nanoseconds' (date +%y%m%d%H%M%S.%N), an integer of µs "
        'since the Unix epoch, or JSON {"start_time_us": N}'
    )
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(p, exc.lineno, None, "valid JSON", exc.msg) from exc
        value = obj.get("start_time_us") if isinstance(obj, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TraceFormatError(p, 1, "start_time_us", "an integer >= 0 (epoch µs)", value)
        return _plausible_us(p, value) * 1000
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise TraceFormatError(p, 1, "start_time_us", expected, lines[:2])
    line = lines[0]
    if line.isascii() and line.isdigit():
        return _plausible_us(p, int(line)) * 1000
    m = _META_DATE_RE.fullmatch(line)
    if m is None:
        raise TraceFormatError(p, 1, "start_time_us", expected, line)
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r} (expected an IANA name, e.g. UTC)") from exc
    try:
        local = dt.datetime.strptime(m.group(1), "%y%m%d%H%M%S").replace(tzinfo=zone)
    except ValueError as exc:
        raise TraceFormatError(p, 1, "start_time", "a valid date yymmddHHMMSS", m.group(1)) from exc
    frac_ns = int(m.group(2).ljust(9, "0"))
    ns = int(local.timestamp()) * 1_000_000_000 + frac_ns
    _plausible_us(p, ns // 1000)
    return ns


def _plausible_us(p: Path, value: int) -> int:
    if not ABSOLUTE_US_THRESHOLD <= value < MAX_EPOCH_US:
        hint = " (it looks like ns, expected µs)" if value >= MAX_EPOCH_US * 100 else ""
        raise TraceFormatError(
            p,
            1,
            "start_time_us",
            f"a time between 2001-09-09 and 2100-01-01 in µs since the epoch "
            f"[{ABSOLUTE_US_THRESHOLD}, {MAX_EPOCH_US}){hint}",
            value,
        )
    return value


def read_rmem_meta(path: str | Path, tz: str = "UTC") -> int:
    """Read a meta file: the trace start time in µs since the Unix epoch (truncated).

    Same forms, arguments and errors as :func:`read_rmem_meta_ns`.
    """
    return read_rmem_meta_ns(path, tz) // 1000


def write_rmem_meta(path: str | Path, start_time_us: int) -> None:
    """Write a meta file (atomically) holding ``start_time_us``."""
    if start_time_us < 0:
        raise ValueError(f"start_time_us must be >= 0, got {start_time_us}")
    with atomic_path(path) as tmp:
        tmp.write_text(f"{int(start_time_us)}\n")


def _parse_int(p: Path, lineno: int, field: str, text: str, what: str, bound: int) -> int:
    if not _INT_RE.fullmatch(text):
        raise TraceFormatError(p, lineno, field, what, text)
    value = int(text)
    if abs(value) > bound:
        raise TraceFormatError(p, lineno, field, f"{what}, at most {bound} in magnitude", text)
    return value


_FORMS_EXPECTED: Final = (
    "4 fields '<batch_id> <timestamp_us> <±start_page> <npages>' or 5 fields "
    "'<idx> <±timestamp_us> <page> <npages> <page_size>'"
)
_TS_WHAT: Final = "an integer of µs before 2100-01-01"


def _parse_lines(p: Path, page_bytes: int) -> tuple[str, list[tuple[int, int, str, int, int, int]]]:
    """Line-by-line parser: the reference path, and the one that names a bad line."""
    rows: list[tuple[int, int, str, int, int, int]] = []
    form = ""
    text = _read_text_file(p, "an rmem paging trace")
    for lineno, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        this = "batch" if len(fields) == 4 else "indexed" if len(fields) == 5 else ""
        if not this:
            raise TraceFormatError(p, lineno, None, _FORMS_EXPECTED, line)
        if form and this != form:
            expected = f"the {form} form used by the lines above"
            raise TraceFormatError(p, lineno, None, expected, line)
        form = this
        if form == "batch":
            batch = _parse_int(
                p, lineno, "batch_id", fields[0], "a non-negative integer", MAX_BATCH
            )
            ts = _parse_int(p, lineno, "timestamp_us", fields[1], _TS_WHAT, MAX_EPOCH_US - 1)
            page = _parse_int(
                p, lineno, "start_page", fields[2], "a signed integer (+ write, - read)", MAX_PAGE
            )
            npages = _parse_int(p, lineno, "npages", fields[3], "a positive integer", MAX_PAGE)
            op = "R" if fields[2].startswith("-") else "W"
            if batch < 0:
                raise TraceFormatError(p, lineno, "batch_id", "a non-negative integer", fields[0])
            if ts < 0 or fields[1].startswith("-"):
                raise TraceFormatError(
                    p, lineno, "timestamp_us", "a non-negative integer (µs)", fields[1]
                )
        else:
            batch = _parse_int(p, lineno, "idx", fields[0], "a non-negative integer", MAX_BATCH)
            ts = _parse_int(
                p, lineno, "timestamp_us", fields[1], _TS_WHAT + " (- read)", MAX_EPOCH_US - 1
            )
            page = _parse_int(p, lineno, "page", fields[2], "a non-negative integer", MAX_PAGE)
            npages = _parse_int(p, lineno, "npages", fields[3], "a positive integer", MAX_PAGE)
            size = _parse_int(
                p, lineno, "page_size", fields[4], f"the page size {page_bytes}", MAX_BATCH
            )
            op = "R" if fields[1].startswith("-") else "W"
            if batch < 0:
                raise TraceFormatError(p, lineno, "idx", "a non-negative integer", fields[0])
            if page < 0 or fields[2].startswith("-"):
                raise TraceFormatError(p, lineno, "page", "a non-negative integer", fields[2])
            if size != page_bytes:
                raise TraceFormatError(
                    p, lineno, "page_size", f"the page size {page_bytes}", fields[4]
                )
        if npages <= 0:
            raise TraceFormatError(p, lineno, "npages", "a positive integer", fields[3])
        rows.append((batch, abs(ts), op, abs(page), npages, lineno))
    return form, rows


def _fast_parse(p: Path, page_bytes: int) -> pd.DataFrame | None:
    """Vectorised parse with pyarrow's CSV reader, for well-formed files.

    Returns None whenever the file is not plainly well formed (blank lines, tabs, CR,
    quotes, anything that does not match the integer syntax or the limits of
    :func:`_parse_lines`), and the caller falls back to the line-by-line parser, which then
    names the bad line or handles the odd spacing. It accepts exactly what that parser
    accepts, with the same values (tests/test_fuzz_paging.py checks this).
    """
    data = read_regular(p, "an rmem paging trace")
    if (
        not data
        or not data.isascii()
        or data.startswith(b"\n")
        or b"\n\n" in data
        or any(c in data for c in (b"\r", b"\t", b'"', b"\x0b", b"\x0c", b"\x1c", b"\x1d"))
        or any(c in data for c in (b"\x1e", b"\x1f", b"\x85"))
    ):
        return None
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
            convert_options=pacsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(6)},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_columns not in (4, 5) or table.num_rows == 0:
        return None
    cols = [table.column(i) for i in range(table.num_columns)]
    for col in cols:
        ok = pc.match_substring_regex(col, pattern=r"^[+-]?[0-9]+$")
        if col.null_count or not pc.all(ok).as_py():
            return None

    def as_int(col: pa.ChunkedArray) -> np.ndarray | None:
        if pc.max(pc.utf8_length(col)).as_py() > 18:  # beyond every limit: int64-safe
            return None
        plain = pc.replace_substring_regex(col, pattern=r"^\+", replacement="")
        return np.asarray(pc.cast(plain, pa.int64()).to_numpy())

    ints = [as_int(c) for c in cols]
    if any(v is None for v in ints):
        return None
    vals = [v for v in ints if v is not None]
    if table.num_columns == 4:
        signed = pc.starts_with(cols[2], "-").to_numpy(zero_copy_only=False)
        batch, ts, page, npages = vals
        bad = (ts < 0) | pc.starts_with(cols[1], "-").to_numpy(zero_copy_only=False)
        bad |= np.abs(page) > MAX_PAGE
    else:
        signed = pc.starts_with(cols[1], "-").to_numpy(zero_copy_only=False)
        batch, ts, page, npages, size = vals
        bad = (page < 0) | (size != page_bytes) | (page > MAX_PAGE)
        bad |= pc.starts_with(cols[2], "-").to_numpy(zero_copy_only=False)
    bad |= (batch < 0) | (batch > MAX_BATCH) | (np.abs(ts) >= MAX_EPOCH_US)
    bad |= (npages <= 0) | (npages > MAX_PAGE)
    if bad.any():
        return None
    n = table.num_rows
    return pd.DataFrame(
        {
            "batch_id": batch,
            "time_us": np.abs(ts),
            "op": np.where(signed, "R", "W").astype(object),
            "page": np.abs(page),
            "npages": npages,
            "source_record": np.arange(1, n + 1, dtype=np.int64),
        }
    )


def read_rmem(
    path: str | Path,
    *,
    page_bytes: int = PAGE_BYTES,
    meta: str | Path | int | None = None,
    time_base: Literal["auto", "absolute", "relative"] = "auto",
    meta_tz: str = "UTC",
) -> pd.DataFrame:
    """Read an rmem paging trace (either text form, detected from the field count).

    Args:
        path: the trace.
        page_bytes: page size (the older form's 5th field must equal it).
        meta: start time in epoch µs, or a meta file path; default ``<path>.meta`` if it
            exists. Without it ``realtime_ns`` is -1 for relative timestamps.
        time_base: ``"absolute"``: timestamps are epoch µs (rmem.c); ``"relative"``: µs
            since the meta start time; ``"auto"``: absolute if every timestamp is
            >= 10**15 µs (after 2001-09-09), relative if every one is below; a file
            mixing the two is an error (one corrupt line must not move the whole file).
        meta_tz: time zone of a ``date +%y%m%d%H%M%S.%N`` meta file (see module doc).

    Returns:
        DataFrame in file order with columns ``batch_id`` (the older form's index),
        ``time_us`` (as in the file, unsigned), ``op`` ('R' swap-in / 'W' swap-out),
        ``page`` (start page), ``npages``, ``size_bytes`` (= npages * page_bytes),
        ``realtime_ns`` (epoch ns; -1 if unknown) and ``source_record`` (1-based line).

    Raises:
        TraceFormatError: a malformed line (file:line, field, what was expected), a line
            whose time base differs from the first line's, or a bad meta file.
        ValueError: relative timestamps with an explicit ``time_base="relative"`` but no meta.
    """
    p = Path(path)
    fast = _fast_parse(p, page_bytes)
    if fast is not None:
        df = fast
    else:
        _, rows = _parse_lines(p, page_bytes)
        df = pd.DataFrame(
            rows, columns=["batch_id", "time_us", "op", "page", "npages", "source_record"]
        )
        for c in ("batch_id", "time_us", "page", "npages", "source_record"):
            df[c] = df[c].astype(np.int64)
    df["op"] = df["op"].astype(object)
    df["size_bytes"] = df["npages"] * page_bytes
    check_records(
        p,
        (df["size_bytes"] > BLOCK_REQUEST_MAX_BYTES).to_numpy(),
        df["npages"].to_numpy(),
        df["source_record"].to_numpy(),
        "npages",
        f"a run within one block request: npages * {page_bytes} <= {BLOCK_REQUEST_MAX_BYTES} "
        "bytes (struct request.__data_len, disaggsim.bounds)",
        record_word="line",
        error=TraceFormatError,
    )
    start_us: int | None
    if isinstance(meta, int):
        if not 0 <= meta < MAX_EPOCH_US:
            raise ValueError(f"meta start time {meta} µs outside [0, {MAX_EPOCH_US})")
        start_us = meta
    elif meta is not None:
        start_us = read_rmem_meta(meta, meta_tz)
    else:
        mp = meta_path(p)
        start_us = read_rmem_meta(mp, meta_tz) if mp.exists() or mp.is_symlink() else None
    is_abs = df["time_us"].to_numpy() >= ABSOLUTE_US_THRESHOLD
    if time_base == "auto" and len(df) and is_abs.any() and not is_abs.all():
        # Name the first line of the minority: one corrupt line must not decide the file.
        majority = bool(is_abs.sum() * 2 >= len(is_abs))
        i = int(np.flatnonzero(is_abs != majority)[0])
        kinds = ("relative (< 10**15 µs)", "absolute (epoch µs >= 10**15)")
        raise TraceFormatError(
            p,
            int(df["source_record"].iloc[i]),
            "timestamp_us",
            f"a {kinds[majority]} timestamp like the other {int((is_abs == majority).sum())} "
            "lines (a file is all absolute or all relative)",
            int(df["time_us"].iloc[i]),
        )
    absolute = time_base == "absolute" or (
        time_base == "auto" and bool(len(df)) and bool(is_abs.all())
    )
    if absolute:
        df["realtime_ns"] = df["time_us"] * 1000
    elif start_us is not None:
        # time_us < MAX_EPOCH_US and start_us < MAX_EPOCH_US: the sum * 1000 fits int64.
        df["realtime_ns"] = (df["time_us"] + start_us) * 1000
    elif time_base == "relative":
        raise ValueError(f"{p}: relative timestamps need a start time (meta file {meta_path(p)})")
    else:
        df["realtime_ns"] = np.int64(-1)
    return df[list(RMEM_COLUMNS)]


def write_rmem(
    df: pd.DataFrame,
    path: str | Path,
    *,
    form: Literal["batch", "indexed"] = "batch",
    page_bytes: int = PAGE_BYTES,
    start_time_us: int | None = None,
) -> None:
    """Write a paging trace (atomically) in the batch or the older indexed form.

    ``df`` needs ``batch_id``, ``time_us``, ``op`` ('R'/'W'), ``page`` and ``npages``.
    A read of page 0 is written ``-0`` so that the sign survives. If ``start_time_us`` is
    given, ``<path>.meta`` is written too. Raises ValueError on invalid rows.
    """
    need = ["batch_id", "time_us", "op", "page", "npages"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"write_rmem: missing columns {missing}")
    ops = df["op"].to_numpy()
    if not np.isin(ops, ["R", "W"]).all():
        raise ValueError("write_rmem: op must be 'R' or 'W'")
    if (df["npages"] <= 0).any() or (df["page"] < 0).any() or (df["time_us"] < 0).any():
        raise ValueError("write_rmem: npages must be > 0, page and time_us >= 0")
    # Batch form: '-' swap-in (read), '+' swap-out (write), as the collector has always written
    # and the README documents; the indexed form signs only the timestamps of reads.
    sign = np.where(ops == "R", "-", "+" if form == "batch" else "")
    batch = df["batch_id"].astype(np.int64).astype(str).to_numpy()
    ts = df["time_us"].astype(np.int64).astype(str).to_numpy()
    page = df["page"].astype(np.int64).astype(str).to_numpy()
    npages = df["npages"].astype(np.int64).astype(str).to_numpy()
    if form == "batch":
        lines = [
            f"{b} {t} {s}{pg} {n}\n"
            for b, t, s, pg, n in zip(batch, ts, sign, page, npages, strict=True)
        ]
    else:
        lines = [
            f"{b} {s}{t} {pg} {n} {page_bytes}\n"
            for b, t, s, pg, n in zip(batch, ts, sign, page, npages, strict=True)
        ]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(lines))
    if start_time_us is not None:
        write_rmem_meta(meta_path(path), start_time_us)
