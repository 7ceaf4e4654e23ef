"""convert(): the real two-node loopback sample -> flow table, checked against the protocol
that generated it (tests/fixtures/traces/make_sample.py) and hand-made paging traces."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disaggsim.schemas import FLOW_TABLE
from disaggsim.traces.convert import (
    ConvertOptions,
    ConvertReport,
    convert,
    load_sample,
    read_flow_table,
    write_flow_table,
)
from disaggsim.traces.errors import TraceFormatError

SAMPLE = Path(__file__).parent / "fixtures" / "traces" / "sample_lo"
N0_COMPUTE, N1_COMPUTE = 0, 3


@pytest.fixture(scope="module")
def converted() -> tuple[pd.DataFrame, ConvertReport]:
    rep = ConvertReport()
    return convert(SAMPLE, report=rep), rep


def test_schema_and_order(converted: tuple[pd.DataFrame, ConvertReport]) -> None:
    df, _ = converted
    assert list(df.columns) == FLOW_TABLE.names
    assert df["flow_id"].tolist() == list(range(len(df)))
    assert df["start_ns"].is_monotonic_increasing and df["start_ns"].min() >= 0
    assert (df["size_bytes"] > 0).all()
    assert str(df["src"].dtype) == "int32" and str(df["start_ns"].dtype) == "int64"


def test_net_flows_are_the_protocol_messages_once(
    converted: tuple[pd.DataFrame, ConvertReport],
) -> None:
    df, rep = converted
    net = df[df["kind"] == "net"]
    # R 32768, W 16384, R 8192 (make_sample.py): 16 B headers, data, 1 B write ack.
    # Both nodes list the same lo.pcap; each message must still appear once.
    assert net[["src", "dst", "size_bytes"]].values.tolist() == [
        [N1_COMPUTE, N0_COMPUTE, 16],
        [N0_COMPUTE, N1_COMPUTE, 32768],
        [N1_COMPUTE, N0_COMPUTE, 16 + 16384],
        [N0_COMPUTE, N1_COMPUTE, 1],
        [N1_COMPUTE, N0_COMPUTE, 16],
        [N0_COMPUTE, N1_COMPUTE, 8192],
    ]
    assert rep.records["net_messages"] == 6


def test_disk_accesses_serving_node1_are_attributed_to_it(
    converted: tuple[pd.DataFrame, ConvertReport],
) -> None:
    df, rep = converted
    reads = df[df["kind"] == "disk_read"]
    writes = df[df["kind"] == "disk_write"]
    assert reads.groupby("dst")["size_bytes"].sum().to_dict() == {
        N1_COMPUTE: 32768 + 8192,
        N0_COMPUTE: 4096,
    }
    assert writes[["src", "size_bytes"]].values.tolist() == [[N1_COMPUTE, 16384]]
    assert set(reads["src"]) <= {2, 5} and set(writes["dst"]) <= {2, 5}  # disk blades
    assert (
        rep.attribution is not None and rep.attribution.reattributed_bytes == 32768 + 8192 + 16384
    )


def test_clocks_are_aligned(converted: tuple[pd.DataFrame, ConvertReport]) -> None:
    # blktrace (mono + trace_clock_offset_ns) vs pcap (realtime): the server reads the
    # block, then sends it, so each remote read precedes its reply by less than 1 ms.
    df, _ = converted
    replies = df[(df["kind"] == "net") & (df["src"] == N0_COMPUTE) & (df["size_bytes"] > 1)]
    reads = (
        df[(df["kind"] == "disk_read") & (df["dst"] == N1_COMPUTE)]
        .groupby("source_record")["start_ns"]
        .min()
    )
    lead = replies["start_ns"].to_numpy() - reads.to_numpy()
    assert ((lead > 0) & (lead < 1_000_000)).all(), lead
    # and the write lands after its request message arrived
    req = df[(df["kind"] == "net") & (df["size_bytes"] == 16 + 16384)]["start_ns"].iloc[0]
    wr = df[df["kind"] == "disk_write"]["start_ns"].iloc[0]
    assert 0 < wr - req < 1_000_000


def test_memory_flows_from_hand_made_paging(converted: tuple[pd.DataFrame, ConvertReport]) -> None:
    df, _ = converted
    mem = df[df["kind"].str.startswith("mem")]
    # node0.rmem: batch 0 reads pages 100-102 (observed space 103 pages, n1.memory half),
    # batch 1 writes pages 7-10 (n0.memory); node1.rmem: batch 0 writes pages 0-7 (split
    # 4 + 4 pages over both memory blades), batch 1 reads page 3 (n0.memory).
    assert sorted(mem[["src", "dst", "size_bytes", "kind"]].values.tolist()) == sorted(
        [
            [4, 0, 12288, "mem_read"],
            [0, 1, 16384, "mem_write"],
            [3, 1, 16384, "mem_write"],
            [3, 4, 16384, "mem_write"],
            [1, 3, 4096, "mem_read"],
        ]
    )
    t = {(r.node, r.source_record): r.start_ns for r in mem.itertuples()}
    assert t[(0, 3)] - t[(0, 1)] == 4_000_000  # 5000 µs - 1000 µs
    assert t[(1, 1)] - t[(0, 1)] == 1_500_000  # both traces share one meta start time


def test_options_kinds_and_no_attribution() -> None:
    only_net = convert(SAMPLE, ConvertOptions(kinds=("net",)))
    assert set(only_net["kind"]) == {"net"} and len(only_net) == 6
    plain = convert(SAMPLE, ConvertOptions(attribute_disk=False, attribute_memory=False))
    assert set(plain[plain["kind"] == "disk_read"]["dst"]) == {N0_COMPUTE}


def test_explicit_inputs_equal_directory() -> None:
    sample = load_sample(SAMPLE)
    assert convert(sample).equals(convert(SAMPLE))
    assert len(sample.nodes) == 2 and sample.nodes[0].ip == "127.0.0.1"


def test_write_and_read_back(converted: tuple[pd.DataFrame, ConvertReport], tmp_path: Path) -> None:
    df, _ = converted
    parquet, csv = write_flow_table(df, tmp_path / "out" / "flows")
    assert parquet.name == "flows.parquet" and csv.name == "flows.csv"
    assert read_flow_table(parquet).equals(df)
    assert read_flow_table(csv).equals(df)
    assert csv.read_text().splitlines()[0] == ",".join(FLOW_TABLE.names)


def test_write_is_all_or_nothing(
    converted: tuple[pd.DataFrame, ConvertReport], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    df, _ = converted
    with pytest.raises(ValueError, match="size_bytes > 0"):
        write_flow_table(df.assign(size_bytes=0), tmp_path / "bad")
    with pytest.raises(ValueError, match="columns"):
        write_flow_table(df.drop(columns="node"), tmp_path / "bad")

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(OSError, match="disk full"):
        write_flow_table(df, tmp_path / "half")
    assert list(tmp_path.iterdir()) == []


def test_missing_and_malformed_inputs(tmp_path: Path) -> None:
    d = tmp_path / "s"
    shutil.copytree(SAMPLE, d)
    (d / "node1.rmem").unlink()
    with pytest.raises(FileNotFoundError, match="node1.rmem"):
        convert(d)
    meta = json.loads((SAMPLE / "meta.json").read_text())
    meta["nodes"][1]["node"] = "one"
    (d / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TraceFormatError, match=r"meta.json: field 'nodes\[1\].node'"):
        convert(d)
    shutil.copy(SAMPLE / "meta.json", d / "meta.json")
    shutil.copy(SAMPLE / "node1.rmem", d / "node1.rmem")
    (d / "node1.rmem").write_text("0 2500 +0 8\n1 9000 -3\n")
    with pytest.raises(TraceFormatError, match=r"node1.rmem:2: expected 4 fields"):
        convert(d)
    empty = tmp_path / "e"
    empty.mkdir()
    with pytest.raises(FileNotFoundError):
        convert(empty)


def test_device_sizes_option() -> None:
    sample = load_sample(SAMPLE)
    with pytest.raises(ValueError, match="swap_bytes"):
        convert(sample, ConvertOptions(use_device_sizes=True))
    sample = dataclasses.replace(sample, swap_bytes=1 << 30)
    df = convert(sample, ConvertOptions(use_device_sizes=True))
    # 8 MiB disk over 2 disk blades: [0, 4 MiB) -> n0.disk (2), [4, 8 MiB) -> n1.disk (5)
    # (node 0's ranges are rotated by 0). The requests at 0, 1 and 2 MiB land on blade 2,
    # the local read at 4 MiB on blade 5. 1 GiB swap: every page is in the first half.
    disk = df[df["kind"].str.startswith("disk")]
    blade = np.where(disk["kind"] == "disk_read", disk["src"], disk["dst"])
    assert sorted(zip(blade.tolist(), disk["size_bytes"].tolist(), strict=True)) == [
        (2, 8192),
        (2, 16384),
        (2, 32768),
        (5, 4096),
    ]
    mem = df[df["kind"].str.startswith("mem")]
    mem_blade = np.where(mem["kind"] == "mem_read", mem["src"], mem["dst"])
    assert set(mem_blade.tolist()) == {1}


COLLECTED = Path(__file__).parents[1] / "traces" / "samples" / "dask-sort"


@pytest.mark.skipif(not (COLLECTED / "meta.json").exists(), reason="no collected sample")
def test_collected_sample_conserves_bytes() -> None:
    # Independent of our readers: the paging files' 4th field (pages), and blkparse's
    # decoding of the disk traces (issue events with data).
    df = convert(COLLECTED)
    meta = json.loads((COLLECTED / "meta.json").read_text())
    pages = 0
    for n in meta["nodes"]:
        for line in (COLLECTED / n["paging"]).read_text().split("\n"):
            if line.strip():
                pages += int(line.split()[3])
    assert df[df["kind"].str.startswith("mem")]["size_bytes"].sum() == pages * 4096
    if shutil.which("blkparse"):
        import subprocess

        disk = 0
        for n in meta["nodes"]:
            out = subprocess.run(
                [
                    "blkparse",
                    "-i",
                    n["disk_blktrace"],
                    "-D",
                    str(COLLECTED),
                    "-a",
                    "issue",
                    "-f",
                    "%a %d %N\n",
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for line in out.splitlines():
                parts = line.split()
                if (
                    len(parts) == 3
                    and parts[0] == "D"
                    and ("R" in parts[1] or "W" in parts[1])
                    and "D" not in parts[1]
                ):
                    disk += int(parts[2])
        assert df[df["kind"].str.startswith("disk")]["size_bytes"].sum() == disk
    assert df["flow_id"].tolist() == list(range(len(df)))
