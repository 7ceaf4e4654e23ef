"""Packet captures -> packet table -> network messages (paper §4.1, the ``tcpdump`` trace).

Two readers produce the same :class:`PacketTable`:

- classic pcap (``tcpdump -w``): a numpy reader. Record offsets come from the 16-byte
  record headers (the only sequential dependency: each record's length says where the next
  one starts), walked as many chunk chains at once and verified exactly against each other
  (:func:`_record_offsets`); every other field is gathered for all records at once with
  numpy fancy indexing. Both byte orders, µs (magic ``0xa1b2c3d4``) and ns (``0xa1b23c4d``)
  timestamps. Format: IETF draft-ietf-opsawg-pcap (File Header, Packet Record).
- pcapng (``tcpdump --pcapng``/Wireshark): blocks decoded with ``dpkt.pcapng``; the
  timestamp is rebuilt exactly in integer ns from the interface's ``if_tsresol`` and
  ``if_tsoffset`` options (dpkt's own iterator yields float seconds, which loses ns).

Link layers (LINKTYPE values from tcpdump.org/linktypes.html): Ethernet (1, with up to two
802.1Q/802.1ad tags), Linux cooked SLL (113, 16-byte header, protocol at bytes 14-15),
SLL2 (276, 20-byte header, protocol at bytes 0-1), raw IP (101) and raw IPv4 (228).
Only IPv4 is decoded; other frames are counted in ``PacketTable.n_skipped``.

``payload_bytes`` is computed from the IPv4 total length minus the IP header and the TCP
(data offset) or UDP (8 B) header, never from the captured length, so a snaplen-truncated
capture still gives the true application bytes.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import dpkt
import numpy as np
import pandas as pd

from disaggsim.bounds import (
    HEADER_MINORITY,
    PCAP_FRACTION_LIMIT,
    check_declared,
    check_records,
)
from disaggsim.guards import open_regular
from disaggsim.traces.errors import TraceFormatError

PCAP_MAGIC_US: Final = 0xA1B2C3D4
PCAP_MAGIC_NS: Final = 0xA1B23C4D
PCAPNG_SHB: Final = 0x0A0D0D0A
LINKTYPE_ETHERNET: Final = 1
LINKTYPE_RAW: Final = 101
LINKTYPE_LINUX_SLL: Final = 113
LINKTYPE_IPV4: Final = 228
LINKTYPE_LINUX_SLL2: Final = 276
SUPPORTED_LINKTYPES: Final = (
    LINKTYPE_ETHERNET,
    LINKTYPE_RAW,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_IPV4,
    LINKTYPE_LINUX_SLL2,
)
LINKTYPE_NAMES: Final = {
    LINKTYPE_ETHERNET: "Ethernet",
    LINKTYPE_RAW: "raw IP",
    LINKTYPE_LINUX_SLL: "Linux cooked capture",
    LINKTYPE_IPV4: "raw IPv4",
    LINKTYPE_LINUX_SLL2: "Linux cooked capture v2",
}
ETHERTYPE_IPV4: Final = 0x0800
ETHERTYPE_VLAN: Final = (0x8100, 0x88A8)
IPPROTO_TCP: Final = 6
IPPROTO_UDP: Final = 17

#: Idle gap that ends a message on one connection direction: 500 µs, the flowlet
#: inactivity timeout of CONGA (Alizadeh et al., SIGCOMM'14, §3.4). A sender idle for longer
#: than ~10 datacenter RTTs has nothing in flight, so the next byte starts a new
#: application message. ``None`` keeps one message per connection direction, which is what
#: the original artifact's ``tcpdump2flow.py`` (NetSys/disaggregation, rmem/) did.
DEFAULT_IDLE_GAP_NS: Final = 500_000

_RECORD_HEADER_BYTES: Final = 16
_MAX_RECORD_BYTES: Final = 1 << 24  # far above any snaplen (262144 in tcpdump)


@dataclass(frozen=True)
class PacketTable:
    """IPv4 packets of one capture, one array element per packet (all arrays length N).

    Columns: ``ts_ns`` int64 (ns since the Unix epoch, the capture clock), ``src_ip``,
    ``dst_ip`` uint32 (host order, e.g. 10.0.0.1 -> 0x0A000001), ``ip_proto`` uint8,
    ``src_port``, ``dst_port`` uint16 (0 for non-TCP/UDP and non-first fragments),
    ``ip_total_len`` uint16, ``payload_bytes`` int64 (L4 payload), ``record_index`` int64
    (0-based index of the packet record in the file, non-IPv4 records included).
    ``truncated_tail_bytes``: bytes of a last record cut short and dropped (0 unless read
    with ``allow_truncated_tail``).
    """

    ts_ns: np.ndarray
    src_ip: np.ndarray
    dst_ip: np.ndarray
    ip_proto: np.ndarray
    src_port: np.ndarray
    dst_port: np.ndarray
    ip_total_len: np.ndarray
    payload_bytes: np.ndarray
    record_index: np.ndarray
    linktype: int
    n_records: int
    n_skipped: int
    source_file: str
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    #: Bytes dropped at the end of a capture cut mid-record (``allow_truncated_tail``).
    truncated_tail_bytes: int = 0

    def __len__(self) -> int:
        return int(self.ts_ns.shape[0])

    def to_frame(self) -> pd.DataFrame:
        """Return the packets as a DataFrame with the column names above."""
        return pd.DataFrame(
            {
                "ts_ns": self.ts_ns,
                "src_ip": self.src_ip,
                "dst_ip": self.dst_ip,
                "ip_proto": self.ip_proto,
                "src_port": self.src_port,
                "dst_port": self.dst_port,
                "ip_total_len": self.ip_total_len,
                "payload_bytes": self.payload_bytes,
                "record_index": self.record_index,
            }
        )


def ip_to_int(ip: str) -> int:
    """Dotted-quad IPv4 address -> uint32 in host order (``'10.0.0.1'`` -> ``0x0A000001``)."""
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
        raise ValueError(f"expected a dotted-quad IPv4 address, got {ip!r}")
    a, b, c, d = (int(p) for p in parts)
    return (a << 24) | (b << 16) | (c << 8) | d


def int_to_ip(value: int) -> str:
    """uint32 -> dotted-quad IPv4 address."""
    return ".".join(str((int(value) >> s) & 0xFF) for s in (24, 16, 8, 0))


class TruncatedCaptureWarning(UserWarning):
    """A capture cut mid-record was read up to its last complete record (what tcpdump
    and Wireshark do with a capture whose writer was killed)."""


def read_pcap(path: str | Path, *, allow_truncated_tail: bool = False) -> PacketTable:
    """Read a classic pcap or a pcapng file into a :class:`PacketTable`.

    The format is detected from the first four bytes. ``allow_truncated_tail`` keeps the
    complete records of a capture whose last record (pcap) or block (pcapng) is cut short
    (a capture killed mid-write), warns with :class:`TruncatedCaptureWarning` naming the
    file, the byte offset and the bytes dropped, and sets ``truncated_tail_bytes``;
    without it such a file is an error.

    Raises:
        TraceFormatError: unknown magic, unsupported link type, a record header or body
            running past the end of the file, an implausible record length, a malformed
            pcapng block, a Simple Packet Block (no timestamp) or timestamps beyond the
            int64 ns range (names the file and byte offset).
        FileNotFoundError: ``path`` does not exist.
    """
    p = Path(path)
    with open_regular(p, "a pcap or pcapng capture") as fh:
        size = os.fstat(fh.fileno()).st_size
        # One read into a padded buffer (the decoder reads fixed-width windows past a frame).
        padded = np.zeros(size + _WINDOW_BYTES, dtype=np.uint8)
        got = fh.readinto(padded.data[:size])
    if got != size:
        raise TraceFormatError(p, None, None, f"{size} bytes (the file changed while read)", got)
    data = padded.data[:size]
    if size < 4:
        raise TraceFormatError(p, "byte 0", "magic", "a pcap or pcapng file header", bytes(data))
    first = struct.unpack("<I", data[:4])[0]
    if first == PCAPNG_SHB:
        return _read_pcapng(p, allow_truncated_tail)
    return _read_classic(p, data, padded, allow_truncated_tail)


def _warn_truncated(p: Path, offset: int, size: int) -> None:
    warnings.warn(
        TruncatedCaptureWarning(
            f"{p}:byte {offset}: capture cut mid-record; kept the complete records before "
            f"it and dropped the last {size - offset} bytes"
        ),
        stacklevel=3,
    )


def _read_classic(
    p: Path, data: memoryview, buf: np.ndarray, allow_truncated_tail: bool
) -> PacketTable:
    if len(data) < 24:
        raise TraceFormatError(p, "byte 0", "file header", "24 bytes", f"{len(data)} bytes")
    magic_le = struct.unpack("<I", data[:4])[0]
    magic_be = struct.unpack(">I", data[:4])[0]
    if magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian, magic = "<", magic_le
    elif magic_be in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian, magic = ">", magic_be
    else:
        raise TraceFormatError(
            p, "byte 0", "magic", "0xa1b2c3d4 or 0xa1b23c4d (either byte order)", hex(magic_le)
        )
    _, _, _, _, snaplen, network = struct.unpack(endian + "HHiIII", data[4:24])
    linktype = network & 0x0FFFFFFF
    if linktype not in SUPPORTED_LINKTYPES:
        raise TraceFormatError(p, "byte 20", "linktype", f"one of {SUPPORTED_LINKTYPES}", linktype)
    first_ts_s = struct.unpack(endian + "I", data[24:28])[0] if len(data) >= 28 else 0
    hints = _ChainHints(
        snaplen=snaplen if 0 < snaplen <= _MAX_RECORD_BYTES else _MAX_RECORD_BYTES,
        frac_limit=1_000_000_000 if magic == PCAP_MAGIC_NS else 1_000_000,
        first_ts_s=first_ts_s,
    )
    offsets = _record_offsets(p, data, buf, endian, hints, allow_truncated_tail)
    end = (
        24
        if offsets.shape[0] == 0
        else int(offsets[-1])
        + 16
        + int(struct.unpack_from(endian + "I", data, int(offsets[-1]) + 8)[0])
    )
    if end < len(data):
        _warn_truncated(p, end, len(data))
    hdr = np.ascontiguousarray(_take(buf, offsets, 16)).view(endian + "u4")  # (n, 4)
    ts_sec = hdr[:, 0].astype(np.int64)
    ts_frac = hdr[:, 1].astype(np.int64)
    caplen = hdr[:, 2].astype(np.int64)
    orig_len = hdr[:, 3].astype(np.int64)
    records = np.arange(offsets.shape[0], dtype=np.int64)
    unit = "ns" if magic == PCAP_MAGIC_NS else "us"
    check_records(
        p,
        ts_frac >= PCAP_FRACTION_LIMIT[unit],
        ts_frac,
        offsets,
        "ts_frac",
        f"a sub-second field below {PCAP_FRACTION_LIMIT[unit]} ({unit} since the second, "
        "draft-ietf-opsawg-pcap §5)",
        record_word="byte",
        error=TraceFormatError,
    )
    if unit == "ns":
        _check_resolution(p, ts_sec, ts_frac)
    check_records(
        p,
        (caplen > orig_len) | ((snaplen > 0) & (caplen > snaplen)),
        caplen,
        offsets,
        "incl_len",
        f"a captured length <= the original length and the snapshot length {snaplen} "
        "(draft-ietf-opsawg-pcap §5)",
        record_word="byte",
        error=TraceFormatError,
    )
    frac_ns = 1 if magic == PCAP_MAGIC_NS else 1000
    ts_ns = ts_sec * 1_000_000_000 + ts_frac * frac_ns
    table = _decode_frames(
        p,
        buf,
        offsets + _RECORD_HEADER_BYTES,
        caplen,
        ts_ns,
        linktype,
        records,
        "byte 20",
        orig_len,
        offsets,
    )
    return dataclasses.replace(table, truncated_tail_bytes=len(data) - end)


#: Sequential walk of the first records (gives the mean record size for the chunking).
_PREFIX_RECORDS: Final = 4096
#: Chunk size of the parallel header walk, in mean records: the numpy loop runs about this
#: many steps over ~records/_CHAIN_RECORDS_PER_CHUNK chains at once.
_CHAIN_RECORDS_PER_CHUNK: Final = 2048
#: Resync search: candidates per round, bytes searched per chunk, headers per plausible chain.
_RESYNC_WIDTH: Final = 64
_RESYNC_SEARCH_BYTES: Final = 4096
_RESYNC_CHAIN: Final = 4
_RESYNC_SPAN_S: Final = 1 << 25  # ~1 year around the first record
_RESYNC_STEP_S: Final = 3600  # seconds between a chain's first and later headers


@dataclass(frozen=True)
class _ChainHints:
    """What a plausible record header looks like in this file (resync heuristics only)."""

    snaplen: int  # the file header's, or _MAX_RECORD_BYTES if it is 0 or larger
    frac_limit: int  # 10**6 (µs magic) or 10**9 (ns magic)
    first_ts_s: int  # seconds field of the first record


def _record_offsets(
    p: Path,
    data: memoryview,
    buf: np.ndarray,
    endian: str,
    hints: _ChainHints,
    allow_truncated_tail: bool,
    *,
    chunk_bytes: int | None = None,
    stats: dict[str, int] | None = None,
) -> np.ndarray:
    """Byte offsets of all record headers, walked chunk-parallel and verified exactly.

    The first ``_PREFIX_RECORDS`` records are walked in Python (they give the mean record
    size). The rest of the file up to one chunk before its end is cut into chunks of
    ``chunk_bytes`` (default ``_CHAIN_RECORDS_PER_CHUNK`` mean records); each chunk's chain
    starts at its resync offset (:func:`_resync_offsets`) and all chains advance together in
    numpy. A chunk is accepted only if the true chain (known up to the end of the previous
    chunk) lands exactly on its resync offset, so by induction from the file header every
    accepted offset is on the true chain; any other chunk is walked again sequentially from
    the true landing point. The file's last chunk is always walked sequentially, which keeps
    the sequential reader's errors (byte offset, field) for truncated or garbage files.
    ``stats`` (if given) receives ``chunks`` and ``rewalked`` (chunks walked sequentially).
    """
    n = len(data)
    offsets, off = _walk_records(p, data, endian, 24, n, _PREFIX_RECORDS)
    pieces = [np.asarray(offsets, dtype=np.int64)]
    if offsets and off < n:
        mean = (off - 24) / len(offsets)
        chunk = chunk_bytes or max(4096, int(mean * _CHAIN_RECORDS_PER_CHUNK))
        chunk = min(chunk, _MAX_RECORD_BYTES)  # so a bad length always ends its chunk's chain
        n_chunks = (n - 16 - off) // chunk
        if n_chunks >= 2:
            max_steps = 4 * int(chunk / mean) + 64
            chained, off, rewalked = _chain_walk(
                p, data, buf, endian, hints, off, chunk, n_chunks, max_steps
            )
            pieces.append(chained)
            if stats is not None:
                stats.update(chunks=n_chunks, rewalked=rewalked)
    tail, off = _walk_records(p, data, endian, off, n, None)
    pieces.append(np.asarray(tail, dtype=np.int64))
    out = np.concatenate(pieces)
    if off != n and not allow_truncated_tail:
        raise TraceFormatError(
            p,
            f"byte {out[-1] if off > n else off}",
            "record",
            "a complete record (the file ends inside a record)",
        )
    return out[:-1] if off > n else out


def _walk_records(
    p: Path, data: memoryview, endian: str, off: int, stop: int, max_records: int | None
) -> tuple[list[int], int]:
    """Sequential header walk from the true header at ``off`` while ``off < stop`` (and a
    whole header fits in the file), at most ``max_records``. Returns (offsets, next offset).
    """
    incl_at = struct.Struct(endian + "8xI").unpack_from  # incl_len: bytes 8-11 of the header
    max_record = _MAX_RECORD_BYTES
    stop = min(stop, len(data) - 15)
    out: list[int] = []
    append = out.append
    budget = -1 if max_records is None else max_records
    while off < stop and budget != 0:
        incl = incl_at(data, off)[0]
        if incl > max_record:
            raise TraceFormatError(
                p, f"byte {off}", "incl_len", f"a record length <= {max_record}", incl
            )
        append(off)
        off += 16 + incl
        budget -= 1
    return out, off


def _words(buf: np.ndarray, endian: str) -> np.ndarray:
    """uint32 at every byte position of ``buf`` (an unaligned, stride-1 view; no copy)."""
    return np.ndarray((buf.shape[0] - 3,), dtype=endian + "u4", buffer=buf, strides=(1,))


def _resync_offsets(
    words: np.ndarray, starts: np.ndarray, stops: np.ndarray, hints: _ChainHints, n: int
) -> np.ndarray:
    """First offset in ``[starts[k], stops[k])`` that looks like a record header and begins a
    plausible chain of ``_RESYNC_CHAIN`` headers, or -1 if none within ``_RESYNC_SEARCH_BYTES``.

    A false match (payload bytes that look like a header chain) costs speed only: the chunk
    then fails the exact landing check of :func:`_chain_walk` and is walked sequentially.
    """
    found = np.full(starts.shape[0], -1, dtype=np.int64)
    todo = np.arange(starts.shape[0])
    cols = np.arange(_RESYNC_WIDTH, dtype=np.int64)
    for base in range(0, _RESYNC_SEARCH_BYTES, _RESYNC_WIDTH):
        first = starts[todo] + base
        q = first[:, None] + cols  # (chunks, width) candidate offsets
        inside = q < stops[todo, None]
        q = np.where(inside, q, first[:, None])
        row, col = np.nonzero(inside & _plausible(words, q, hints))  # row-major order
        cand = q[row, col]
        ts0 = words[cand].astype(np.int64)
        chained = np.ones(cand.shape[0], dtype=bool)
        for _ in range(_RESYNC_CHAIN - 1):
            nxt = cand + 16 + words[cand + 8]
            cand = np.where(nxt <= n - 16, nxt, cand)  # a chain reaching the end stays ok
            chained &= _plausible(words, cand, hints)
            chained &= np.abs(words[cand].astype(np.int64) - ts0) <= _RESYNC_STEP_S
        hit_rows, first_hit = np.unique(row[chained], return_index=True)
        found[todo[hit_rows]] = first[hit_rows] + col[chained][first_hit]
        left = np.ones(todo.shape[0], dtype=bool)
        left[hit_rows] = False
        todo = todo[left & (first + _RESYNC_WIDTH < stops[todo])]
        if todo.shape[0] == 0:
            break
    return found


def _plausible(words: np.ndarray, q: np.ndarray, hints: _ChainHints) -> np.ndarray:
    """Whether the 16 bytes at each offset ``q`` could be a record header of this file:
    sub-second field below ``frac_limit``, ``incl_len <= snaplen``, ``incl_len <= orig_len``,
    seconds within ``_RESYNC_SPAN_S`` of the first record's."""
    incl = words[q + 8]
    return (
        (words[q + 4] < hints.frac_limit)
        & (incl <= hints.snaplen)
        & (incl <= words[q + 12])
        & (np.abs(words[q].astype(np.int64) - hints.first_ts_s) <= _RESYNC_SPAN_S)
    )


