"""pcap/pcapng reader and message splitting, checked against tcpdump's own decoding.

Fixtures (tests/fixtures/traces/README.md): real loopback captures of
``loopback_traffic.py`` and the text tcpdump printed for each of them (the oracle).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from disaggsim.traces import pcap
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.pcap import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    int_to_ip,
    ip_to_int,
    network_messages,
    read_pcap,
)

FIX = Path(__file__).parent / "fixtures" / "traces"
NODE_OF_IP = {ip_to_int("127.0.0.1"): 0, ip_to_int("127.0.0.2"): 1}
# loopback_traffic.py: TCP requests 1->2, responses 2->1, UDP datagrams 1->2 (bytes).
REQUESTS, RESPONSES, DATAGRAMS = [100, 3000, 20000], [30000, 1000, 7], [10, 200, 1400]

_LINE = re.compile(
    r"^(?P<sec>\d+)\.(?P<frac>\d+) (?:lo\s+\w+\s+)?IP (?P<src>[\d.]+)\.(?P<sport>\d+) > "
    r"(?P<dst>[\d.]+)\.(?P<dport>\d+): (?P<rest>.*)$"
)


def tcpdump_oracle(name: str) -> list[tuple[int, str, int, str, int, int]]:
    """(ts_ns, src, sport, dst, dport, payload) per packet from tcpdump's text output."""
    out = []
    for line in (FIX / name).read_text().splitlines():
        m = _LINE.match(line)
        assert m, line
        frac = m["frac"]
        ts_ns = int(m["sec"]) * 10**9 + int(frac) * 10 ** (9 - len(frac))
        length = int(re.search(r"length (\d+)", m["rest"])[1])  # type: ignore[index]
        out.append((ts_ns, m["src"], int(m["sport"]), m["dst"], int(m["dport"]), length))
    return out


@pytest.mark.parametrize(
    ("pcap", "oracle", "linktype"),
    [
        ("lo_us.pcap", "lo_us.tcpdump.txt", LINKTYPE_ETHERNET),
        ("lo_ns.pcap", "lo_ns.tcpdump.txt", LINKTYPE_ETHERNET),
        ("lo.pcapng", "lo_ns.tcpdump.txt", LINKTYPE_ETHERNET),
        ("lo_be.pcap", "lo_us.tcpdump.txt", LINKTYPE_ETHERNET),
        ("lo_raw.pcap", "lo_us.tcpdump.txt", LINKTYPE_IPV4),
        ("any_sll2.pcap", "any_sll2.tcpdump.txt", LINKTYPE_LINUX_SLL2),
        ("any_sll.pcap", "any_sll.tcpdump.txt", LINKTYPE_LINUX_SLL),
    ],
)
def test_read_pcap_matches_tcpdump(pcap: str, oracle: str, linktype: int) -> None:
    table = read_pcap(FIX / pcap)
    expected = tcpdump_oracle(oracle)
    assert table.linktype == linktype
    assert len(table) == len(expected) == table.n_records == 17
    assert table.n_skipped == 0
    for i, (ts_ns, src, sport, dst, dport, length) in enumerate(expected):
        assert table.ts_ns[i] == ts_ns
        assert int_to_ip(table.src_ip[i]) == src and int_to_ip(table.dst_ip[i]) == dst
        assert (table.src_port[i], table.dst_port[i]) == (sport, dport)
        assert table.payload_bytes[i] == length  # tcpdump prints the L4 payload length
    assert table.record_index.tolist() == list(range(17))


def test_snaplen_truncated_capture_still_gives_true_payload() -> None:
    # any_sll.pcap was captured with -s 80: 30000 B of payload in an 80 B record.
    table = read_pcap(FIX / "any_sll.pcap")
    assert table.payload_bytes.max() == 30000
    assert (FIX / "any_sll.pcap").stat().st_size < 2000


def test_ip_total_len_is_payload_plus_headers() -> None:
    table = read_pcap(FIX / "lo_us.pcap")
    udp = table.ip_proto == 17
    assert (table.ip_total_len[udp].astype(int) == table.payload_bytes[udp] + 20 + 8).all()
    tcp = np.flatnonzero(table.ip_proto == 6)
    # SYN and SYN-ACK carry 20 B of options (mss, sackOK, TS, wscale): 20 + 40 B of headers;
    # every later segment a 12 B timestamp option: 20 + 32 B.
    hdr = table.ip_total_len[tcp].astype(int) - table.payload_bytes[tcp]
    assert hdr.tolist() == [60, 60] + [52] * (len(tcp) - 2)


