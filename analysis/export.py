"""FCT export: the mean FCT of each flow size, the table the latency-injection swap device
reads (paper §4.4: "we use the pFabric FCTs obtained from the above simulations as the
memory access times in our emulation methodology").

Format (``disaggsim.schemas.FCT_EXPORT``), as in the original artifact's
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

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa

from disaggsim.atomic import atomic_path
from disaggsim.guards import open_regular
from disaggsim.schemas import CAMPAIGN_KEYS, FCT_EXPORT

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


#: Columns that select one run configuration, in the order they are checked: the run keys.
SELECTORS: tuple[str, ...] = CAMPAIGN_KEYS


@dataclass(frozen=True)
class _Selection:
    """One run configuration's selector values, in SELECTORS order (None: not selected)."""

    protocol: str | None
    rate_gbps: float | None
    scope: str | None
    workload: str | None
    seed: int | None

    def items(self) -> list[tuple[str, str | float | int | None]]:
        """(column, wanted value) pairs in SELECTORS order."""
        return [(column, getattr(self, column)) for column in SELECTORS]


def _select(frame: pd.DataFrame, selection: _Selection) -> pd.DataFrame:
    """The rows of ``frame`` (FCT records, or only their distinct SELECTORS values) of one
    run configuration; raises the ValueErrors :func:`fct_by_size` documents."""
    for column, wanted in selection.items():
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
    return frame


def read_fct_selection(
    path: str | Path,
    protocol: str | None = None,
    rate_gbps: float | None = None,
    scope: str | None = None,
    workload: str | None = None,
    seed: int | None = None,
) -> pd.DataFrame:
    """The rows of a collected ``fct.parquet`` that an export of this selection reads,
    without loading the rest (``disaggsim.analysis.fct_file.FctFile``).

    The selectors are checked as :func:`fct_by_size` checks them, on the file's distinct
    (protocol, rate_gbps, scope, workload, seed) values, so a wrong or ambiguous one fails
    with the same message before any flow is read; then only the matching rows are read,
    in file order. ``export_fct(read_fct_selection(path, **sel), out, **sel)`` writes the
    same file as ``export_fct(pd.read_parquet(path), out, **sel)``, in the memory of the
    selected runs.

    Raises:
        FileNotFoundError: no file. ValueError: as :func:`fct_by_size`.
    """
    from disaggsim.analysis.fct_file import FctFile

    table = FctFile(path)
    keys = [c for c in SELECTORS if c in table.columns]
    combos = pd.DataFrame(table.group_keys(keys) if keys else [], columns=keys)
    selection = _Selection(protocol, rate_gbps, scope, workload, seed)
    chosen = _select(combos, selection)
    wanted = dict(selection.items())
    given = [c for c in keys if wanted[c] is not None]
    if not given:  # every selector column holds one value (or the seeds are pooled)
        return table.read_group([], ())
    parts = [
        table.read_group(given, tuple(values))
        for values in chosen[given].drop_duplicates().itertuples(index=False)
    ]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _select_finished(
    fct_df: pd.DataFrame,
    selection: _Selection,
    kinds: Sequence[str] | None,
    unfinished: Literal["error", "drop"],
) -> tuple[pd.DataFrame, int]:
    """The finished flows of one run configuration, and how many unfinished ones were left
    out: the selection, checks and errors that :func:`fct_by_size` documents."""
    frame = _select(fct_df, selection)
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
    return finished, dropped


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
    finished, dropped = _select_finished(
        fct_df, _Selection(protocol, rate_gbps, scope, workload, seed), kinds, unfinished
    )
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
    out = _write_lines_atomic(out_path, lines)
    return ExportSummary(out, len(table), int(table["flows"].sum()), dropped)


def _write_lines_atomic(out_path: str | Path, lines: list[str]) -> Path:
    """Write ``lines`` (ASCII, ``\\n``) to ``out_path`` through a temp file renamed into
    place, so a reader never sees half an export (``disaggsim.atomic.atomic_path``)."""
    out = Path(out_path)
    with atomic_path(out) as tmp:
        tmp.write_text("".join(lines), encoding="ascii", newline="\n")
    return out


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
    with io.TextIOWrapper(open_regular(path, "an FCT export"), encoding="ascii") as handle:
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
    return pa.Table.from_pydict(
        {"size_bytes": sizes, "mean_fct_us": means}, schema=FCT_EXPORT
    ).to_pandas()


#: Default number of CDF points per flow size in a distribution export.
DISTRIBUTION_POINTS: int = 100