def _chain_walk(
    p: Path,
    data: memoryview,
    buf: np.ndarray,
    endian: str,
    hints: _ChainHints,
    start: int,
    chunk: int,
    n_chunks: int,
    max_steps: int,
) -> tuple[np.ndarray, int, int]:
    """Record offsets in ``[start, start + n_chunks * chunk)`` (``start`` a true header), the
    true offset of the first record at or after that end, and the number of chunks walked
    sequentially (wrong resync, a bad length, or no end within ``max_steps`` steps).
    See :func:`_record_offsets`.
    """
    words = _words(buf, endian)
    n = len(data)
    bounds = start + chunk * np.arange(n_chunks + 1, dtype=np.int64)
    ends = bounds[1:]
    resync = np.empty(n_chunks, dtype=np.int64)
    resync[0] = start
    resync[1:] = _resync_offsets(words, bounds[1:-1], ends[1:], hints, n)
    failed = resync < 0
    # All chains step together, one row of ``trail`` per step. A chain past its chunk end
    # keeps stepping (its extra offsets are masked out below); offsets are clamped at the
    # file end, where reads hit the buffer's zero padding.
    cur = np.where(failed, ends, resync)
    trail = np.empty((max_steps, n_chunks), dtype=np.int64)
    steps = 0
    while steps < max_steps:
        trail[steps] = cur
        np.minimum(cur + 16 + words[cur + 8], n, out=cur)
        steps += 1
        if steps % 8 == 0 and (cur >= ends).all():
            break
    failed |= cur < ends  # did not reach its end within max_steps: walk it sequentially
    trail = trail[:steps]
    inside = trail < ends
    counts = inside.sum(axis=0)
    chunk_ids = np.arange(n_chunks)
    last = trail[np.maximum(counts - 1, 0), chunk_ids]
    last_incl = words[last + 8].astype(np.int64)
    landing = np.where(counts > 0, last + 16 + last_incl, resync)  # exact, unclamped
    failed |= last_incl > _MAX_RECORD_BYTES
    flat = trail.T[inside.T]
    first = np.zeros(n_chunks + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    verified = ~failed
    verified[1:] &= landing[:-1] == resync[1:]
    if verified.all():
        return flat, int(landing[-1]), 0
    # Some chain started off the true one (or met a bad length): re-walk those chunks.
    pieces: list[np.ndarray] = []
    true_landing = start
    rewalked = 0
    for k in range(n_chunks):
        if resync[k] == true_landing and not failed[k]:
            pieces.append(flat[first[k] : first[k + 1]])
            true_landing = int(landing[k])
        else:
            offs, true_landing = _walk_records(p, data, endian, true_landing, int(ends[k]), None)
            pieces.append(np.asarray(offs, dtype=np.int64))
            rewalked += 1
    return np.concatenate(pieces), true_landing, rewalked


#: Padding appended to the frame buffer so that every fixed-width read stays inside it.
_WINDOW_BYTES: Final = 96
_CHUNK_FRAMES: Final = 1 << 20


def _take(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each position as an (n, width) uint8 matrix.

    Rows of a sliding-window view: one contiguous copy per frame instead of one gather per
    field, which is what makes the decoder fast. ``buf`` carries ``_WINDOW_BYTES`` of
    padding at its end, so every read stays inside it.
    """
    return np.lib.stride_tricks.sliding_window_view(buf, width)[pos]


def _be16(a: np.ndarray, col: int) -> np.ndarray:
    return (a[:, col].astype(np.uint32) << 8) | a[:, col + 1]


def _be32(a: np.ndarray, col: int) -> np.ndarray:
    return (_be16(a, col) << 16) | _be16(a, col + 2)


#: Distinct seconds the records must span before their sub-second fields can overrule the
#: header's resolution (a burst inside one millisecond is no evidence).
_RESOLUTION_MIN_SECONDS: Final = 8


def _check_resolution(p: Path, ts_sec: np.ndarray, ts_frac: np.ndarray) -> None:
    """Header versus content (issue #21, class 6): a ns-magic capture whose sub-second
    fields are almost all below 10**6 holds µs values (a writer that put the wrong magic):
    read as ns, every packet would move back by up to a second within its second.

    Only records with a non-zero field count (0 reads the same in both units); uniform
    ns fields are below 10**6 with probability 10**-3 each, so the header is refused when
    at most half of them are at or above 10**6 and at least 90 % below, over at least
    :data:`_RESOLUTION_MIN_SECONDS` distinct seconds (``disaggsim.bounds.check_declared``).
    """
    nonzero = ts_frac > 0
    if np.unique(ts_sec[nonzero]).shape[0] < _RESOLUTION_MIN_SECONDS:
        return
    below = int(np.count_nonzero(ts_frac[nonzero] < PCAP_FRACTION_LIMIT["us"]))
    total = int(np.count_nonzero(nonzero))
    check_declared(
        p,
        "byte 0",
        "magic",
        PCAP_MAGIC_NS,
        {PCAP_MAGIC_NS: total - below, PCAP_MAGIC_US: below},
        total,
        {
            PCAP_MAGIC_NS: "ns timestamps: sub-second fields up to 10**9",
            PCAP_MAGIC_US: "µs timestamps: sub-second fields below 10**6",
        },
        error=TraceFormatError,
    )


def _decode_frames(
    p: Path,
    buf: np.ndarray,
    data_off: np.ndarray,
    caplen: np.ndarray,
    ts_ns: np.ndarray,
    linktype: int,
    record_index: np.ndarray,
    linktype_at: str,
    orig_len: np.ndarray,
    record_at: np.ndarray,
) -> PacketTable:
    """Decode link/IPv4/TCP/UDP headers of all frames (vectorised, in chunks).

    Checks the header against the frames (``disaggsim.bounds.check_declared``: the link
    type must decode the frames) and each IPv4 packet against its frame (its total length
    fits the frame's original length, ``disaggsim.bounds``); ``linktype_at`` locates the
    link type field and ``record_at`` each record (byte offsets) for the messages.
    """
    n = data_off.shape[0]
    parts = [
        _decode_chunk(buf, data_off[i : i + _CHUNK_FRAMES], caplen[i : i + _CHUNK_FRAMES], linktype)
        for i in range(0, n, _CHUNK_FRAMES)
    ] or [_decode_chunk(buf, data_off, caplen, linktype)]
    keep = np.concatenate([pt["keep"] for pt in parts])
    idx = np.flatnonzero(keep)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([pt[name][pt["keep"]] for pt in parts])

    reasons = {
        k: int(sum(int(pt[k]) for pt in parts))
        for k in ("not_ipv4", "truncated_headers", "bad_lengths")
    }
    if n - reasons["not_ipv4"] <= HEADER_MINORITY * n:
        m = min(n, _CHUNK_FRAMES)
        explained = {
            lt: m - int(_decode_chunk(buf, data_off[:m], caplen[:m], lt)["not_ipv4"])
            for lt in SUPPORTED_LINKTYPES
        }
        check_declared(
            p,
            linktype_at,
            "linktype",
            linktype,
            explained,
            m,
            LINKTYPE_NAMES,
            error=TraceFormatError,
        )
    l3_end = np.concatenate([pt["l3"] + pt["total_len"] for pt in parts])
    check_records(
        p,
        keep & (l3_end > orig_len),
        l3_end - np.concatenate([pt["l3"] for pt in parts]),
        record_at,
        "ip_total_len",
        "an IPv4 packet that fits its frame: link header + total length <= the frame's "
        "original length (RFC 791 §3.1, disaggsim.bounds)",
        record_word="byte",
        error=TraceFormatError,
    )
    return PacketTable(
        ts_ns=ts_ns[idx],
        src_ip=cat("src_ip").astype(np.uint32),
        dst_ip=cat("dst_ip").astype(np.uint32),
        ip_proto=cat("proto").astype(np.uint8),
        src_port=cat("src_port").astype(np.uint16),
        dst_port=cat("dst_port").astype(np.uint16),
        ip_total_len=cat("total_len").astype(np.uint16),
        payload_bytes=cat("payload").astype(np.int64),
        record_index=record_index[idx],
        linktype=linktype,
        n_records=n,
        n_skipped=n - idx.shape[0],
        source_file=str(p),
        skipped_reasons=reasons,
    )


def _decode_chunk(
    buf: np.ndarray, data_off: np.ndarray, caplen: np.ndarray, linktype: int
) -> dict[str, np.ndarray]:
    n = data_off.shape[0]
    if linktype == LINKTYPE_ETHERNET:
        eth = _take(buf, data_off + 12, 10)  # ethertype and up to two 4-byte VLAN tags
        ethertype = _be16(eth, 0)
        l3 = np.full(n, 14, dtype=np.int64)
        tag1 = np.isin(ethertype, ETHERTYPE_VLAN)
        ethertype = np.where(tag1, _be16(eth, 4), ethertype)
        l3 += 4 * tag1
        tag2 = tag1 & np.isin(ethertype, ETHERTYPE_VLAN)
        ethertype = np.where(tag2, _be16(eth, 8), ethertype)
        l3 += 4 * tag2
        is_ip = (ethertype == ETHERTYPE_IPV4) & (caplen >= l3)
    elif linktype == LINKTYPE_LINUX_SLL:
        is_ip = (_be16(_take(buf, data_off + 14, 2), 0) == ETHERTYPE_IPV4) & (caplen >= 16)
        l3 = np.full(n, 16, dtype=np.int64)
    elif linktype == LINKTYPE_LINUX_SLL2:
        is_ip = (_be16(_take(buf, data_off, 2), 0) == ETHERTYPE_IPV4) & (caplen >= 20)
        l3 = np.full(n, 20, dtype=np.int64)
    else:  # raw IP / raw IPv4: the frame starts with the IP header
        is_ip = np.ones(n, dtype=bool)
        l3 = np.zeros(n, dtype=np.int64)
    ip = _take(buf, data_off + l3, 20)  # the fixed IPv4 header
    l3_avail = caplen - l3
    b0 = ip[:, 0].astype(np.int64)
    ihl = (b0 & 0x0F) * 4
    is_ip &= ((b0 >> 4) == 4) & (ihl >= 20) & (l3_avail >= ihl)
    total_len = _be16(ip, 2).astype(np.int64)
    proto = ip[:, 9]
    first_frag = (_be16(ip, 6) & 0x1FFF) == 0
    l4 = _take(buf, data_off + l3 + np.where(is_ip, ihl, 0), 14)  # ports .. TCP data offset
    is_tcp = is_ip & (proto == IPPROTO_TCP) & first_frag
    is_udp = is_ip & (proto == IPPROTO_UDP) & first_frag
    tcp_hdr = (l4[:, 12].astype(np.int64) >> 4) * 4
    l4_needed = np.where(is_tcp, ihl + 13, np.where(is_udp, ihl + 8, ihl))
    truncated = is_ip & (l3_avail < l4_needed)
    l4_hdr = np.where(is_tcp, tcp_hdr, np.where(is_udp, 8, 0))
    payload = total_len - ihl - l4_hdr
    bad_len = is_ip & ~truncated & ((payload < 0) | (is_tcp & (tcp_hdr < 20)))
    keep = is_ip & ~truncated & ~bad_len
    has_ports = (is_tcp | is_udp) & keep
    return {
        "keep": keep,
        "src_ip": _be32(ip, 12),
        "dst_ip": _be32(ip, 16),
        "proto": proto,
        "src_port": np.where(has_ports, _be16(l4, 0), 0),
        "dst_port": np.where(has_ports, _be16(l4, 2), 0),
        "total_len": total_len,
        "payload": payload,
        "l3": l3,
        "not_ipv4": np.asarray(n - np.count_nonzero(is_ip)),
        "truncated_headers": np.asarray(np.count_nonzero(truncated)),
        "bad_lengths": np.asarray(np.count_nonzero(bad_len)),
    }


#: dpkt's errors for a block it cannot unpack, and Python's for the same from struct/bytes.
_DPKT_ERRORS: Final = (dpkt.Error, ValueError, struct.error, IndexError, TypeError)
PCAPNG_BT_SPB: Final = 3


def _read_pcapng(p: Path, allow_truncated_tail: bool = False) -> PacketTable:
    """pcapng via dpkt: dpkt parses the SHB and first IDB, then each EPB/PB block.

    Every block's framing (type, total length, trailing length) is checked here with its
    byte offset; dpkt's unpacking errors become TraceFormatError at that offset.
    """
    truncated_at: int | None = None
    with open_regular(p, "a pcapng capture") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(12)
        little = head[8:12] == b"\x4d\x3c\x2b\x1a"
        f.seek(0)
        try:
            reader = dpkt.pcapng.Reader(f)
        except _DPKT_ERRORS as exc:
            raise TraceFormatError(
                p, "byte 0", "section header", "a pcapng SHB and IDB", str(exc) or repr(exc)
            ) from None
        idb_at = f"byte {struct.unpack(('<' if little else '>') + 'I', head[4:8])[0]}"
        linktype = int(reader.datalink())
        if linktype not in SUPPORTED_LINKTYPES:
            raise TraceFormatError(p, idb_at, "linktype", f"one of {SUPPORTED_LINKTYPES}", linktype)
        units_per_s, offset_s = _pcapng_time_base(p, idb_at, reader.idb, little)
        endian = "<" if little else ">"
        epb_cls = dpkt.pcapng.EnhancedPacketBlockLE if little else dpkt.pcapng.EnhancedPacketBlock
        pb_cls = dpkt.pcapng.PacketBlockLE if little else dpkt.pcapng.PacketBlock
        frames: list[bytes] = []
        orig_lens: list[int] = []
        ts_units: list[int] = []
        block_pos: list[int] = []
        while True:
            pos = f.tell()
            hdr = f.read(8)
            if not hdr:
                break
            if len(hdr) < 8:
                if allow_truncated_tail:
                    truncated_at = pos
                    break
                raise TraceFormatError(p, f"byte {pos}", "block", "an 8-byte block header")
            blk_type, blk_len = struct.unpack(endian + "II", hdr)
            if blk_len < 12 or blk_len % 4:
                raise TraceFormatError(
                    p, f"byte {pos}", "block_total_length", "a multiple of 4 >= 12", blk_len
                )
            if blk_len - 8 > size - pos - 8:  # do not read a bogus length's worth of memory
                if allow_truncated_tail:
                    truncated_at = pos
                    break
                raise TraceFormatError(
                    p, f"byte {pos}", "block", "a complete block (file ends inside it)"
                )
            body = f.read(blk_len - 8)
            trailer = struct.unpack(endian + "I", body[-4:])[0]
            if trailer != blk_len:
                raise TraceFormatError(
                    p,
                    f"byte {pos + blk_len - 4}",
                    "block_total_length (trailing)",
                    f"{blk_len}, the leading length of the block at byte {pos}",
                    trailer,
                )
            if blk_type in (dpkt.pcapng.PCAPNG_BT_EPB, dpkt.pcapng.PCAPNG_BT_PB):
                try:
                    blk = (epb_cls if blk_type == dpkt.pcapng.PCAPNG_BT_EPB else pb_cls)(hdr + body)
                except _DPKT_ERRORS as exc:
                    raise TraceFormatError(
                        p,
                        f"byte {pos}",
                        "packet block",
                        "a well-formed packet block",
                        str(exc) or type(exc).__name__,
                    ) from None
                if blk_type == dpkt.pcapng.PCAPNG_BT_EPB and blk.iface_id != 0:
                    raise TraceFormatError(
                        p, f"byte {pos}", "interface_id", "0 (one interface per file)", blk.iface_id
                    )
            elif blk_type == PCAPNG_BT_SPB:
                raise TraceFormatError(
                    p,
                    f"byte {pos}",
                    "block",
                    "Enhanced Packet Blocks (this is a Simple Packet Block, which has no "
                    "timestamp, so its packet cannot be placed in time; re-capture without "
                    "it or convert the file with `editcap`)",
                )
            elif blk_type == dpkt.pcapng.PCAPNG_BT_IDB:
                raise TraceFormatError(
                    p, f"byte {pos}", "block", "a single interface description block"
                )
            elif blk_type == PCAPNG_SHB:
                raise TraceFormatError(p, f"byte {pos}", "block", "a single section")
            else:
                continue  # name resolution, statistics, custom blocks
            frames.append(bytes(blk.pkt_data))
            orig_lens.append(max(int(blk.pkt_len), len(blk.pkt_data)))
            ts_units.append((blk.ts_high << 32) | blk.ts_low)
            block_pos.append(pos)
    if truncated_at is not None:
        _warn_truncated(p, truncated_at, size)
    lengths = np.fromiter((len(fr) for fr in frames), dtype=np.int64, count=len(frames))
    data_off = np.zeros(len(frames), dtype=np.int64)
    if len(frames) > 1:
        data_off[1:] = np.cumsum(lengths)[:-1]
    buf = np.frombuffer(b"".join(frames) + bytes(_WINDOW_BYTES), dtype=np.uint8)
    ts_ns = _pcapng_ts_ns(p, ts_units, block_pos, units_per_s, offset_s)
    table = _decode_frames(
        p,
        buf,
        data_off,
        lengths,
        ts_ns,
        linktype,
        np.arange(len(frames), dtype=np.int64),
        idb_at,
        np.asarray(orig_lens, dtype=np.int64),
        np.asarray(block_pos, dtype=np.int64),
    )
    if truncated_at is not None:
        table = dataclasses.replace(table, truncated_tail_bytes=size - truncated_at)
    return table


_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _pcapng_ts_ns(
    p: Path, ts_units: list[int], block_pos: list[int], units_per_s: int, offset_s: int
) -> np.ndarray:
    """Timestamps in int64 ns since the epoch: ``(units // units_per_s + offset_s) * 1e9 +
    (units % units_per_s) * 1e9 // units_per_s``, exact.

    Raises:
        TraceFormatError: a timestamp (with ``if_tsoffset``) outside the int64 ns range
            (years 1677-2262), naming the packet block's byte offset.
    """
    if not ts_units:
        return np.zeros(0, dtype=np.int64)

    def exact(u: int) -> int:
        sec, rem = divmod(u, units_per_s)
        return (sec + offset_s) * 1_000_000_000 + rem * 1_000_000_000 // units_per_s

    # exact() is non-decreasing in u: checking the extremes bounds every packet.
    for u in (min(ts_units), max(ts_units)):
        ns = exact(u)
        if not _INT64_MIN <= ns <= _INT64_MAX:
            raise TraceFormatError(
                p,
                f"byte {block_pos[ts_units.index(u)]}",
                "timestamp",
                "a time within the int64 ns range (years 1677-2262) after adding the "
                f"interface's if_tsoffset of {offset_s} s",
                f"{u} units of 1/{units_per_s} s",
            )
    if units_per_s > 1_000_000_000:  # finer than ns: rem * 1e9 could overflow int64
        return np.fromiter((exact(u) for u in ts_units), dtype=np.int64, count=len(ts_units))
    units = np.asarray(ts_units, dtype=np.uint64)
    sec = (units // np.uint64(units_per_s)).astype(np.int64)
    rem = (units % np.uint64(units_per_s)).astype(np.int64)
    return (sec + offset_s) * 1_000_000_000 + rem * 1_000_000_000 // units_per_s


def _pcapng_time_base(
    p: Path, idb_at: str, idb: dpkt.pcapng.InterfaceDescriptionBlock, little: bool
) -> tuple[int, int]:
    """(units per second, offset in s) from ``if_tsresol`` (9) and ``if_tsoffset`` (14).

    Raises:
        TraceFormatError: an option too short for its value, or a resolution finer than
            2^-64 / 10^-19 s (more units per second than a uint64 timestamp can count).
    """
    units_per_s, offset_s = 1_000_000, 0  # pcapng default resolution: µs
    for opt in idb.opts:
        if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL:
            if len(opt.data) < 1:
                raise TraceFormatError(p, idb_at, "if_tsresol", "a 1-byte option", bytes(opt.data))
            v = opt.data[0]
            units_per_s = 2 ** (v & 0x7F) if v & 0x80 else 10 ** (v & 0x7F)
            if units_per_s > 2**64:
                raise TraceFormatError(
                    p, idb_at, "if_tsresol", "a resolution of at most 2^64 or 10^19 units/s", v
                )
        elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET:
            if len(opt.data) < 8:
                raise TraceFormatError(
                    p, idb_at, "if_tsoffset", "an 8-byte signed offset", bytes(opt.data)
                )
            offset_s = struct.unpack("<q" if little else ">q", opt.data[:8])[0]
    return units_per_s, offset_s


def network_messages(
    packets: PacketTable,
    node_of_ip: dict[int, int],
    idle_gap_ns: int | None = DEFAULT_IDLE_GAP_NS,
) -> pd.DataFrame:
    """Split the payload bytes of each connection direction into messages at idle gaps.

    A connection direction is the 5-tuple (src_ip, dst_ip, ip_proto, src_port, dst_port).
    Packets with no payload (pure ACKs, SYN/FIN) are dropped, as are packets whose source
    or destination IP is not in ``node_of_ip`` (uint32 IP -> node) and packets between two
    IPs of the same node. Within a direction, a packet more than ``idle_gap_ns`` after the
    previous one starts a new message (``None``: one message per direction).

    Returns a DataFrame sorted by ``start_ns`` with columns ``start_ns``, ``end_ns`` (first
    and last packet timestamps, capture clock), ``src_node``, ``dst_node``, ``src_ip``,
    ``dst_ip``, ``ip_proto``, ``src_port``, ``dst_port``, ``size_bytes`` (sum of payload
    bytes; TCP retransmissions count again, the capture cannot tell them from new data
    without sequence numbers), ``n_packets`` and ``source_record`` (record index of the
    message's first packet).
    """
    keys = np.array(sorted(node_of_ip), dtype=np.uint32)
    nodes = np.array([node_of_ip[int(k)] for k in keys], dtype=np.int64)

    def lookup(ips: np.ndarray) -> np.ndarray:
        if keys.shape[0] == 0:
            return np.full(ips.shape[0], -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, ips), keys.shape[0] - 1)
        return np.where(keys[pos] == ips, nodes[pos], -1)

    src_node = lookup(packets.src_ip)
    dst_node = lookup(packets.dst_ip)
    keep = (src_node >= 0) & (dst_node >= 0) & (src_node != dst_node) & (packets.payload_bytes > 0)
    idx = np.flatnonzero(keep)
    columns = [
        "start_ns",
        "end_ns",
        "src_node",
        "dst_node",
        "src_ip",
        "dst_ip",
        "ip_proto",
        "src_port",
        "dst_port",
        "size_bytes",
        "n_packets",
        "source_record",
    ]
    if idx.shape[0] == 0:
        return pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in columns})
    ts = packets.ts_ns[idx]
    sip, dip = packets.src_ip[idx], packets.dst_ip[idx]
    proto, sport, dport = packets.ip_proto[idx], packets.src_port[idx], packets.dst_port[idx]
    order = np.lexsort((np.arange(idx.shape[0]), ts, dport, sport, proto, dip, sip))
    ts, sip, dip = ts[order], sip[order], dip[order]
    proto, sport, dport = proto[order], sport[order], dport[order]
    payload = packets.payload_bytes[idx][order]
    rec = packets.record_index[idx][order]
    snode, dnode = src_node[idx][order], dst_node[idx][order]
    new_conn = np.ones(ts.shape[0], dtype=bool)
    new_conn[1:] = (
        (sip[1:] != sip[:-1])
        | (dip[1:] != dip[:-1])
        | (proto[1:] != proto[:-1])
        | (sport[1:] != sport[:-1])
        | (dport[1:] != dport[:-1])
    )
    new_msg = new_conn.copy()
    if idle_gap_ns is not None:
        new_msg[1:] |= (ts[1:] - ts[:-1]) > idle_gap_ns
    starts = np.flatnonzero(new_msg)
    ends = np.r_[starts[1:], ts.shape[0]] - 1
    out = pd.DataFrame(
        {
            "start_ns": ts[starts],
            "end_ns": ts[ends],
            "src_node": snode[starts],
            "dst_node": dnode[starts],
            "src_ip": sip[starts],
            "dst_ip": dip[starts],
            "ip_proto": proto[starts],
            "src_port": sport[starts],
            "dst_port": dport[starts],
            "size_bytes": np.add.reduceat(payload, starts),
            "n_packets": np.diff(np.r_[starts, ts.shape[0]]),
            "source_record": rec[starts],
        }
    )
    return out.sort_values(["start_ns", "source_record"], kind="stable").reset_index(drop=True)
