"""End-to-end tests of the ns-3 driver ``build/sim/disaggsim-ns3`` (sim/disaggsim-ns3.cc).

Oracles: lone flows must have slowdown 1 (the ideal FCT is the model's own lone-flow time,
topologies/doc/clos.md), one ideal FCT is computed by hand, and a malformed input must be
rejected with ``file:line: field`` and leave no output behind.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from disaggsim.schemas import FCT_RECORDS, NS3_FLOWS

BINARY = Path(__file__).resolve().parents[1] / "build" / "sim" / "disaggsim-ns3"

pytestmark = pytest.mark.skipif(
    not BINARY.exists(),
    reason=f"{BINARY} is not built (cmake -S . -B build -G Ninja && cmake --build build)",
)


def _write_flows(path: Path, rows: list[tuple[int, int, int, int, int]]) -> None:
    lines = [",".join(NS3_FLOWS.names)] + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def _run(tmp_path: Path, flows: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(BINARY),
            f"--flows={flows}",
            f"--out={tmp_path / 'fct.csv'}",
            f"--stats={tmp_path / 'stats.json'}",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("protocol", ["tcp", "dctcp", "tcp-ns3", "dctcp-ns3"])
def test_lone_flows_have_slowdown_one(tmp_path: Path, protocol: str) -> None:
    # Flows far apart in time (100 us) so that each is alone in the network.
    rows = [
        (0, 0, 0, 16, 1460),  # inter-rack, one segment
        (1, 100_000, 1, 2, 1),  # intra-rack, one byte
        (2, 200_000, 3, 100, 4096),  # inter-rack 4 KiB page
        (3, 300_000, 5, 6, 14600),  # intra-rack, 10 segments (InitialCwnd)
    ]
    flows = tmp_path / "flows.csv"
    _write_flows(flows, rows)
    proc = _run(tmp_path, flows, f"--protocol={protocol}")
    assert proc.returncode == 0, proc.stderr

    fct = pd.read_csv(tmp_path / "fct.csv")
    assert list(fct.columns) == FCT_RECORDS.names
    assert fct["flow_id"].tolist() == [0, 1, 2, 3]
    assert (fct["finished"] == 1).all()
    assert fct["slowdown"].tolist() == pytest.approx([1.0] * 4, abs=1e-6)
    assert (fct["fct_ns"] == fct["finish_ns"] - fct["start_ns"]).all()
    # By hand (40 Gbps): 1518 B -> 303.6 ns; + 2x20 + 2x200 ns cables + 3x240 ns switches
    # + (303.6 - 75.9) ns re-serialization after the 4x uplink = 1691.3 ns -> 1691.
    assert fct.loc[0, "ideal_fct_ns"] == 1691
    # 1 B intra-rack: 59 B -> 11.8 ns; + 2x20 ns + 240 ns = 291.8 ns -> 292.
    assert fct.loc[1, "ideal_fct_ns"] == 292

    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["flows"] == 4 and stats["flows_finished"] == 4
    assert stats["packets_dropped"] == 0 and stats["ce_marks"] == 0
    # 1 + 1 + 3 + 10 data segments.
    assert stats["data_packets_delivered"] == 15
    assert stats["events"] > 0 and stats["peak_rss_kb"] > 0
    assert stats["config"]["options"]["protocol"] == protocol
    assert stats["config"]["attributes"]["ns3::ClosTopology::Racks"] == "9"


def test_former_protocol_name_runs_the_renamed_transport_with_a_notice(tmp_path: Path) -> None:
    # tcp-lean took the name tcp (issue #26): the old name still runs, says so in one line,
    # and the run records the current name.
    flows = tmp_path / "flows.csv"
    _write_flows(flows, [(0, 0, 0, 16, 1460)])
    proc = _run(tmp_path, flows, "--protocol=tcp-lean")
    assert proc.returncode == 0, proc.stderr
    notice = [line for line in proc.stderr.splitlines() if "notice" in line]
    assert notice == [
        "disaggsim-ns3: notice: protocol 'tcp-lean' is now called 'tcp' (README, \"Protocols\")"
    ]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["config"]["options"]["protocol"] == "tcp"


def test_unfinished_flows_are_kept(tmp_path: Path) -> None:
    # A 10 MB flow cannot finish in 10 us: it must be reported as unfinished, not dropped.
    flows = tmp_path / "flows.csv"
    _write_flows(flows, [(0, 0, 0, 1, 1460), (1, 0, 2, 30, 10_000_000)])
    proc = _run(tmp_path, flows, "--stopTimeNs=10000")
    assert proc.returncode == 0, proc.stderr
    fct = pd.read_csv(tmp_path / "fct.csv")
    assert fct["finished"].tolist() == [1, 0]
    assert fct.loc[1, "finish_ns"] == -1 and fct.loc[1, "fct_ns"] == -1
    assert math.isnan(fct["slowdown"].iloc[1])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1,0,0,16,abc", "flows.csv:3: field 'size_bytes'"),
        ("1,0,0,144,10", "flows.csv:3: field 'dst_host'"),
        ("1,-5,0,16,10", "flows.csv:3: field 'start_ns'"),
        ("1,0,0,16", "flows.csv:3: expected 5 fields"),
    ],
)
def test_malformed_csv_is_rejected_and_nothing_written(
    tmp_path: Path, line: str, message: str
) -> None:
    flows = tmp_path / "flows.csv"
    flows.write_text(",".join(NS3_FLOWS.names) + "\n0,0,0,16,1460\n" + line + "\n")
    proc = _run(tmp_path, flows)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flows.csv"]


def test_unknown_protocol_is_rejected(tmp_path: Path) -> None:
    flows = tmp_path / "flows.csv"
    _write_flows(flows, [(0, 0, 0, 1, 1)])
    proc = _run(tmp_path, flows, "--protocol=nosuch")
    assert proc.returncode == 2
    assert "expected one of" in proc.stderr and "tcp" in proc.stderr
    assert not (tmp_path / "fct.csv").exists()


def test_list_capabilities_lists_protocols_and_settable_attributes(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(BINARY), "--list-capabilities"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = proc.stdout.splitlines()
    kinds = {line.split(" ", 1)[0] for line in lines}
    assert kinds == {"protocol", "alias", "attribute"}
    protocols = [line.split(" ", 1)[1] for line in lines if line.startswith("protocol ")]
    # the FlowTransportRegistrar entries of transports/*/helper/*.cc
    assert protocols == [
        "dctcp",
        "dctcp-ns3",
        "fastpass",
        "ideal",
        "pfabric",
        "phost",
        "roce-dcqcn",
        "roce-hpcc",
        "roce-none",
        "tcp",
        "tcp-ns3",
    ]
    # the lean transports' former names (issue #26), each after its current name
    assert [line for line in lines if line.startswith("alias ")] == [
        "alias dctcp-lean dctcp",
        "alias tcp-lean tcp",
    ]
    attributes = {line.split(" ", 1)[1] for line in lines if line.startswith("attribute ")}
    # ns3::ClosTopology's own attributes (topologies/model/clos-topology.cc) ...
    assert {
        "ns3::ClosTopology::Racks",
        "ns3::ClosTopology::BufferBytes",
        "ns3::ClosTopology::EcmpSalt",
    } <= attributes
    # ... and only the declaring class's: ns-3's command line (Config::SetDefaultFailSafe)
    # sets ns3::TcpSocket::SegmentSize but rejects it under the subclass TcpSocketBase
    assert "ns3::TcpSocket::SegmentSize" in attributes
    assert "ns3::TcpSocketBase::SegmentSize" not in attributes
    flows = tmp_path / "flows.csv"
    _write_flows(flows, [(0, 0, 0, 1, 1460)])
    ok = _run(
        tmp_path,
        flows,
        "--ns3::TcpSocket::SegmentSize=1000",
        "--ns3::ClosTopology::EcmpSalt=3",
        "--ns3::TcpSocketBase::MinRto=+1ms",
    )
    assert ok.returncode == 0, ok.stderr
    for unlisted in ("ns3::TcpSocketBase::SegmentSize", "ns3::TcpSocketBase::NoSuch"):
        bad = _run(tmp_path, flows, f"--{unlisted}=1000")
        assert bad.returncode != 0 and "Invalid command-line argument" in bad.stderr
