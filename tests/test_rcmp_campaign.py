"""Rcmp's flows as a campaign workload (issue #25): ``kind = "rcmp"`` names an ``[rcmp]``
experiment (``disaggsim rcmp-gen``'s input), and the campaign sweeps protocols x rates over
the generator's flow table.

Skipped (with the reason) when ``build/sim/disaggsim-ns3`` is not built: run `make build`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from ns3_program import needs_ns3

from disaggsim.sim.campaign import CampaignError, run_campaign
from disaggsim.sim.config import load_config
from disaggsim.sim.rcmp import generate, load_params

pytestmark = needs_ns3

#: 2 racks x (2 clients + the daemon); 1 KiB items, so RRPC uses its one-sided mode (an
#: address lookup by RPC, then rdma_read / rdma_write, §5.5); unscrambled Zipfian keys and
#: H_p = 2 make hot pages that migrate (2 MiB flows); cxl_rows adds the in-rack accesses.
EXPERIMENT = """\
[rcmp]
racks = 2
clients_per_rack = 2
items = 200_000
item_bytes = 1024
ops_per_client = 40
mix = "A"
distribution = "zipfian-unscrambled"
hot_threshold = 2.0
cxl_rows = true
"""


def _campaign(tmp_path: Path, hosts_per_rack: int = 3, cxl: bool = True) -> Path:
    (tmp_path / "tiny.toml").write_text(EXPERIMENT)
    config = tmp_path / "campaign.toml"
    attributes = '[attributes]\n"ns3::CxlRackTier::Enabled" = true\n' if cxl else ""
    config.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "rcmp-tiny"
            out_dir = "out"
            jobs = 2

            [[workloads]]
            kind = "rcmp"
            path = "tiny.toml"

            [topology]
            racks = 2
            hosts_per_rack = {hosts_per_rack}
            spines = 2

            [grid]
            protocols = ["pfabric", "dctcp"]
            rates_gbps = [40, 100]
            scopes = ["datacenter", "rack"]
            seeds = [1]

            [limits]
            run_timeout_s = 300
            """
        )
        + attributes
    )
    return config


def test_rcmp_workload_runs_protocols_by_rates_and_every_flow_finishes(tmp_path: Path) -> None:
    config = _campaign(tmp_path)
    want = generate(load_params(tmp_path / "tiny.toml")).flows
    kinds = set(want["kind"])
    assert {"cxl", "rpc", "rdma_read", "rdma_write", "migrate"} <= kinds, kinds
    result = run_campaign(config, progress=False)
    # 2 protocols x 2 rates; the "rack" scope is skipped: the experiment fixes the hosts
    assert (result.ran, result.skipped) == (4, 0)
    fct = result.fct()
    assert fct["workload"].unique().tolist() == ["tiny"]
    assert set(fct["scope"]) == {"datacenter"}
    for (protocol, rate), run in fct.groupby(["protocol", "rate_gbps"]):
        assert len(run) == len(want), (protocol, rate)
        assert (run["finished"] == 1).all(), (protocol, rate)
        # each flow keeps the generator's kind, size and hosts
        got = run.set_index("flow_id").loc[want["flow_id"]]
        assert (got["kind"].to_numpy() == want["kind"].to_numpy()).all()
        assert (got["size_bytes"].to_numpy() == want["size_bytes"].to_numpy()).all()
        # an in-rack access is one CXL access, whatever the transport and the link rate:
        # 140 ns + 1024 B * 8 / 256 Gbps = 172 ns (CxlRackTier's defaults, Rcmp §6.2)
        cxl = got[got["kind"] == "cxl"]
        assert cxl["fct_ns"].to_numpy() == pytest.approx(172, abs=1), (protocol, rate)
    assert sorted(fct.groupby(["protocol", "rate_gbps"]).groups) == [
        ("dctcp", 40.0),
        ("dctcp", 100.0),
        ("pfabric", 40.0),
        ("pfabric", 100.0),
    ]


def test_rcmp_workload_on_the_wrong_topology_is_refused_before_any_run(tmp_path: Path) -> None:
    config = _campaign(tmp_path, hosts_per_rack=4, cxl=False)
    with pytest.raises(CampaignError) as err:
        run_campaign(config, progress=False)
    text = str(err.value)
    assert "expects racks = 2 and hosts_per_rack = 3" in text, text
    assert "ns3::CxlRackTier::Enabled" in text, text
    assert not (tmp_path / "out" / "runs").exists() or not any(
        (tmp_path / "out" / "runs").iterdir()
    )


def test_bundled_rcmp_campaign_names_an_rcmp_experiment() -> None:
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "rcmp-campaign.toml")
    (workload,) = config.resolved_workloads()
    assert workload.kind == "rcmp"
    params = load_params(workload.path)
    assert (config.topology.racks, config.topology.hosts_per_rack) == (
        params.racks,
        params.hosts_per_rack,
    )
