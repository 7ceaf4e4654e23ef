"""Campaign planning: grid expansion, run keys, done markers (no ns-3 needed)."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from _campaign_lock import another_process_can_lock, holding_campaign_lock

from disaggsim.sim.campaign import (
    KEY_DIGITS,
    CampaignError,
    PlannedRun,
    _campaign_lock,
    execute_run,
    expand_grid,
    is_done,
    run_key,
)
from disaggsim.sim.config import ConfigError, load_config
from disaggsim.sim.hashing import sha256_frame
from disaggsim.sim.runner import RunSpec, ns3_command
from disaggsim.sim.workloads import LoadedWorkload

TOPOLOGY = {
    "racks": 9,
    "hosts_per_rack": 16,
    "spines": 4,
    "buffer_bytes": 36864,
    "switch_delay_ns": 240,
    "spine_rate_factor": 4.0,
    "intra_rack_cable_m": 4.0,
    "inter_rack_cable_m": 40.0,
    "prop_ns_per_m": 5.0,
    "mss_bytes": 1460,
}
BINARY_ID = {"disaggsim-ns3": "ab" * 32}


def _spec(**changes) -> RunSpec:
    spec = RunSpec(
        workload="w",
        flows_path="/x/flows.parquet",
        flows_sha256="f" * 64,
        protocol="tcp",
        rate_gbps=40.0,
        scope="rack",
        seed=1,
        topology=dict(TOPOLOGY),
        attributes={},
        stop_time_ns=None,
        timeout_s=60.0,
        binary="/bin/ns3",
    )
    return replace(spec, **changes)


def test_run_key_is_sha256_of_canonical_inputs():
    # Independent oracle: the canonical JSON written out by hand (sorted keys, no spaces).
    canonical = (
        '{"attributes":{},"binary":{"disaggsim-ns3":"' + "ab" * 32 + '"},'
        '"flows_sha256":"' + "f" * 64 + '","format":1,"protocol":"tcp","rate_gbps":40.0,'
        '"scope":"rack","seed":1,"stop_time_ns":null,"topology":{"buffer_bytes":36864,'
        '"hosts_per_rack":16,"inter_rack_cable_m":40.0,"intra_rack_cable_m":4.0,'
        '"mss_bytes":1460,"prop_ns_per_m":5.0,"racks":9,"spine_rate_factor":4.0,'
        '"spines":4,"switch_delay_ns":240},"workload":"w"}'
    )
    assert run_key(_spec(), BINARY_ID) == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize(
    "change",
    [
        {"flows_sha256": "e" * 64},
        {"workload": "v"},
        {"protocol": "dctcp"},
        {"rate_gbps": 100.0},
        {"scope": "datacenter"},
        {"seed": 2},
        {"stop_time_ns": 10**9},
        {"attributes": {"ns3::TcpSocketBase::MinRto": "+5ms"}},
        {"topology": {**TOPOLOGY, "buffer_bytes": 36865}},
        {"topology": {**TOPOLOGY, "switch_delay_ns": 241}},
    ],
)
def test_run_key_sensitive_to_each_input(change):
    assert run_key(_spec(**change), BINARY_ID) != run_key(_spec(), BINARY_ID)


def test_run_key_ignores_paths_and_timeout_but_not_binary():
    base = run_key(_spec(), BINARY_ID)
    assert (
        run_key(_spec(flows_path="/elsewhere.parquet", binary="/b", timeout_s=1), BINARY_ID) == base
    )
    assert run_key(_spec(), {"disaggsim-ns3": "cd" * 32}) != base
    assert run_key(_spec(), {**BINARY_ID, "libdisaggsim-transports.so": "00"}) != base


def test_sha256_frame_content_only():
    a = pd.DataFrame({"flow_id": [0, 1], "size_bytes": [4096, 8192]})
    b = a.set_axis([7, 9])  # another index, same content
    assert sha256_frame(a) == sha256_frame(b)
    assert sha256_frame(a) != sha256_frame(a.assign(size_bytes=[4096, 8193]))
    assert sha256_frame(a) != sha256_frame(a.astype({"size_bytes": "int32"}))
    assert sha256_frame(a) != sha256_frame(a.iloc[::-1].reset_index(drop=True))


def _config(tmp_path: Path, grid: str):
    (tmp_path / "a.csv").write_text("x\n")
    (tmp_path / "b.csv").write_text("x\n")
    path = tmp_path / "c.toml"
    path.write_text(
        textwrap.dedent(
            """\
            [campaign]
            name = "g"
            out_dir = "out"
            [[workloads]]
            kind = "flow_table"
            path = "a.csv"
            [[workloads]]
            kind = "flow_table"
            path = "b.csv"
            [protocols.dctcp.attributes]
            "ns3::TcpSocketBase::MinRto" = "+5ms"
            """
        )
        + grid
    )
    return load_config(path)


def _loaded(names):
    return [LoadedWorkload(n, Path(f"/c/{n}.parquet"), n * 64, 10) for n in names]


def test_grid_expansion_counts_and_order(tmp_path):
    config = _config(
        tmp_path,
        '[grid]\nprotocols = ["tcp", "dctcp", "pfabric"]\nrates_gbps = [40, 100]\n'
        'scopes = ["datacenter", "rack"]\nseeds = [1, 2, 3]\n',
    )
    planned = expand_grid(config, _loaded(["a", "b"]), Path("/bin/ns3"), BINARY_ID)
    assert len(planned) == 2 * 3 * 2 * 2 * 3  # workloads x protocols x rates x scopes x seeds
    combos = {
        (p.spec.workload, p.spec.protocol, p.spec.rate_gbps, p.spec.scope, p.spec.seed)
        for p in planned
    }
    assert len(combos) == 72
    assert len({p.key for p in planned}) == 72
    first, last = planned[0].spec, planned[-1].spec
    assert (first.workload, first.protocol, first.rate_gbps, first.scope, first.seed) == (
        "a",
        "tcp",
        40.0,
        "datacenter",
        1,
    )
    assert (last.workload, last.protocol, last.rate_gbps, last.scope, last.seed) == (
        "b",
        "pfabric",
        100.0,
        "rack",
        3,
    )
    dctcp = [p for p in planned if p.spec.protocol == "dctcp"]
    assert all(p.spec.attributes == {"ns3::TcpSocketBase::MinRto": "+5ms"} for p in dctcp)
    assert all(p.spec.attributes == {} for p in planned if p.spec.protocol != "dctcp")
    assert all(len(p.dir_name) == KEY_DIGITS for p in planned)

    small = _config(tmp_path, '[grid]\nprotocols = ["tcp", "dctcp"]\n')
    # defaults: rates [40, 100], scopes [datacenter, rack], seeds [1]
    assert len(expand_grid(small, _loaded(["a", "b"]), Path("/b"), BINARY_ID)) == 2 * 2 * 2 * 2


def test_ns3_command_flags():
    cmd = ns3_command(
        _spec(stop_time_ns=5000, attributes={"ns3::TcpSocketBase::MinRto": "+5ms"}),
        Path("f.csv"),
        Path("o.csv"),
        Path("s.json"),
    )
    assert cmd == [
        "/bin/ns3",
        "--flows=f.csv",
        "--out=o.csv",
        "--stats=s.json",
        "--protocol=tcp",
        "--racks=9",
        "--hostsPerRack=16",
        "--spines=4",
        "--accessRateGbps=40",
        "--spineRateFactor=4",
        "--bufferBytes=36864",
        "--switchDelayNs=240",
        "--intraRackCableM=4",
        "--interRackCableM=40",
        "--propNsPerM=5",
        "--mssBytes=1460",
        "--seed=1",
        "--stopTimeNs=5000",
        "--ns3::TcpSocketBase::MinRto=+5ms",
    ]


def test_ns3_command_lossless_fabric():
    # [topology] fabric = "lossless" adds --fabric (ns3::ClosTopology::Fabric); the lossy
    # default adds nothing, so the commands of existing campaigns are unchanged.
    lossless = _spec(topology={**TOPOLOGY, "fabric": "lossless"})
    cmd = ns3_command(lossless, Path("f.csv"), Path("o.csv"), Path("s.json"))
    assert cmd.count("--fabric=lossless") == 1
    lossy = ns3_command(
        _spec(topology={**TOPOLOGY, "fabric": "lossy"}),
        Path("f.csv"),
        Path("o.csv"),
        Path("s.json"),
    )
    assert not any(arg.startswith("--fabric") for arg in lossy)


def test_topology_fabric_key(tmp_path):
    assert _config(tmp_path, '[grid]\nprotocols = ["tcp", "dctcp"]\n').topology.fabric == "lossy"
    grid = '[grid]\nprotocols = ["tcp", "dctcp"]\n[topology]\n'
    config = _config(tmp_path, grid + 'fabric = "lossless"\n')
    assert config.topology.fabric == "lossless"
    with pytest.raises(ConfigError, match="fabric"):
        _config(tmp_path, grid + 'fabric = "pfc"\n')


def test_done_marker_means_skip(tmp_path):
    runs = tmp_path / "runs"
    # the spec's binary does not exist: a skipped run must not try to run it
    planned = PlannedRun("1234567890abcdef" + "0" * 48, _spec(binary="/nonexistent/ns3"))
    final = runs / planned.dir_name
    final.mkdir(parents=True)
    assert not is_done(final)
    (final / "done.json").write_text(json.dumps({"key": planned.key, "flows": 3}))
    assert is_done(final)
    record = execute_run(planned, runs)
    assert (record["status"], record["flows"]) == ("skipped", 3)


# What the ns-3 program accepts: asked once per binary, cached (preflight, issue 6).

_BINARY = Path(__file__).resolve().parents[1] / "build" / "sim" / "disaggsim-ns3"


@pytest.mark.skipif(not _BINARY.exists(), reason=f"{_BINARY} not built (make build)")
def test_driver_capabilities_are_cached_per_binary(tmp_path: Path, monkeypatch) -> None:
    import shutil

    from disaggsim.sim import runner

    monkeypatch.setattr(runner, "_CAPABILITIES", {})
    caps = runner.driver_capabilities(_BINARY, tmp_path / "cache")
    assert caps.protocols == (
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
    )
    assert caps.renamed == {"dctcp-lean": "dctcp", "tcp-lean": "tcp"}
    (cache,) = (tmp_path / "cache").glob("driver-*.json")
    # the file is what a later process reads: an edited listing shows through
    data = json.loads(cache.read_text())
    data["lines"].append("protocol edited")
    cache.write_text(json.dumps(data))
    monkeypatch.setattr(runner, "_CAPABILITIES", {})
    assert runner.driver_capabilities(_BINARY, tmp_path / "cache").protocols[-1] == "edited"
    # another binary (different content) is asked again, under its own cache file
    other = tmp_path / "disaggsim-ns3"
    shutil.copy2(_BINARY, other)
    with open(other, "ab") as handle:
        handle.write(b"\0")
    assert runner.driver_capabilities(other, tmp_path / "cache").protocols[-1] == "tcp-ns3"
    assert len(list((tmp_path / "cache").glob("driver-*.json"))) == 2


def test_former_protocol_names_are_renamed_once_with_a_notice(tmp_path: Path, capsys) -> None:
    # tcp-lean/dctcp-lean took the names tcp/dctcp (issue #26); the program's registry lists
    # "alias tcp-lean tcp", and a config naming the former name runs (and is keyed and
    # tabled) under the current one, its [protocols.<name>] section included.
    from disaggsim.sim.campaign import rename_protocols
    from disaggsim.sim.config import ConfigError
    from disaggsim.sim.runner import DriverCapabilities

    caps = DriverCapabilities(("dctcp", "tcp", "tcp-ns3"), frozenset(), {"tcp-lean": "tcp"})
    config = _config(
        tmp_path,
        '[grid]\nprotocols = ["tcp-lean", "tcp-ns3", "dctcp"]\n'
        '[protocols.tcp-lean.attributes]\n"ns3::TcpLeanFlowTransport::Prr" = false\n',
    )
    renamed = rename_protocols(config, caps)
    assert renamed.grid.protocols == ["tcp", "tcp-ns3", "dctcp"]
    assert renamed.attributes_for("tcp") == {"ns3::TcpLeanFlowTransport::Prr": "false"}
    assert capsys.readouterr().err == (
        "notice: protocol 'tcp-lean' is now called 'tcp' (README, \"Protocols\")\n"
    )
    assert rename_protocols(renamed, caps) is renamed  # current names: no notice
    assert capsys.readouterr().err == ""
    both = _config(tmp_path, '[grid]\nprotocols = ["tcp-lean", "tcp", "dctcp"]\n')
    with pytest.raises(ConfigError, match="names both 'tcp-lean' and 'tcp'"):
        rename_protocols(both, caps)


def test_capability_checks_name_what_exists() -> None:
    from disaggsim.sim.runner import DriverCapabilities

    caps = DriverCapabilities(
        ("tcp", "dctcp"),
        frozenset(
            {
                "ns3::TcpSocket::SegmentSize",
                "ns3::TcpSocketBase::MinRto",
                "ns3::TcpSocketBase::Sack",
            }
        ),
    )
    assert (
        caps.check_protocol("tcp") is None
        and caps.check_attribute("ns3::TcpSocket::SegmentSize") is None
    )
    assert caps.check_protocol("phost") == (
        "protocol 'phost' is not implemented by the ns-3 program; expected one of tcp, dctcp"
    )
    assert caps.check_attribute("ns3::Nope::X") == (
        "attribute 'ns3::Nope::X': the ns-3 program has no TypeId 'ns3::Nope'"
    )
    assert caps.check_attribute("ns3::TcpSocketBase::SegmentSize") == (
        "attribute 'ns3::TcpSocketBase::SegmentSize': ns3::TcpSocketBase has no attribute "
        "'SegmentSize' of its own (ns-3 sets an attribute on the class that declares it); "
        "SegmentSize is declared by ns3::TcpSocket::SegmentSize; ns3::TcpSocketBase has "
        "MinRto, Sack"
    )


def test_the_campaign_lock_is_not_shared_with_forked_children(tmp_path: Path) -> None:
    """A process forked inside the campaign (a pool worker, a child before its exec) does
    not hold the directory's lock: once the campaign lets go, another campaign may start
    while that child still lives. (With flock(2) the child shared the lock through the
    forked open file description until it was gone.)"""
    read_end, write_end = os.pipe()
    with _campaign_lock(tmp_path):
        assert not another_process_can_lock(tmp_path)
        child = os.fork()
        if child == 0:  # a worker that outlives the campaign's hold on the lock
            os.close(write_end)
            os.read(read_end, 1)
            os._exit(0)
    os.close(read_end)
    try:
        assert another_process_can_lock(tmp_path)  # the child is still alive here
        assert os.waitpid(child, os.WNOHANG) == (0, 0)
    finally:
        os.close(write_end)
        os.waitpid(child, 0)


def test_a_second_campaign_of_this_process_is_refused_and_the_first_keeps_the_lock(
    tmp_path: Path,
) -> None:
    """A record lock does not exclude its own process, and closing any descriptor of the
    file would drop it: a second campaign in the same directory from this process is
    refused without touching the file, and the first still holds the lock; once it ends,
    the lock is free and the directory usable again."""
    with _campaign_lock(tmp_path):
        with pytest.raises(
            CampaignError,
            match=rf"^{tmp_path}: another campaign is running "
            rf"in this directory \({tmp_path}/.campaign",
        ):
            with _campaign_lock(tmp_path):
                pass
        assert not another_process_can_lock(tmp_path)
    assert another_process_can_lock(tmp_path)
    with holding_campaign_lock(tmp_path):  # and another process's hold is seen from here
        with pytest.raises(CampaignError, match="another campaign is running"):
            with _campaign_lock(tmp_path):
                pass
    with _campaign_lock(tmp_path):
        pass
