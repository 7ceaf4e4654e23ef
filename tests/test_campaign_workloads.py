"""Workload loading: flow-table validation, the conversion cache, cuts, YAPS files."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from disaggsim.schemas import FLOW_TABLE, NS3_FLOWS
from disaggsim.sim import workloads as workloads_mod
from disaggsim.sim.config import load_config
from disaggsim.sim.workloads import WorkloadError, load_workload, read_flow_table, workload_key
from disaggsim.traces.yaps import write_yaps

HEADER = ",".join(FLOW_TABLE.names)


def _flows_csv(path: Path, rows: list[str]) -> Path:
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


ROWS = [
    "0,100,1,0,4096,mem_read,0,a.pcap,1",  # reads flow memory blade -> compute blade
    "1,200,0,4,8192,mem_write,0,a.pcap,2",
    "2,300,4,3,4096,mem_read,1,b.pcap,1",
]


def _workloads(tmp_path: Path, body: str):
    config = tmp_path / "c.toml"
    config.write_text(
        '[campaign]\nname = "w"\nout_dir = "out"\n[grid]\nprotocols = ["tcp"]\n'
        + textwrap.dedent(body)
    )
    loaded = load_config(config)
    return loaded, loaded.resolved_workloads()


def test_read_flow_table_checks_types(tmp_path):
    good = read_flow_table(_flows_csv(tmp_path / "f.csv", ROWS))
    assert list(good.columns) == FLOW_TABLE.names
    assert good["size_bytes"].tolist() == [4096, 8192, 4096]
    assert str(good["size_bytes"].dtype) == "int64" and str(good["src"].dtype) == "int32"
    bad = _flows_csv(tmp_path / "bad.csv", [*ROWS[:2], "2,300,4,3,4k,mem_read,1,b.pcap,1"])
    with pytest.raises(WorkloadError, match=r"bad\.csv:4: size_bytes: expected an integer, got"):
        read_flow_table(bad)
    (tmp_path / "short.csv").write_text("flow_id,start_ns\n0,1\n")
    with pytest.raises(WorkloadError, match=r"short\.csv:1: header: missing FLOW_TABLE columns"):
        read_flow_table(tmp_path / "short.csv")


def test_cache_reuses_and_follows_content(tmp_path):
    _flows_csv(tmp_path / "f.csv", ROWS)
    config, (workload,) = _workloads(
        tmp_path, '[[workloads]]\nkind = "flow_table"\npath = "f.csv"\n'
    )
    cache = config.out_dir / "workloads"
    first = load_workload(workload, cache)
    assert first.flows == 3 and not first.hosts_given
    assert pd.read_parquet(first.flows_path)["kind"].tolist() == [
        "mem_read",
        "mem_write",
        "mem_read",
    ]
    again = load_workload(workload, cache)
    assert again == first
    assert len([p for p in cache.iterdir()]) == 1
    _flows_csv(tmp_path / "f.csv", [*ROWS[:2], "2,300,4,3,4097,mem_read,1,b.pcap,1"])
    changed = load_workload(workload, cache)
    assert changed.content_sha256 != first.content_sha256
    assert len([p for p in cache.iterdir()]) == 2


def test_window_and_max_flows(tmp_path):
    _flows_csv(tmp_path / "f.csv", ROWS)
    config, workloads = _workloads(
        tmp_path,
        '[[workloads]]\nkind = "flow_table"\npath = "f.csv"\nname = "win"\nwindow_ns = 300\n'
        '[[workloads]]\nkind = "flow_table"\npath = "f.csv"\nname = "first"\nmax_flows = 1\n',
    )
    cache = config.out_dir / "workloads"
    win, first = (load_workload(w, cache) for w in workloads)
    assert pd.read_parquet(win.flows_path)["start_ns"].tolist() == [100, 200]
    assert pd.read_parquet(first.flows_path)["flow_id"].tolist() == [0]
    assert win.content_sha256 != first.content_sha256


def test_yaps_workload_keeps_hosts(tmp_path):
    flows = pd.DataFrame(
        {
            "flow_id": [0, 1],
            "start_ns": [0, 1500],
            "src_host": [3, 17],
            "dst_host": [17, 3],
            "size_bytes": [1460, 2920],
        }
    )
    write_yaps(flows, tmp_path / "trace.txt")
    config, (workload,) = _workloads(tmp_path, '[[workloads]]\nkind = "yaps"\npath = "trace.txt"\n')
    loaded = load_workload(workload, config.out_dir / "workloads")
    assert loaded.hosts_given and loaded.name == "trace"
    table = pd.read_parquet(loaded.flows_path)
    assert list(table.columns) == NS3_FLOWS.names
    assert table["src_host"].tolist() == [3, 17]
    assert table["size_bytes"].tolist() == [1460, 2920]


def test_empty_after_cut_is_an_error(tmp_path):
    _flows_csv(tmp_path / "f.csv", ROWS)
    config, (workload,) = _workloads(
        tmp_path, '[[workloads]]\nkind = "flow_table"\npath = "f.csv"\nwindow_ns = 50\n'
    )
    with pytest.raises(WorkloadError, match="workload 'f' has no flows"):
        load_workload(workload, config.out_dir / "workloads")


SAMPLES = Path(__file__).resolve().parent.parent / "traces" / "samples"


@pytest.mark.skipif(
    not any(SAMPLES.glob("*/meta.json")), reason="no bundled trace sample in traces/samples"
)
def test_trace_sample_converted_once(tmp_path):
    from disaggsim.traces.convert import convert

    sample = sorted(p.parent for p in SAMPLES.glob("*/meta.json"))[0]
    config, (workload,) = _workloads(
        tmp_path,
        f'[[workloads]]\nkind = "trace_sample"\npath = "{sample}"\n'
        'convert = { kinds = ["mem_read", "mem_write"] }\n',
    )
    loaded = load_workload(workload, config.out_dir / "workloads")
    table = pd.read_parquet(loaded.flows_path)
    direct = convert(sample)
    memory = direct[direct["kind"].isin(["mem_read", "mem_write"])]
    assert loaded.flows == len(table) == len(memory) > 0
    assert set(table["kind"]) <= {"mem_read", "mem_write"}
    assert table["size_bytes"].sum() == memory["size_bytes"].sum()
    assert load_workload(workload, config.out_dir / "workloads") == loaded


REPO = Path(__file__).resolve().parents[1]


def _probe(folder: str) -> Path:
    """A new module in a package folder: an edit of that stage's code (removed after)."""
    return REPO / folder / f"_cache_probe_{os.getpid()}.py"