def test_network_messages_one_per_send() -> None:
    msgs = network_messages(read_pcap(FIX / "lo_ns.pcap"), NODE_OF_IP)
    expected = []
    for req, resp in zip(REQUESTS, RESPONSES, strict=True):
        expected += [(0, 1, req), (1, 0, resp)]
    expected += [(0, 1, d) for d in DATAGRAMS]
    got = list(zip(msgs["src_node"], msgs["dst_node"], msgs["size_bytes"], strict=True))
    assert got == expected
    assert (msgs["n_packets"] == 1).all()  # lo's 64 KiB MTU: each send is one segment
    assert msgs["ip_proto"].tolist() == [6] * 6 + [17] * 3
    assert msgs["start_ns"].is_monotonic_increasing


def test_network_messages_without_gap_is_one_per_direction() -> None:
    msgs = network_messages(read_pcap(FIX / "lo_us.pcap"), NODE_OF_IP, idle_gap_ns=None)
    by_dir = {(r.src_node, r.dst_node, r.ip_proto): r.size_bytes for r in msgs.itertuples()}
    assert by_dir == {
        (0, 1, 6): sum(REQUESTS),
        (1, 0, 6): sum(RESPONSES),
        (0, 1, 17): sum(DATAGRAMS),
    }


def test_network_messages_gap_boundary() -> None:
    table = read_pcap(FIX / "lo_ns.pcap")
    udp = table.ip_proto == 17
    gaps = np.diff(table.ts_ns[udp])  # two gaps between the three datagrams
    # A gap equal to idle_gap_ns does not split; one ns less does.
    small = int(gaps.min())
    msgs = network_messages(table, NODE_OF_IP, idle_gap_ns=small)
    assert (msgs["ip_proto"] == 17).sum() == 2  # only the larger gap splits
    msgs = network_messages(table, NODE_OF_IP, idle_gap_ns=small - 1)
    assert (msgs["ip_proto"] == 17).sum() == 3


def test_unknown_ips_and_same_node_are_dropped() -> None:
    table = read_pcap(FIX / "lo_us.pcap")
    assert len(network_messages(table, {ip_to_int("127.0.0.1"): 0})) == 0
    same = {ip_to_int("127.0.0.1"): 0, ip_to_int("127.0.0.2"): 0}
    assert len(network_messages(table, same)) == 0


def _rewrite(path: Path, frames: list[bytes], linktype: int = 1) -> None:
    body = b"".join(struct.pack("<IIII", 1, 2, len(f), len(f)) + f for f in frames)
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype) + body)


def _frames(name: str) -> list[bytes]:
    data = (FIX / name).read_bytes()
    off, out = 24, []
    while off < len(data):
        n = struct.unpack_from("<I", data, off + 8)[0]
        out.append(data[off + 16 : off + 16 + n])
        off += 16 + n
    return out


def test_vlan_tags_and_non_ip_frames(tmp_path: Path) -> None:
    frames = _frames("lo_us.pcap")
    dot1q = frames[3][:12] + b"\x81\x00\x00\x05" + frames[3][12:]
    qinq = frames[5][:12] + b"\x88\xa8\x00\x07\x81\x00\x00\x05" + frames[5][12:]
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    ipv6 = bytes(12) + b"\x86\xdd" + b"\x60" + bytes(39)
    _rewrite(tmp_path / "v.pcap", [dot1q, arp, qinq, ipv6])
    t = read_pcap(tmp_path / "v.pcap")
    assert t.n_records == 4 and len(t) == 2
    assert t.skipped_reasons["not_ipv4"] == 2
    assert t.payload_bytes.tolist() == [100, 30000]
    assert t.record_index.tolist() == [0, 2]


def test_headers_cut_by_snaplen_are_skipped(tmp_path: Path) -> None:
    frame = _frames("lo_us.pcap")[3]
    _rewrite(tmp_path / "s.pcap", [frame[: 14 + 20 + 10]])  # TCP header cut at byte 10
    t = read_pcap(tmp_path / "s.pcap")
    assert len(t) == 0 and t.skipped_reasons["truncated_headers"] == 1


