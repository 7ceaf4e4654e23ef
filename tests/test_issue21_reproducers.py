"""The reproducers of issue #21, each as written there, as regression tests.

Each ends in a one-line error (exit 2) naming the file and the location, or, for a damaged
finished run, in a correct result with a warning; none hangs (a FIFO test runs under an
alarm) and none exits 0 with a wrong table. The classes are tested with generated
instances in tests/test_issue21_classes.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import pandas as pd
import pytest
from _fuzz_traces import alarm  # noqa: F401 - a fixture

from disaggsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "traces" / "samples" / "dask-sort"
BINARY = ROOT / "build" / "sim" / "disaggsim-ns3"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """``P``: a copy of traces/samples/dask-sort."""
    s = tmp_path / "s"
    shutil.copytree(SAMPLE, s)
    return s


def _convert_fails(s: Path, capsys: pytest.CaptureFixture[str], *patterns: str) -> str:
    """``C`` ends in exit 2, one error line matching every pattern, and no output."""
    code = main(["convert", str(s), "--out", str(s.parent / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    for pattern in patterns:
        assert re.search(pattern, lines[0]), lines[0]
    assert not (s.parent / "o.parquet").exists() and not (s.parent / "o.csv").exists()
    return lines[0]


def _pack(path: Path, fmt: str, offset: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))


def _sed_line(path: Path, lineno: int, field: int, value: str) -> None:
    lines = path.read_text().splitlines(True)
    fields = lines[lineno - 1].split()
    fields[field] = value
    lines[lineno - 1] = " ".join(fields) + "\n"
    path.write_text("".join(lines))


def test_class1_pcap_packet_at_time_0(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _pack(sample / "node1.pcap", "<I", 24 + 3 * 80, 0)  # a record's ts_sec := 0 (1970)
    _convert_fails(sample, capsys, r"node1\.pcap:record \d+: field 'ts_ns'")


def test_class1_rmem_line_31_years_late(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _sed_line(sample / "node1.rmem", 701, 1, "999999999999999")
    _convert_fails(sample, capsys, r"node1\.rmem:701: field 'timestamp_us'.*999999999999999")


@pytest.mark.usefixtures("alarm")
@pytest.mark.parametrize(
    ("name", "make", "pattern"),
    [
        ("node1.disk.blktrace.1", os.mkfifo, r"node1\.disk\.blktrace\.1: .*regular file.*FIFO"),
        (
            "meta.json",
            lambda p: p.symlink_to("/dev/zero"),
            r"meta\.json: .*regular file.*character device",
        ),
    ],
)
def test_class2_special_files_are_refused_without_blocking(
    sample: Path, capsys: pytest.CaptureFixture[str], name: str, make, pattern: str
) -> None:
    (sample / name).unlink()
    make(sample / name)
    _convert_fails(sample, capsys, pattern)


def test_class4_npages_beyond_a_block_request(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sed_line(sample / "node1.rmem", 701, 3, "2147483647")
    _convert_fails(sample, capsys, r"node1\.rmem:701: field 'npages'.*2147483647")


def test_class5_one_paging_trace_for_two_nodes(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = sample / "meta.json"
    meta.write_text(meta.read_text().replace('"node1.rmem"', '"node0.rmem"'))
    _convert_fails(sample, capsys, r"node0\.rmem: field 'paging': .*one node.*node 1's paging")


def test_class6_linktype_says_sll_frames_are_ethernet(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _pack(sample / "node1.pcap", "<I", 20, 113)
    _convert_fails(sample, capsys, r"node1\.pcap:byte 20: field 'linktype'.*\(Ethernet\)")


def test_class6_meta_start_a_day_before_the_nodes_capture(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample's node-1 meta moved back one day (86400 s): its relative paging records
    would land a day before the node's packets; the meta is refused, not trusted."""
    meta = sample / "node1.rmem.meta"
    start_us = json.loads(meta.read_text())["start_time_us"]
    meta.write_text(json.dumps({"start_time_us": start_us - 86_400 * 10**6}))
    _convert_fails(
        sample,
        capsys,
        r"node1\.rmem\.meta:1: field 'start_time': expected a start "
        r"within 60\.000 s of the first record of the node's capture .*node1\.pcap.*"
        r"-8640\d\.\d{3} s away",
    )


