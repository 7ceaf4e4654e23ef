"""Campaign config validation: errors name file, line and key path; defaults; globs."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from disaggsim.sim.config import ConfigError, attribute_string, load_config

REPO = Path(__file__).resolve().parent.parent

BASE = """\
[campaign]
name = "t"
out_dir = "out"

[[workloads]]
kind = "flow_table"
path = "flows.csv"

[grid]
protocols = ["tcp", "dctcp"]
"""


def _write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    (tmp_path / "flows.csv").write_text("flow_id\n")
    return path


def test_defaults_are_the_papers(tmp_path):
    config = load_config(_write(tmp_path, BASE))
    topo = config.topology
    # OSDI'16 §4.2 (9 racks, 36 KB buffers) and Table 4 (0.24 us switching, 4 m / 40 m
    # cables at 5 ns/m); pFabric's fabric: 16 hosts per rack, 4 spines
    assert (topo.racks, topo.hosts_per_rack, topo.spines) == (9, 16, 4)
    assert (topo.buffer_bytes, topo.switch_delay_ns, topo.mss_bytes) == (36864, 240, 1460)
    assert (topo.intra_rack_cable_m, topo.inter_rack_cable_m, topo.prop_ns_per_m) == (
        4.0,
        40.0,
        5.0,
    )
    assert config.grid.rates_gbps == [40.0, 100.0]
    assert config.grid.scopes == ["datacenter", "rack"]
    assert config.grid.seeds == [1]
    assert config.campaign.jobs == 2 and config.campaign.executor == "local"
    assert config.out_dir == (tmp_path / "out").resolve()


def test_unknown_key_names_file_line_and_key(tmp_path):
    path = _write(tmp_path, BASE + "rates_gbsp = [40]\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}:11: grid.rates_gbsp: Extra inputs are not permitted"


def test_unknown_key_in_workload_list(tmp_path):
    text = BASE.replace('path = "flows.csv"', 'path = "flows.csv"\nwindow = 5')
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{path}:8: workloads\[0\]\.window: Extra inputs"):
        load_config(path)


def test_wrong_type_names_key(tmp_path):
    path = _write(tmp_path, BASE + 'rates_gbps = [40, "fast"]\n')
    with pytest.raises(ConfigError, match=rf"^{path}:11: grid\.rates_gbps\[1\]: Input should be a"):
        load_config(path)
    path = _write(tmp_path, BASE.replace('out_dir = "out"', 'out_dir = "out"\njobs = 0'))
    with pytest.raises(ConfigError, match=rf"^{path}:4: campaign\.jobs: Input should be greater"):
        load_config(path)


def test_bad_workload_kind_and_scope(tmp_path):
    path = _write(tmp_path, BASE.replace('"flow_table"', '"pcap"'))
    with pytest.raises(ConfigError, match=r"workloads\[0\]: Input tag 'pcap' found using 'kind'"):
        load_config(path)
    path = _write(tmp_path, BASE + 'scopes = ["pod"]\n')
    with pytest.raises(ConfigError, match=r"grid\.scopes\[0\]: Input should be 'datacenter'"):
        load_config(path)


def test_attributes(tmp_path):
    text = BASE + textwrap.dedent(
        """
        [attributes]
        "ns3::TcpSocket::SegmentSize" = 1460

        [protocols.dctcp.attributes]
        "ns3::TcpSocketBase::MinRto" = "+5ms"
        "ns3::TcpSocket::SegmentSize" = 1448
        "ns3::TcpDctcp::UseEct0" = true
        """
    )
    config = load_config(_write(tmp_path, text))
    assert config.attributes_for("tcp") == {"ns3::TcpSocket::SegmentSize": "1460"}
    assert config.attributes_for("dctcp") == {
        "ns3::TcpDctcp::UseEct0": "true",
        "ns3::TcpSocket::SegmentSize": "1448",
        "ns3::TcpSocketBase::MinRto": "+5ms",
    }
    assert attribute_string(0.5) == "0.5" and attribute_string(False) == "false"

    bad = _write(tmp_path, BASE + '\n[protocols.dctcp.attributes]\n"MinRto" = "5ms"\n')
    with pytest.raises(ConfigError, match=rf"^{bad}:12: protocols\.dctcp\.attributes: .*'MinRto'"):
        load_config(bad)
    typo = _write(tmp_path, BASE + '\n[protocols.dctpc.attributes]\n"ns3::A::B" = 1\n')
    with pytest.raises(ConfigError, match=rf"^{typo}:12: protocols\.dctpc: not in grid\.protocols"):
        load_config(typo)


def test_syntax_error_and_missing_file(tmp_path):
    path = _write(tmp_path, BASE + "seeds = [1 2]\n")
    with pytest.raises(ConfigError, match=rf"^{path}:11: TOML syntax error: "):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.toml")


def test_yaml_accepted_and_its_1e6_pitfall(tmp_path):
    text = textwrap.dedent(
        """\
        campaign: {name: t, out_dir: out}
        workloads:
          - kind: flow_table
            path: flows.csv
        grid:
          protocols: [tcp]
        limits:
          stop_time_ns: 2000000
        """
    )
    config = load_config(_write(tmp_path, text, "c.yaml"))
    assert config.limits.stop_time_ns == 2_000_000
    # YAML 1.1 reads 1e6 as a string: the error names the key
    path = _write(tmp_path, text.replace("2000000", "1e6"), "d.yaml")
    with pytest.raises(ConfigError, match=rf"^{path}:8: limits\.stop_time_ns: Input should be"):
        load_config(path)


def test_workload_paths_globs_and_names(tmp_path):
    for name in ("alpha", "beta"):
        (tmp_path / "samples" / name).mkdir(parents=True)
        (tmp_path / "samples" / name / "meta.json").write_text("{}")
    (tmp_path / "samples" / "no-meta").mkdir()
    text = (
        BASE.replace(
            '[[workloads]]\nkind = "flow_table"\npath = "flows.csv"',
            '[[workloads]]\nkind = "trace_sample"\npath = "samples/*"\n'
            "convert = { idle_gap_ns = 3 }\n\n"
            '[[workloads]]\nkind = "flow_table"\npath = "flows.csv"',
        )
        + "\n[convert]\nidle_gap_ns = 1\nattribute_disk = false\n"
    )
    config = load_config(_write(tmp_path, text))
    workloads = config.resolved_workloads()
    assert [w.name for w in workloads] == ["alpha", "beta", "flows"]
    assert workloads[0].path == (tmp_path / "samples" / "alpha").resolve()
    assert workloads[0].convert_options == {"idle_gap_ns": 3, "attribute_disk": False}
    assert workloads[2].convert_options == {}

    dup = _write(tmp_path, BASE + '\n[[workloads]]\nkind = "flow_table"\npath = "flows.csv"\n')
    # TOML: a [[workloads]] after [grid] is still the top-level array
    with pytest.raises(ConfigError, match="two workloads are named 'flows'"):
        load_config(dup).resolved_workloads()
    missing = _write(tmp_path, BASE.replace("flows.csv", "nope.csv"))
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.path: .*nope\.csv does not exist"):
        load_config(missing).resolved_workloads()


def test_bundled_configs_validate():
    """Every config in configs/ validates with its own loader: campaigns (``disaggsim run``),
    the latency-injection experiments (``disaggsim emulate``, an ``[emulate]`` table) and
    COMEX's fabric experiment (``bench/comex_fabric.py``, a ``[comex_fabric]`` table) and
    Rcmp's traffic (``disaggsim rcmp-gen``, an ``[rcmp]`` table)."""
    import tomllib

    from disaggsim.analysis.comex import load_fabric_config
    from disaggsim.sim.rcmp import load_params
    from disaggsim.swapdev.emulate import UndecidableSweepWarning, load_emulate_config
    from disaggsim.swapdev.hpe_cm import load_hpe_cm_config

    paths = sorted((REPO / "configs").glob("*.toml"))
    tables = {p: tomllib.loads(p.read_text()) for p in paths}
    emulate = [p for p in paths if "emulate" in tables[p]]
    hpe_cm = [p for p in paths if "hpe_cm" in tables[p]]
    comex_fabric = [p for p in paths if "comex_fabric" in tables[p]]
    rcmp = [p for p in paths if "rcmp" in tables[p]]
    assert rcmp, "configs/ should hold Rcmp's traffic experiments (#25)"
    assert comex_fabric, "configs/ should hold COMEX's fabric experiment (#23)"
    assert emulate, "configs/ should hold an emulate experiment"
    assert hpe_cm, "configs/ should hold the HPE composable-memory experiments"
    for path in paths:
        if path in hpe_cm:
            assert load_hpe_cm_config(path).devices
        elif path in comex_fabric:
            assert load_fabric_config(path).comex_fabric.protocols
        elif path in rcmp:
            assert load_params(path).racks >= 1
        elif path in emulate:
            # The Spark grids' repeats_max below MIN_RUNS is warned about on purpose
            # (tests/test_swapdev_emulate.py checks which configs warn).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndecidableSweepWarning)
                assert load_emulate_config(path).models
        else:
            assert load_config(path).grid.protocols