def fct_distribution(
    fct_df: pd.DataFrame,
    protocol: str | None = None,
    rate_gbps: float | None = None,
    scope: str | None = None,
    workload: str | None = None,
    seed: int | None = None,
    kinds: Sequence[str] | None = MEMORY_KINDS,
    unfinished: Literal["error", "drop"] = "error",
    max_points: int = DISTRIBUTION_POINTS,
) -> tuple[pd.DataFrame, int]:
    """The empirical FCT distribution of each flow size: the input of the swap device's
    ``fct-sample`` model, which draws one FCT per remote access instead of the mean
    (``swapdev/core/sd_delay.h``).

    Selection, kinds and ``unfinished`` as :func:`fct_by_size`. For a size with ``n``
    finished flows and sorted FCTs ``f_1 <= ... <= f_n``: if ``n <= max_points``, one point
    per distinct FCT ``v`` with ``cum_prob = #{f_i <= v} / n`` (the exact empirical CDF);
    else the inverse empirical CDF at ``p = k / max_points``, ``f_ceil(p n)``, for
    ``k = 1..max_points``, points of equal FCT merged. The last point of each size has
    ``cum_prob = 1``.

    Returns:
        (DataFrame ``size_bytes`` (int64), ``cum_prob`` (float64, in (0, 1]), ``fct_ns``
        (int64), sorted by size then cum_prob; the number of unfinished flows dropped).

    Raises:
        ValueError: as :func:`fct_by_size`, or ``max_points < 1``.
    """
    if max_points < 1:
        raise ValueError(f"FCT export: max_points must be >= 1, got {max_points}")
    frame, dropped = _select_finished(
        fct_df, _Selection(protocol, rate_gbps, scope, workload, seed), kinds, unfinished
    )
    sizes: list[int] = []
    cums: list[float] = []
    fcts: list[int] = []
    for size, group in frame.groupby("size_bytes", sort=True):
        values = sorted(int(v) for v in group["fct_ns"])
        n = len(values)
        if n <= max_points:
            points = [(values[i], (i + 1) / n) for i in range(n)]
        else:
            points = [
                (values[math.ceil(k * n / max_points) - 1], k / max_points)
                for k in range(1, max_points + 1)
            ]
        for index, (value, cum) in enumerate(points):
            if index + 1 < len(points) and points[index + 1][0] == value:
                continue  # merged into the last point of equal FCT
            sizes.append(int(size))  # type: ignore[arg-type]
            cums.append(cum)
            fcts.append(value)
    table = pd.DataFrame(
        {
            "size_bytes": pd.Series(sizes, dtype="int64"),
            "cum_prob": pd.Series(cums, dtype="float64"),
            "fct_ns": pd.Series(fcts, dtype="int64"),
        }
    )
    return table, dropped


def _prob_str(p: float) -> str:
    """A probability as a plain decimal of at most 9 places (the device reads ppb)."""
    if p >= 1.0:
        return "1"
    text = f"{p:.9f}".rstrip("0").rstrip(".")
    if text in ("0", ""):
        text = "0.000000001"
    return text


def export_fct_distribution(
    fct_df: pd.DataFrame,
    out_path: str | Path,
    protocol: str | None = None,
    rate_gbps: float | None = None,
    scope: str | None = None,
    workload: str | None = None,
    seed: int | None = None,
    kinds: Sequence[str] | None = MEMORY_KINDS,
    unfinished: Literal["error", "drop"] = "error",
    max_points: int = DISTRIBUTION_POINTS,
) -> ExportSummary:
    """Write the per-size FCT distribution (:func:`fct_distribution`) for ``fct-sample``.

    Format ("FCT distribution export"): one line per CDF point, sorted by size then
    probability, ``<bytes> <cum_prob> <fct_us>``: ``cum_prob`` a plain decimal in (0, 1]
    with at most 9 places (``1`` on each size's last line), ``fct_us`` with 3 decimals
    (whole ns), e.g.::

        4096 0.25 2.996
        4096 1 4.028

    Written atomically, like :func:`export_fct`. ``sizes`` in the summary counts lines.
    """
    table, dropped = fct_distribution(
        fct_df, protocol, rate_gbps, scope, workload, seed, kinds, unfinished, max_points
    )
    lines = [
        f"{size} {_prob_str(cum)} {fct // 1000}.{fct % 1000:03d}\n"
        for size, cum, fct in zip(
            table["size_bytes"], table["cum_prob"], table["fct_ns"], strict=True
        )
    ]
    out = _write_lines_atomic(out_path, lines)
    by_size, _ = fct_by_size(fct_df, protocol, rate_gbps, scope, workload, seed, kinds, unfinished)
    return ExportSummary(out, len(table), int(by_size["flows"].sum()), dropped)
