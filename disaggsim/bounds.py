"""Physical bounds per record, per format (issue #21, class 4), each with its source.

A value that parses but cannot occur (a 2.9 TB swap request, a packet record longer than the
capture's snapshot length) makes a plausible-looking wrong table. Each reader checks its
records against the bounds below with :func:`check_records`, which names the first record
that breaks one.

Block layer (paging and blktrace traces):

- :data:`BLOCK_REQUEST_MAX_BYTES`: a block request carries at most 2**32 - 1 bytes:
  ``struct request``'s ``__data_len`` is an ``unsigned int`` (include/linux/blk-mq.h) and
  blktrace's ``bytes`` a ``__u32`` (include/uapi/linux/blktrace_api.h). The rmem driver
  logs one record per run of contiguous pages of one request (NetSys/disaggregation
  ``rmem/rmem.c``), so a paging record's ``npages * page_bytes`` is bounded by it too
  (the bundled samples' largest run is 1024 pages, 4 MiB).
- a request lies inside its device: ``sector * 512 + bytes <= device bytes`` (blktrace),
  ``(page + npages) * page_bytes <= swap bytes`` (paging), when ``meta.json`` gives
  ``disk_bytes`` / ``swap_bytes``.

Packet captures (IETF draft-ietf-opsawg-pcap, "Packet Record" §5):

- the sub-second timestamp field counts µs or ns "elapsed since that second": below 10**6
  (magic ``0xa1b2c3d4``) or 10**9 (``0xa1b23c4d``);
- "Captured Packet Length ... will be the minimum value among the Original Packet Length
  and the snapshot length": ``incl_len <= orig_len`` and, when SnapLen is set,
  ``incl_len <= snaplen``;
- an IPv4 packet fits in its frame: link header + IPv4 ``total length`` <= ``orig_len``
  (RFC 791 §3.1: total length counts header and data; Ethernet pads short frames, so the
  frame may be longer, never shorter).

Header versus content (class 6): a value a header declares must agree with the records it
describes, else it is refused naming the header field. :func:`check_declared` compares a
categorical header value with what decodes the records (a pcap's link type and its
ns-resolution magic against the sub-second fields; the CPU in a
blktrace file name ``NAME.blktrace.<cpu>`` against the records' ``cpu``);
:func:`check_declared_time` a declared start time with an independent clock's records (a
paging meta's start against the node's packet capture, or a blktrace placed by its own
wall-clock anchor; a given blktrace clock offset against that anchor);
:func:`check_declared_count` a declared record count (``meta.json``'s ``pcap_packets``).
"""

from __future__ import annotations

import os
from typing import Final

import numpy as np

from disaggsim.errors import InputError

#: Largest block request in bytes (``struct request.__data_len``, ``unsigned int``).
BLOCK_REQUEST_MAX_BYTES: Final = 2**32 - 1
#: Sub-second field bound of a pcap record: µs or ns per second (draft-ietf-opsawg-pcap §5).
PCAP_FRACTION_LIMIT: Final = {"us": 10**6, "ns": 10**9}


def check_records(
    path: str | os.PathLike[str],
    bad: np.ndarray,
    values: np.ndarray,
    records: np.ndarray,
    field: str,
    expected: str,
    record_word: str = "record",
    files: np.ndarray | None = None,
    error: type[InputError] = InputError,
) -> None:
    """Raise for the first record that breaks a bound.

    Args:
        path: the input file (or ``files[i]`` per record when given).
        bad: bool mask, shape (n,): True where the bound is broken.
        values: the offending field's values, shape (n,) (the one of the first bad record
            is printed).
        records: record number per row (line, record index or byte offset).
        field: the field's name.
        expected: the bound and its source, e.g. ``"npages * page_bytes <= 2**32 - 1
            (the largest block request, struct request.__data_len)"``.
        record_word: ``"line"`` gives ``file:17``; ``"byte"`` ``file:byte 17``; else
            ``file:record 17``.
        files: per-row source file names (several files read as one input), or None.
        error: the InputError subclass to raise (a reader's own, e.g. TraceFormatError).

    Raises:
        InputError: ``<file>:<record>: field '<field>': expected <expected>, got <value>``.
    """
    idx = np.flatnonzero(np.asarray(bad))
    if not idx.size:
        return
    i = int(idx[0])
    rec = int(np.asarray(records)[i])
    where = str(rec) if record_word == "line" else f"{record_word} {rec}"
    value = np.asarray(values)[i]
    got = value.item() if hasattr(value, "item") else value
    name = path if files is None else str(np.asarray(files)[i])
    raise error(name, where, field, expected, got)