def test_synthetic_workload(tmp_path):
    text = BASE.replace(
        '[[workloads]]\nkind = "flow_table"\npath = "flows.csv"',
        '[[workloads]]\nkind = "synthetic"\nname = "ws"\ncdf = "websearch"\nload = 0.5\n'
        'n_flows = 100\n\n[[workloads]]\nkind = "synthetic"\nname = "own"\n'
        'cdf = "cdfs/mine.txt"\nload = 0.5\nn_flows = 100\n',
    )
    path = _write(tmp_path, text)
    config = load_config(path)
    with pytest.raises(ConfigError, match=r"workloads\[1\]\.cdf: .*cdfs/mine\.txt does not exist"):
        config.resolved_workloads()
    (tmp_path / "cdfs").mkdir()
    (tmp_path / "cdfs" / "mine.txt").write_text("1 1 1.0\n")
    resolved = config.resolved_workloads()
    assert [(w.name, w.kind) for w in resolved] == [("ws", "synthetic"), ("own", "synthetic")]
    assert resolved[0].path is None
    assert resolved[1].path == (tmp_path / "cdfs" / "mine.txt").resolve()
    bad = _write(tmp_path, text.replace("load = 0.5", "load = 1.5", 1))
    with pytest.raises(ConfigError, match=rf"^{bad}:9: workloads\[0\]\.load: Input should be less"):
        load_config(bad)


