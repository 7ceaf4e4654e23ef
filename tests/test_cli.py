"""The ``disaggsim`` command line: each subcommand reaches its library function and writes
what it says, with the project's schemas; bad input exits 2 with a one-line error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _campaign_lock import holding_campaign_lock

from disaggsim.cli import main
from disaggsim.schemas import FLOW_TABLE, NS3_FLOWS
from disaggsim.traces import yaps

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "traces" / "samples" / "dask-sort"


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="bundled sample traces/samples/dask-sort missing")
def test_convert_writes_flow_table_and_yaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "flows"
    rc = main(["convert", str(SAMPLE), "--out", str(out), "--yaps-out", str(tmp_path / "f.yaps")])
    assert rc == 0
    table = pd.read_parquet(out.with_suffix(".parquet"))
    assert list(table.columns) == FLOW_TABLE.names
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert len(csv) == len(table) > 0
    # flow ids are 0..N-1 in start order (schemas.FLOW_TABLE)
    assert table["flow_id"].tolist() == list(range(len(table)))
    assert table["start_ns"].is_monotonic_increasing
    printed = capsys.readouterr().out
    assert "reattributed" in printed  # the attribution report (paper §4.1)
    placed = yaps.read_yaps(tmp_path / "f.yaps")
    assert len(placed) == len(table)
    # YAPS counts whole 1460 B packets: every flow's packet count covers its bytes
    assert (placed["size_bytes"].to_numpy() >= table["size_bytes"].to_numpy()).all()


def test_gen_permutation_is_a_fixed_derangement(tmp_path: Path) -> None:
    out = tmp_path / "ws.csv"
    rc = main(
        [
            "gen",
            "--cdf",
            "websearch",
            "--load",
            "0.5",
            "--flows",
            "2000",
            "--matrix",
            "permutation",
            "--seed",
            "3",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    flows = pd.read_csv(out)
    assert list(flows.columns) == NS3_FLOWS.names
    assert len(flows) == 2000
    assert (flows["src_host"] != flows["dst_host"]).all()
    # permutation traffic: each source always sends to the same destination
    assert flows.groupby("src_host")["dst_host"].nunique().max() == 1


def test_bad_input_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[campaign]\nname = "x"\nout_dir = "o"\nbogus_key = 1\n')
    assert main(["run", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bad.toml" in err and "bogus_key" in err


# Errors end in one message and a non-zero exit, never a traceback (issue 6).

BINARY = REPO / "build" / "sim" / "disaggsim-ns3"
needs_ns3 = pytest.mark.skipif(not BINARY.exists(), reason=f"{BINARY} not built (make build)")

_CAMPAIGN = """\
[campaign]
name = "c"
out_dir = "{out_dir}"
jobs = 1

[[workloads]]
kind = "{kind}"
{workload}

[topology]
racks = {racks}
hosts_per_rack = 4
spines = 2