def test_class6_capture_cut_at_a_record_boundary(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """node1.pcap without its last record still parses; meta.json's pcap_packets (594)
    names the loss."""
    pcap = sample / "node1.pcap"
    data = pcap.read_bytes()
    off, n = 24, 0
    while off < len(data):
        last = off
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
        n += 1
    pcap.write_bytes(data[:last])
    _convert_fails(
        sample,
        capsys,
        rf"meta\.json:node 1: field 'pcap_packets': expected the "
        rf"number of records in .*node1\.pcap \({n - 1}\), got {n}",
    )


def test_class6_blktrace_file_of_another_cpu(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The two per-CPU files of node 0's disk trace swapped by name."""
    a, b = (sample / f"node0.disk.blktrace.{c}" for c in (0, 1))
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    _convert_fails(
        sample,
        capsys,
        r"node0\.disk\.blktrace\.0:file name: field 'cpu': .* "
        r"decode under 1 \(CPU 1\)",
    )


@pytest.mark.parametrize(
    ("what", "edit", "pattern"),
    [
        ("Latin-1 byte", lambda t: t + b"\xe9", r"meta\.json:\d+ \(byte \d+\): .*UTF-8.*xe9"),
        (
            "int digit limit",
            lambda t: t.replace(b'"page_bytes": 4096', b'"page_bytes": ' + b"9" * 5000),
            r"meta\.json: .*4300 digits",
        ),
        (
            "deep nesting",
            lambda t: t.replace(
                b'"page_bytes"', b'"x": ' + b"[" * 50000 + b"]" * 50000 + b', "page_bytes"'
            ),
            r"meta\.json: .*recursion",
        ),
    ],
)
def test_class11_meta_json_errors_name_the_file(
    sample: Path, capsys: pytest.CaptureFixture[str], what: str, edit, pattern: str
) -> None:
    meta = sample / "meta.json"
    meta.write_bytes(edit(meta.read_bytes()))
    _convert_fails(sample, capsys, pattern)


def test_class11_non_utf8_path_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = Path(os.fsdecode(bytes(tmp_path) + b"/s\xff"))
    shutil.copytree(SAMPLE, d)
    (d / "node1.pcap").write_bytes(b"\x00" * 3)
    _convert_fails(d, capsys, r"s\\xff/node0\.pcap: expected a file name in UTF-8")


# --- campaigns (K and R of the issue) -------------------------------------------------


def _campaign(
    tmp_path: Path,
    jobs: str = "1",
    racks: str = "9",
    rates: str = "100",
    workload: str = "",
    extra: str = "",
) -> Path:
    workload = workload or f'kind = "trace_sample"\npath = "{SAMPLE}"'
    k = tmp_path / "k.toml"
    k.write_text(
        f'[campaign]\nname = "k"\nout_dir = "out"\njobs = {jobs}\n'
        f"[[workloads]]\n{workload}\nmax_flows = 400\n"
        f"[topology]\nracks = {racks}\n"
        f'[grid]\nprotocols = ["ideal"]\nrates_gbps = [{rates}]\nscopes = ["datacenter"]\n' + extra
    )
    return k


def _run_fails(k: Path, capsys: pytest.CaptureFixture[str], pattern: str) -> None:
    code = main(["run", "--quiet", str(k)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(pattern, err), err
    assert "Traceback" not in err and not (k.parent / "out" / "runs").exists()


@pytest.mark.parametrize(
    ("key", "value", "pattern"),
    [
        ("rates", "true", r"k\.toml:\d+: grid\.rates_gbps\[0\]: Input should be a valid number"),
        ("jobs", '"2"', r"k\.toml:4: campaign\.jobs: Input should be a valid integer"),
        ("racks", '"9"', r"k\.toml:\d+: topology\.racks: Input should be a valid integer"),
        ("rates", "inf", r"k\.toml:\d+: grid\.rates_gbps\[0\]: Input should be a finite number"),
        ("racks", "1000000", r"k\.toml:\d+: topology: .*at most 65535"),
        ("jobs", "100000", r"k\.toml:4: expected a request this machine can hold.*100000 workers"),
    ],
)
def test_class3_7_8_config_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, pattern: str
) -> None:
    _run_fails(_campaign(tmp_path, **{key: value}), capsys, pattern)


def test_class3_synthetic_n_flows_beyond_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = tmp_path / "k.toml"
    k.write_text(
        '[campaign]\nname = "k"\nout_dir = "out"\njobs = 1\n[[workloads]]\nkind = "synthetic"\n'
        'name = "ws"\ncdf = "websearch"\nload = 0.5\nn_flows = 1000000000\n'
        '[grid]\nprotocols = ["ideal"]\n'
    )
    _run_fails(k, capsys, r"k\.toml:10: expected a request this machine can hold.*n_flows")


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        ("d.loc[5, 'dst'] = 999", r"ft\.csv:7: field 'dst': expected a blade of the traced"),
        ("d.loc[5, 'kind'] = 'bogus'", r"ft\.csv:7: field 'kind'"),
        ("d.loc[5, 'size_bytes'] = 0", r"ft\.csv:7: field 'size_bytes'"),
        ("d.loc[5, 'dst'] = d.loc[5, 'src']", r"ft\.csv:7: field 'dst': expected an endpoint"),
        ("d.loc[5, 'start_ns'] = -5", r"ft\.csv:7: field 'start_ns'"),
        ("d.loc[5, 'start_ns'] = 10**17", r"ft\.csv:7: field 'start_ns'"),
        ("d.loc[6, 'flow_id'] = d.loc[5, 'flow_id']", r"ft\.csv:8: field 'flow_id'"),
    ],
)
def test_class7_flow_table_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, pattern: str
) -> None:
    assert main(["convert", str(SAMPLE), "--out", str(tmp_path / "ft")]) == 0
    capsys.readouterr()
    d = pd.read_csv(tmp_path / "ft.csv")
    exec(edit)  # the edit, on the user's file
    d.to_csv(tmp_path / "ft.csv", index=False)
    k = _campaign(tmp_path, workload=f'kind = "flow_table"\npath = "{tmp_path / "ft.csv"}"')
    _run_fails(k, capsys, pattern)


