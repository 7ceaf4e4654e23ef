"""`disaggsim convert` on the original artifact's results layout (NetSys/disaggregation
``rmem/results/<run>/``: ``<n>-mem-<host>``, ``<n>-meta-<host>``,
``<n>-disk-<host>.blktrace.<cpu>``).

The fixture is written at test time from OUR bundled real traces (traces/samples/*), in
the artifact's exact formats: the paging records as the artifact's
``<idx> <±timestamp_us> <page> <npages> <page_size>`` lines with absolute epoch µs, the meta
as ``date +%y%m%d%H%M%S.%N`` text, the blktraces as collected (the ftrace blk tracer writes
no wall-clock anchor). Expected values come from the sample's own files and meta.json
(the collector's measured CLOCK_REALTIME - CLOCK_MONOTONIC offset), parsed here
independently of the converter. A second test runs on a real excerpt of the artifact when
the project owner has placed one under ``../shared/data/artifact/<run>/`` (made by
tests/fixtures/make_artifact_excerpt.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import struct
import zoneinfo
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disaggsim.cli import main
from disaggsim.schemas import BLADES_PER_NODE, BladeType
from disaggsim.traces.convert import (
    ConvertOptions,
    ConvertReport,
    convert,
    is_artifact_run,
    load_sample,
    read_flow_table,
)
from disaggsim.traces.paging import read_rmem_meta

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "traces" / "samples"
SHARED_ARTIFACT = Path(
    os.environ.get("DISAGGSIM_ARTIFACT_EXCERPTS", REPO.parent / "shared" / "data" / "artifact")
)
PAGE = 4096


def _paging_lines(rmem: Path, start_us: int) -> tuple[list[str], dict[str, int]]:
    """Our batch-form trace -> the artifact's indexed lines, and pages per direction.

    Parsed here with plain string operations (the oracle): '-' page = read (swap-in).
    """
    lines, pages = [], {"R": 0, "W": 0}
    for idx, line in enumerate(rmem.read_text().splitlines()):
        _, ts, page, npages = line.split()
        op = "R" if page.startswith("-") else "W"
        pages[op] += int(npages)
        sign = "-" if op == "R" else ""
        lines.append(f"{idx} {sign}{start_us + int(ts)} {int(page.lstrip('+-'))} {npages} {PAGE}")
    return lines, pages


def _first_disk_time_ns(prefix: Path) -> int | None:
    """Earliest record time of a node's per-CPU blktraces, None if no data-carrying issue
    ('D') record (struct read by hand: time is the u64 at byte 8 of each 48-byte record,
    bytes and action the u32s at bytes 24 and 28, pdu_len the u16 at byte 46)."""
    first, any_issue = None, False
    for f in sorted(prefix.parent.glob(prefix.name + ".blktrace.*")):
        data = f.read_bytes()
        off = 0
        while off + 48 <= len(data):
            (time_ns,) = struct.unpack_from("<Q", data, off + 8)
            (nbytes, action) = struct.unpack_from("<II", data, off + 24)
            (pdu,) = struct.unpack_from("<H", data, off + 46)
            any_issue |= bool(action & 0xFF == 7 and nbytes and (action >> 16) & 0b11)
            first = time_ns if first is None else min(first, time_ns)
            off += 48 + pdu
    return first if any_issue else None


def make_artifact_run(sample: Path, out: Path, tz: str = "UTC") -> dict[str, object]:
    """Write ``sample`` in the artifact's layout into ``out``; return the oracle values."""
    meta = json.loads((sample / "meta.json").read_text())
    offset = meta["trace_clock_offset_ns"]
    out.mkdir(parents=True)
    pages = {"R": 0, "W": 0}
    empty = aligned = 0
    for node in meta["nodes"]:
        n, host = node["node"], f"ec2-10-77-0-{node['node'] + 1}.compute-1.amazonaws.com"
        start_us = read_rmem_meta(sample / (node["paging"] + ".meta"))
        lines, p = _paging_lines(sample / node["paging"], start_us)
        pages = {k: pages[k] + p[k] for k in pages}
        empty += not lines
        (out / f"{n}-mem-{host}").write_text("".join(ln + "\n" for ln in lines))
        for f in sorted(sample.glob(node["disk_blktrace"] + ".blktrace.*")):
            cpu = f.name.rsplit(".", 1)[1]
            shutil.copy(f, out / f"{n}-disk-{host}.blktrace.{cpu}")
        # The artifact's meta is `date` just before blktrace starts: here the wall-clock
        # time of the node's first blktrace record, so aligning that record to it is exact
        # (the paging trace's start if the node did no disk I/O).
        first_disk = _first_disk_time_ns(sample / node["disk_blktrace"])
        empty += first_disk is None
        aligned += first_disk is not None
        start_ns = start_us * 1000 if first_disk is None else first_disk + offset
        local = dt.datetime.fromtimestamp(start_ns // 10**9, tz=zoneinfo.ZoneInfo(tz))
        (out / f"{n}-meta-{host}").write_text(f"{local:%y%m%d%H%M%S}.{start_ns % 10**9:09d}\n")
    return {"pages": pages, "empty": empty, "aligned": aligned, "offset": offset}


def _reference(sample: Path, tmp: Path) -> pd.DataFrame:
    """The same sample converted from its meta.json, without the pcaps (the artifact has
    none). The artifact's ``<idx>`` is a running line number (0..N-1 in every published
    mem file), so its records never share a batch: the reference's batch ids are made the
    line numbers too (a plain text edit), else contiguous pages of one batch would merge."""
    copy = tmp / "reference"
    shutil.copytree(sample, copy)
    for rmem in copy.glob("node*.rmem"):
        rows = [ln.split(maxsplit=1)[1] for ln in rmem.read_text().splitlines()]
        rmem.write_text("".join(f"{i} {rest}\n" for i, rest in enumerate(rows)))
    s = load_sample(copy)
    s = dataclasses.replace(
        s,
        nodes=tuple(
            dataclasses.replace(n, pcap=None, ip=None, swap_blktrace=None) for n in s.nodes
        ),
    )
    return convert(s)


def _no_file_columns(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=["source_file"]).reset_index(drop=True)


@pytest.mark.parametrize("name", ["dask-sort", "memcached-ycsb"])
def test_artifact_layout_of_our_samples(tmp_path: Path, name: str) -> None:
    run = tmp_path / "150520220958"
    oracle = make_artifact_run(SAMPLES / name, run)
    assert is_artifact_run(run)
    rep = ConvertReport()
    df = convert(run, report=rep)
    assert rep.source_format == "artifact results directory"
    # Page counts per direction: flows carry exactly the trace's pages.
    pages = oracle["pages"]
    assert isinstance(pages, dict)
    for op, kind in (("R", "mem_read"), ("W", "mem_write")):
        assert df.loc[df["kind"] == kind, "size_bytes"].sum() == pages[op] * PAGE
    # Empty files (memcached-ycsb: nodes 1 and 2 never swapped, no node wrote to disk)
    # are counted.
    assert len(rep.empty_files) == oracle["empty"]
    assert oracle["empty"] == (0 if name == "dask-sort" else 5)
    # Every non-empty disk trace was aligned to its node's meta, and said so.
    aligned = [c for c in rep.clock_notes if "first record aligned to node" in c]
    assert len(aligned) == oracle["aligned"]
    # Same flows as the sample's own meta.json conversion with the measured offset.
    ref = _reference(SAMPLES / name, tmp_path)
    pd.testing.assert_frame_equal(_no_file_columns(df), _no_file_columns(ref))
    span = df["start_ns"].max()
    assert 0 < span < 600 * 10**9  # the sample ran for minutes, not decades


def test_a_negative_timestamp_is_a_swap_in_from_a_memory_blade(tmp_path: Path) -> None:
    run = tmp_path / "run"
    make_artifact_run(SAMPLES / "dask-sort", run)
    mem0 = next(run.glob("0-mem-*"))
    first_read = next(ln for ln in mem0.read_text().splitlines() if ln.split()[1][0] == "-")
    idx = int(first_read.split()[0])
    df = convert(run, options=ConvertOptions(kinds=("mem_read", "mem_write")))
    rows = df[(df["node"] == 0) & (df["source_record"] == idx + 1)]
    assert set(rows["kind"]) == {"mem_read"}
    assert (rows["dst"] == 0 * BLADES_PER_NODE + int(BladeType.COMPUTE)).all()
    assert (rows["src"] % BLADES_PER_NODE == int(BladeType.MEMORY)).all()


def test_meta_time_zone(tmp_path: Path) -> None:
    # Metas written in Berlin local time give the UTC result only when told the zone.
    utc, berlin = tmp_path / "u", tmp_path / "b"
    make_artifact_run(SAMPLES / "dask-sort", utc)
    make_artifact_run(SAMPLES / "dask-sort", berlin, tz="Europe/Berlin")
    assert next(utc.glob("0-meta-*")).read_text() != next(berlin.glob("0-meta-*")).read_text()
    a = convert(utc)
    b = convert(berlin, meta_tz="Europe/Berlin")
    pd.testing.assert_frame_equal(_no_file_columns(a), _no_file_columns(b))
    # Read as UTC, the Berlin metas put the disk traces 1 or 2 hours off: refused.
    with pytest.raises(ValueError, match=r"do not fit one run: .*-disk-"):
        convert(berlin)


def _anchor_record(time_ns: int, wall_ns: int) -> bytes:
    """A BLK_TN_TIMESTAMP notify record (kernel trace_note_time): 48-byte header with
    action BLK_TC_NOTIFY << 16 | 1, then u32 tv_sec, u32 tv_nsec."""
    action = (1 << 10) << 16 | 1
    head = struct.pack("<IIQQIIIIIHH", 0x65617407, 0, time_ns, 0, 0, action, 0, 0, 0, 0, 8)
    return head + struct.pack("<II", wall_ns // 10**9, wall_ns % 10**9)


def test_wall_clock_anchor_wins_over_the_meta(tmp_path: Path) -> None:
    run = tmp_path / "run"
    oracle = make_artifact_run(SAMPLES / "dask-sort", run)
    offset = oracle["offset"]
    assert isinstance(offset, int)
    ref = convert(run)
    # Anchor each node's blktrace with the true offset, and move every meta 1 s off: the
    # anchor must be used (same table), the meta ignored for the disk clock.
    for n in range(3):
        f = next(run.glob(f"{n}-disk-*.blktrace.0"))
        first = _first_disk_time_ns(Path(str(f)[: -len(".blktrace.0")]))
        assert first is not None
        t = first - 10**6
        f.write_bytes(_anchor_record(t, t + offset) + f.read_bytes())
        m = next(run.glob(f"{n}-meta-*"))
        stamp, frac = m.read_text().split(".")
        m.write_text(f"{int(stamp) + 1}.{frac}")
    rep = ConvertReport()
    df = convert(run, report=rep)
    assert sum("BLK_TN_TIMESTAMP" in c for c in rep.clock_notes) == 3
    disk = ["disk_read", "disk_write"]
    pd.testing.assert_frame_equal(
        _no_file_columns(df[df["kind"].isin(disk)]).drop(columns="source_record"),
        _no_file_columns(ref[ref["kind"].isin(disk)]).drop(columns="source_record"),
    )


def test_cli_on_the_artifact_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    make_artifact_run(SAMPLES / "dask-sort", run)
    next(run.glob("2-mem-*")).write_text("")  # as on some of the artifact's nodes
    assert main(["convert", str(run), "--out", str(tmp_path / "out" / "t")]) == 0
    out = capsys.readouterr().out
    assert "input: artifact results directory" in out
    assert "empty input files: 1" in out
    assert "first record aligned to node 0's trace start" in out
    df = read_flow_table(tmp_path / "out" / "t.parquet")
    assert len(df) and df["start_ns"].min() == 0


def _shared_runs() -> list[Path]:
    if not SHARED_ARTIFACT.is_dir():
        return []
    return sorted(d for d in SHARED_ARTIFACT.iterdir() if is_artifact_run(d))


@pytest.mark.skipif(
    not _shared_runs(),
    reason=f"no real artifact excerpt under {SHARED_ARTIFACT}/<run>/ (make one with "
    "tests/fixtures/make_artifact_excerpt.py from a clone of NetSys/disaggregation)",
)
@pytest.mark.parametrize("run", _shared_runs(), ids=lambda p: p.name)
def test_real_artifact_excerpt(run: Path) -> None:
    rep = ConvertReport()
    df = convert(run, report=rep)
    pages = {"R": 0, "W": 0}
    first_reads: dict[int, tuple[str, int]] = {}
    for f in run.glob("*-mem-*"):
        node = int(f.name.split("-", 1)[0])
        for lineno, line in enumerate(f.read_text().splitlines(), start=1):
            _, ts, _, npages, size = line.split()
            assert size == str(PAGE)
            pages["R" if ts.startswith("-") else "W"] += int(npages)
            if ts.startswith("-"):
                first_reads.setdefault(node, (str(f), lineno))
    assert df.loc[df["kind"] == "mem_read", "size_bytes"].sum() == pages["R"] * PAGE
    assert df.loc[df["kind"] == "mem_write", "size_bytes"].sum() == pages["W"] * PAGE
    reads = df[df["kind"] == "mem_read"]
    assert len(reads) and first_reads
    for node, (path, lineno) in first_reads.items():  # '-' timestamp: memory -> compute
        row = df[(df["source_file"] == path) & (df["source_record"] == lineno)]
        assert set(row["kind"]) == {"mem_read"}
        assert (row["dst"] == node * BLADES_PER_NODE + int(BladeType.COMPUTE)).all()
    assert (reads["dst"] % BLADES_PER_NODE == int(BladeType.COMPUTE)).all()
    assert (reads["src"] % BLADES_PER_NODE == int(BladeType.MEMORY)).all()
    span = max(b for _, b in rep.time_ranges.values()) - min(a for a, _ in rep.time_ranges.values())
    assert df["start_ns"].between(0, span).all()
    assert span < 3600 * 10**9
    assert np.array_equal(df["flow_id"].to_numpy(), np.arange(len(df)))


def test_a_blktrace_left_on_its_own_clock_is_refused(tmp_path: Path) -> None:
    # Node 0 loses its paging trace and meta: nothing places its disk trace on the wall
    # clock (no anchor, no offset, no node start), so it stays at boot-time ns while the
    # other nodes are at epoch ns. That used to be a table spanning decades.
    run = tmp_path / "run"
    make_artifact_run(SAMPLES / "dask-sort", run)
    next(run.glob("0-mem-*")).unlink()
    next(run.glob("0-meta-*")).unlink()
    with pytest.raises(ValueError, match=r"do not fit one run") as info:
        convert(run)
    text = str(info.value)
    disk0 = next(run.glob("0-disk-*.blktrace.0")).name.removesuffix(".blktrace.0")
    assert disk0 in text and "1-mem-" in text and "2-disk-" in text  # every file, its range
    assert "different clocks" in text
