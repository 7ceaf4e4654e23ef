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

Meta file: the artifact's collector (``rmem/execute.py`` ``log_trace``) writes the trace
start time as one line holding an integer, µs since the Unix epoch
(``start_time=$(date +%s%N); echo ${start_time:0:-3} > .metadata``), copied next to the
traces as ``<n>-meta-<host>``. We read that format, or JSON ``{"start_time_us": N}``, from
``<trace>.meta``.
Timestamps in the trace are either absolute (epoch µs, as rmem.c logs them) or relative
to that start time; ``time_base="auto"`` tells them apart (see :func:`read_rmem`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from disaggsim.traces._atomic import atomic_path
from disaggsim.traces.errors import TraceFormatError

PAGE_BYTES: Final = 4096  # x86 PAGE_SIZE; paper §2.2 "page-level remote memory access"
#: Timestamps at or above this (µs since the epoch: 2001-09-09) are absolute, below relative.
ABSOLUTE_US_THRESHOLD: Final = 10**15

RMEM_COLUMNS: Final = (
    "batch_id",
    "time_us",
    "op",
    "page",
    "npages",
    "size_bytes",
    "realtime_ns",
    "source_record",
)


def meta_path(trace: str | Path) -> Path:
    """The meta file of a paging trace: ``<trace>.meta``."""
    p = Path(trace)
    return p.with_name(p.name + ".meta")


def read_rmem_meta(path: str | Path) -> int:
    """Read a meta file: the trace start time in µs since the Unix epoch.

    Accepts the artifact's format (one line holding the integer) and the JSON object
    ``{"start_time_us": <int>}`` (written by ``traces/collect_paging.py``).

    Raises TraceFormatError if the file is neither.
    """
    p = Path(path)
    text = p.read_text().strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(p, exc.lineno, None, "valid JSON", exc.msg) from exc
        value = obj.get("start_time_us") if isinstance(obj, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TraceFormatError(p, 1, "start_time_us", "an integer >= 0 (epoch µs)", value)
        return value
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1 or not lines[0].isdigit():
        raise TraceFormatError(
            p, 1, "start_time_us", "one integer line (µs since the Unix epoch)", lines[:2]
        )
    return int(lines[0])


def write_rmem_meta(path: str | Path, start_time_us: int) -> None:
    """Write a meta file (atomically) holding ``start_time_us``."""
    if start_time_us < 0:
        raise ValueError(f"start_time_us must be >= 0, got {start_time_us}")
    with atomic_path(path) as tmp:
        tmp.write_text(f"{int(start_time_us)}\n")


def _parse_int(p: Path, lineno: int, field: str, text: str, what: str) -> int:
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit():
        raise TraceFormatError(p, lineno, field, what, text)
    return int(text)


def _parse_lines(p: Path, page_bytes: int) -> tuple[str, list[tuple[int, int, str, int, int, int]]]:
    """Line-by-line parser: the reference path, and the one that names a bad line."""
    rows: list[tuple[int, int, str, int, int, int]] = []
    form = ""
    with p.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            this = "batch" if len(fields) == 4 else "indexed" if len(fields) == 5 else ""
            if not this:
                raise TraceFormatError(
                    p,
                    lineno,
                    None,
                    "4 fields '<batch_id> <timestamp_us> <±start_page> <npages>' or 5 fields "
                    "'<idx> <±timestamp_us> <page> <npages> <page_size>'",
                    line.rstrip("\n"),
                )
            if form and this != form:
                raise TraceFormatError(
                    p, lineno, None, f"the {form} form used by the lines above", line.rstrip("\n")
                )
            form = this
            if form == "batch":
                batch = _parse_int(p, lineno, "batch_id", fields[0], "a non-negative integer")
                ts = _parse_int(p, lineno, "timestamp_us", fields[1], "a non-negative integer (µs)")
                page = _parse_int(
                    p, lineno, "start_page", fields[2], "a signed integer (+ write, - read)"
                )
                npages = _parse_int(p, lineno, "npages", fields[3], "a positive integer")
                op = "R" if fields[2].startswith("-") else "W"
                if batch < 0:
                    raise TraceFormatError(
                        p, lineno, "batch_id", "a non-negative integer", fields[0]
                    )
                if ts < 0 or fields[1].startswith("-"):
                    raise TraceFormatError(
                        p, lineno, "timestamp_us", "a non-negative integer (µs)", fields[1]
                    )
            else:
                batch = _parse_int(p, lineno, "idx", fields[0], "a non-negative integer")
                ts = _parse_int(
                    p, lineno, "timestamp_us", fields[1], "a signed integer (µs; - read)"
                )
                page = _parse_int(p, lineno, "page", fields[2], "a non-negative integer")
                npages = _parse_int(p, lineno, "npages", fields[3], "a positive integer")
                size = _parse_int(p, lineno, "page_size", fields[4], f"the page size {page_bytes}")
                op = "R" if fields[1].startswith("-") else "W"
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
    anything that does not parse or validate), and the caller falls back to the
    line-by-line parser, which then names the bad line or handles the odd spacing.
    """
    data = p.read_bytes()
    if not data or data.startswith(b"\n") or b"\n\n" in data or b"\r" in data or b"\t" in data:
        return None
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=" "),
            convert_options=pacsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(6)}
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_columns not in (4, 5):
        return None
    cols = [table.column(i) for i in range(table.num_columns)]

    def as_int(col: pa.ChunkedArray) -> np.ndarray:
        plain = pc.replace_substring_regex(col, pattern=r"^\+", replacement="")
        return pc.cast(plain, pa.int64()).to_numpy()

    try:
        ints = [as_int(c) for c in cols]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_columns == 4:
        signed = pc.starts_with(cols[2], "-").to_numpy(zero_copy_only=False)
        batch, ts, page, npages = ints
        bad = (batch < 0) | (ts < 0) | pc.starts_with(cols[1], "-").to_numpy(zero_copy_only=False)
    else:
        signed = pc.starts_with(cols[1], "-").to_numpy(zero_copy_only=False)
        batch, ts, page, npages, size = ints
        bad = (batch < 0) | (page < 0) | (size != page_bytes)
        bad |= pc.starts_with(cols[2], "-").to_numpy(zero_copy_only=False)
    if (bad | (npages <= 0)).any():
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
) -> pd.DataFrame:
    """Read an rmem paging trace (either text form, detected from the field count).

    Args:
        path: the trace.
        page_bytes: page size (the older form's 5th field must equal it).
        meta: start time in epoch µs, or a meta file path; default ``<path>.meta`` if it
            exists. Without it ``realtime_ns`` is -1 for relative timestamps.
        time_base: ``"absolute"``: timestamps are epoch µs (rmem.c); ``"relative"``: µs
            since the meta start time; ``"auto"``: absolute if the first timestamp is
            >= 10**15 µs (after 2001-09-09), else relative.

    Returns:
        DataFrame in file order with columns ``batch_id`` (the older form's index),
        ``time_us`` (as in the file, unsigned), ``op`` ('R' swap-in / 'W' swap-out),
        ``page`` (start page), ``npages``, ``size_bytes`` (= npages * page_bytes),
        ``realtime_ns`` (epoch ns; -1 if unknown) and ``source_record`` (1-based line).

    Raises:
        TraceFormatError: a malformed line (file:line, field, what was expected), or a
            meta file that is not one integer.
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
    start_us: int | None
    if isinstance(meta, int):
        start_us = meta
    elif meta is not None:
        start_us = read_rmem_meta(meta)
    else:
        mp = meta_path(p)
        start_us = read_rmem_meta(mp) if mp.exists() else None
    absolute = time_base == "absolute" or (
        time_base == "auto" and len(df) > 0 and int(df["time_us"].iloc[0]) >= ABSOLUTE_US_THRESHOLD
    )
    if absolute:
        df["realtime_ns"] = df["time_us"] * 1000
    elif start_us is not None:
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
    sign = np.where(ops == "R", "-", "")
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
