"""The runner's two CSV edges with ns-3 (sim/runner.py): the flows it writes and the FCT
records it reads.  Both have a fast typed path (pyarrow.csv) that must give exactly what the
former pandas text path gave, and a text path that names the first bad cell."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from disaggsim.schemas import FCT_RECORDS, NS3_FLOWS
from disaggsim.sim import runner
from disaggsim.sim.runner import RunError, read_fct_csv, write_ns3_flows_csv

HEADER = ",".join(FCT_RECORDS.names)

# Two finished flows and an unfinished one, as sim/flow-csv.cc's WriteFctCsv prints them
# ("%.9f" slowdown, "nan" when unfinished).  The expected values are the literals.
ROWS = [
    "7,0,5,4096,1000,4441,3441,3000,1.147000000,1",
    "3,12,1,1460,0,1702,1702,1702,1.000000000,1",
    "9,2,3,150000,50,-1,-1,12150,nan,0",
]


def _fct(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "fct.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _text_path(path: Path) -> pd.DataFrame:
    """The text reader alone (the typed one made to decline)."""
    typed = runner._read_fct_csv_typed
    runner._read_fct_csv_typed = lambda _path: None  # type: ignore[assignment]
    try:
        return read_fct_csv(path)
    finally:
        runner._read_fct_csv_typed = typed  # type: ignore[assignment]


def test_fct_records_read_to_the_written_values_on_both_paths(tmp_path: Path) -> None:
    path = _fct(tmp_path, *ROWS)
    typed = runner._read_fct_csv_typed(path)
    assert typed is not None  # a clean file takes the fast path
    text = _text_path(path)
    pd.testing.assert_frame_equal(typed, text, check_exact=True)
    assert list(typed.columns) == FCT_RECORDS.names
    assert [str(t) for t in typed.dtypes] == [
        "int64",
        "int32",
        "int32",
        "int64",
        "int64",
        "int64",
        "int64",
        "int64",
        "float64",
        "int8",
    ]
    assert typed["flow_id"].tolist() == [7, 3, 9]
    assert typed["fct_ns"].tolist() == [3441, 1702, -1]
    assert typed["slowdown"].iloc[0] == 1.147 and typed["slowdown"].iloc[1] == 1.0
    assert math.isnan(typed["slowdown"].iloc[2])


def test_slowdowns_parse_to_the_same_double_as_python(tmp_path: Path) -> None:
    # 2,000 slowdowns with nine decimals; float() is correctly rounded, the oracle
    values = np.random.default_rng(1).uniform(1.0, 40.0, 2000)
    cells = [f"{v:.9f}" for v in values]
    rows = [f"{i},0,1,1460,0,10,10,10,{c},1" for i, c in enumerate(cells)]
    frame = read_fct_csv(_fct(tmp_path, *rows))
    assert frame["slowdown"].tolist() == [float(c) for c in cells]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("1,0,5,4096,1000,x,3441,3000,1.1,1", r"fct\.csv:3: finish_ns: expected an integer"),
        ("1,0,5,4096,1000,,3441,3000,1.1,1", r"fct\.csv:3: finish_ns: expected an integer"),
        ("1,0,5,4096,1000,4441,3441,3000,fast,1", r"fct\.csv:3: slowdown: expected a number"),
    ],
)
def test_a_bad_cell_is_named_by_line_and_column(tmp_path: Path, row: str, message: str) -> None:
    with pytest.raises(RunError, match=message):
        read_fct_csv(_fct(tmp_path, ROWS[0], row))


def test_a_wrong_header_is_named(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=r"fct\.csv:1: header: expected flow_id,"):
        read_fct_csv(_fct(tmp_path, ROWS[0], header=HEADER.replace("fct_ns", "fct")))


def test_flows_csv_is_what_pandas_wrote(tmp_path: Path) -> None:
    # The ns-3 reader (sim/flow-csv.cc) wants this exact header and plain integers.
    flows = pd.DataFrame(
        {
            "flow_id": [0, 1, 2],
            "start_ns": [0, 5, 10**15],
            "src_host": [3, 0, 143],
            "dst_host": [4, 143, 0],
            "size_bytes": [1, 4096, 2**40],
            "kind": ["a", "b", "c"],
        }
    )
    write_ns3_flows_csv(flows, tmp_path / "flows.csv")
    flows[NS3_FLOWS.names].to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "flows.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert (tmp_path / "flows.csv").read_text().splitlines() == [
        "flow_id,start_ns,src_host,dst_host,size_bytes",
        "0,0,3,4,1",
        "1,5,0,143,4096",
        f"2,{10**15},143,0,{2**40}",
    ]
