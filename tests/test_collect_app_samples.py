"""The bundled samples of the collector's applications convert and show real paging.

Each sample under traces/samples/ was recorded with ``disaggsim collect --preset NAME``
(its meta.json names the command). Converted with :func:`disaggsim.traces.convert.convert`,
each must hold flows of every kind its application makes, and its memory limit must bind on
the nodes that hold the application's data (paper §3.1: 25 % of the working set, the rest in
remote memory), with swap requests recorded there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disaggsim.testbed.collect import PRESETS, CollectConfig
from disaggsim.traces.convert import convert

SAMPLES = Path(__file__).resolve().parent.parent / "traces" / "samples"

#: sample -> (flow kinds that must be present, nodes whose memory limit must bind and page).
EXPECTED: dict[str, tuple[set[str], list[int]]] = {
    # The PostgreSQL server (node 0) pages its shared_buffers and writes WAL; the pgbench
    # clients hold ~2 MB each, under the 24 MB floor, so only node 0 is limited.
    "postgres-pgbench": ({"net", "mem_read", "mem_write", "disk_write"}, [0]),
    # Every node runs a worker and an executor JVM (node 0 also the master and driver), and
    # every reduce task fsyncs its output to its node's disk.
    "spark-wordcount": ({"net", "mem_read", "mem_write", "disk_write"}, [0, 1, 2]),
    "spark-sort": ({"net", "mem_read", "mem_write", "disk_write"}, [0, 1, 2]),
    "spark-pagerank": ({"net", "mem_read", "mem_write", "disk_write"}, [0, 1, 2]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_sample_converts_with_paging(name: str) -> None:
    sample = SAMPLES / name
    if not (sample / "meta.json").exists():
        pytest.skip(f"bundled sample {sample} missing")
    meta = json.loads((sample / "meta.json").read_text())
    kinds, paging_nodes = EXPECTED[name]
    # Recorded with the preset of the same name, as the README says (keys added to the
    # config since take their defaults, which reproduce the recording: e.g.
    # paging_recorder "blktrace", a YCSB operationcount of 0 = run for the duration).
    assert CollectConfig.model_validate(meta["config"]) == PRESETS[name], name
    assert set(meta["config"]) <= set(json.loads(PRESETS[name].model_dump_json())), name
    assert f"--preset {name}" in meta["command"]
    flows = convert(sample)
    counts = flows["kind"].value_counts().to_dict()
    assert kinds <= set(counts), counts
    assert all(counts[k] > 0 for k in kinds)
    assert (flows["size_bytes"] > 0).all()
    for i in paging_nodes:
        node = meta["nodes"][i]
        assert node["memory_limit_binding"], node
        # The limit is the preset's fraction of the working set (not lifted by the floor).
        assert not node["memory_limit_floor_applied"], node
        assert (
            node["memory_limit_bytes"]
            <= meta["memory_limit_fraction"] * node["working_set_bytes"]
            < node["working_set_bytes"]
        ), node
        assert node["swap_out_requests"] > 0 and node["swap_in_requests"] > 0, node
        mem = flows[(flows["node"] == i) & flows["kind"].isin(["mem_read", "mem_write"])]
        assert len(mem) > 0, i
    # Every node sent messages of the application (``node``: the sender; src/dst are blades).
    net = flows[flows["kind"] == "net"]
    assert set(net["node"]) == set(range(len(meta["nodes"]))), counts
