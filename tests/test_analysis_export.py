"""FCT export on hand-made cases, checked against the NetSys/disaggregation artifact's
``fcts_*.txt`` format and its reader ``rmem/convert_fct_to_ns.py``."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from disaggsim.analysis.export import export_fct, py2_float_str, read_fct_export


def _row(size, fct_ns, kind="mem_read", protocol="pfabric", finished=1, rate=40.0):
    return {
        "flow_id": 0,
        "size_bytes": size,
        "fct_ns": fct_ns if finished else -1,
        "slowdown": 1.0 if finished else math.nan,
        "finished": finished,
        "kind": kind,
        "protocol": protocol,
        "rate_gbps": rate,
        "scope": "datacenter",
        "workload": "w",
        "seed": 1,
    }


@pytest.fixture
def fct() -> pd.DataFrame:
    return pd.DataFrame(
        [
            _row(8192, 8000),
            _row(4096, 3000),
            _row(4096, 4000, kind="mem_write"),
            _row(4096, 5500),
            _row(12288, 12345678),
            _row(100, 999, kind="net"),  # not a memory flow: left out by default
            _row(4096, 1, protocol="tcp"),  # another protocol
        ]
    )


def test_format_matches_artifact(fct, tmp_path):
    out = tmp_path / "fcts_tm_pfabric_w.txt"
    summary = export_fct(fct, out, protocol="pfabric")
    # 4096: (3 + 4 + 5.5)/3 us = 4.1666..., %.12g -> 4.16666666667; 8 us -> Python 2 "8.0"
    assert out.read_bytes() == b"4096 4.16666666667\n8192 8.0\n12288 12345.678\n"
    assert (summary.sizes, summary.flows, summary.unfinished) == (3, 5, 0)
    # The artifact's reader: line.split(" "), int(bytes)/4096 pages, int(float(us)*1000) ns
    parsed = []
    for line in out.read_text().splitlines(keepends=True):
        arr = line.split(" ")
        parsed.append((int(arr[0]) // 4096, int(float(arr[1]) * 1000)))
    assert parsed == [(1, 4166), (2, 8000), (3, 12345678)]
    back = read_fct_export(out)
    assert list(back["size_bytes"]) == [4096, 8192, 12288]
    assert back["mean_fct_us"].tolist() == pytest.approx([12.5 / 3, 8.0, 12345.678])


def test_kinds_and_selection(fct, tmp_path):
    out = tmp_path / "all.txt"
    export_fct(fct, out, protocol="pfabric", kinds=None)
    assert out.read_text().splitlines()[0] == "100 0.999"
    with pytest.raises(ValueError, match=r"several protocol values \['pfabric', 'tcp'\]"):
        export_fct(fct, out)
    with pytest.raises(ValueError, match="protocol='dctcp' not in the table"):
        export_fct(fct, out, protocol="dctcp")
    with pytest.raises(ValueError, match=r"no flows of kinds \['disk_read'\]"):
        export_fct(fct, out, protocol="pfabric", kinds=["disk_read"])


def test_unfinished_flows(fct, tmp_path):
    fct = pd.concat([fct, pd.DataFrame([_row(4096, 0, finished=0)])], ignore_index=True)
    out = tmp_path / "x.txt"
    with pytest.raises(ValueError, match="1 of 6 selected flows are unfinished"):
        export_fct(fct, out, protocol="pfabric")
    assert not out.exists()  # nothing half-written
    summary = export_fct(fct, out, protocol="pfabric", unfinished="drop")
    assert summary.unfinished == 1
    assert out.read_text().splitlines()[0] == "4096 4.16666666667"


def test_py2_float_str():
    # CPython 2.7 str(float) = '%.12g' plus '.0' when it reads as an integer
    assert py2_float_str(2.99671096504) == "2.99671096504"
    assert py2_float_str(909.796594048123) == "909.796594048"
    assert py2_float_str(1024.0) == "1024.0"
    assert py2_float_str(123456789012.5) == "123456789012.0"
    assert py2_float_str(1e16) == "1e+16"
    assert py2_float_str(0.1) == "0.1"
    with pytest.raises(ValueError):
        py2_float_str(math.inf)


def test_read_rejects_bad_lines(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("4096 1.5\n8192 x\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected '<bytes> <mean_fct_us>'"):
        read_fct_export(bad)
    bad.write_text("8192 1.5\n4096 2\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: size 4096 not above previous 8192"):
        read_fct_export(bad)