def test_bad_magic_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(TraceFormatError, match=r"bad.pcap:byte 0: field 'magic'"):
        read_pcap(bad)


def test_truncated_last_record(tmp_path: Path) -> None:
    data = (FIX / "lo_us.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-5])
    with pytest.raises(TraceFormatError, match=r"cut.pcap:byte \d+: field 'record'"):
        read_pcap(cut)
    with pytest.warns(pcap.TruncatedCaptureWarning, match=r"cut.pcap:byte \d+: .*last \d+ bytes"):
        t = read_pcap(cut, allow_truncated_tail=True)
    assert t.n_records == 16
    whole = read_pcap(FIX / "lo_us.pcap")
    assert whole.n_records == 17  # the prefix is every complete record, unchanged
    assert t.ts_ns.tolist() == whole.ts_ns[: len(t)].tolist()
    last = len(data) - 5 - (16 + len(_frames("lo_us.pcap")[-1]) - 5)
    assert t.truncated_tail_bytes == len(data) - 5 - last


def test_unsupported_linktype(tmp_path: Path) -> None:
    _rewrite(tmp_path / "l.pcap", [b"x" * 40], linktype=105)
    with pytest.raises(TraceFormatError, match="linktype"):
        read_pcap(tmp_path / "l.pcap")


def test_ip_conversions() -> None:
    assert ip_to_int("10.0.0.1") == 0x0A000001
    assert int_to_ip(0xC0A80102) == "192.168.1.2"
    with pytest.raises(ValueError):
        ip_to_int("10.0.0")


# --- the chunk-parallel record-header walk (pcap._record_offsets) -------------------------


def _tiled_capture(
    path: Path, n_records: int, *, endian: str, ns: bool, hostile_every: int = 0, seed: int = 0
) -> tuple[list[int], list[int]]:
    """Write ``n_records`` of lo_us.pcap's frames, tiled with shifted timestamps and each cut
    to a random length in [0, 300] B (zero-length records included), in byte order
    ``endian`` with µs or ns timestamps. Every ``hostile_every``-th record (if > 0) is a TCP
    header followed by a chain of fake 24 B records (plausible 16 B header + 8 B) with this
    capture's timestamps: bytes a resync inside that payload takes for real records.

    Returns the independent oracle: (byte offset, ts_ns) of every record written.
    """
    frames = _frames("lo_us.pcap")
    hdr = (FIX / "lo_us.pcap").read_bytes()
    t_us = []
    off = 24
    while off < len(hdr):
        sec, usec, incl = struct.unpack_from("<III", hdr, off)
        t_us.append(sec * 1_000_000 + usec)
        off += 16 + incl
    span_us = t_us[-1] - t_us[0] + 1000
    rng = np.random.default_rng(seed)
    cuts = rng.integers(0, 301, n_records)
    magic = 0xA1B23C4D if ns else 0xA1B2C3D4
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 262144, LINKTYPE_ETHERNET)]
    offsets, ts_list = [], []
    off = 24
    for i in range(n_records):
        k, j = divmod(i, len(frames))
        t = t_us[j] + k * span_us
        sec, frac = divmod(t * 1000 if ns else t, 10**9 if ns else 10**6)
        frame = frames[j]
        if hostile_every and i % hostile_every == hostile_every - 1:
            fake = struct.pack(endian + "IIII", sec, 123, 8, 8) + b"\x00" * 8
            frame = frames[5][:66] + fake * 40
            caplen = len(frame)
            orig = max(caplen, len(frames[5]))  # the IPv4 packet's length still fits
        else:
            caplen = min(len(frame), int(cuts[i]))
            orig = len(frame)
        out.append(struct.pack(endian + "IIII", sec, frac, caplen, orig) + frame[:caplen])
        offsets.append(off)
        ts_list.append(t * 1000)
        off += 16 + caplen
    path.write_bytes(b"".join(out))
    return offsets, ts_list


