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
    t = read_pcap(cut, allow_truncated_tail=True)
    assert t.n_records == 16


def test_unsupported_linktype(tmp_path: Path) -> None:
    _rewrite(tmp_path / "l.pcap", [b"x" * 40], linktype=105)
    with pytest.raises(TraceFormatError, match="linktype"):
        read_pcap(tmp_path / "l.pcap")


def test_ip_conversions() -> None:
    assert ip_to_int("10.0.0.1") == 0x0A000001
    assert int_to_ip(0xC0A80102) == "192.168.1.2"
    with pytest.raises(ValueError):
        ip_to_int("10.0.0")
