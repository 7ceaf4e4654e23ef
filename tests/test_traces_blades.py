"""Blade model (paper §4.1, §2.2): address-space partitions and flows, hand-computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from disaggsim.traces.blades import (
    DEFAULT_DISK_PARTITION,
    DEFAULT_MEMORY_PARTITION,
    Partition,
    disk_flows,
    memory_flows,
    split_by_blade,
)


def split(addr: int, size: int, n: int, part: Partition, space: int = 0, node: int = 0):
    ai, blade, lo, nbytes = split_by_blade(
        np.array([node]), np.array([addr]), np.array([size]), n, part, np.array([space])
    )
    return list(zip(blade.tolist(), lo.tolist(), nbytes.tolist(), strict=True))


def test_range_partition_splits_at_boundary() -> None:
    # 4 blades over 64 KiB: ranges of 16 KiB. [12 KiB, 20 KiB) straddles the first boundary.
    part = Partition("range")
    assert split(12288, 8192, 4, part, 65536) == [(0, 12288, 4096), (1, 16384, 4096)]
    assert split(0, 65536, 4, part, 65536) == [(k, 16384 * k, 16384) for k in range(4)]
    rotated = Partition("range", rotate_by_node=True)
    assert split(12288, 8192, 4, rotated, 65536, node=3) == [(3, 12288, 4096), (0, 16384, 4096)]


def test_range_partition_uneven_space() -> None:
    # 3 blades over 10 B: boundaries ceil(10k/3) = 0, 4, 7, 10.
    assert split(3, 5, 3, Partition("range"), 10) == [(0, 3, 1), (1, 4, 3), (2, 7, 1)]
    assert split(9, 1, 3, Partition("range"), 10) == [(2, 9, 1)]


def test_striped_partition() -> None:
    part = Partition("striped", block_bytes=4096)
    # [7 KiB, 13 KiB): blocks 1, 2, 3 -> blades 1, 2, 0.
    assert split(7168, 6144, 3, part) == [(1, 7168, 1024), (2, 8192, 4096), (0, 12288, 1024)]


def test_access_beyond_space_is_an_error() -> None:
    with pytest.raises(ValueError, match="beyond the address space"):
        split(65536, 1, 4, Partition("range"), 65536)
    with pytest.raises(ValueError, match="size_bytes > 0"):
        split(0, 0, 4, Partition("range"), 65536)
    with pytest.raises(ValueError):
        Partition("hash")  # type: ignore[arg-type]


def test_artifact_defaults() -> None:
    assert DEFAULT_MEMORY_PARTITION == Partition("range", "observed", rotate_by_node=False)
    assert DEFAULT_DISK_PARTITION == Partition("range", "observed", rotate_by_node=True)


MEM = pd.DataFrame(
    {
        "node": [0, 0, 0, 0],
        "time_ns": [100, 100, 200, 200],
        "op": ["R", "R", "W", "W"],
        "page": [0, 2, 6, 9],
        "npages": [2, 2, 2, 1],
        "batch_id": [0, 0, 1, 1],
        "source_file": "n0.rmem",
        "source_record": [1, 2, 3, 4],
    }
)


def test_memory_flows_contiguous_merge() -> None:
    # Observed space: pages [0, 10) = 40960 B; 2 blades split at page 5.
    f = memory_flows(MEM, 2)
    assert f[["start_ns", "src", "dst", "size_bytes", "kind", "source_record"]].values.tolist() == [
        [100, 1, 0, 16384, "mem_read", 1],  # pages 0-3 on n0.memory (blade 1) -> n0.compute
        [200, 0, 4, 8192, "mem_write", 3],  # pages 6-7 -> n1.memory (blade 4)
        [200, 0, 4, 4096, "mem_write", 4],  # page 9: not contiguous with page 7
    ]


def test_memory_flows_batch_merge_and_requester() -> None:
    f = memory_flows(MEM, 2, merge="batch")
    assert f["size_bytes"].tolist() == [16384, 12288]
    remote = MEM.assign(requester_node=[1, 1, 0, 0])
    f = memory_flows(remote, 2)
    assert f[["src", "dst"]].values.tolist() == [[1, 3], [0, 4], [0, 4]]  # read -> n1.compute


def test_memory_flows_record_straddling_blades() -> None:
    one = MEM.iloc[:1].assign(page=3, npages=4)  # pages 3-6, space 7 pages: split at 3.5 pages
    f = memory_flows(one, 2)
    assert f["size_bytes"].tolist() == [2048, 14336]
    assert f["src"].tolist() == [1, 4]
    assert f["size_bytes"].sum() == 4 * 4096


def test_memory_flows_device_space() -> None:
    f = memory_flows(MEM, 2, partition=Partition("range", 1 << 30))  # 1 GiB swap: all on blade 0
    assert set(f["src"].tolist() + f["dst"].tolist()) == {0, 1}


def test_disk_flows_rotated_ranges() -> None:
    disk = pd.DataFrame(
        {
            "node": [1, 1],
            "time_ns": [10, 20],
            "op": ["R", "W"],
            "sector": [0, 16],
            "size_bytes": [4096, 4096],
            "source_file": "n1.disk",
            "source_record": [0, 5],
        }
    )
    # Observed space 12288 B, boundary at 6144 B; node 1 rotates range k to blade (k+1) % 2.
    f = disk_flows(disk, 2)
    assert f[["src", "dst", "kind", "node"]].values.tolist() == [
        [5, 3, "disk_read", 1],  # range 0 -> n1.disk (5) -> n1.compute (3)
        [3, 2, "disk_write", 1],  # range 1 -> n0.disk (2)
    ]
    f = disk_flows(disk.assign(requester_node=[0, 0]), 2)
    assert f[["src", "dst"]].values.tolist() == [[5, 0], [0, 2]]


def test_empty_inputs() -> None:
    assert len(memory_flows(MEM.iloc[:0], 2)) == 0
    assert list(disk_flows(MEM.iloc[:0], 2).columns) == list(memory_flows(MEM, 2).columns)
