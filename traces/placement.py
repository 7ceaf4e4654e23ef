"""Place blades on the simulated hosts (paper §2.2 "scope of disaggregation", §4.2).

Paper §4.2: "We evaluate both rack-scale and datacenter-scale traffic generation, where
communicating nodes are constrained to be within a rack and unconstrained, respectively";
§2.2: for rack-scale disaggregation "a VM is assigned resources from within a single rack",
for datacenter-scale "from anywhere in the datacenter". The simulated topology (§4.2,
after pFabric) has 9 racks of 16 hosts; hosts are numbered rack-major
(``host = rack * hosts_per_rack + index``, ``disaggsim.schemas.SIM_FLOWS``).

- ``"datacenter"``: every blade on a distinct host drawn uniformly at random.
- ``"rack"``: the blades of one node (its compute, memory and disk blade) on distinct hosts
  of one rack; each node's rack drawn uniformly among the racks that still have room.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from disaggsim.schemas import SIM_FLOWS, blade_node


def place(
    flow_table: pd.DataFrame,
    racks: int,
    hosts_per_rack: int,
    scope: Literal["datacenter", "rack"],
    seed: int,
) -> tuple[pd.DataFrame, dict[int, int]]:
    """Map the blades of a flow table onto hosts and return per-host flows.

    Args:
        flow_table: ``FLOW_TABLE`` rows (needs flow_id, start_ns, src, dst, size_bytes).
        racks, hosts_per_rack: topology size (> 0).
        scope: ``"datacenter"`` or ``"rack"`` (module docstring).
        seed: seed of the numpy PCG64 generator; the same inputs and seed give the same map.

    Returns:
        ``(sim_flows, blade_to_host)``: ``sim_flows`` has the ``SIM_FLOWS`` columns
        (flow_id, start_ns, src_host, dst_host, size_bytes) in flow-table order;
        ``blade_to_host`` maps every blade id in the table to its host.

    Raises:
        ValueError: more blades than hosts, a node with more blades than a rack has hosts,
            racks that run out of room, a bad scope or size.
    """
    if racks <= 0 or hosts_per_rack <= 0:
        raise ValueError(f"racks and hosts_per_rack must be > 0, got {racks}, {hosts_per_rack}")
    blades = np.unique(
        np.concatenate([flow_table["src"].to_numpy(), flow_table["dst"].to_numpy()])
    ).astype(int)
    n_hosts = racks * hosts_per_rack
    if blades.size > n_hosts:
        raise ValueError(
            f"{blades.size} blades do not fit on {n_hosts} hosts ({racks} racks x {hosts_per_rack})"
        )
    rng = np.random.default_rng(seed)
    blade_to_host: dict[int, int] = {}
    if scope == "datacenter":
        hosts = rng.choice(n_hosts, size=blades.size, replace=False)
        blade_to_host = {int(b): int(h) for b, h in zip(blades, hosts, strict=True)}
    elif scope == "rack":
        free = [list(range(r * hosts_per_rack, (r + 1) * hosts_per_rack)) for r in range(racks)]
        by_node: dict[int, list[int]] = {}
        for b in blades:
            by_node.setdefault(blade_node(int(b)), []).append(int(b))
        for node in sorted(by_node):
            members = by_node[node]
            if len(members) > hosts_per_rack:
                raise ValueError(
                    f"node {node} has {len(members)} blades, a rack has {hosts_per_rack} hosts"
                )
            candidates = [r for r in range(racks) if len(free[r]) >= len(members)]
            if not candidates:
                raise ValueError(f"no rack has {len(members)} free hosts left for node {node}")
            rack = int(rng.choice(candidates))
            picks = rng.choice(len(free[rack]), size=len(members), replace=False)
            chosen = [free[rack][int(i)] for i in picks]
            for b, h in zip(members, chosen, strict=True):
                blade_to_host[b] = h
            taken = set(chosen)
            free[rack] = [h for h in free[rack] if h not in taken]
    else:
        raise ValueError(f"scope must be 'datacenter' or 'rack', got {scope!r}")
    src = flow_table["src"].map(blade_to_host).to_numpy()
    dst = flow_table["dst"].map(blade_to_host).to_numpy()
    sim = pd.DataFrame(
        {
            "flow_id": flow_table["flow_id"].to_numpy(dtype=np.int64),
            "start_ns": flow_table["start_ns"].to_numpy(dtype=np.int64),
            "src_host": src.astype(np.int32),
            "dst_host": dst.astype(np.int32),
            "size_bytes": flow_table["size_bytes"].to_numpy(dtype=np.int64),
        }
    )
    assert list(sim.columns) == SIM_FLOWS.names
    return sim, blade_to_host
