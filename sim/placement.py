"""Place blades on the simulated hosts (paper §2.2 "scope of disaggregation", §4.2).

Paper §4.2: "We evaluate both rack-scale and datacenter-scale traffic generation, where
communicating nodes are constrained to be within a rack and unconstrained, respectively";
§2.2: for rack-scale disaggregation "a VM is assigned resources from within a single rack",
for datacenter-scale "from anywhere in the datacenter". The simulated topology (§4.2,
after pFabric) has 9 racks of 16 hosts; hosts are numbered rack-major
(``host = rack * hosts_per_rack + index``, ``disaggsim.schemas.SIM_FLOWS``).

The unit of placement is a **cluster**: the blades of one traced cluster (all its nodes'
compute, memory and disk blades), which talk to each other (memory and disk are
partitioned over every node's blades, ``disaggsim.traces.convert``). A flow table holds
one cluster, or several copies of it (``disaggsim.sim.replication``), told apart by
``cluster_of``.

- ``"rack"``: every blade of a cluster on a distinct host of **one** rack, so every
  blade-to-blade flow stays in its rack; each cluster's rack drawn uniformly among the racks
  that still have room (with one cluster per rack when clusters fill racks, as the authors'
  generator does: NetSys/simulator run/flow_generator.cpp,
  ``customCdfFlowGenerator_getDestinations_rackscale``, one 15-blade cluster on hosts 0-14
  of each rack). A cluster larger than a rack is an error naming the hosts it needs.
- ``"datacenter"``: every blade on a distinct host drawn uniformly from the whole fabric
  (``customCdfFlowGenerator_getDestinations_dcscale`` in the same file).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd

from disaggsim.schemas import SIM_FLOWS

#: Placement scopes (paper §4.2).
SCOPES = ("datacenter", "rack")


def place(
    flow_table: pd.DataFrame,
    racks: int,
    hosts_per_rack: int,
    scope: Literal["datacenter", "rack"],
    seed: int,
    cluster_of: Mapping[int, int] | None = None,
) -> tuple[pd.DataFrame, dict[int, int]]:
    """Map the blades of a flow table onto hosts and return per-host flows.

    Args:
        flow_table: ``FLOW_TABLE`` rows (needs flow_id, start_ns, src, dst, size_bytes,
            kind).
        racks, hosts_per_rack: topology size (> 0).
        scope: ``"datacenter"`` or ``"rack"`` (module docstring).
        seed: seed of the numpy PCG64 generator; the same inputs and seed give the same map.
        cluster_of: blade id -> cluster id, for tables that hold several copies of a
            cluster (``disaggsim.sim.replication``). None: all blades form one cluster.

    Returns:
        ``(sim_flows, blade_to_host)``: ``sim_flows`` has the ``SIM_FLOWS`` columns
        (flow_id, start_ns, src_host, dst_host, size_bytes, kind) in flow-table order;
        ``blade_to_host`` maps every blade id in the table to its host.

    Raises:
        ValueError: more blades than hosts; at rack scope a cluster with more blades than a
            rack has hosts (the message says how many hosts it needs) or clusters that
            outnumber the racks with room; a blade missing from ``cluster_of``; a bad scope
            or size.
    """
    if racks <= 0 or hosts_per_rack <= 0:
        raise ValueError(f"racks and hosts_per_rack must be > 0, got {racks}, {hosts_per_rack}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be 'datacenter' or 'rack', got {scope!r}")
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
    else:
        by_cluster: dict[int, list[int]] = {}
        for b in blades:
            if cluster_of is None:
                cluster = 0
            elif int(b) in cluster_of:
                cluster = int(cluster_of[int(b)])
            else:
                raise ValueError(f"blade {int(b)} has no cluster in cluster_of")
            by_cluster.setdefault(cluster, []).append(int(b))
        free = [list(range(r * hosts_per_rack, (r + 1) * hosts_per_rack)) for r in range(racks)]
        for cluster in sorted(by_cluster):
            members = by_cluster[cluster]
            if len(members) > hosts_per_rack:
                raise ValueError(
                    f"rack scope: cluster {cluster} has {len(members)} blades and needs "
                    f"{len(members)} hosts in one rack, but a rack has {hosts_per_rack} hosts "
                    "(raise topology.hosts_per_rack or use scope 'datacenter')"
                )
            candidates = [r for r in range(racks) if len(free[r]) >= len(members)]
            if not candidates:
                raise ValueError(
                    f"rack scope: no rack has {len(members)} free hosts left for cluster "
                    f"{cluster} ({len(by_cluster)} clusters of up to "
                    f"{max(map(len, by_cluster.values()))} blades on {racks} racks of "
                    f"{hosts_per_rack} hosts; use fewer copies)"
                )
            rack = int(rng.choice(candidates))
            picks = rng.choice(len(free[rack]), size=len(members), replace=False)
            chosen = [free[rack][int(i)] for i in picks]
            for b, h in zip(members, chosen, strict=True):
                blade_to_host[b] = h
            taken = set(chosen)
            free[rack] = [h for h in free[rack] if h not in taken]
    src = flow_table["src"].map(blade_to_host).to_numpy()
    dst = flow_table["dst"].map(blade_to_host).to_numpy()
    sim = pd.DataFrame(
        {
            "flow_id": flow_table["flow_id"].to_numpy(dtype=np.int64),
            "start_ns": flow_table["start_ns"].to_numpy(dtype=np.int64),
            "src_host": src.astype(np.int32),
            "dst_host": dst.astype(np.int32),
            "size_bytes": flow_table["size_bytes"].to_numpy(dtype=np.int64),
            "kind": flow_table["kind"].to_numpy(dtype=object),
        }
    )
    assert list(sim.columns) == SIM_FLOWS.names
    return sim, blade_to_host
