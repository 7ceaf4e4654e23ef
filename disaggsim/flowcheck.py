"""The one flow-table validator, shared by every workload kind (issue #21, class 7).

A campaign's workloads become flow tables (``FLOW_TABLE``: converted trace samples and
``flow_table`` files) or host-level flows (``NS3_FLOWS``: YAPS files). Before the first run,
:func:`check_flows` checks every row of the user's input for what the ns-3 program would
reject mid-campaign (in a generated ``runs/failed/<key>/flows.csv``) or, worse, accept with a
wrong meaning, and names the user's file and row:

- ``flow_id`` unique (``sim/flow-csv.cc`` rejects a repeated id);
- ``size_bytes > 0``;
- ``0 <= start_ns <= MAX_START_NS``: the ns-3 program runs at picosecond resolution
  (``Time::SetResolution (Time::PS)`` in ``sim/disaggsim-ns3.cc``), so a start plus the
  default 1 s drain must stay below 2**63 ps (about 106 days);
- ``src != dst``;
- per-blade tables: ``kind`` one of ``FLOW_KINDS``; each blade's type matches the kind
  (reads flow blade -> compute, writes compute -> blade, net compute -> compute:
  ``disaggsim.schemas``); each blade's node is a node of the traced cluster
  (``0 <= blade // 3 < n_nodes``), so no invented blade is placed on a host of its own;
- start times: no record apart from the bulk of the others (``disaggsim.timerange``).
"""

from __future__ import annotations

import os
from typing import Final

import numpy as np
import pandas as pd

from disaggsim.bounds import check_records
from disaggsim.errors import InputError
from disaggsim.schemas import BLADES_PER_NODE, FLOW_KINDS, BladeType
from disaggsim.timerange import check_times

#: Default drain of the ns-3 program after the last start (``--drainNs``, 1 s).
DRAIN_NS: Final = 1_000_000_000
#: Latest start: (2**63 - 1) ps, the ns-3 clock at ps resolution, minus the drain, in ns.
MAX_START_NS: Final = (2**63 - 1) // 1000 - DRAIN_NS
#: Start-time outliers: 60 s floor, as for traces (``traces.clocks.MIN_GAP_TOLERANCE_NS``).
START_FLOOR_NS: Final = 60_000_000_000
#: (src type, dst type) per kind (``disaggsim.schemas.FLOW_KINDS``).
KIND_BLADES: Final = {
    "mem_read": (BladeType.MEMORY, BladeType.COMPUTE),
    "mem_write": (BladeType.COMPUTE, BladeType.MEMORY),
    "disk_read": (BladeType.DISK, BladeType.COMPUTE),
    "disk_write": (BladeType.COMPUTE, BladeType.DISK),
    "net": (BladeType.COMPUTE, BladeType.COMPUTE),
}


def check_flows(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    rows: np.ndarray,
    row_word: str = "line",
    n_nodes: int | None = None,
    files: np.ndarray | None = None,
    error: type[InputError] = InputError,
) -> None:
    """Check a flow table (FLOW_TABLE or NS3_FLOWS columns) row by row.

    Args:
        frame: the table, in the input's row order.
        path: the user's input file.
        rows: where each row is in that file (CSV line, Parquet row, trace record).
        row_word: ``"line"`` (``file:17``), ``"row"`` or ``"record"`` (``file:row 17``).
        n_nodes: nodes of the traced cluster (FLOW_TABLE); default ``max(node) + 1``.
        files: per-row source file (a converted sample: the trace the row came from).
        error: the InputError subclass to raise (a reader's own, e.g. TraceFormatError).

    Raises:
        InputError: the first row that breaks a rule: ``<file>:<row>: field '<column>':
        expected <rule>, got <value>``.
    """
    if not len(frame):
        return

    def check(bad: np.ndarray, values: np.ndarray, column: str, expected: str) -> None:
        check_records(
            path,
            bad,
            values,
            rows,
            column,
            expected,
            record_word=row_word,
            files=files,
            error=error,
        )

    ids = frame["flow_id"].to_numpy()
    check(pd.Series(ids).duplicated().to_numpy(), ids, "flow_id", "a flow id no earlier row has")
    size = frame["size_bytes"].to_numpy()
    check(size <= 0, size, "size_bytes", "a positive size in bytes")
    start = frame["start_ns"].to_numpy()
    check(
        (start < 0) | (start > MAX_START_NS),
        start,
        "start_ns",
        f"a start in [0, {MAX_START_NS}] ns (the ns-3 clock counts ps in an int64, and "
        "the run drains 1 s after the last start)",
    )
    src_col, dst_col = ("src", "dst") if "src" in frame.columns else ("src_host", "dst_host")
    src, dst = frame[src_col].to_numpy(), frame[dst_col].to_numpy()
    check(src == dst, dst, dst_col, f"an endpoint other than {src_col}")
    if "kind" in frame.columns:
        kind = frame["kind"].to_numpy(dtype=object)
        check(~np.isin(kind, FLOW_KINDS), kind, "kind", f"one of {', '.join(FLOW_KINDS)}")
        nodes = n_nodes if n_nodes is not None else int(frame["node"].max()) + 1
        for col, blades in (("src", src), ("dst", dst)):
            check(
                (blades < 0) | (blades // BLADES_PER_NODE >= nodes),
                blades,
                col,
                f"a blade of the traced cluster's {nodes} nodes: 0 <= {col} < "
                f"{BLADES_PER_NODE * nodes} (blade = 3 * node + type)",
            )
        for k, types in KIND_BLADES.items():
            for col, blades, want in (("src", src, types[0]), ("dst", dst, types[1])):
                check(
                    (kind == k) & (blades % BLADES_PER_NODE != int(want)),
                    blades,
                    col,
                    f"a {want.name.lower()} blade for a {k} flow (blade % 3 == {int(want)}; "
                    "reads flow blade -> compute, writes compute -> blade)",
                )
    check_times(
        path,
        start,
        rows,
        "start_ns",
        "ns",
        START_FLOOR_NS,
        record_word=row_word,
        files=files,
        error=error,
    )


def rows_of(frame: pd.DataFrame, suffix: str) -> tuple[np.ndarray, str]:
    """Where the rows of a table read from a file are: CSV lines (header = line 1) or
    1-based Parquet rows."""
    n = np.arange(len(frame), dtype=np.int64)
    return (n + 2, "line") if suffix == ".csv" else (n + 1, "row")
