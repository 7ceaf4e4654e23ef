"""End to end with the real ns-3 program on a tiny campaign: run, resume, redo, fail.

Skipped (with the reason) when ``build/sim/disaggsim-ns3`` is not built: run `make build`.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from disaggsim.schemas import CAMPAIGN_KEYS, FCT_RECORDS
from disaggsim.sim.campaign import CampaignError, run_campaign
from disaggsim.sim.runner import CAMPAIGN_FCT, BinaryNotFoundError, find_binary

try:
    find_binary()
    _MISSING = ""
except BinaryNotFoundError as exc:
    _MISSING = str(exc)

pytestmark = pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "ns-3 program built")

N_FLOWS = 12


def _config(tmp_path: Path, extra: str = "", protocols: str = '["tcp"]') -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "tiny"
            out_dir = "out"
            jobs = 2

            [[workloads]]
            kind = "synthetic"
            name = "websearch"
            cdf = "websearch"
            load = 0.3
            n_flows = {N_FLOWS}

            [topology]
            racks = 2
            hosts_per_rack = 4
            spines = 2

            [grid]
            protocols = {protocols}
            rates_gbps = [40]
            scopes = ["datacenter", "rack"]
            seeds = [1]

            [limits]
            run_timeout_s = 120
            """
        )
        + extra
    )
    return path