@pytest.mark.skipif(not BINARY.is_file(), reason="ns-3 program not built (make build)")
def test_class7_attribute_value_checked_before_the_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = _campaign(tmp_path, extra='[attributes]\n"ns3::TcpSocketBase::MinRto" = "abc"\n')
    _run_fails(k, capsys, r"k\.toml:\d+: attributes\.\"ns3::TcpSocketBase::MinRto\": .*'abc'")


@pytest.mark.skipif(not BINARY.is_file(), reason="ns-3 program not built (make build)")
def test_class9_truncated_fct_of_a_finished_run_is_redone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = _campaign(tmp_path)
    assert main(["run", "--quiet", str(k)]) == 0
    first = pd.read_parquet(tmp_path / "out" / "fct.parquet")
    (fct,) = (tmp_path / "out" / "runs").glob("*/fct.parquet")
    fct.write_bytes(fct.read_bytes()[:100])
    capsys.readouterr()
    assert main(["run", "--quiet", str(k)]) == 0
    err = capsys.readouterr().err
    assert re.search(rf"warning: {re.escape(str(fct))}: .*damaged and is redone", err), err
    again = pd.read_parquet(tmp_path / "out" / "fct.parquet")
    pd.testing.assert_frame_equal(first, again)  # the same table: the run was redone
