"""YAPS flow files (NetSys/simulator run/flow_generator.cpp FlowReader) <-> NS3_FLOWS."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from disaggsim.schemas import NS3_FLOWS
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.yaps import read_yaps, write_yaps

SIM = pd.DataFrame(
    {
        "flow_id": [0, 1, 2],
        "start_ns": [0, 1_500, 2_000_000_001],
        "src_host": [3, 140, 0],
        "dst_host": [7, 2, 143],
        "size_bytes": [4096, 1460, 1],
    }
)


def test_write_matches_the_artifact_format(tmp_path: Path) -> None:
    write_yaps(SIM, tmp_path / "f.txt")
    # readFlowTrace.py: "{} {} 0 0 {} 0 0 {} {}" with "%.9f" % (t_s + 1.0), ceil(size/1460)
    assert (tmp_path / "f.txt").read_text().splitlines() == [
        "0 1.000000000 0 0 3 0 0 3 7",
        "1 1.000001500 0 0 1 0 0 140 2",
        "2 3.000000001 0 0 1 0 0 0 143",
    ]


def test_round_trip(tmp_path: Path) -> None:
    write_yaps(SIM, tmp_path / "f.txt")
    back = read_yaps(tmp_path / "f.txt")
    assert list(back.columns) == NS3_FLOWS.names
    assert back["start_ns"].tolist() == SIM["start_ns"].tolist()  # exact to the ns
    assert back["size_bytes"].tolist() == [3 * 1460, 1460, 1460]  # whole 1460 B packets
    assert back[["flow_id", "src_host", "dst_host"]].equals(
        SIM[["flow_id", "src_host", "dst_host"]].astype("int32").astype({"flow_id": "int64"})
    )
    write_yaps(back, tmp_path / "g.txt")
    assert (tmp_path / "g.txt").read_text() == (tmp_path / "f.txt").read_text()


def test_reads_yaps_style_numbers(tmp_path: Path) -> None:
    # FlowReader reads the start time as a double and ignores the 4 "temp" fields.
    (tmp_path / "y.txt").write_text("7 1.25 0.5 0 10 1e3 0 5 6\n\n8 2 0 0 1 0 0 6 5\n")
    df = read_yaps(tmp_path / "y.txt")
    assert df.values.tolist() == [[7, 250_000_000, 5, 6, 14600], [8, 1_000_000_000, 6, 5, 1460]]


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("1 1.0 0 0 3 0 0 3\n", r"y.txt:1: expected 9 fields"),
        ("1 x 0 0 3 0 0 3 4\n", r"y.txt:1: field 'start_time'"),
        ("1 1.0 0 0 0 0 0 3 4\n", r"y.txt:1: field 'size_packets'"),
        ("1 1.0 0 0 2 0 0 -3 4\n", r"y.txt:1: field 'src'"),
        ("1 1.0 0 z 2 0 0 3 4\n", r"y.txt:1: field 'temp3'"),
        # ns-3 would reject these mid-campaign, naming the generated CSV instead:
        ("1 1.0 0 0 2 0 0 3 4\n\n1 1.5 0 0 2 0 0 4 3\n", r"y.txt:3: field 'id': .*line 1\)"),
        ("1 1.0 0 0 2 0 0 3 4\n2 1.0 0 0 2 0 0 5 5\n", r"y.txt:2: field 'dst': .*src \(5\)"),
        ("1 0.999999999 0 0 2 0 0 3 4\n", r"y.txt:1: field 'start_time': .*>= 1 s"),
        ("1 1.0 0 0 \u00b2 0 0 3 4\n", r"y.txt:1: expected ASCII text"),
        ("1 1.0 0 0 2 0 0 3 4\n2 1.\u0663 0 0 2 0 0 3 4\n", r"y.txt:2: expected ASCII"),
    ],
)
def test_malformed(tmp_path: Path, line: str, match: str) -> None:
    (tmp_path / "y.txt").write_text(line)
    with pytest.raises(TraceFormatError, match=match):
        read_yaps(tmp_path / "y.txt")


def test_write_rejects_bad_rows(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="size_bytes > 0"):
        write_yaps(SIM.assign(size_bytes=0), tmp_path / "z.txt")
    with pytest.raises(ValueError, match="missing"):
        write_yaps(SIM.drop(columns="src_host"), tmp_path / "z.txt")
    assert not (tmp_path / "z.txt").exists()
