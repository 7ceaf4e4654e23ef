"""YAPS flow files (the pHost paper's simulator, NetSys/simulator) <-> NS3_FLOWS.

YAPS's trace reader (``run/flow_generator.cpp``, ``FlowReader::make_flows``) reads, per
line, ``id start_time temp temp size temp temp src dst`` with ``iss >>`` into
``uint32 id; double start_time (s); double temp; uint32 size (packets); uint32 s, d``
and makes a flow of ``size * params.mss`` bytes (``params.mss = 1460``, run/params.cpp).
The disaggregation artifact wrote these files as
``"{id} {start_s:.9f} 0 0 {ceil(size / 1460)} 0 0 {src} {dst}"`` with
``start_s = start_us / 1e6 + 1.0`` (disaggregation-flowgen ``readFlowTrace.py``
``outputSimulatorFriendly``; YAPS's own generators also start flows at 1.0 s).

Export rounds each flow up to whole 1460-byte packets (as the artifact did), so
``read_yaps(write_yaps(df))`` returns ``size_bytes = ceil(size_bytes / 1460) * 1460``; the
start time is written with 9 decimals from integer ns, so it round-trips exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
import pandas as pd

from disaggsim.atomic import atomic_path
from disaggsim.flowcheck import check_flows
from disaggsim.guards import open_regular
from disaggsim.schemas import NS3_FLOWS
from disaggsim.traces.errors import TraceFormatError

YAPS_MSS_BYTES: Final = 1460
YAPS_START_OFFSET_NS: Final = 1_000_000_000
_U32_MAX: Final = 2**32 - 1
_I64_MAX: Final = 2**63 - 1


def write_yaps(
    sim_flows: pd.DataFrame,
    path: str | Path,
    *,
    start_offset_ns: int = YAPS_START_OFFSET_NS,
    mss_bytes: int = YAPS_MSS_BYTES,
) -> None:
    """Write NS3_FLOWS rows as a YAPS flow file (atomically), in start-time order.

    Raises ValueError for missing columns, negative start times, non-positive sizes, or
    values beyond YAPS's uint32 fields.
    """
    missing = [c for c in NS3_FLOWS.names if c not in sim_flows.columns]
    if missing:
        raise ValueError(f"write_yaps: missing NS3_FLOWS columns {missing}")
    df = sim_flows.sort_values(["start_ns", "flow_id"], kind="stable")
    start = df["start_ns"].to_numpy(dtype=np.int64) + start_offset_ns
    size = df["size_bytes"].to_numpy(dtype=np.int64)
    if (start < 0).any() or (size <= 0).any():
        raise ValueError("write_yaps: start_ns + offset must be >= 0 and size_bytes > 0")
    packets = -(-size // mss_bytes)
    ids, src, dst = (df[c].to_numpy(dtype=np.int64) for c in ("flow_id", "src_host", "dst_host"))
    for name, col in (("flow_id", ids), ("packets", packets), ("src_host", src), ("dst_host", dst)):
        if len(col) and (col.min() < 0 or col.max() > _U32_MAX):
            raise ValueError(f"write_yaps: {name} outside YAPS's uint32 range")
    sec, frac = np.divmod(start, 1_000_000_000)
    lines = [
        f"{i} {s}.{f:09d} 0 0 {p} 0 0 {a} {b}\n"
        for i, s, f, p, a, b in zip(ids, sec, frac, packets, src, dst, strict=True)
    ]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(lines))


def _uint(p: Path, lineno: int, field: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > _U32_MAX:
        raise TraceFormatError(p, lineno, field, "an unsigned 32-bit integer", text)
    return int(text)


def _seconds_to_ns(p: Path, lineno: int, text: str) -> int:
    whole, dot, frac = text.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (
        dot and frac and not (frac.isascii() and frac.isdigit())
    ):
        raise TraceFormatError(
            p, lineno, "start_time", "a non-negative decimal number of seconds", text
        )
    digits = (frac + "000000000")[:9]
    ns = int(whole) * 1_000_000_000 + int(digits)
    if len(frac) > 9 and int(frac[9]) >= 5:
        ns += 1  # round half up past ns resolution
    if ns > _I64_MAX:
        raise TraceFormatError(
            p, lineno, "start_time", "a time below 2^63 ns (about 292 years)", text
        )
    return ns


def _lines(p: Path, fh: BinaryIO) -> Iterator[tuple[int, str]]:
    """Numbered lines of ``fh``, decoded one by one; a byte that is not ASCII is a
    TraceFormatError naming the line (YAPS files are ASCII)."""
    for lineno, raw in enumerate(fh, start=1):
        try:
            yield lineno, raw.decode("ascii")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(
                p, lineno, None, "ASCII text", f"byte {raw[exc.start : exc.start + 1]!r}"
            ) from None


def read_yaps(
    path: str | Path,
    *,
    start_offset_ns: int = YAPS_START_OFFSET_NS,
    mss_bytes: int = YAPS_MSS_BYTES,
) -> pd.DataFrame:
    """Read a YAPS flow file into NS3_FLOWS (size_bytes = packets * mss_bytes).

    Stricter than YAPS (which stops silently at the first bad line): every non-empty line
    must have exactly 9 fields with the types above, flow ids must be unique, src != dst,
    and start times at least ``start_offset_ns`` (1 s: the files' time origin, see the
    module docstring), so that ns-3 never sees a flow it would reject mid-campaign; then
    the rules every workload's flows meet (``disaggsim.flowcheck.check_flows``: starts
    within the ns-3 clock's range, none apart from the bulk of the others).

    Raises:
        TraceFormatError: file:line, the field, and what was expected.
    """
    p = Path(path)
    rows: list[tuple[int, int, int, int, int]] = []
    lines: list[int] = []
    line_of_id: dict[int, int] = {}
    with open_regular(p, "a YAPS flow file") as fh:
        for lineno, line in _lines(p, fh):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 9:
                raise TraceFormatError(
                    p,
                    lineno,
                    None,
                    "9 fields '<id> <start_s> 0 0 <packets> 0 0 <src> <dst>'",
                    line.rstrip("\n"),
                )
            fid = _uint(p, lineno, "id", fields[0])
            if fid in line_of_id:
                raise TraceFormatError(
                    p, lineno, "id", f"a flow id not used before (line {line_of_id[fid]})", fid
                )
            line_of_id[fid] = lineno
            start = _seconds_to_ns(p, lineno, fields[1]) - start_offset_ns
            if start < 0:
                raise TraceFormatError(
                    p,
                    lineno,
                    "start_time",
                    f"a start time >= {start_offset_ns / 1e9:g} s (YAPS flows start at the offset)",
                    fields[1],
                )
            for k, name in ((2, "temp2"), (3, "temp3"), (5, "temp5"), (6, "temp6")):
                try:
                    float(fields[k])
                except ValueError as exc:
                    raise TraceFormatError(p, lineno, name, "a number", fields[k]) from exc
            packets = _uint(p, lineno, "size_packets", fields[4])
            if packets == 0:
                raise TraceFormatError(
                    p, lineno, "size_packets", "a positive packet count", fields[4]
                )
            src = _uint(p, lineno, "src", fields[7])
            dst = _uint(p, lineno, "dst", fields[8])
            if src == dst:
                raise TraceFormatError(
                    p, lineno, "dst", f"a host other than src ({src})", fields[8]
                )
            rows.append((fid, start, src, dst, packets * mss_bytes))
            lines.append(lineno)
    df = pd.DataFrame(rows, columns=NS3_FLOWS.names)
    check_flows(df, p, np.asarray(lines, dtype=np.int64), error=TraceFormatError)
    for f in NS3_FLOWS:
        df[f.name] = df[f.name].astype(f.type.to_pandas_dtype())
    return df
