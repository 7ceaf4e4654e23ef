"""The time-range model: records that lie apart from the bulk of their input (issue #21,
class 1).

A corrupt record (a packet at time 0, a paging line 31 years late, an artifact line a day
early) must not stretch the flow table's time axis. Every reader's every time field goes
through :func:`outlier_mask` / :func:`check_times`, one input file at a time, before its
records join the others.

The model, per input (its ``n`` record times, any unit):

- the *bulk* is the records left after trimming ``k = max(1, n // 100)`` records at each
  end (1 %): ``[t_lo, t_hi]``, its span ``t_hi - t_lo``;
- the tolerance is the larger of that span and ``floor`` (60 s for traces:
  ``MIN_GAP_TOLERANCE_NS``, the artifact's Spark run pages in bursts seconds apart);
- walking outward from the bulk, the first gap between consecutive records longer than
  the tolerance cuts off everything beyond it: those records are outliers.

So only the outer 1 % at each end can be flagged, a trace whose records are never more
than the floor apart has no outlier, and one record farther from the rest than both the
floor and the rest's own span always is. With fewer than :data:`MIN_RECORDS` records the
bulk is not defined and nothing is flagged (the check between inputs,
``traces.clocks.check_time_ranges``, still applies to them).

An outlier is an error naming the file, the record and its time (``policy="error"``), or is
dropped with a :class:`TimeOutlierWarning` naming them (``policy="drop"``: the rest of the
input is kept, a correct table of the records that are plausible).
"""

from __future__ import annotations

import os
import warnings
from typing import Final, Literal

import numpy as np

from disaggsim.errors import InputError

#: Fewest records for which the bulk is defined.
MIN_RECORDS: Final = 8
#: Fraction of records trimmed at each end to find the bulk.
TRIM_FRACTION: Final = 0.01

Policy = Literal["error", "drop"]
POLICIES: Final = ("error", "drop")


class TimeOutlierWarning(UserWarning):
    """Records apart from the bulk of their input were dropped (``policy="drop"``)."""


def outlier_mask(times: np.ndarray, floor: int) -> np.ndarray:
    """Boolean mask of the records of one input that lie apart from its bulk (the model
    of the module docstring).

    Args:
        times: record times, shape (n,), integer (any unit, any order).
        floor: the smallest tolerance, in the unit of ``times`` (>= 0).

    Returns:
        bool array of shape (n,): True for an outlier.
    """
    t = np.asarray(times, dtype=np.int64)
    n = t.shape[0]
    mask = np.zeros(n, dtype=bool)
    if n < MIN_RECORDS:
        return mask
    order = np.argsort(t, kind="stable")
    s = t[order]
    k = max(1, int(n * TRIM_FRACTION))
    lo, hi = int(s[k]), int(s[n - 1 - k])
    tol = max(hi - lo, int(floor))
    gaps = np.diff(s)  # gaps[i] = s[i+1] - s[i]
    # Upper end: the first gap above tol at or after index n-1-k cuts off what follows.
    upper = np.flatnonzero(gaps[n - 1 - k :] > tol)
    if upper.size:
        mask[order[n - k + int(upper[0]) :]] = True
    # Lower end: the last gap above tol before index k cuts off what precedes.
    lower = np.flatnonzero(gaps[:k] > tol)
    if lower.size:
        mask[order[: int(lower[-1]) + 1]] = True
    return mask


def check_times(
    path: str | os.PathLike[str],
    times: np.ndarray,
    records: np.ndarray,
    field: str,
    unit: str,
    floor: int,
    policy: Policy = "error",
    record_word: str = "record",
    files: np.ndarray | None = None,
    error: type[InputError] = InputError,
) -> np.ndarray:
    """Apply the model to one input; return the mask of the records to keep.

    Args:
        path: the input file (named in the error or warning).
        times: its record times (shape (n,)).
        records: the record number of each (line, record index...; shape (n,)).
        field: the time field's name, e.g. ``"ts_ns"``.
        unit: the unit of ``times`` for the message (``"ns"``, ``"µs"``).
        floor: smallest tolerance in ``unit``.
        policy: ``"error"`` or ``"drop"``.
        record_word: how ``records`` are called in the message (``"line"`` gives
            ``file:17``, anything else ``file:record 17``).
        files: per-record source file (one input read from several files), or None.
        error: the InputError subclass to raise (a reader's own, e.g. TraceFormatError).

    Raises:
        InputError: ``policy="error"`` and an outlier: ``<file>:<record>: field '<f>':
        expected a time within <tol> of the other records' <lo>..<hi>, got <t>``.
    """
    mask = outlier_mask(times, floor)
    if not mask.any():
        return ~mask
    t = np.asarray(times, dtype=np.int64)
    rec = np.asarray(records)
    keep = t[~mask]
    lo, hi = int(keep.min()), int(keep.max())
    bad = np.flatnonzero(mask)
    first = int(bad[np.argmax(np.abs(t[bad] - (lo + hi) // 2))])  # the farthest one
    if files is not None:
        path = str(np.asarray(files)[first])
    where = str(int(rec[first])) if record_word == "line" else f"{record_word} {int(rec[first])}"
    distance = max(lo - int(t[first]), int(t[first]) - hi)
    expected = (
        f"a time near the other {keep.shape[0]} records' {lo}..{hi} {unit} (this one is "
        f"{distance} {unit} away, more than the floor {floor} {unit} and their span: one "
        f"corrupt record; {bad.shape[0]} such record(s) in the file)"
    )
    if policy == "error":
        raise error(path, where, field, expected, int(t[first]))
    if policy != "drop":
        raise ValueError(f"time outlier policy {policy!r}: expected one of {POLICIES}")
    warnings.warn(
        TimeOutlierWarning(
            f"{InputError(path, where, field, expected, int(t[first]))}; dropped "
            f"{bad.shape[0]} record(s) apart from the rest of the file"
        ),
        stacklevel=2,
    )
    return ~mask