def _walk(path: Path, chunk_bytes: int | None = None) -> tuple[np.ndarray, dict[str, int]]:
    """Record offsets of a classic pcap through the chunk-parallel walk, and its stats."""
    data = path.read_bytes()
    buf = np.zeros(len(data) + pcap._WINDOW_BYTES, dtype=np.uint8)
    buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    ns = data[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    first_ts_s = struct.unpack(endian + "I", data[24:28])[0]
    hints = pcap._ChainHints(262144, 10**9 if ns else 10**6, first_ts_s)
    stats: dict[str, int] = {}
    offsets = pcap._record_offsets(
        path, buf.data[: len(data)], buf, endian, hints, False, stats=stats, chunk_bytes=chunk_bytes
    )
    return offsets, stats


@pytest.mark.parametrize(("endian", "ns"), [("<", False), (">", True)])
@pytest.mark.parametrize("hostile_every", [0, 5])
def test_parallel_walk_finds_every_record(
    tmp_path: Path, endian: str, ns: bool, hostile_every: int
) -> None:
    path = tmp_path / "tiled.pcap"
    expected, _ = _tiled_capture(path, 12_000, endian=endian, ns=ns, hostile_every=hostile_every)
    offsets, stats = _walk(path, chunk_bytes=4096)
    assert offsets.tolist() == expected
    assert stats["chunks"] > 100
    if hostile_every:
        # Chunk boundaries inside the fake chains resync on a fake header: those chunks fail
        # the exact landing check and are walked sequentially, with the same result.
        assert stats["rewalked"] > 0
    else:
        assert stats["rewalked"] == 0  # every chunk verified, none walked sequentially


@pytest.mark.parametrize("hostile_every", [0, 5])
def test_parallel_and_sequential_walks_give_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile_every: int
) -> None:
    path = tmp_path / "tiled.pcap"
    offsets, ts_ns = _tiled_capture(path, 20_000, endian="<", ns=False, hostile_every=hostile_every)
    parallel = read_pcap(path)  # default chunking: > 2 chunks of 2048 mean records
    monkeypatch.setattr(pcap, "_CHAIN_RECORDS_PER_CHUNK", 1 << 30)  # one chunk: sequential
    sequential = read_pcap(path)
    assert parallel.n_records == sequential.n_records == len(offsets)
    assert parallel.skipped_reasons == sequential.skipped_reasons
    for name in ("ts_ns", "src_ip", "dst_ip", "ip_proto", "src_port", "dst_port"):
        assert np.array_equal(getattr(parallel, name), getattr(sequential, name)), name
    for name in ("ip_total_len", "payload_bytes", "record_index"):
        assert np.array_equal(getattr(parallel, name), getattr(sequential, name)), name
    assert parallel.ts_ns.tolist() == [ts_ns[i] for i in parallel.record_index]
    assert len(parallel) > 1000


def test_bad_length_mid_file_is_reported_at_its_record(tmp_path: Path) -> None:
    path = tmp_path / "tiled.pcap"
    offsets, _ = _tiled_capture(path, 12_000, endian="<", ns=False)
    data = bytearray(path.read_bytes())
    bad = offsets[9_000]  # inside the parallel walk's range, far from both ends
    struct.pack_into("<I", data, bad + 8, 0x7FFFFFFF)
    path.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match=rf"tiled.pcap:byte {bad}: field 'incl_len'"):
        _walk(path, chunk_bytes=4096)
    with pytest.raises(TraceFormatError, match=rf"tiled.pcap:byte {bad}: field 'incl_len'"):
        read_pcap(path)


def test_truncated_tail_of_a_large_capture(tmp_path: Path) -> None:
    path = tmp_path / "tiled.pcap"
    offsets, _ = _tiled_capture(path, 20_000, endian="<", ns=False)
    path.write_bytes(path.read_bytes()[:-3])
    # The last record's body is cut (unless it is shorter than 3 B; seed 0: it is not).
    with pytest.raises(TraceFormatError, match=rf"byte {offsets[-1]}: field 'record'"):
        read_pcap(path)
    with pytest.warns(pcap.TruncatedCaptureWarning, match=rf"byte {offsets[-1]}: "):
        table = read_pcap(path, allow_truncated_tail=True)
    assert table.n_records == len(offsets) - 1
    assert table.truncated_tail_bytes == path.stat().st_size - offsets[-1]


# pcapng written by hand (pcapng spec, draft-ietf-opsawg-pcapng: SHB, IDB, EPB, SPB).


