"""Property-based tests per defect class of issue #21, across every reader each applies to.

Each class's shared mechanism (``disaggsim.timerange``, ``disaggsim.bounds``,
``disaggsim.guards``, ``disaggsim.flowcheck``, the strict config models, the resume check)
is exercised with generated instances through the readers that use it, against an oracle
stated independently of the implementation. The reproducers of the issue itself are in
tests/test_issue21_reproducers.py.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fuzz_traces import alarm  # noqa: F401 - a fixture
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from disaggsim import guards
from disaggsim.errors import InputError, display_path
from disaggsim.flowcheck import MAX_START_NS, check_flows
from disaggsim.sim.config import ConfigError, load_config
from disaggsim.sim.rundir import damage
from disaggsim.sim.runner import CAMPAIGN_FCT
from disaggsim.timerange import TimeOutlierWarning, outlier_mask
from disaggsim.traces.blktrace import RECORD_DTYPE_LE, read_blktrace
from disaggsim.traces.convert import ConvertOptions, NodeInputs, SampleInputs, convert, load_sample
from disaggsim.traces.paging import read_rmem, read_rmem_meta_ns, write_rmem
from disaggsim.traces.pcap import read_pcap
from disaggsim.traces.yaps import read_yaps

PROP = settings(
    derandomize=True,
    deadline=None,
    max_examples=40,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FLOOR_NS = 60_000_000_000  # 60 s: the trace floor of the time-range model
T0_NS = 1_795_308_431_978_523_000  # 2026-11-22, the bundled samples' epoch
S_NS = 1_000_000_000


# --- writers of tiny real-format inputs ------------------------------------------------


def write_pcap(path: Path, ts_ns: list[int], linktype: int = 101, frame_of=None) -> list[int]:
    """A classic ns-resolution pcap of UDP packets 10.0.0.1 -> 10.0.0.2 (10 B payload each);
    returns each record's byte offset."""
    ip = (
        bytes.fromhex("4500002600004000401100000a0000010a000002")
        + struct.pack(">HHHH", 1000, 2000, 18, 0)
        + b"0123456789"
    )
    frame = frame_of(ip) if frame_of else ip
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, linktype)]
    offsets, off = [], 24
    for t in ts_ns:
        sec, frac = divmod(t, S_NS)
        out.append(struct.pack("<IIII", sec, frac, len(frame), len(frame)) + frame)
        offsets.append(off)
        off += 16 + len(frame)
    path.write_bytes(b"".join(out))
    return offsets


def write_blk(
    path: Path,
    times_ns: list[int],
    sectors: list[int] | None = None,
    cpu: int = 0,
    file_cpu: int | None = None,
) -> None:
    """``NAME.blktrace.<file_cpu>`` (default: ``cpu``) with one 4 KiB write issue (D) record
    per time, each from ``cpu``."""
    rec = np.zeros(len(times_ns), dtype=RECORD_DTYPE_LE)
    rec["cpu"] = cpu
    rec["magic"] = 0x65617407
    rec["time"] = times_ns
    rec["sector"] = sectors if sectors is not None else np.arange(len(times_ns)) * 8
    rec["bytes"] = 4096
    rec["action"] = (1 << 1) << 16 | 7  # BLK_TC_WRITE, __BLK_TA_ISSUE
    name = f"{path.name}.blktrace.{cpu if file_cpu is None else file_cpu}"
    path.with_name(name).write_bytes(rec.tobytes())


