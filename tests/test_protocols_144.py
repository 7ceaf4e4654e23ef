"""TCP, pFabric and Ideal on the full 144-host Clos with the real ns-3 program.

The fabric is the driver's default, the paper's (Gao et al. OSDI'16 §4.2, pFabric SIGCOMM'13
§5): 9 racks of 16 hosts, 4 spines with 4x uplinks, 40 Gbps access links, 36 KB ports.  One
web search workload (DCTCP SIGCOMM'10 sizes) at offered load 0.5, all-to-all, ``N_FLOWS``
flows from ``disaggsim.traces.workloads.generate``, runs under each protocol.

Oracles:
- every flow finishes under every protocol (FCT_RECORDS ``finished`` = 1);
- Ideal (centralised SRPT with a lone flow's FCT as the floor) is a lower bound of pFabric:
  mean slowdown ideal <= pfabric; the driver's ``ideal_fct_ns`` of every flow equals the
  lone-flow FCT derived by hand (topologies/doc/clos.md) and no Ideal FCT is below it;
- pFabric's mean slowdown is far below TCP's (pFabric SIGCOMM'13 §5.2 Fig. 8: at load 0.5
  TCP-DropTail's mean normalized FCT is several times pFabric's).  Measured on this
  workload (seed 1, 400 flows; re-measured 2026-11-22 after the TCP connection horizon and
  the pFabric RTO floor) the mean slowdowns are tcp 6.92, pfabric 1.123, ideal 1.102 (flows
  < 100 KB: 9.99, 1.031, 1.008); 200 and 500 flows of the same seed give tcp 10.5 / 9.12 vs
  pfabric 1.063 / 1.133.  The test asserts pfabric < 0.6 x tcp, a margin that holds even if
  TCP were 3.5x better than measured.

Skipped (with the reason) when ``build/sim/disaggsim-ns3`` is not built: run `make build`.
The three runs go in parallel and take ~15 s together (TCP's ~0.45 M data packets dominate)
on the 2-core development VM.
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
from ns3_program import BINARY, needs_ns3

from disaggsim.traces.workloads import generate, write_sim_flows_csv

pytestmark = needs_ns3

HOSTS = 9 * 16
RATE_GBPS = 40.0
LOAD = 0.5
N_FLOWS = 400
PROTOCOLS = ("tcp", "pfabric", "ideal")


@pytest.fixture(scope="module")
def fct_by_protocol(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """FCT_RECORDS of the one workload under each protocol (runs in parallel)."""
    assert BINARY is not None
    tmp = tmp_path_factory.mktemp("protocols_144")
    flows = generate("websearch", LOAD, HOSTS, N_FLOWS, RATE_GBPS, "all_to_all", seed=1)
    flows_csv = tmp / "flows.csv"
    write_sim_flows_csv(flows, flows_csv)
    procs = {}
    for protocol in PROTOCOLS:
        cmd = [
            str(BINARY),
            f"--flows={flows_csv}",
            f"--out={tmp / f'fct_{protocol}.csv'}",
            f"--stats={tmp / f'stats_{protocol}.json'}",
            f"--protocol={protocol}",
            f"--accessRateGbps={RATE_GBPS:g}",
            "--seed=1",
        ]
        procs[protocol] = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    out = {}
    for protocol, proc in procs.items():
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{protocol} failed ({proc.returncode}): {stderr[-2000:]}"
        stats = json.loads((tmp / f"stats_{protocol}.json").read_text())
        assert int(stats["flows_finished"]) == N_FLOWS, (protocol, stats)
        out[protocol] = pd.read_csv(tmp / f"fct_{protocol}.csv")
    return out


def test_every_flow_finishes(fct_by_protocol: dict[str, pd.DataFrame]) -> None:
    """Every SIM_FLOWS row comes back finished, once, with a positive FCT."""
    for protocol, fct in fct_by_protocol.items():
        assert len(fct) == N_FLOWS, protocol
        assert (fct["finished"] == 1).all(), protocol
        assert sorted(fct["flow_id"]) == list(range(N_FLOWS)), protocol
        assert (fct["fct_ns"] > 0).all(), protocol


#: The default fabric's constants (topologies/doc/clos.md, worked example of ``IdealFct``):
#: host cable 20 ns, spine cable 200 ns, switching 240 ns, 4x uplinks, 1460 B MSS and 18 B
#: of Ethernet framing per packet.
HOST_CABLE_NS, SPINE_CABLE_NS, SWITCH_NS, SPINE_FACTOR = 20.0, 200.0, 240.0, 4.0
MSS_BYTES, FRAMING_BYTES, HOSTS_PER_RACK = 1460, 18, 16
#: Transport header bytes per packet: TCP/IPv4 without options 40 (clos.md); pFabric's
#: header 22, i.e. YAPS's 40 B with the frame (transports/pfabric/doc/pfabric.md), and
#: Ideal's ``PerPacketHeaderBytes`` 22, the same (transports/ideal/doc/ideal.md).
HEADER_BYTES = {"tcp": 40, "pfabric": 22, "ideal": 22}


def lone_flow_fct_ns(protocol: str, size_bytes: int, src_host: int, dst_host: int) -> float:
    """A flow alone in the fabric, derived by hand in topologies/doc/clos.md ("Ideal FCT"):
    its packets back to back at the access rate, plus the cables and switches of its path,
    plus, across racks, the wait of the largest packet to be fully received before the 4x
    faster uplink sends it: ``sum T_R(b_k) + 2 d1 [+ 2 d2] + s [3 s] [+ max_k D_k]``."""
    packets = max(1, -(-size_bytes // MSS_BYTES))
    payloads = [MSS_BYTES] * (packets - 1) + [size_bytes - (packets - 1) * MSS_BYTES]
    wire_ns = [(p + HEADER_BYTES[protocol] + FRAMING_BYTES) * 8 / RATE_GBPS for p in payloads]
    if src_host // HOSTS_PER_RACK == dst_host // HOSTS_PER_RACK:
        return sum(wire_ns) + 2 * HOST_CABLE_NS + SWITCH_NS
    speed_up_ns = max(wire_ns) * (1 - 1 / SPINE_FACTOR)
    return sum(wire_ns) + 2 * HOST_CABLE_NS + 2 * SPINE_CABLE_NS + 3 * SWITCH_NS + speed_up_ns


def test_ideal_is_a_lower_bound(fct_by_protocol: dict[str, pd.DataFrame]) -> None:
    """The ideal FCT the driver writes is the hand-derived lone-flow FCT of each flow (to the
    nanosecond it is rounded to); no Ideal flow beats it, and Ideal's mean slowdown is
    <= pFabric's."""
    for protocol, fct in fct_by_protocol.items():
        oracle = np.array(
            [
                lone_flow_fct_ns(protocol, int(size), int(src), int(dst))
                for size, src, dst in zip(
                    fct["size_bytes"], fct["src_host"], fct["dst_host"], strict=True
                )
            ]
        )
        np.testing.assert_allclose(fct["ideal_fct_ns"], oracle, atol=1.0, err_msg=protocol)
    ideal = fct_by_protocol["ideal"]
    lone = np.array(
        [
            lone_flow_fct_ns("ideal", int(size), int(src), int(dst))
            for size, src, dst in zip(
                ideal["size_bytes"], ideal["src_host"], ideal["dst_host"], strict=True
            )
        ]
    )
    assert (ideal["fct_ns"].to_numpy() >= np.floor(lone)).all()
    pfabric = fct_by_protocol["pfabric"]["slowdown"].to_numpy()
    assert np.mean(ideal["slowdown"].to_numpy()) <= np.mean(pfabric)


def test_pfabric_far_below_tcp(fct_by_protocol: dict[str, pd.DataFrame]) -> None:
    """pFabric's mean slowdown is < 0.6 x TCP's (module docstring: measured 1.12 vs 6.92)."""
    tcp = float(fct_by_protocol["tcp"]["slowdown"].mean())
    pfabric = float(fct_by_protocol["pfabric"]["slowdown"].mean())
    assert pfabric < 0.6 * tcp, f"pfabric mean slowdown {pfabric:.3f} vs tcp {tcp:.3f}"