def _block(kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + bytes(-len(value) % 4)


def _pcapng(
    frames: list[bytes],
    units: list[int],
    *,
    tsresol: int | None = None,
    tsoffset: int | None = None,
    after: bytes = b"",
) -> bytes:
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    if tsresol is not None:
        opts += _option(9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _option(14, struct.pack("<q", tsoffset))
    if opts:
        opts += _option(0, b"")
    idb = _block(1, struct.pack("<HHI", 1, 0, 262144) + opts)
    epbs = b"".join(
        _block(6, struct.pack("<IIIII", 0, u >> 32, u & 0xFFFFFFFF, len(f), len(f)) + f)
        for f, u in zip(frames, units, strict=True)
    )
    return shb + idb + epbs + after


def test_pcapng_tsresol_and_tsoffset_are_exact(tmp_path: Path) -> None:
    frames = [_frames("lo_us.pcap")[i] for i in (3, 5)]
    path = tmp_path / "o.pcapng"
    # 100 ns units (tsresol 7), clock 1 h behind: ts = units * 100 ns - 3600 s, exactly
    units = [17_000_000_000_000_001, 17_000_000_000_000_123]
    path.write_bytes(_pcapng(frames, units, tsresol=7, tsoffset=-3600))
    t = read_pcap(path)
    assert t.ts_ns.tolist() == [u * 100 - 3600 * 10**9 for u in units]
    assert t.payload_bytes.tolist() == [100, 30000]


@pytest.mark.parametrize(
    ("units", "tsoffset"),
    [([1_000_000], 2**62), ([1_000_000], -(2**62)), ([2**64 - 1], 0)],
)
def test_pcapng_time_beyond_int64_ns_is_an_error(
    tmp_path: Path, units: list[int], tsoffset: int
) -> None:
    path = tmp_path / "big.pcapng"
    data = _pcapng(_frames("lo_us.pcap")[3:4], units, tsoffset=tsoffset)
    path.write_bytes(data)
    epb_at = len(data) - len(_block(6, bytes(20) + _frames("lo_us.pcap")[3]))
    with pytest.raises(
        TraceFormatError, match=rf"big.pcapng:byte {epb_at}: field 'timestamp': .*if_tsoffset"
    ):
        read_pcap(path)


def test_pcapng_simple_packet_block_is_an_error(tmp_path: Path) -> None:
    frame = _frames("lo_us.pcap")[3]
    good = _pcapng([frame], [5])
    spb = _block(3, struct.pack("<I", len(frame)) + frame)
    (tmp_path / "s.pcapng").write_bytes(good + spb)
    with pytest.raises(TraceFormatError, match=rf"s.pcapng:byte {len(good)}: .*Simple Packet"):
        read_pcap(tmp_path / "s.pcapng")


def test_pcapng_corrupted_trailer_names_its_offset(tmp_path: Path) -> None:
    data = bytearray((FIX / "lo.pcapng").read_bytes())
    # the fixture's third block (first EPB after SHB and IDB): flip its trailing length
    shb_len = struct.unpack_from("<I", data, 4)[0]
    idb_len = struct.unpack_from("<I", data, shb_len + 4)[0]
    epb = shb_len + idb_len
    epb_len = struct.unpack_from("<I", data, epb + 4)[0]
    struct.pack_into("<I", data, epb + epb_len - 4, epb_len + 4)
    (tmp_path / "t.pcapng").write_bytes(bytes(data))
    with pytest.raises(
        TraceFormatError,
        match=rf"t.pcapng:byte {epb + epb_len - 4}: field 'block_total_length \(trailing\)'",
    ):
        read_pcap(tmp_path / "t.pcapng")


def test_pcapng_cut_mid_block_keeps_the_prefix_when_allowed(tmp_path: Path) -> None:
    data = (FIX / "lo.pcapng").read_bytes()
    whole = read_pcap(FIX / "lo.pcapng")
    (tmp_path / "c.pcapng").write_bytes(data[:-7])
    with pytest.raises(TraceFormatError, match=r"c.pcapng:byte \d+: field 'block'"):
        read_pcap(tmp_path / "c.pcapng")
    with pytest.warns(pcap.TruncatedCaptureWarning, match=r"c.pcapng:byte \d+"):
        t = read_pcap(tmp_path / "c.pcapng", allow_truncated_tail=True)
    assert t.n_records == whole.n_records - 1
    assert t.ts_ns.tolist() == whole.ts_ns[: len(t)].tolist()
    assert 7 < t.truncated_tail_bytes < 12 + 20 + 65536