def test_converter_options_are_checked_at_load(tmp_path):
    text = BASE + '\n[convert]\nidle_gap_ns = "fast"\nbogus = 1\n'
    path = _write(tmp_path, text)
    lines = text.splitlines()
    gap, bogus = lines.index('idle_gap_ns = "fast"') + 1, lines.index("bogus = 1") + 1
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).splitlines() == [
        f"{path}:{bogus}: convert.bogus: unknown converter option; expected one of "
        "allow_truncated_pcap, attribute_disk, attribute_memory, blk_actions, disk_partition, "
        "idle_gap_ns, kinds, memory_merge, memory_partition, time_outliers, tolerance_ns, "
        "use_device_sizes",
        f"{path}:{gap}: convert.idle_gap_ns: Input should be a valid integer, got 'fast'",
    ]


def test_non_utf8_config_names_the_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(BASE.encode() + b"\n# caf\xe9\n")
    line = BASE.count("\n") + 2
    with pytest.raises(ConfigError, match=rf"^{path}:{line}: expected UTF-8 text, got byte"):
        load_config(path)


def test_resolution_errors_name_the_config_line(tmp_path):
    text = BASE.replace("flows.csv", "nope.csv")
    path = _write(tmp_path, text)
    line = text.splitlines().index('path = "nope.csv"') + 1
    with pytest.raises(ConfigError, match=rf"^{path}:{line}: workloads\[0\]\.path: "):
        load_config(path).resolved_workloads()


def test_seed_zero_is_rejected_before_ns3_aborts_on_it(tmp_path):
    # ns-3 aborts on RngSeedManager::SetSeed(0) ("invalid Seed 0", SIGABRT), and the driver
    # passes the grid seed straight to it, so 0 and values beyond uint32 are config errors.
    for seeds in ("[0]", "[4294967296]"):
        path = _write(tmp_path, BASE + f"seeds = {seeds}\n")
        expected = rf"^{path}:11: grid\.seeds\[0\]: Input should be (greater|less) than"
        with pytest.raises(ConfigError, match=expected):
            load_config(path)


def test_spine_rate_factor_is_an_integer_as_in_the_driver(tmp_path):
    # ns3::ClosTopology::SpineRateFactor is a UintegerValue: 2.5 must fail here, naming the
    # key, not later inside ns-3.
    path = _write(tmp_path, BASE + "[topology]\nspine_rate_factor = 2.5\n")
    with pytest.raises(ConfigError, match=r"topology\.spine_rate_factor: Input should be a valid"):
        load_config(path)
    config = load_config(_write(tmp_path, BASE + "[topology]\nspine_rate_factor = 2\n"))
    assert config.topology.spine_rate_factor == 2