[grid]
protocols = ["tcp"]
rates_gbps = [40]
scopes = ["datacenter"]
{extra}
"""
_SYNTH = 'name = "ws"\ncdf = "websearch"\nload = 0.3\nn_flows = 6'


def _campaign(
    tmp_path: Path,
    *,
    out_dir: str = "out",
    kind: str = "synthetic",
    workload: str = _SYNTH,
    racks: int = 2,
    extra: str = "",
) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(
        _CAMPAIGN.format(out_dir=out_dir, kind=kind, workload=workload, racks=racks, extra=extra)
    )
    return path


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") >= 1
    return err


@needs_ns3
def test_run_failed_runs_is_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _campaign(tmp_path, extra="[limits]\nrun_timeout_s = 0.001\n")
    assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert err.startswith("disaggsim run: error: 1 of 1 runs failed")
    assert "run timeout of 0.001 s (limits.run_timeout_s)" in err


def test_run_lock_refusal_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _campaign(tmp_path)
    (tmp_path / "out").mkdir()
    with holding_campaign_lock(tmp_path / "out"):
        assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert "another campaign is running in this directory" in err


@needs_ns3
@pytest.mark.skipif(not SAMPLE.is_dir(), reason="bundled sample traces/samples/dask-sort missing")
def test_run_topology_too_small_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # dask-sort: 3 nodes x 3 blades = 9 blades; 1 rack x 4 hosts cannot hold them
    config = _campaign(tmp_path, kind="trace_sample", workload=f'path = "{SAMPLE}"', racks=1)
    assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert "c.toml:10: topology: workload 'dask-sort' does not fit" in err
    assert "9 blades do not fit on 4 hosts" in err
    assert not (tmp_path / "out" / "runs").exists()  # nothing was simulated


def test_run_out_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("x")
    config = _campaign(tmp_path, out_dir="taken")
    assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert f"c.toml:3: campaign.out_dir: {tmp_path / 'taken'} exists and is not a directory" in err


def test_run_bad_converter_option_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _campaign(tmp_path, extra='\n[convert]\nidle_gap_ns = "fast"\n')
    assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert "c.toml:24: convert.idle_gap_ns: Input should be a valid integer" in err
    assert not (tmp_path / "out").exists()


def _sample_copy(tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy)
    return copy


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="bundled sample traces/samples/dask-sort missing")
def test_convert_corrupted_pcapng_trailer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import struct

    sample = _sample_copy(tmp_path)
    data = bytearray((REPO / "tests" / "fixtures" / "traces" / "lo.pcapng").read_bytes())
    shb = struct.unpack_from("<I", data, 4)[0]
    epb = shb + struct.unpack_from("<I", data, shb + 4)[0]
    epb_len = struct.unpack_from("<I", data, epb + 4)[0]
    data[epb + epb_len - 1] ^= 0x40  # the first EPB's trailing length
    (sample / "node0.pcap").write_bytes(bytes(data))
    out = tmp_path / "flows"
    assert main(["convert", str(sample), "--out", str(out)]) == 2
    err = _error(capsys)
    assert f"node0.pcap:byte {epb + epb_len - 4}: field 'block_total_length (trailing)'" in err
    assert list(tmp_path.glob("flows*")) == []


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="bundled sample traces/samples/dask-sort missing")
def test_convert_truncated_capture_only_with_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _sample_copy(tmp_path)
    pcap_file = sample / "node0.pcap"
    pcap_file.write_bytes(pcap_file.read_bytes()[:-5])  # a tcpdump killed mid-record
    out = tmp_path / "flows"
    assert main(["convert", str(sample), "--out", str(out)]) == 2
    assert "node0.pcap:byte " in _error(capsys)
    assert list(tmp_path.glob("flows*")) == []
    assert main(["convert", str(sample), "--out", str(out), "--allow-truncated-pcap"]) == 0
    captured = capsys.readouterr()
    assert "disaggsim convert: warning: " in captured.err and "node0.pcap:byte " in captured.err
    assert "n0.pcap_truncated_bytes: " in captured.out
    full = main(["convert", str(SAMPLE), "--out", str(tmp_path / "full")])
    assert full == 0
    cut, whole = pd.read_parquet(f"{out}.parquet"), pd.read_parquet(tmp_path / "full.parquet")
    # the last record of node 0's capture is gone, nothing else changed
    assert len(whole) - 1 <= len(cut) <= len(whole)


def test_internal_error_is_one_message_and_debug_shows_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from disaggsim import cli

    def boom(args: object) -> None:
        raise KeyError("unexpected")

    parser = cli.build_parser
    monkeypatch.setattr(
        cli,
        "build_parser",
        lambda: _with_func(parser(), boom),
    )
    assert main(["report", "x"]) == 1
    err = _error(capsys)
    assert "disaggsim report: internal error: KeyError: 'unexpected'" in err
    assert "--debug" in err
    with pytest.raises(KeyError):
        main(["--debug", "report", "x"])
    monkeypatch.setenv("DISAGGSIM_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["report", "x"])


def _with_func(parser: object, func: object) -> object:
    import argparse

    assert isinstance(parser, argparse.ArgumentParser)
    original = parser.parse_args

    def parse_args(argv: object = None) -> argparse.Namespace:
        args = original(argv)  # type: ignore[arg-type]
        args.func = func
        return args

    parser.parse_args = parse_args  # type: ignore[method-assign]
    return parser


def test_cli_subprocess_has_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(30))
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "meta.json").write_text(
        f'{{"nodes": [{{"node": 0, "ip": "10.0.0.1", "pcap": "{bad}"' + "}]}"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "disaggsim.cli",
            "convert",
            str(tmp_path / "s"),
            "--out",
            str(tmp_path / "f"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("disaggsim convert: error: ") and "bad.pcap" in proc.stderr


@needs_ns3
def test_run_yaps_hosts_beyond_the_topology_fail_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flows = tmp_path / "f.yaps"
    flows.write_text("0 1.0 0 0 1 0 0 0 1\n1 1.0 0 0 1 0 0 3 8\n")  # host 8 of 0..7
    config = _campaign(tmp_path, kind="yaps", workload=f'path = "{flows}"')
    assert main(["run", str(config), "--quiet"]) == 2
    err = _error(capsys)
    assert "c.toml:10: topology: workload 'f' uses host 8 but racks x hosts_per_rack = 8" in err
    assert not (tmp_path / "out" / "runs").exists()
