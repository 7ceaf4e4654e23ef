"""Blade placement on hosts (paper §2.2 scope, §4.2: 9 racks x 16 hosts)."""

from __future__ import annotations

import pandas as pd
import pytest

from disaggsim.schemas import SIM_FLOWS, blade_node
from disaggsim.sim.placement import place


def flows(n_nodes: int) -> pd.DataFrame:
    # Every node's compute blade talks to every memory and disk blade.
    rows = []
    for a in range(n_nodes):
        for b in range(n_nodes):
            for t in (1, 2):
                kind = "mem_write" if t == 1 else "disk_write"  # compute -> blade: a write
                rows.append((len(rows), len(rows) * 10, 3 * a, 3 * b + t, 4096 * (t + 1), kind))
    return pd.DataFrame(rows, columns=["flow_id", "start_ns", "src", "dst", "size_bytes", "kind"])


def test_datacenter_scope_distinct_hosts_anywhere() -> None:
    ft = flows(5)
    sim, b2h = place(ft, 9, 16, "datacenter", seed=1)
    assert list(sim.columns) == SIM_FLOWS.names
    assert sorted(b2h) == list(range(15))
    assert len(set(b2h.values())) == 15 and all(0 <= h < 144 for h in b2h.values())
    assert sim["src_host"].tolist() == [b2h[b] for b in ft["src"]]
    assert sim["dst_host"].tolist() == [b2h[b] for b in ft["dst"]]
    assert sim[["flow_id", "start_ns", "size_bytes", "kind"]].equals(
        ft[["flow_id", "start_ns", "size_bytes", "kind"]]
    )  # kind travels with the flow to the FCT records (CAMPAIGN_FCT)
    # 15 blades on 144 hosts in 9 racks: a node's blades are (almost surely) spread out;
    # with this seed at least one node spans several racks.
    racks_of_node = {n: {b2h[3 * n + t] // 16 for t in range(3)} for n in range(5)}
    assert any(len(r) > 1 for r in racks_of_node.values())


def test_rack_scope_keeps_the_cluster_in_one_rack() -> None:
    # Paper §4.2: communicating nodes within a rack. The converter spreads memory and disk
    # over every node's blades, so the whole traced cluster shares one rack.
    for seed in range(20):
        sim, b2h = place(flows(5), 9, 16, "rack", seed=seed)
        assert len(set(b2h.values())) == 15
        assert len({h // 16 for h in b2h.values()}) == 1
        assert ((sim["src_host"] // 16) == (sim["dst_host"] // 16)).all()


def test_same_seed_same_map_and_rack_packing() -> None:
    ft = flows(4)
    assert place(ft, 9, 16, "datacenter", 7)[1] == place(ft, 9, 16, "datacenter", 7)[1]
    assert place(ft, 9, 16, "datacenter", 7)[1] != place(ft, 9, 16, "datacenter", 8)[1]
    # 2 racks of 3 hosts hold exactly 2 clusters of 3 blades: each rack gets one.
    _, b2h = place(flows(2), 2, 3, "rack", seed=3, cluster_of={b: blade_node(b) for b in range(6)})
    assert sorted(b2h.values()) == list(range(6))
    assert {b2h[b] // 3 for b in range(3)} != {b2h[b] // 3 for b in range(3, 6)}
    assert all(blade_node(b) in (0, 1) for b in b2h)


def test_errors() -> None:
    with pytest.raises(ValueError, match="15 blades do not fit on 12 hosts"):
        place(flows(5), 3, 4, "datacenter", 0)
    with pytest.raises(ValueError, match="a rack has 2 hosts"):
        place(flows(1), 4, 2, "rack", 0)
    with pytest.raises(ValueError, match="needs 12 hosts in one rack, but a rack has 4"):
        place(flows(4), 3, 4, "rack", 0)  # 12 blades, 12 hosts, but 4 per rack
    per_node = {b: blade_node(b) for b in range(12)}
    with pytest.raises(ValueError, match="no rack has 3 free hosts"):
        place(flows(4), 3, 4, "rack", 0, per_node)  # 1 cluster of 3 per rack of 4
    with pytest.raises(ValueError, match="blade 11 has no cluster"):
        place(flows(4), 9, 16, "rack", 0, {b: 0 for b in range(11)})
    with pytest.raises(ValueError, match="scope"):
        place(flows(1), 9, 16, "pod", 0)  # type: ignore[arg-type]
