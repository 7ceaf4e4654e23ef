"""FCT export: the mean FCT of each flow size, the table the latency-injection swap device
reads (paper §4.4: "we use the pFabric FCTs obtained from the above simulations as the
memory access times in our emulation methodology").

Format (``disaggsim.schemas`` "FCT export"), as in the original artifact's
``rmem/fcts/{40g,100g}/fcts_{tm,tmrs}_pfabric_<app>.txt`` (NetSys/disaggregation on GitHub;
``tm`` = datacenter scope, ``tmrs`` = rack scope): one line per distinct flow size, sorted
by size, ``<bytes> <mean_fct_us>``, one ASCII space between, ``\\n`` line ends, e.g.::

    4096 2.99671096504
    8192 4.02832461274

The artifact's reader, ``rmem/convert_fct_to_ns.py``, splits each line on a single space,
takes ``int(bytes) / 4096`` as a page count and ``int(float(us) * 1000)`` as nanoseconds.
Numbers are written as Python 2's ``str(float)``, which produced those files: ``%.12g``
with ``.0`` appended when the result has no ``.`` or exponent (CPython 2.7
``float_str``: ``PyOS_double_to_string(v, 'g', 12, Py_DTSF_ADD_DOT_0)``).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

#: Flow kinds whose FCTs the swap device injects: remote memory accesses (paper §4.4).
MEMORY_KINDS: tuple[str, ...] = ("mem_read", "mem_write")


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_fct` wrote: ``sizes`` lines from ``flows`` finished flows;
    ``unfinished`` flows of the selection were left out (only with ``unfinished="drop"``)."""

    path: Path
    sizes: int
    flows: int
    unfinished: int


def py2_float_str(value: float) -> str:
    """Python 2.7 ``str(float)``: ``%.12g``, plus ``.0`` if it reads as an integer.

    >>> py2_float_str(2.996710965041234), py2_float_str(1024.0), py2_float_str(650.128)
    ('2.99671096504', '1024.0', '650.128')
    """
    if not math.isfinite(value):
        raise ValueError(f"FCT export: non-finite value {value}")
    text = f"{value:.12g}"
    if all(ch.isdigit() or ch == "-" for ch in text):
        text += ".0"
    return text


def fct_by_size(
    fct_df: pd.DataFrame,
    protocol: str | None = None,
    rate_gbps: float | None = None,
    scope: str | None = None,
    workload: str | None = None,
    seed: int | None = None,
    kinds: Sequence[str] | None = MEMORY_KINDS,
    unfinished: Literal["error", "drop"] = "error",
) -> tuple[pd.DataFrame, int]:
    """Mean FCT (µs) per distinct ``size_bytes`` of one run configuration.

    Each of protocol, rate_gbps, scope, workload, seed selects rows; left as None it must
    have a single value in the table (seeds may be pooled: ``seed=None`` with several
    seeds averages over them). ``kinds`` keeps those flow kinds (None: all flows).

    Returns:
        (DataFrame with ``size_bytes`` (int64), ``mean_fct_us`` and ``flows`` (finished
        flows of that size), sorted by size; the number of unfinished flows dropped).

    Raises:
        ValueError: a selector matches nothing or is ambiguous; no flow is left; unfinished
            flows are selected and ``unfinished="error"``.
    """
    frame = fct_df
    for column, wanted in (
        ("protocol", protocol),
        ("rate_gbps", rate_gbps),
        ("scope", scope),
        ("workload", workload),
        ("seed", seed),
    ):
        if column not in frame.columns:
            if wanted is not None:
                raise ValueError(f"FCT export: table has no {column!r} column to select on")
            continue
        values = sorted(frame[column].unique().tolist())
        if wanted is None:
            if len(values) > 1 and column != "seed":
                raise ValueError(
                    f"FCT export: several {column} values {values}; pass {column}=<one of them>"
                )
            continue
        if column == "rate_gbps":
            mask = (frame[column].astype(float) - float(wanted)).abs() < 1e-9
        else:
            mask = frame[column] == wanted
        if not mask.any():
            raise ValueError(f"FCT export: {column}={wanted!r} not in the table (has {values})")
        frame = frame[mask]
    if kinds is not None:
        if "kind" not in frame.columns:
            raise ValueError("FCT export: table has no 'kind' column; pass kinds=None")
        available = sorted(frame["kind"].unique().tolist())
        frame = frame[frame["kind"].isin(list(kinds))]
        if frame.empty:
            raise ValueError(
                f"FCT export: no flows of kinds {list(kinds)} (the selection has {available})"
            )
    done = frame["finished"] != 0
    dropped = int((~done).sum())
    if dropped and unfinished == "error":
        raise ValueError(
            f"FCT export: {dropped} of {len(frame)} selected flows are unfinished (no FCT); "
            "raise limits.stop_time_ns, or pass unfinished='drop' to leave them out"
        )
    finished = frame[done]
    if finished.empty:
        raise ValueError("FCT export: no finished flow in the selection")
    table = (
        finished.assign(fct_us=finished["fct_ns"].astype(float) / 1000.0)
        .groupby("size_bytes", sort=True)["fct_us"]
        .agg(mean_fct_us="mean", flows="size")
        .reset_index()
    )
    table["size_bytes"] = table["size_bytes"].astype("int64")
    return table, dropped


def export_fct(
    fct_df: pd.DataFrame,
    out_path: str | Path,
    protocol: str | None = None,
    rate_gbps: float | None = None,
    scope: str | None = None,
    workload: str | None = None,
    seed: int | None = None,
    kinds: Sequence[str] | None = MEMORY_KINDS,
    unfinished: Literal["error", "drop"] = "error",
) -> ExportSummary:
    """Write the FCT-by-size table of one configuration (format in the module docstring).

    Selection and errors as :func:`fct_by_size`. The file is written to a temp file in the
    same directory and renamed into place (never half-written).

    Returns:
        :class:`ExportSummary`.
    """
    table, dropped = fct_by_size(
        fct_df, protocol, rate_gbps, scope, workload, seed, kinds, unfinished
    )
    lines = [
        f"{size} {py2_float_str(mean)}\n"
        for size, mean in zip(table["size_bytes"], table["mean_fct_us"], strict=True)
    ]
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as handle:
            handle.writelines(lines)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return ExportSummary(out, len(table), int(table["flows"].sum()), dropped)


def read_fct_export(path: str | Path) -> pd.DataFrame:
    """Read an FCT export (ours or the artifact's ``fcts_*.txt``).

    Returns:
        DataFrame ``size_bytes`` (int64), ``mean_fct_us`` (float64), in file order.

    Raises:
        ValueError: a line that is not ``<int> <float>`` (message ``<file>:<line>: ...``),
            or sizes not strictly increasing.
    """
    sizes: list[int] = []
    means: list[float] = []
    path = Path(path)
    with open(path, encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            try:
                if len(fields) != 2:
                    raise ValueError
                size, mean = int(fields[0]), float(fields[1])
            except ValueError:
                raise ValueError(
                    f"{path}:{number}: expected '<bytes> <mean_fct_us>', got {line.rstrip()!r}"
                ) from None
            if sizes and size <= sizes[-1]:
                raise ValueError(f"{path}:{number}: size {size} not above previous {sizes[-1]}")
            sizes.append(size)
            means.append(mean)
    return pd.DataFrame(
        {"size_bytes": pd.Series(sizes, dtype="int64"), "mean_fct_us": means}
    )
