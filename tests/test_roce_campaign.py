"""RoCE in a campaign (issue #19 step 3): ``roce-dcqcn``, ``roce-hpcc`` and ``roce-none`` as
grid protocols on the lossless fabric (configs/README.md "RoCE on the lossless fabric"), and
``export-fct`` over their FCTs.

Skipped (with the reason) when ``build/sim/disaggsim-ns3`` is not built: run `make build`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from ns3_program import needs_ns3

from disaggsim.analysis.export import export_fct, read_fct_export
from disaggsim.sim.campaign import run_campaign

pytestmark = needs_ns3

N_FLOWS = 40
ROCE = ("roce-dcqcn", "roce-hpcc", "roce-none")


def test_roce_protocols_run_lossless_in_a_campaign_and_export(tmp_path: Path) -> None:
    lossless = "".join(
        f'[protocols.{name}.attributes]\n"ns3::ClosTopology::Fabric" = "lossless"\n'
        for name in ROCE
    )
    config = tmp_path / "roce.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "roce"
            out_dir = "out"
            jobs = 2

            [[workloads]]
            kind = "synthetic"
            name = "websearch"
            cdf = "websearch"
            load = 0.5
            n_flows = {N_FLOWS}

            [topology]
            racks = 2
            hosts_per_rack = 4
            spines = 2

            [grid]
            protocols = ["pfabric", "roce-dcqcn", "roce-hpcc", "roce-none"]
            rates_gbps = [40]
            scopes = ["datacenter"]
            seeds = [1]

            [limits]
            run_timeout_s = 300
            """
        )
        + lossless
    )
    result = run_campaign(config, progress=False)
    assert (result.ran, result.skipped) == (4, 0)
    fct = result.fct()
    assert sorted(fct["protocol"].unique()) == ["pfabric", *ROCE]
    # every flow finishes, none faster than alone in the network
    assert (fct["finished"] == 1).all()
    assert (fct["slowdown"] >= 1.0 - 1e-9).all()
    for run_dir in sorted((result.out_dir / "runs").iterdir()):
        if not (run_dir / "done.json").is_file():
            continue
        stats = json.loads((run_dir / "stats.json").read_text())
        protocol = stats["config"]["options"]["protocol"]
        fabric = stats["config"]["attributes"]["ns3::ClosTopology::Fabric"]
        # the per-protocol attribute puts RoCE, and only RoCE, on the lossless fabric
        assert fabric == ("lossless" if protocol.startswith("roce-") else "lossy"), protocol
        if protocol.startswith("roce-"):
            assert stats["packets_dropped"] == 0, protocol
            assert stats["transport"]["roce.retransmitted_packets"] == "0", protocol
    for name in ROCE:
        out = tmp_path / f"fcts_{name}.txt"
        summary = export_fct(fct, out, protocol=name, kinds=None)
        table = read_fct_export(out)
        assert summary.flows == N_FLOWS
        assert len(table) == summary.sizes > 0
        # the export's mean FCT of each size is that of the campaign's rows of that size
        rows = fct[fct["protocol"] == name].groupby("size_bytes")["fct_ns"].mean() / 1e3
        exported = table.set_index("size_bytes")["mean_fct_us"].to_dict()
        assert exported == pytest.approx(rows.to_dict(), rel=1e-9)