def test_campaign_runs_resumes_and_redoes(tmp_path):
    config = _config(tmp_path)
    first = run_campaign(config, progress=False)
    assert (first.ran, first.skipped) == (2, 0)
    fct = first.fct()
    assert list(fct.columns) == CAMPAIGN_FCT.names
    assert list(fct.columns[: len(FCT_RECORDS.names)]) == FCT_RECORDS.names
    assert set(CAMPAIGN_KEYS) <= set(fct.columns)
    assert len(fct) == 2 * N_FLOWS
    assert sorted(fct["scope"].unique()) == ["datacenter", "rack"]
    assert (fct["kind"] == "net").all() and (fct["workload"] == "websearch").all()
    done = fct[fct["finished"] == 1]
    assert len(done) == len(fct), "a light load on an idle fabric must finish every flow"
    assert (done["fct_ns"] == done["finish_ns"] - done["start_ns"]).all()
    # nothing beats the flow alone in the network
    assert (done["slowdown"] >= 1.0 - 1e-9).all()
    # slowdown = fct / ideal, computed by ns-3 before both are rounded to whole ns
    ratio = done["fct_ns"] / done["ideal_fct_ns"]
    bound = ratio * (0.5 / done["ideal_fct_ns"] + 0.5 / done["fct_ns"]) + 1e-6
    assert ((done["slowdown"] - ratio).abs() <= bound).all()
    # rack scope keeps both ends in one rack (hosts are rack-major, 4 per rack)
    rack = fct[fct["scope"] == "rack"]
    assert (rack["src_host"] // 4 == rack["dst_host"] // 4).all()
    summary = pd.read_csv(first.summary_path)
    assert first.summary is not None
    assert first.summary["flows"].tolist() == summary["flows"].tolist()
    assert set(summary["bucket"]) >= {"all"}
    assert summary[summary["bucket"] == "all"]["flows"].sum() == 2 * N_FLOWS
    runs_dir = first.out_dir / "runs"
    run_dirs = sorted(p for p in runs_dir.iterdir() if p.is_dir() and p.name != "failed")
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        for name in ("flows.csv", "fct.csv", "fct.parquet", "command.txt", "done.json"):
            assert (run_dir / name).is_file(), name

    # resume: everything done is skipped, the collected table is the same
    second = run_campaign(config, progress=False)
    assert (second.ran, second.skipped) == (0, 2)
    pd.testing.assert_frame_equal(second.fct(), fct)

    # an interrupted run: a partial directory without the marker, and a stale temp dir
    partial = run_dirs[0]
    (partial / "done.json").unlink()
    (partial / "fct.parquet").unlink()
    (runs_dir / ".tmp-deadbeef-x").mkdir()
    third = run_campaign(config, progress=False)
    assert (third.ran, third.skipped) == (1, 1)
    assert (partial / "done.json").is_file() and (partial / "fct.parquet").is_file()
    assert not (runs_dir / ".tmp-deadbeef-x").exists()
    # same inputs, same seed: the redone run reproduces its FCTs exactly
    pd.testing.assert_frame_equal(third.fct(), fct)

    # a changed input is a new run; the old ones stay
    changed = _config(tmp_path, protocols='["tcp", "dctcp"]')
    fourth = run_campaign(changed, progress=False)
    assert (fourth.ran, fourth.skipped) == (2, 2)
    assert sorted(fourth.fct()["protocol"].unique()) == ["dctcp", "tcp"]


def test_failed_run_is_reported_and_not_done(tmp_path):
    config = _config(
        tmp_path, '\n[attributes]\n"ns3::TcpSocketBase::NoSuchAttribute" = 1\n'
    )
    with pytest.raises(CampaignError, match=r"2 of 2 runs failed") as err:
        run_campaign(config, jobs=1, progress=False)
    assert "ns-3 exited with code" in str(err.value)
    failed = tmp_path / "out" / "runs" / "failed"
    attempts = list(failed.iterdir())
    assert len(attempts) == 2
    assert all((a / "stderr.log").is_file() and not (a / "done.json").exists()
               for a in attempts)
    assert not (tmp_path / "out" / "fct.parquet").exists()
    runs = [p for p in (tmp_path / "out" / "runs").iterdir() if p.name != "failed"]
    assert runs == []
    json.dumps(str(err.value))  # the message is plain text
    shutil.rmtree(failed)


def test_flow_table_workload_is_placed_and_kinds_joined(tmp_path):
    from disaggsim.schemas import BladeType, blade_id

    header = "flow_id,start_ns,src,dst,size_bytes,kind,node,source_file,source_record"
    rows = []
    kinds = ["mem_read", "mem_write", "disk_read", "disk_write"]
    for i in range(8):
        node = i % 2
        compute = blade_id(node, BladeType.COMPUTE)
        memory = blade_id(node, BladeType.MEMORY)
        disk = blade_id(node, BladeType.DISK)
        kind = kinds[i % 4]
        src, dst = {
            "mem_read": (memory, compute), "mem_write": (compute, memory),
            "disk_read": (disk, compute), "disk_write": (compute, disk),
        }[kind]
        rows.append(f"{i},{i * 20000},{src},{dst},{4096 * (i + 1)},{kind},{node},t,{i + 1}")
    (tmp_path / "flows.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    config = tmp_path / "ft.toml"
    config.write_text(
        textwrap.dedent(
            """\
            [campaign]
            name = "ft"
            out_dir = "out"
            [[workloads]]
            kind = "flow_table"
            path = "flows.csv"
            [topology]  # rack scope keeps the 6-blade cluster in one rack
            racks = 2
            hosts_per_rack = 8
            spines = 2
            [grid]
            protocols = ["tcp"]
            rates_gbps = [100]
            """
        )
    )
    result = run_campaign(config, progress=False)
    fct = result.fct()
    assert len(fct) == 2 * 8
    for scope, group in fct.groupby("scope"):
        group = group.sort_values("flow_id")
        assert group["kind"].tolist() == [kinds[i % 4] for i in range(8)], scope
        assert group["size_bytes"].tolist() == [4096 * (i + 1) for i in range(8)]
        assert (group["finished"] == 1).all()
    rack = fct[fct["scope"] == "rack"]
    # rack scope keeps the whole cluster (both nodes) inside one rack
    assert (rack["src_host"] // 8 == rack["dst_host"] // 8).all()
    placements = list((result.out_dir / "runs").glob("*/placement.csv"))
    assert len(placements) == 2
    for path in placements:
        table = pd.read_csv(path)
        assert sorted(table["blade"]) == [0, 1, 2, 3, 4, 5]
        assert table["host"].is_unique


def test_slurm_executor_writes_array_and_collects_later(tmp_path):
    from disaggsim.sim.campaign import run_task

    config = _config(tmp_path, protocols='["tcp"]')
    text = config.read_text().replace('jobs = 2', 'jobs = 2\nexecutor = "slurm"')
    config.write_text(text)
    pending = run_campaign(config, progress=False)
    assert (pending.pending, pending.ran, pending.fct_path) == (2, 0, None)
    script = pending.slurm_script
    assert script is not None and script.is_file()
    body = script.read_text()
    assert "#SBATCH --array=0-1" in body and "run-task" in body
    tasks = sorted((script.parent / "specs").glob("*.json"))
    assert [t.name for t in tasks] == ["0.json", "1.json"]
    # what each array task runs (python -m disaggsim.sim.campaign run-task <spec>)
    for task in tasks:
        assert run_task(task)["status"] == "ran"
    collected = run_campaign(config, progress=False)
    assert (collected.pending, collected.skipped) == (0, 2)
    assert len(collected.fct()) == 2 * N_FLOWS