def test_editing_the_testbed_keeps_cached_workloads_valid(tmp_path, monkeypatch):
    """The cache key hashes the converters (traces/), not the collector (testbed/): after an
    edit of the testbed the cached table is reused without converting again; after an edit
    of a converter the key changes (the counter-check: the key does follow the code)."""
    flows = pd.DataFrame(
        {
            "flow_id": [0, 1],
            "start_ns": [0, 1500],
            "src_host": [3, 17],
            "dst_host": [17, 3],
            "size_bytes": [1460, 2920],
        }
    )
    write_yaps(flows, tmp_path / "trace.txt")
    config, (workload,) = _workloads(tmp_path, '[[workloads]]\nkind = "yaps"\npath = "trace.txt"\n')
    cache = config.out_dir / "workloads"
    first = load_workload(workload, cache)
    key = workload_key(workload)
    testbed_edit = _probe("testbed")
    try:
        testbed_edit.write_text('"""An edit of the testbed."""\n')
        assert workload_key(workload) == key

        def no_conversion(_: object) -> pd.DataFrame:
            raise AssertionError("converted again: the cached workload was not reused")

        monkeypatch.setattr(workloads_mod, "_convert", no_conversion)
        assert load_workload(workload, cache) == first
    finally:
        testbed_edit.unlink(missing_ok=True)
    converter_edit = _probe("traces")
    try:
        converter_edit.write_text('"""An edit of the converters."""\n')
        assert workload_key(workload) != key
    finally:
        converter_edit.unlink(missing_ok=True)
    assert workload_key(workload) == key