def write_anchored_blk(path: Path) -> Path:
    """``NAME.blktrace.0``: a BLK_TN_TIMESTAMP anchor saying trace clock 1 s is T0 on the
    wall clock (``blktrace.wallclock_offset_ns``), then 10 requests at 1..10 s of the trace
    clock; returns the file."""
    write_blk(path, [S_NS + i * S_NS for i in range(10)])
    blk = path.with_name(path.name + ".blktrace.0")
    anchor = struct.pack(
        "<IIQQIIIIIHH", 0x65617407, 0, S_NS, 0, 0, (1 << 10) << 16 | 1, 0, 0, 0, 0, 8
    ) + struct.pack("<II", T0_NS // S_NS, T0_NS % S_NS)
    blk.write_bytes(anchor + blk.read_bytes())
    return blk


def write_paging(path: Path, times_us: list[int], npages: int = 1) -> None:
    n = len(times_us)
    write_rmem(
        pd.DataFrame(
            {
                "batch_id": range(n),
                "time_us": times_us,
                "op": "W",
                "page": np.arange(n) * 16,
                "npages": npages,
            }
        ),
        path,
    )


def bulk_times(draw: st.DrawFn, n_min: int = 8) -> list[int]:
    """Record times (ns) whose consecutive gaps are at most the 60 s floor: no outlier."""
    gaps = draw(st.lists(st.integers(0, FLOOR_NS // 10**6), min_size=n_min - 1, max_size=40))
    return list(T0_NS + np.cumsum([0] + gaps) * 10**6)


# --- class 1: the time-range model, every reader ----------------------------------------


@given(data=st.data())
@PROP
def test_class1_model_flags_exactly_the_far_records(data: st.DataObject) -> None:
    """Oracle: a record farther from a bulk (gaps <= floor) than both the floor and the
    bulk's span is flagged; no bulk record ever is."""
    bulk = bulk_times(data.draw)
    span = bulk[-1] - bulk[0]
    k = data.draw(st.integers(0, max(1, (len(bulk) + 1) // 100)))
    far = [
        bulk[-1] + max(span, FLOOR_NS) + data.draw(st.integers(1, 10**15))
        if data.draw(st.booleans())
        else bulk[0] - max(span, FLOOR_NS) - data.draw(st.integers(1, 10**15))
        for _ in range(k)
    ]
    times = np.array(bulk + far)
    order = data.draw(st.permutations(range(len(times))))
    mask = outlier_mask(times[list(order)], FLOOR_NS)
    expected = np.array([i >= len(bulk) for i in order])
    assert np.array_equal(mask, expected)


READERS_1 = ["pcap", "paging", "artifact", "blktrace", "yaps", "flow_table"]


def _one_node(tmp: Path, reader: str, times_ns: list[int]) -> tuple[Callable[[], object], Path]:
    """A call that reads ``times_ns`` through ``reader`` (convert for trace readers), and the
    file it reads."""
    if reader == "pcap":
        f = tmp / "n0.pcap"
        write_pcap(f, times_ns)
        nodes = (NodeInputs(0, ip="10.0.0.1", pcap=f), NodeInputs(1, ip="10.0.0.2"))
    elif reader == "paging":
        f = tmp / "n0.rmem"
        write_paging(f, [t // 1000 for t in times_ns])
        nodes = (NodeInputs(0, paging=f),)
    elif reader == "blktrace":
        f = tmp / "n0.disk"
        write_blk(f, [t - T0_NS + S_NS for t in times_ns])
        nodes = (NodeInputs(0, disk_blktrace=f, trace_clock_offset_ns=T0_NS - S_NS),)
    elif reader == "artifact":  # the original artifact's layout, indexed form, absolute µs
        run = tmp / "run"
        run.mkdir(exist_ok=True)
        f = run / "0-mem-host"
        n = len(times_ns)
        write_rmem(
            pd.DataFrame(
                {
                    "batch_id": range(n),
                    "time_us": [t // 1000 for t in times_ns],
                    "op": "R",
                    "page": np.arange(n) * 16,
                    "npages": 1,
                }
            ),
            f,
            form="indexed",
        )
        return (lambda: convert(run)), f
    elif reader == "yaps":
        f = tmp / "w.yaps"
        f.write_text(
            "".join(
                f"{i} {(t - T0_NS) / 1e9 + 1:.9f} 0 0 1 0 0 0 1\n" for i, t in enumerate(times_ns)
            )
        )
        return (lambda: read_yaps(f)), f
    else:
        f = tmp / "ft.csv"
        n = len(times_ns)
        frame = pd.DataFrame(
            {
                "flow_id": range(n),
                "start_ns": [t - T0_NS + S_NS for t in times_ns],
                "src": 0,
                "dst": 3,
                "size_bytes": 1,
                "kind": "net",
                "node": 1,
            }
        )
        return (lambda: check_flows(frame, f, np.arange(n) + 2)), f
    return (lambda: convert(SampleInputs(nodes=nodes), ConvertOptions(idle_gap_ns=1))), f


@given(data=st.data(), reader=st.sampled_from(READERS_1))
@PROP
def test_class1_every_reader_refuses_an_outlier_record(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, reader: str
) -> None:
    """A record beyond max(span, 60 s) of the rest ends in an error naming the file and its
    record; without it the result spans exactly the bulk (no time axis stretched)."""
    tmp = tmp_path_factory.mktemp(reader)
    bulk = bulk_times(data.draw)
    span = bulk[-1] - bulk[0]
    late = data.draw(st.booleans()) or reader in ("yaps", "flow_table", "blktrace")
    distance = max(span, FLOOR_NS) + data.draw(st.integers(10**6, 10**16))
    outlier = bulk[-1] + distance if late else bulk[0] - distance
    at = data.draw(st.integers(0, len(bulk)))
    times = bulk
    with_outlier = times[:at] + [outlier] + times[at:]
    call, f = _one_node(tmp, reader, with_outlier)
    with pytest.raises(InputError) as err:
        call()
    assert str(err.value).startswith(str(f)), str(err.value)
    assert re.search(r"field '(ts_ns|timestamp_us|time|start_time|start_ns)'", str(err.value))
    call, f = _one_node(tmp, reader, times)
    out = call()
    if isinstance(out, pd.DataFrame) and "start_ns" in out:
        starts = out["start_ns"].to_numpy()
        assert starts.max() - starts.min() <= span


def test_class1_drop_policy_warns_and_keeps_the_bulk(tmp_path: Path) -> None:
    times = [T0_NS + i * S_NS for i in range(20)]
    write_paging(tmp_path / "n0.rmem", [t // 1000 for t in times] + [T0_NS // 1000 + 10**14])
    sample = SampleInputs(nodes=(NodeInputs(0, paging=tmp_path / "n0.rmem"),))
    with pytest.warns(TimeOutlierWarning, match=r"n0\.rmem:21: .*dropped 1 record"):
        table = convert(sample, ConvertOptions(time_outliers="drop"))
    assert len(table) == 20 and table["start_ns"].max() == 19 * S_NS


# --- class 4: physical bounds per record ------------------------------------------------


@given(npages=st.integers(2**20 - 3, 2**20 + 3), line=st.integers(1, 9))
@PROP
def test_class4_paging_run_within_one_block_request(
    tmp_path_factory: pytest.TempPathFactory, npages: int, line: int
) -> None:
    """npages * 4096 <= 2**32 - 1 (struct request.__data_len): 2**20 - 1 pages pass, 2**20
    do not, and the error names the line."""
    f = tmp_path_factory.mktemp("p") / "n.rmem"
    lines = [f"{i} {10**15 + i} +{i * 16} {npages if i + 1 == line else 1}\n" for i in range(9)]
    f.write_text("".join(lines))
    if npages * 4096 <= 2**32 - 1:
        assert len(read_rmem(f)) == 9
    else:
        with pytest.raises(InputError, match=rf"n\.rmem:{line}: field 'npages'"):
            read_rmem(f)


@given(data=st.data(), reader=st.sampled_from(["paging", "blktrace"]))
@PROP
def test_class4_requests_inside_their_device(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, reader: str
) -> None:
    """A request ending past meta.json's device size is refused, naming its record; one
    ending exactly at the end passes."""
    tmp = tmp_path_factory.mktemp(reader)
    device = 2**20  # bytes: 256 pages
    n = 10
    bad = data.draw(st.integers(0, n - 1))
    over = data.draw(st.integers(0, 3))  # pages past the end (0: ends exactly at the end)
    pages = [i * 4 for i in range(n)]
    pages[bad] = 256 - 1 + over
    times = [T0_NS + i * S_NS for i in range(n)]
    if reader == "paging":
        write_paging(tmp / "n.rmem", [t // 1000 for t in times])
        text = (tmp / "n.rmem").read_text().splitlines()
        text = [" ".join(ln.split()[:2] + [f"+{pages[i]}", "1"]) for i, ln in enumerate(text)]
        (tmp / "n.rmem").write_text("\n".join(text) + "\n")
        node = NodeInputs(0, paging=tmp / "n.rmem")
        sample = SampleInputs(nodes=(node,), swap_bytes=device)
        where = rf"n\.rmem:{bad + 1}: field 'start_page'"
    else:
        write_blk(tmp / "n.disk", [t - T0_NS + S_NS for t in times], [p * 8 for p in pages])
        node = NodeInputs(0, disk_blktrace=tmp / "n.disk", trace_clock_offset_ns=T0_NS - S_NS)
        sample = SampleInputs(nodes=(node,), disk_bytes=device)
        where = rf"n\.disk\.blktrace\.0:record {bad}: field 'sector'"
    if over == 0:
        assert len(convert(sample)) >= n
    else:
        with pytest.raises(InputError, match=where):
            convert(sample)


@given(data=st.data(), field=st.sampled_from(["ts_frac", "incl_len", "ip_total_len"]))
@PROP
def test_class4_pcap_records_within_their_format(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, field: str
) -> None:
    """draft-ietf-opsawg-pcap §5 and RFC 791: a sub-second field >= 10**9 (ns magic), a
    captured length above the original, an IPv4 total length beyond the frame: each names
    the record's byte offset."""
    f = tmp_path_factory.mktemp("pcap") / "c.pcap"
    offsets = write_pcap(f, [T0_NS + i * S_NS for i in range(10)])
    i = data.draw(st.integers(0, 9))
    buf = bytearray(f.read_bytes())
    if field == "ts_frac":
        struct.pack_into("<I", buf, offsets[i] + 4, data.draw(st.integers(10**9, 2**32 - 1)))
    elif field == "incl_len":  # orig_len below incl_len
        struct.pack_into("<I", buf, offsets[i] + 12, data.draw(st.integers(0, 37)))
    else:  # IPv4 total length (bytes 2-3 of the raw IP frame) beyond the 38 B frame
        struct.pack_into(">H", buf, offsets[i] + 16 + 2, data.draw(st.integers(39, 65535)))
    f.write_bytes(bytes(buf))
    with pytest.raises(InputError, match=rf"c\.pcap:byte {offsets[i]}: field '{field}'"):
        read_pcap(f)


# --- class 5: one file serves one node -------------------------------------------------


@given(n=st.integers(2, 5), data=st.data())
@PROP
def test_class5_a_record_file_serves_one_node(
    tmp_path_factory: pytest.TempPathFactory, n: int, data: st.DataObject
) -> None:
    """A paging trace or blktrace given to two nodes (same name, a symlink or a hard link)
    is refused naming it; distinct files convert."""
    tmp = tmp_path_factory.mktemp("s")
    times = [(T0_NS + i * S_NS) // 1000 for i in range(3)]
    for i in range(n):
        write_paging(tmp / f"n{i}.rmem", times)
    a, b = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    how = data.draw(st.sampled_from(["same name", "symlink", "hard link", "distinct"]))
    entries = [{"node": i, "paging": f"n{i}.rmem"} for i in range(n)]
    if how == "same name":
        entries[b]["paging"] = f"n{a}.rmem"
    elif how in ("symlink", "hard link"):
        (tmp / f"n{b}.rmem").unlink()
        link = os.symlink if how == "symlink" else os.link
        link(tmp / f"n{a}.rmem", tmp / f"n{b}.rmem")
    (tmp / "meta.json").write_text(json.dumps({"nodes": entries}))
    if how == "distinct":
        assert int(convert(tmp)["size_bytes"].sum()) == 3 * n * 4096  # each page once
        return
    with pytest.raises(InputError, match=r"rmem: field 'paging': expected a file that serves one"):
        load_sample(tmp)


# --- class 6: header versus content ----------------------------------------------------

LINK = {  # link type -> frame around an IPv4 packet
    1: lambda ip: bytes(12) + b"\x08\x00" + ip,
    113: lambda ip: bytes(14) + b"\x08\x00" + ip,
    276: lambda ip: b"\x08\x00" + bytes(18) + ip,
    101: lambda ip: ip,
    228: lambda ip: ip,
}


@given(header=st.sampled_from(sorted(LINK)), frames=st.sampled_from(sorted(LINK)))
@PROP
def test_class6_link_type_must_decode_the_frames(
    tmp_path_factory: pytest.TempPathFactory, header: int, frames: int
) -> None:
    """Never a silent loss: the capture's packets are all read, or the header's link type is
    refused at byte 20 naming the link type that does decode them."""
    f = tmp_path_factory.mktemp("l") / "c.pcap"
    write_pcap(f, [T0_NS + i * S_NS for i in range(10)], linktype=header, frame_of=LINK[frames])
    try:
        table = read_pcap(f)
    except InputError as exc:
        assert re.search(
            r"c\.pcap:byte 20: field 'linktype': expected the value that matches "
            rf"the records: 10 of 10 decode under \d+ .*got {header}$",
            str(exc),
        )
        assert header != frames
        return
    assert len(table) == 10


@given(file_cpu=st.integers(0, 3), record_cpu=st.integers(0, 3))
@PROP
def test_class6_blktrace_file_number_must_be_its_records_cpu(
    tmp_path_factory: pytest.TempPathFactory, file_cpu: int, record_cpu: int
) -> None:
    """``NAME.blktrace.<cpu>`` holds CPU <cpu>'s records (one relay buffer per CPU): the
    records are all read, or the file name is refused naming the CPU the records are from."""
    f = tmp_path_factory.mktemp("b") / "n.disk"
    write_blk(f, [S_NS + i for i in range(10)], cpu=record_cpu, file_cpu=file_cpu)
    try:
        table = read_blktrace(f)
    except InputError as exc:
        assert str(exc) == (
            f"{f}.blktrace.{file_cpu}:file name: field 'cpu': expected the value that matches "
            f"the records: 10 of 10 decode under {record_cpu} (CPU {record_cpu}), 0 under the "
            f"header's {file_cpu} (CPU {file_cpu}), got {file_cpu}"
        )
        assert file_cpu != record_cpu
        return
    assert file_cpu == record_cpu
    assert table["cpu"].tolist() == [record_cpu] * 10


@given(
    content=st.sampled_from(["ns", "us"]),
    fracs=st.lists(st.integers(1, 10**6 - 1), min_size=10, max_size=10),
)
@PROP
def test_class6_pcap_ns_magic_must_fit_the_sub_second_fields(
    tmp_path_factory: pytest.TempPathFactory, content: str, fracs: list[int]
) -> None:
    """A ns-magic capture over 10 seconds: with ns sub-second fields at or above 10**6
    (``10**9 - v``) every packet is read at its time; with µs values ``v`` in the ns field
    (all below 10**6: each packet would move back by up to a second) the magic is refused
    at byte 0 naming the µs magic that explains them."""
    f = tmp_path_factory.mktemp("r") / "c.pcap"
    sub = [10**9 - v for v in fracs] if content == "ns" else fracs
    times = [T0_NS // S_NS * S_NS + i * S_NS + v for i, v in enumerate(sub)]
    write_pcap(f, times)
    try:
        table = read_pcap(f)
    except InputError as exc:
        assert content == "us"
        assert str(exc) == (
            f"{f}:byte 0: field 'magic': expected the value that matches the records: 10 of "
            f"10 decode under {0xA1B2C3D4} (µs timestamps: sub-second fields below 10**6), 0 "
            f"under the header's {0xA1B23C4D} (ns timestamps: sub-second fields up to 10**9), "
            f"got {0xA1B23C4D}"
        )
        return
    assert content == "ns"
    assert table.ts_ns.tolist() == times


@given(
    shift_s=st.one_of(st.integers(-60, 60), st.integers(-(10**6), 10**6)), relative=st.booleans()
)
@PROP
def test_class6_meta_start_must_be_near_the_nodes_records(
    tmp_path_factory: pytest.TempPathFactory, shift_s: int, relative: bool
) -> None:
    """A paging meta's start (header) is compared with the node's records on an independent
    CLOCK_REALTIME (content): its capture. 10 packets over 9 s from T0, paging records
    1..10 s after the meta; a start within 60 s (the floor: the capture lasts 9 s) of the
    first packet is read, one farther away is refused at meta line 1 with the distance.
    A blktrace is no witness of a start (a disk may be idle for minutes after tracing
    starts: the artifact's Spark run's first disk request is 66 s after its meta start)."""
    tmp = tmp_path_factory.mktemp("m")
    start_us = (T0_NS + shift_s * S_NS) // 1000
    offsets_us = [(i + 1) * 10**6 for i in range(10)]
    write_paging(tmp / "n0.rmem", offsets_us if relative else [start_us + t for t in offsets_us])
    (tmp / "n0.rmem.meta").write_text(json.dumps({"start_time_us": start_us}))
    write_pcap(tmp / "n0.pcap", [T0_NS + i * S_NS for i in range(10)])
    nodes = (
        NodeInputs(0, ip="10.0.0.1", pcap=tmp / "n0.pcap", paging=tmp / "n0.rmem"),
        NodeInputs(1, ip="10.0.0.2"),
    )
    what, kind = f"the node's capture {tmp / 'n0.pcap'}", "net"
    try:
        table = convert(SampleInputs(nodes=nodes))
    except InputError as exc:
        assert abs(shift_s) > 60
        assert str(exc) == (
            f"{tmp / 'n0.rmem.meta'}:1: field 'start_time': expected a start within 60.000 s "
            f"of the first record of {what} ({T0_NS} ns; it lasts 9.000 s), "
            f"{shift_s:+.3f} s away, got {start_us * 1000}"
        )
        return
    assert abs(shift_s) <= 60
    # Accepted: each access sits where the meta puts it, (shift + i + 1) s after record 0.
    other = table[table["kind"] == kind]["start_ns"].to_numpy()
    mem = table[table["kind"] == "mem_write"]["start_ns"].to_numpy()
    assert len(other) == 10
    assert (mem - other.min()).tolist() == [(shift_s + i + 1) * S_NS for i in range(10)]


@given(shift_s=st.one_of(st.integers(-60, 60), st.integers(-(10**6), 10**6)))
@PROP
def test_class6_given_clock_offset_must_fit_the_blktrace_anchor(
    tmp_path_factory: pytest.TempPathFactory, shift_s: int
) -> None:
    """A node's given trace_clock_offset_ns (header) against the blktrace's own
    BLK_TN_TIMESTAMP anchor (content: trace clock 1 s is T0): 10 requests over 9 s; an
    offset ``shift_s`` from the anchor's is used when within 60 s (the floor), else refused
    naming the node's field and the distance."""
    tmp = tmp_path_factory.mktemp("o")
    blk = write_anchored_blk(tmp / "n0.disk")
    offset = T0_NS - S_NS + shift_s * S_NS
    nodes = (NodeInputs(0, disk_blktrace=tmp / "n0.disk", trace_clock_offset_ns=offset),)
    try:
        table = convert(SampleInputs(nodes=nodes))
    except InputError as exc:
        assert abs(shift_s) > 60
        assert str(exc) == (
            f"{tmp / 'n0.disk'}:node 0: field 'trace_clock_offset_ns': expected a start within "
            f"60.000 s of the first record of {tmp / 'n0.disk'} on the wall clock by its "
            f"BLK_TN_TIMESTAMP anchor ({blk} byte 0), where the given offset {offset} ns puts "
            f"it ({T0_NS} ns; it lasts 9.000 s), {shift_s:+.3f} s away, "
            f"got {T0_NS + shift_s * S_NS}"
        )
        return
    assert abs(shift_s) <= 60
    assert table["start_ns"].tolist() == [i * S_NS for i in range(10)]


@given(written=st.integers(1, 12), declared=st.integers(0, 12))
@PROP
def test_class6_meta_pcap_packets_must_count_the_capture(
    tmp_path_factory: pytest.TempPathFactory, written: int, declared: int
) -> None:
    """meta.json's ``pcap_packets`` (tcpdump's own count) against the capture's records: a
    capture cut at a record boundary reads cleanly, so only the count shows the loss."""
    tmp = tmp_path_factory.mktemp("c")
    write_pcap(tmp / "n0.pcap", [T0_NS + i * S_NS for i in range(written)])
    (tmp / "meta.json").write_text(
        json.dumps(
            {
                "nodes": [
                    {"node": 0, "ip": "10.0.0.1", "pcap": "n0.pcap", "pcap_packets": declared},
                    {"node": 1, "ip": "10.0.0.2"},
                ]
            }
        )
    )
    try:
        table = convert(tmp)
    except InputError as exc:
        assert declared != written
        assert str(exc) == (
            f"{tmp / 'meta.json'}:node 0: field 'pcap_packets': expected the "
            f"number of records in {tmp / 'n0.pcap'} ({written}), got {declared}"
        )
        return
    assert declared == written
    assert len(table) == written


# --- class 2: a regular-file and size guard on every open ----------------------------------

READERS_2: dict[str, Callable[[Path], object]] = {
    "pcap": read_pcap,
    "blktrace": read_blktrace,
    "paging": read_rmem,
    "meta": read_rmem_meta_ns,
    "yaps": read_yaps,
    "meta.json": lambda p: load_sample(p.parent),
    "config": load_config,
    "cdf": lambda p: __import__("disaggsim.traces.workloads", fromlist=["x"]).load_cdf(p),
    "fct export": lambda p: __import__("disaggsim.analysis.export", fromlist=["x"]).read_fct_export(
        p
    ),
    "flow table": lambda p: __import__("disaggsim.sim.workloads", fromlist=["x"]).read_flow_table(
        p
    ),
}


@given(
    reader=st.sampled_from(sorted(READERS_2)),
    kind=st.sampled_from(["fifo", "/dev/zero", "directory", "socket", "too large"]),
)
# Found by a CI run: a directory given as a flow-size CDF was a FileNotFoundError ("no such
# file"), not the readers' one-line refusal.
@example(reader="cdf", kind="directory")
@settings(PROP, max_examples=30)
@pytest.mark.usefixtures("alarm")
def test_class2_no_reader_opens_a_special_or_oversized_file(
    tmp_path_factory: pytest.TempPathFactory,
    reader: str,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every reader refuses, naming the file and without blocking, what is not a regular
    file of bounded size (the alarm fails a reader that blocks)."""
    tmp = tmp_path_factory.mktemp("g")
    name = {
        "meta.json": "meta.json",
        "config": "c.toml",
        "flow table": "f.csv",
        "blktrace": "x.blktrace.0",
    }.get(reader, "x")
    p = tmp / name
    sock = None
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "/dev/zero":
        p.symlink_to("/dev/zero")
    elif kind == "directory":
        p.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(p))
    else:
        p.write_bytes(b"0" * 100)
        monkeypatch.setattr(guards, "input_byte_limit", lambda: 10)
    try:
        with pytest.raises((InputError, ConfigError)) as err:
            READERS_2[reader](p)
    finally:
        if sock is not None:
            sock.close()
    assert str(p) in str(err.value), str(err.value)


# --- class 7: one flow-table validator --------------------------------------------------

RULES = ["flow_id", "size_bytes", "start_ns", "dst", "kind", "blade", "blade type"]


@given(n=st.integers(8, 30), rule=st.sampled_from(RULES + ["none"]), data=st.data())
@PROP
def test_class7_each_rule_names_the_row(n: int, rule: str, data: st.DataObject) -> None:
    """A valid per-blade table passes; breaking one rule in one row names that CSV line."""
    kinds = data.draw(
        st.lists(
            st.sampled_from(["mem_read", "mem_write", "disk_read", "disk_write", "net"]),
            min_size=n,
            max_size=n,
        )
    )
    ends = {
        "mem_read": (4, 0),
        "mem_write": (0, 4),
        "disk_read": (5, 3),
        "disk_write": (3, 2),
        "net": (0, 3),
    }
    frame = pd.DataFrame(
        {
            "flow_id": range(n),
            "start_ns": np.arange(n) * 1000,
            "src": [ends[k][0] for k in kinds],
            "dst": [ends[k][1] for k in kinds],
            "size_bytes": 4096,
            "kind": kinds,
            "node": np.arange(n) % 2,
        }
    )
    row = data.draw(st.integers(1, n - 1))
    column = {"blade": "dst", "blade type": "dst"}.get(rule, rule)
    if rule == "flow_id":
        frame.loc[row, "flow_id"] = frame.loc[row - 1, "flow_id"]
    elif rule == "size_bytes":
        frame.loc[row, "size_bytes"] = data.draw(st.integers(-(2**40), 0))
    elif rule == "start_ns":
        frame.loc[row, "start_ns"] = data.draw(st.sampled_from([-1, MAX_START_NS + 1, 2**62]))
    elif rule == "dst":
        frame.loc[row, "dst"] = frame.loc[row, "src"]
    elif rule == "kind":
        frame.loc[row, "kind"] = data.draw(st.text(min_size=1, max_size=5))
        assume(frame.loc[row, "kind"] not in ends)
    elif rule == "blade":
        frame.loc[row, "dst"] = data.draw(st.integers(6, 2**31 - 1))  # node >= 2
    elif rule == "blade type":  # a read into a memory/disk blade instead of compute
        frame.loc[row, "kind"] = "mem_read"
        frame.loc[row, ["src", "dst"]] = [1, 4]
    path = Path("user/flows.csv")
    if rule == "none":
        check_flows(frame, path, np.arange(n) + 2)
        return
    with pytest.raises(InputError, match=rf"^user/flows\.csv:{row + 2}: field '{column}'"):
        check_flows(frame, path, np.arange(n) + 2)


# --- class 8: strict config types ------------------------------------------------------

CONFIG = """[campaign]
name = "k"
out_dir = "out"
jobs = 2
[[workloads]]
kind = "synthetic"
name = "ws"
cdf = "websearch"
load = 0.5
n_flows = 100
[topology]
racks = 9
spine_rate_factor = 4
[grid]
protocols = ["ideal"]
rates_gbps = [100.0]
seeds = [1]
[limits]
run_timeout_s = 60.0
[convert]
tolerance_ns = 1000
attribute_disk = false
kinds = ["mem_read"]
"""
KEYS = {  # key line -> (dotted key, TOML values of a wrong type)
    "jobs = 2": ("campaign.jobs", ['"2"', "true", "2.0", "[2]"]),
    "racks = 9": ("topology.racks", ['"9"', "true", "9.5", "nan"]),
    "spine_rate_factor = 4": ("topology.spine_rate_factor", ["4.5", '"4"', "true", "inf", "nan"]),
    "rates_gbps = [100.0]": ("grid.rates_gbps[0]", ["[true]", '["100"]', "[inf]", "[-inf]"]),
    "seeds = [1]": ("grid.seeds[0]", ["[true]", '["1"]', "[1.0]"]),
    "load = 0.5": ("workloads[0].load", ['"0.5"', "true", "nan"]),
    "run_timeout_s = 60.0": ("limits.run_timeout_s", ["inf", '"60"', "false"]),
    "tolerance_ns = 1000": ("convert.tolerance_ns", ['"1000"', "true", "1000.0", "inf"]),
    "attribute_disk = false": ("convert.attribute_disk", ["0", '"false"']),
    'kinds = ["mem_read"]': ("convert.kinds[0]", ["[1]", "[true]"]),
}


@given(line=st.sampled_from(sorted(KEYS)), data=st.data())
@PROP
def test_class8_no_coercion_no_inf_nan(
    tmp_path_factory: pytest.TempPathFactory, line: str, data: st.DataObject
) -> None:
    """Every wrongly typed or non-finite value is refused naming file, line and key."""
    key, values = KEYS[line]
    value = data.draw(st.sampled_from(values))
    text = CONFIG.replace(line, line.split(" = ")[0] + " = " + value)
    path = tmp_path_factory.mktemp("c") / "k.toml"
    path.write_text(text)
    lineno = text.splitlines().index(line.split(" = ")[0] + " = " + value) + 1
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(str(path))}:{lineno}: "
        rf"{re.escape(key)}: Input should be",
    ):
        load_config(path)
    path.write_text(CONFIG)
    load_config(path)


# --- class 3: resource estimates -------------------------------------------------------


@given(jobs=st.integers(1, 10**6), avail_gib=st.integers(1, 64))
@PROP
def test_class3_jobs_estimate(
    tmp_path_factory: pytest.TempPathFactory, jobs: int, avail_gib: int
) -> None:
    """``jobs`` workers of 150 MiB are refused exactly when they exceed the memory
    available, with the estimate and the config line."""
    from disaggsim.sim.campaign import WORKER_BYTES, check_resources

    path = tmp_path_factory.mktemp("r") / "k.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(guards, "memory_available_bytes", lambda: avail_gib * 2**30)
        if jobs * WORKER_BYTES + 0 <= avail_gib * 2**30:
            check_resources(path, config, jobs)
        else:
            with pytest.raises(InputError, match=rf"k\.toml:4: .*{jobs} workers x 150 MiB"):
                check_resources(path, config, jobs)


# --- class 9: what a resume reuses is verified ------------------------------------------


@given(cut=st.integers(0, 10_000), what=st.sampled_from(["fct", "done", "rows", "none"]))
@PROP
def test_class9_damaged_run_files_are_found(
    tmp_path_factory: pytest.TempPathFactory, cut: int, what: str
) -> None:
    """A truncated fct.parquet, a cut done.json or a row count that differs from the run's
    record is damage; an intact run is not."""
    run = tmp_path_factory.mktemp("run")
    n = 7
    columns = {
        f.name: pa.array(["x"] * n if pa.types.is_string(f.type) else [0] * n, f.type)
        for f in CAMPAIGN_FCT
    }
    pq.write_table(pa.table(columns, schema=CAMPAIGN_FCT), run / "fct.parquet")
    (run / "done.json").write_text(json.dumps({"flows": n if what != "rows" else n + 1}))
    size = (run / "fct.parquet").stat().st_size
    if what == "fct":
        (run / "fct.parquet").write_bytes((run / "fct.parquet").read_bytes()[: cut % size])
    elif what == "done":
        text = (run / "done.json").read_text()
        (run / "done.json").write_text(text[: cut % (len(text) - 1)])
    problem = damage(run)
    assert (problem == "") == (what == "none"), problem
    if problem:
        assert problem.startswith(("fct.parquet: expected", "done.json: expected")), problem


# --- class 11: a located error for every failure ----------------------------------------


@given(
    name=st.binary(min_size=1, max_size=12).filter(
        lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
    )
)
@PROP
def test_class11_any_file_name_prints_in_the_error(
    tmp_path_factory: pytest.TempPathFactory, name: bytes
) -> None:
    """A located error about a file of any byte name is one printable UTF-8 line naming it."""
    p = Path(os.fsdecode(bytes(tmp_path_factory.mktemp("n")) + b"/" + name))
    p.write_bytes(b"\x01\x02\x03")
    with pytest.raises(InputError) as err:
        read_pcap(p)
    text = str(err.value)
    text.encode("utf-8")  # printable: no lone surrogate
    assert "\n" not in text.strip() or b"\n" in name
    assert text.startswith(display_path(p) + ":byte 0")


def test_class11_a_full_disk_names_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    """ENOSPC while a campaign writes a collected table: the error names that table and
    what the system said, and no temporary file is left behind."""
    from disaggsim.sim.campaign import _written

    with pytest.raises(InputError) as err, _written(tmp_path / "fct.parquet") as tmp:
        tmp.write_bytes(b"partial")
        raise OSError(28, "No space left on device")
    assert str(err.value) == (
        f"{tmp_path}/fct.parquet: expected a file that can be written, "
        "got '[Errno 28] No space left on device'"
    )
    assert list(tmp_path.iterdir()) == []


# --- class 10: emulate's pre-flight, before any machine state changes --------------------

EMULATE_FAULTS = {  # fault -> (config edit, the key the error names)
    "empty fct_file": ("fct = ''", r":\d+: models\[1\]\.fct_file: .*at least one"),
    "fct_file FIFO": ("fifo", r":\d+: models\[1\]\.fct_file: .*FIFO"),
    "fct_file inf": ("fct = '4096 inf\\n'", r":\d+: models\[1\]\.fct_file: .*finite"),
    "no program": ("command = 'no-such-program-xyz'", r":6: app\.command\[0\]: .*executable"),
    "latency": ("latency = 2**63 - 1", r":11: models\[0\]\.latency_ns: .*timeout_s"),
    "repeats": ("repeats = 10**9", r":3: emulate\.repeats: .*days"),
}


FCT_FAULTS = ["empty fct_file", "fct_file FIFO", "fct_file inf"]  # one file: at most one


@given(
    fct=st.sampled_from([None, *FCT_FAULTS]),
    others=st.sets(st.sampled_from(["no program", "latency", "repeats"])),
)
@settings(PROP, max_examples=20)
def test_class10_emulate_preflight_names_every_problem(
    tmp_path_factory: pytest.TempPathFactory, fct: str | None, others: set[str]
) -> None:
    """Any combination of bad inputs is reported at load, one line per problem naming the
    key, before anything runs (the loader has no side effect on the machine)."""
    from disaggsim.swapdev.emulate import load_emulate_config

    faults = others | ({fct} if fct else set())
    assume(faults)
    tmp = tmp_path_factory.mktemp("e")
    v: dict[str, object] = {"fct": "4096 2.5\n", "command": "true", "latency": 1000, "repeats": 1}
    for fault in faults:
        edit = EMULATE_FAULTS[fault][0]
        if edit != "fifo":
            exec(edit, {}, v)  # one of the table's assignments above
    fct, command, latency, repeats = v["fct"], v["command"], v["latency"], v["repeats"]
    if "fct_file FIFO" in faults:
        os.mkfifo(tmp / "f.txt")
    else:
        (tmp / "f.txt").write_text(str(fct))
    path = tmp / "e.toml"
    path.write_text(
        f'[emulate]\nname = "x"\nrepeats = {repeats}\ntimeout_s = 60\n[app]\n'
        f'command = ["{command}"]\nworking_set_bytes = 1048576\nlocal_fraction = 0.5\n'
        f'[[models]]\nkind = "fixed"\nlatency_ns = {latency}\n'
        '[[models]]\nkind = "fct-mean"\nfct_file = "f.txt"\n'
    )
    with pytest.raises(ConfigError) as err:
        load_emulate_config(path)
    lines = str(err.value).splitlines()
    assert len(lines) == len(faults), lines
    for fault in faults:
        assert any(
            re.search(re.escape(str(path)) + EMULATE_FAULTS[fault][1], ln) for ln in lines
        ), (fault, lines)