#: Header versus content: a header value that explains at most this fraction of the records
#: while another value explains at least :data:`CONTENT_MAJORITY` of them is wrong.
HEADER_MINORITY: Final = 0.5
CONTENT_MAJORITY: Final = 0.9


def check_declared(
    path: str | os.PathLike[str],
    where: str,
    field: str,
    declared: int,
    explained: dict[int, int],
    total: int,
    names: dict[int, str],
    error: type[InputError] = InputError,
) -> None:
    """Header versus content (issue #21, class 6): the value a header declares must explain
    the records it describes.

    Args:
        path, where, field: the header field (``node1.pcap``, ``"byte 20"``, ``"linktype"``).
        declared: the header's value.
        explained: for each candidate value (``declared`` among them), how many of the
            ``total`` records decode as valid under it.
        total: the records looked at.
        names: a readable name per value.
        error: the InputError subclass to raise.

    Raises:
        InputError: the declared value explains at most half of the records while another
            explains at least 90 % (the header is wrong; nothing would say so otherwise:
            the records would be skipped as foreign).
    """
    if total <= 0 or explained.get(declared, 0) > HEADER_MINORITY * total:
        return
    best = max(explained, key=lambda v: explained[v])
    if best != declared and explained[best] >= CONTENT_MAJORITY * total:
        raise error(
            path,
            where,
            field,
            f"the value that matches the records: {explained[best]} of {total} decode under "
            f"{best} ({names.get(best, '?')}), {explained.get(declared, 0)} under the "
            f"header's {declared} ({names.get(declared, '?')})",
            declared,
        )


def check_declared_time(
    path: str | os.PathLike[str],
    where: str | int | None,
    field: str,
    declared_ns: int,
    first_ns: int,
    last_ns: int,
    witness: str,
    floor_ns: int,
    error: type[InputError] = InputError,
) -> None:
    """Header versus content for a time (issue #21, class 6): a declared trace start must
    lie where an independent clock puts the records it describes.

    A paging trace's meta file declares when tracing started (written just before the
    tracers start, ``traces/paging.py``); relative paging timestamps are placed by it alone,
    and a blktrace without offset or anchor is aligned to it. A start hours or days away
    from the node's records on an independent CLOCK_REALTIME (its packet capture) would
    move every memory access to the wrong messages, or out of the run.

    Args:
        path, where, field: the header field (``node0.rmem.meta``, line 1, ``start_time``).
        declared_ns: the declared start, epoch ns.
        first_ns, last_ns: the witness records' first and last time, epoch ns.
        witness: the witness input's name (for the message).
        floor_ns: the least tolerance (ns).

    Raises:
        InputError: ``declared_ns`` is farther from ``first_ns`` than the witness lasts (at
            least ``floor_ns``): the same tolerance as between any two inputs of one run
            (``traces.clocks.check_time_ranges``).
    """
    tolerance = max(last_ns - first_ns, floor_ns)
    if abs(declared_ns - first_ns) > tolerance:
        raise error(
            path,
            where,
            field,
            f"a start within {tolerance / 1e9:.3f} s of the first record of {witness} "
            f"({first_ns} ns; it lasts {(last_ns - first_ns) / 1e9:.3f} s), "
            f"{(declared_ns - first_ns) / 1e9:+.3f} s away",
            declared_ns,
        )


def check_declared_count(
    path: str | os.PathLike[str],
    where: str | int | None,
    field: str,
    declared: int,
    counted: int,
    what: str,
    error: type[InputError] = InputError,
) -> None:
    """Header versus content for a count (issue #21, class 6): a declared number of records
    must be the number the file holds (a capture cut at a record boundary reads cleanly and
    silently loses its tail).

    Args:
        path, where, field: the header field (``meta.json``, ``"node 0"``, ``pcap_packets``).
        declared: the header's count.
        counted: the records read.
        what: what was counted (``"records in node0.pcap"``).

    Raises:
        InputError: the two differ.
    """
    if declared != counted:
        raise error(path, where, field, f"the number of {what} ({counted})", declared)
