"""bench/hpcc_sim.py: HPCC simulator input files and fct.txt parsing, on hand-made cases.

The formats are those ``scratch/third.cc`` of HPCC's simulator reads and writes
(alibaba-edu/High-Precision-Congestion-Control): topology ``<nodes> <switches> <links>``,
the switch ids, then ``src dst rate delay error_rate``; flows ``<count>`` then
``src dst pg dport size start_s``; fct.txt ``sip dip sport dport size start_ns fct_ns
standalone_ns`` with node i at IP 0x0b000001 + (i / 256) * 0x10000 + (i % 256) * 0x100.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _bench import load_bench

hpcc_sim = load_bench("hpcc_sim")

FABRIC = hpcc_sim.ClosFabric(
    racks=2,
    hosts_per_rack=2,
    spines=1,
    rate_gbps=100.0,
    spine_rate_factor=4,
    host_link_ns=1000,
    spine_link_ns=2000,
    buffer_mb=32,
)
FLOWS = pd.DataFrame(
    {
        "flow_id": [0, 1, 2],
        "start_ns": [500, 100, 100],
        "src_host": [0, 3, 1],
        "dst_host": [2, 0, 3],
        "size_bytes": [1000, 20_000, 300],
    }
)


def test_write_inputs_topology_and_flows(tmp_path: Path) -> None:
    config = hpcc_sim.write_inputs(FLOWS, FABRIC, "hpcc", tmp_path)
    # 4 hosts, ToRs 4 and 5, spine 6; host links 100G/1 us, ToR-spine 400G/2 us
    assert (tmp_path / "topology.txt").read_text() == (
        "7 3 6\n4 5 6\n"
        "0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n"
        "3 5 100Gbps 1000ns 0\n4 6 400Gbps 2000ns 0\n5 6 400Gbps 2000ns 0\n"
    )
    # start order (ties by flow id), 2 s offset, priority group 3 and port 100
    assert (tmp_path / "flow.txt").read_text() == (
        "3\n3 0 3 100 20000 2.000000100\n1 3 3 100 300 2.000000100\n0 2 3 100 1000 2.000000500\n"
    )
    settings = dict(line.split(" ", 1) for line in config.read_text().splitlines())
    assert settings["CC_MODE"] == "3"  # HPCC
    assert settings["BUFFER_SIZE"] == "32"
    # run.py at 100 Gb/s: Kmin 400 KB / Kmax 1600 KB on 100G, 4x on 400G ports
    assert settings["KMIN_MAP"] == "2 100000000000 400 400000000000 1600"
    assert settings["KMAX_MAP"] == "2 100000000000 1600 400000000000 6400"
    with pytest.raises(KeyError):
        hpcc_sim.write_inputs(FLOWS, FABRIC, "timely", tmp_path)


def test_read_fct_joins_flow_ids(tmp_path: Path) -> None:
    fct = tmp_path / "fct.txt"
    # flow 1 (3 -> 0) and flow 0 (0 -> 2, its start 1 ns off as HPCC's double seconds may
    # make it); flow 2 unfinished. Node 3 = 0b000301, node 0 = 0b000001, node 2 = 0b000201.
    fct.write_text(
        "0b000301 0b000001 10000 100 20000 2000000100 4000 2000\n"
        "0b000001 0b000201 10000 100 1000 2000000501 3000 3000\n"
    )
    out = hpcc_sim.read_fct(fct, FLOWS)
    assert out["flow_id"].tolist() == [0, 1, 2]
    assert out["finished"].tolist() == [1, 1, 0]
    assert out["slowdown"].iloc[:2].tolist() == [1.0, 2.0]
    assert pd.isna(out["fct_ns"].iloc[2])
    fct.write_text("0b000001 0b000201 10000\n")
    with pytest.raises(ValueError, match=r"fct\.txt:1: expected 8 fields"):
        hpcc_sim.read_fct(fct, FLOWS)
