"""Putting every trace of a sample on one clock (CLOCK_REALTIME ns), and checking it.

Paging traces carry epoch µs (rmem.c ``do_gettimeofday``) and pcaps CLOCK_REALTIME; a
blktrace carries the kernel's trace clock (monotonic since boot). :func:`blktrace_offset`
picks, per blktrace, in this order:

1. the given ``trace_clock_offset_ns`` (CLOCK_REALTIME - trace clock, measured by
   ``disaggsim collect``, in meta.json);
2. its ``BLK_TN_TIMESTAMP`` notify record (``blktrace.wallclock_offset_ns``; the original
   artifact's 2015 traces have one per node);
3. aligning its first record of any kind (when tracing started) to the node's trace
   start: its meta time (the artifact writes ``date`` just before starting blktrace,
   NetSys/disaggregation ``rmem/ec2_get_log.sh``), else its first paging record, else its
   first packet. This is accurate only to the delay before the first traced record
   (seconds on the artifact's Spark run, bench/RESULTS.md), and the conversion report
   says it was used.

:func:`check_time_ranges` then refuses inputs whose ranges lie farther apart than the
longest input lasts (floor :data:`MIN_GAP_TOLERANCE_NS`): inputs on different clocks,
which would otherwise give a flow table spanning decades.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Final

from disaggsim.traces.blktrace import first_record_ns, wallclock_offset_ns
from disaggsim.traces.paging import MAX_EPOCH_US

#: Bound of a clock offset (ns): with record times < 2**62 the sum stays int64-safe.
MAX_OFFSET_NS: Final = 2**62
#: Latest plausible record time (2100-01-01, ns since the epoch): ``paging.MAX_EPOCH_US``.
MAX_REALTIME_NS: Final = MAX_EPOCH_US * 1000
#: Inputs whose time ranges are farther apart than the longest input (and this floor)
#: are on different clocks: an error, never a flow table spanning decades. 60 s: the
#: artifact's Spark run pages in bursts seconds apart, so short excerpts have gaps.
MIN_GAP_TOLERANCE_NS: Final = 60_000_000_000


def iso(ns: int) -> str:
    """Epoch ns as an ISO 8601 UTC time (for messages)."""
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat()


def blktrace_offset(
    prefix: Path,
    node: int,
    first: int,
    last: int,
    given: int | None,
    node_start_ns: int | None,
) -> tuple[int, str, str]:
    """CLOCK_REALTIME - trace clock for one blktrace (rules in the module docstring).

    Args:
        prefix: the blktrace (``NAME`` of ``NAME.blktrace.<cpu>``).
        node: its node number (for the note).
        first, last: its first and last kept record times (trace clock ns).
        given: an offset from meta.json, or None.
        node_start_ns: the node's trace start (epoch ns), or None.

    Returns:
        ``(offset_ns, note, rule)``; the note says which rule was used, for the report;
        ``rule`` is ``"given"``, ``"anchor"``, ``"aligned"`` or ``"own clock"``.

    Raises:
        ValueError: the records plus the offset leave 1970..2100 (names the file).
        TraceFormatError: a malformed anchor record (from ``blktrace``).
    """
    anchor = wallclock_offset_ns(prefix) if given is None else None
    if given is not None:
        offset, rule = given, "given"
        note = f"{prefix}: given trace_clock_offset_ns {offset}"
    elif anchor is not None:
        offset, rule = anchor[0], "anchor"
        note = f"{prefix}: wall-clock anchor BLK_TN_TIMESTAMP ({anchor[1]} byte {anchor[2]})"
    elif node_start_ns is not None:
        started = first_record_ns(prefix)
        offset = node_start_ns - (first if started is None else min(started, first))
        rule = "aligned"
        note = (
            f"{prefix}: no wall-clock anchor and no offset given: first record aligned to "
            f"node {node}'s trace start {iso(node_start_ns)} (offset {offset} ns)"
        )
    else:
        offset, rule = 0, "own clock"
        note = f"{prefix}: no wall-clock anchor, offset or node start: left on its own clock"
    if not (0 <= first + offset and last + offset < MAX_REALTIME_NS):
        raise ValueError(
            f"{prefix}: records {first}..{last} ns plus clock offset {offset} ns fall outside "
            f"1970..2100 (0..{MAX_REALTIME_NS} ns); expected an offset CLOCK_REALTIME - trace clock"
        )
    return offset, note, rule


def check_time_ranges(ranges: dict[str, tuple[int, int]]) -> None:
    """Fail if inputs are on different clocks: a gap between the inputs' time ranges
    longer than the longest input (at least ``MIN_GAP_TOLERANCE_NS``), or a time outside
    [0, ``MAX_REALTIME_NS``).

    Args:
        ranges: file -> (first, last) record time, CLOCK_REALTIME ns.

    Raises:
        ValueError: names every file with its range (ISO UTC and ns).
    """
    if not ranges:
        return
    longest = max(b - a for a, b in ranges.values())
    tolerance = max(longest, MIN_GAP_TOLERANCE_NS)
    items = sorted(ranges.items(), key=lambda kv: kv[1])
    end = items[0][1][1]
    problem = ""
    for name, (a, b) in items:
        if a < 0 or b >= MAX_REALTIME_NS:
            problem = f"{name} has times outside 1970..2100"
            break
        if a - end > tolerance:
            problem = (
                f"{name} starts {(a - end) / 1e9:.3f} s after the inputs before it end, "
                f"more than the longest input lasts ({tolerance / 1e9:.3f} s): the inputs "
                "are on different clocks (give trace_clock_offset_ns, or a meta file)"
            )
            break
        end = max(end, b)
    if problem:
        listing = "; ".join(
            f"{name}: {a}..{b} ns ({iso(a) if 0 <= a < MAX_REALTIME_NS else '?'} .. "
            f"{iso(b) if 0 <= b < MAX_REALTIME_NS else '?'})"
            for name, (a, b) in items
        )
        raise ValueError(f"time ranges of the inputs do not fit one run: {problem}. {listing}")
