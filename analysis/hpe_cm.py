"""The degradation model of HPE's composable memory: Ruan et al., Eq. (1) (papers/004).

Ruan et al. ("More exploration to composable infrastructure: the application and analysis
of composable memory", NTU with HPE Taiwan; /work/shared/papers/004_*.txt) swap to a
remote RAM disk exported over iSER/RoCE and model the slowdown of a job whose working set
is ``n`` times the local memory (the over-commit multiple), §4.3 Eq. (1)::

    performance ratio = n / (1 + (n - 1) * D + sum_{k=1..n} C_k)

Each row of Eq. (1) is the duration of one local-memory-sized section of the workload,
normalised to 1 when it is resident: the first section runs at memory speed, each of the
other ``n - 1`` pays the paging-latency multiple ``D`` (remote over local page-fault
latency, Table 2: 3.8 us / 0.94 us, "about 4"), and ``C_k`` is the OS virtual-memory cost of
section k, "assumed as a relatively small number and can be ignored before reaching the
memory thrashing state (Denning 1968)". The ratio is full-memory duration over
swap-device duration (§5.2): 1 is no slowdown, 0.5 twice the duration.

- :func:`performance_ratio`: Eq. (1) with ``D`` and ``sum C`` as inputs; at ``D = 4``,
  ``sum C = 0`` it gives Table 3's theoretical column 0.40, 0.31, 0.28, 0.26 for n = 2, 4,
  8, 16 (§5.2: 2/5, 4/13, 8/29, 16/61).
- :func:`sum_c_from_ratio`: the ``sum C`` that makes Eq. (1) equal a measured ratio.
- :func:`overcommit_comparison`: an over-commit sweep's measured ratios beside Eq. (1)
  with each device's measured D (bench/RESULTS.md, the notebook).
- :func:`fit_sum_c`: per measured multiple the model with ``sum C = 0``, the error, the
  implied ``sum C``; a constant per-section cost ``C`` (``sum C = n * C``) fitted before
  thrashing; and where thrashing begins (definition in its docstring).

The paper's published numbers (Tables 2, 3, 4, Fig. 4's quoted points) are here as data,
for the tests and for bench/RESULTS.md's side-by-side tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]

#: D of the paper: "the multiple of page fault latency between RoCE/tmpfs-based block device
#: and full memory is 4" (§5.2; Table 2: 3.8 us RDMA / 0.94 us RAM = 4.04).
PAPER_D: Final = 4.0

#: Table 2, "Simulated page fault latency" (LMBench lat_pagefault), in us, per mapped file
#: size: (RDMA, HDD, RAM).
TABLE2_US: Final[dict[str, tuple[float, float, float]]] = {
    "128MB": (4.0, 20.2, 0.95),
    "2GB": (3.8, 20.0, 0.94),
    "20GB": (3.8, 20.0, 0.94),
}

#: Table 3, "Comparison of degradations": multiple -> (theoretical, measured with 128 GB
#: local memory, measured with 64 GB, the 64 GB value "+3 %" compensated for the memory the
#: OS occupies); None: not measured (N/A).
TABLE3: Final[dict[int, tuple[float, float | None, float, float]]] = {
    2: (0.40, 0.45, 0.41, 0.44),
    4: (0.31, 0.31, 0.28, 0.31),
    8: (0.28, 0.27, 0.22, 0.25),
    16: (0.26, None, 0.18, 0.21),
}

#: Fig. 4 (write-intensive micro-benchmark, performance ratio to full memory): the points
#: the text of §5.2 quotes, over-commit ratio -> (RoCE/tmpfs, HDD). The figure itself has
#: 120, 140, 200, 300, 400 %; 140 % and 300 % are not quoted in the text.
FIG4_QUOTED: Final[dict[float, tuple[float, float]]] = {
    1.2: (0.72, 0.14),
    2.0: (0.50, 0.10),
    4.0: (0.36, 0.06),
}

#: Fig. 5 (128 GB configuration): multiple -> ratio as quoted in §5.2 ("performance
#: degradation are 45%, 35%, 31% with over-commit multiple 2, 3, 4 ... from 29% to 25%"
#: for 5 to 8).
FIG5_128GB_QUOTED: Final[dict[int, float]] = {2: 0.45, 3: 0.35, 4: 0.31, 5: 0.29, 8: 0.25}

#: Table 4, VoltDB/TPC-C: database size (GB) -> transactions/s (RDMA, HDD, full memory);
#: None: N/A (the HDD run "go[es] into an extremely slow state or even crash[es]", §5.3).
#: The client node has 96 GB of memory (§5.3).
TABLE4_TPS: Final[dict[int, tuple[float, float | None, float]]] = {
    90: (15661, 15579, 16508),
    120: (14232, 6534, 15694),
    140: (13529, 4805, 15067),
    180: (12558, None, 14247),
    270: (11173, None, 12653),
    360: (9879, None, 11985),
}
TABLE4_LOCAL_MEMORY_GB: Final = 96

#: The paper's closeness criterion: Table 3's values within "0-10%" of the model are "very
#: close", the one "around 20%" off is the exception (§5.2).
DEFAULT_TOLERANCE: Final = 0.10


def _check_inputs(n: FloatArray, d_paging: float) -> None:
    if np.any(~np.isfinite(n)) or np.any(n < 1):
        raise ValueError(f"over-commit multiple n: expected finite values >= 1, got {n}")
    if not np.isfinite(d_paging) or d_paging <= 0:
        raise ValueError(f"d_paging: expected a finite multiple > 0, got {d_paging}")


@overload
def performance_ratio(n: float, d_paging: float, sum_c: float = 0.0) -> float: ...
@overload
def performance_ratio(
    n: Sequence[float] | FloatArray, d_paging: float, sum_c: float | Sequence[float] = 0.0
) -> FloatArray: ...
def performance_ratio(
    n: float | Sequence[float] | FloatArray,
    d_paging: float,
    sum_c: float | Sequence[float] | FloatArray = 0.0,
) -> float | FloatArray:
    """Eq. (1) of Ruan et al. (§4.3): ``n / (1 + (n - 1) * d_paging + sum_c)``.

    Args:
        n: over-commit multiple(s), working set / local memory (dimensionless, >= 1; n = 1
            is full memory, ratio 1 when ``sum_c`` is 0). A scalar or a 1-D array.
        d_paging: paging-latency multiple D, remote over local page-fault latency
            (dimensionless, > 0; the paper's 4).
        sum_c: the OS virtual-memory cost ``sum_{k=1..n} C_k`` in units of one resident
            section's duration (a scalar, or one value per n).

    Returns:
        The performance ratio, full-memory duration over swap duration (a float for a
        scalar ``n``, else an array of n's shape).

    Raises:
        ValueError: n < 1 or not finite, D <= 0 or not finite, or a denominator <= 0 (a
            ``sum_c`` so negative that the duration is not positive).
    """
    n_arr = np.asarray(n, dtype=np.float64)
    _check_inputs(n_arr, d_paging)
    denominator = 1.0 + (n_arr - 1.0) * d_paging + np.asarray(sum_c, dtype=np.float64)
    if np.any(denominator <= 0):
        raise ValueError(
            f"sum_c: makes the swap duration <= 0 (1 + (n-1)D + sum C = {denominator})"
        )
    ratio = n_arr / denominator
    return float(ratio) if ratio.ndim == 0 else ratio


def sum_c_from_ratio(n: float, ratio: float, d_paging: float) -> float:
    """The ``sum C`` for which Eq. (1) equals a measured ``ratio`` at multiple ``n``:
    ``n / ratio - 1 - (n - 1) * d_paging`` (units of one resident section's duration;
    negative when the measurement beats the model with ``sum C = 0``).

    Raises:
        ValueError: n < 1, D <= 0, or ``ratio`` not in (0, inf).
    """
    _check_inputs(np.asarray(n, dtype=np.float64), d_paging)
    if not np.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"ratio: expected a measured performance ratio > 0, got {ratio}")
    return n / ratio - 1.0 - (n - 1.0) * d_paging


def fit_d_paging(multiples: Sequence[float], ratios: Sequence[float]) -> float:
    """The D for which Eq. (1) with ``sum C = 0`` best fits measured ratios: least squares
    in the duration form of Eq. (1), ``n / ratio - 1 = (n - 1) * D`` (each section after
    the first costs D), ``D = sum((n-1)(n/r - 1)) / sum((n-1)^2)`` over the points with
    n > 1. On Table 3's 128 GB column it gives 4.06, the paper's Table 2 multiple (4.04).

    Raises:
        ValueError: lengths differ, no point with n > 1, or a ratio <= 0.
    """
    if len(multiples) != len(ratios):
        raise ValueError(f"multiples and ratios: lengths differ ({len(multiples)}, {len(ratios)})")
    pts = [(float(n), float(r)) for n, r in zip(multiples, ratios, strict=True) if n > 1]
    if not pts:
        raise ValueError("multiples: expected at least one over-commit multiple > 1")
    if any(not np.isfinite(r) or r <= 0 for _, r in pts):
        raise ValueError(f"ratios: expected measured ratios > 0, got {list(ratios)}")
    return sum((n - 1) * (n / r - 1) for n, r in pts) / sum((n - 1) ** 2 for n, _ in pts)


@dataclass(frozen=True)
class SumCFit:
    """What :func:`fit_sum_c` found; per-point tuples are in ascending ``multiples`` order.

    - ``model``: Eq. (1) with the given D and ``sum C = 0`` at each multiple;
    - ``relative_error``: (measured - model) / model (negative: slower than the model);
    - ``sum_c``: the ``sum C`` each measurement implies (:func:`sum_c_from_ratio`);
    - ``c_per_section``: least-squares constant ``C`` of ``sum C = n * C`` over the points
      before ``thrashing_multiple`` (all points if none), in units of one resident
      section's duration; None if no point is before it;
    - ``thrashing_multiple``: where thrashing begins (see :func:`fit_sum_c`), or None.
    """

    d_paging: float
    tolerance: float
    multiples: tuple[float, ...]
    measured: tuple[float, ...]
    model: tuple[float, ...]
    relative_error: tuple[float, ...]
    sum_c: tuple[float, ...]
    c_per_section: float | None
    thrashing_multiple: float | None


def fit_sum_c(
    multiples: Sequence[float],
    ratios: Sequence[float],
    d_paging: float,
    tolerance: float = DEFAULT_TOLERANCE,
) -> SumCFit:
    """Fit Eq. (1)'s OS cost to measured performance ratios and find where thrashing begins.

    Thrashing begins at the smallest measured multiple n* such that at n* and at every
    larger measured multiple the measurement falls short of Eq. (1) with ``sum C = 0`` by
    more than ``tolerance`` of the model, ``(model - measured) / model > tolerance``:
    from there on the OS cost the paper ignores "before reaching the memory thrashing state"
    (§4.3) is no longer small. The default tolerance, 10 %, is the paper's own line
    between "very close (difference is 0-10%)" and the multiple-16 exception "around 20%"
    (§5.2). A single bad point followed by a good one is not an onset. Table 3's 64 GB
    column at D = 4 gives n* = 8, its "+3 %" compensated column n* = 16, the paper's
    conclusion that Eq. (1) holds "before the multiple reaches 8" and not at 16.

    The constant per-section cost ``C`` (``sum C = n * C``, Eq. (1)'s sum with equal terms)
    is the least-squares fit ``sum(n_i * S_i) / sum(n_i^2)`` of the implied ``S_i = sum C``
    over the points before n*.

    Args:
        multiples: over-commit multiples n >= 1 (distinct; any order).
        ratios: measured performance ratios (full-memory duration / swap duration, > 0),
            one per multiple.
        d_paging: the paging-latency multiple D used by the model (> 0).
        tolerance: relative shortfall that counts as thrashing (0 < tolerance < 1).

    Raises:
        ValueError: lengths differ, no point, repeated multiples, or a value out of range.
    """
    if len(multiples) != len(ratios) or not multiples:
        raise ValueError(
            f"multiples and ratios: expected equal non-zero lengths, got "
            f"{len(multiples)} and {len(ratios)}"
        )
    if len(set(multiples)) != len(multiples):
        raise ValueError(f"multiples: repeated values in {list(multiples)}")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance: expected 0 < tolerance < 1, got {tolerance}")
    pairs = sorted(zip((float(m) for m in multiples), (float(r) for r in ratios), strict=True))
    ns = tuple(p[0] for p in pairs)
    measured = tuple(p[1] for p in pairs)
    sums = tuple(sum_c_from_ratio(n, r, d_paging) for n, r in pairs)
    model = tuple(float(performance_ratio(n, d_paging)) for n in ns)
    errors = tuple((m - r) / r for m, r in zip(measured, model, strict=True))
    onset: float | None = None
    for n, err in reversed(list(zip(ns, errors, strict=True))):
        if -err > tolerance:
            onset = n
        else:
            break
    before = [(n, s) for n, s in zip(ns, sums, strict=True) if onset is None or n < onset]
    c = (sum(n * s for n, s in before) / sum(n * n for n, _ in before)) if before else None
    return SumCFit(d_paging, tolerance, ns, measured, model, errors, sums, c, onset)


def overcommit_comparison(
    summary: pd.DataFrame,
    d_by_device: Mapping[str, float],
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measured over-commit ratios beside Eq. (1) with each device's measured D.

    Args:
        summary: ``disaggsim emulate`` over-commit summary (``summary.csv`` of an
            ``[hpe_cm]`` run with ``experiment = "overcommit"``): columns ``over_commit``,
            ``device``, ``ratio``, ``ratio_min``, ``ratio_max``; the full-memory reference
            rows (device ``memory``) and rows without a ratio are skipped.
        d_by_device: D per device name (e.g. the pagefault summary's ``d_paging``); devices
            not in it are skipped.
        tolerance: passed to :func:`fit_sum_c`.

    Returns:
        (points, fits): ``points`` per (device, over_commit): the measured ratio and its
        range, ``d_paging``, ``model`` (Eq. (1), sum C = 0), ``error`` ((measured - model)
        / model), ``sum_c`` (implied); ``fits`` per device: ``d_paging``,
        ``c_per_section``, ``thrashing_multiple`` (None: no onset), ``max_abs_error_to_8``
        (the largest |error| at multiples <= 8, the paper's "within 10 % up to 8"),
        ``d_fit`` (:func:`fit_d_paging`: the D that fits the sweep's shape) and
        ``max_abs_error_d_fit`` (the largest |error| of Eq. (1) with ``d_fit``); ``points``
        also has ``model_d_fit`` and ``error_d_fit``.

    Raises:
        KeyError: a column is missing; ValueError: as :func:`fit_sum_c`.
    """
    rows, fits = [], []
    for name, grp in summary.groupby("device", sort=False):
        if name not in d_by_device:
            continue
        grp = grp[grp["ratio"].notna() & (grp["ratio"] > 0)]
        if grp.empty:
            continue
        d = float(d_by_device[str(name)])
        fit = fit_sum_c(list(grp["over_commit"]), list(grp["ratio"]), d, tolerance)
        d_fit = fit_d_paging(list(grp["over_commit"]), list(grp["ratio"]))
        errors_fit = [
            m / performance_ratio(n, d_fit) - 1
            for n, m in zip(fit.multiples, fit.measured, strict=True)
        ]
        ranges = {
            float(n): (lo, hi)
            for n, lo, hi in zip(
                grp["over_commit"], grp["ratio_min"], grp["ratio_max"], strict=True
            )
        }
        for n, meas, mod, err, s, err_fit in zip(
            fit.multiples,
            fit.measured,
            fit.model,
            fit.relative_error,
            fit.sum_c,
            errors_fit,
            strict=True,
        ):
            rows.append(
                {
                    "device": name,
                    "over_commit": n,
                    "ratio": meas,
                    "ratio_min": ranges[n][0],
                    "ratio_max": ranges[n][1],
                    "d_paging": d,
                    "model": mod,
                    "error": err,
                    "sum_c": s,
                    "model_d_fit": performance_ratio(n, d_fit),
                    "error_d_fit": err_fit,
                }
            )
        to8 = [abs(e) for n, e in zip(fit.multiples, fit.relative_error, strict=True) if n <= 8]
        fits.append(
            {
                "device": name,
                "d_paging": d,
                "c_per_section": fit.c_per_section,
                "thrashing_multiple": fit.thrashing_multiple,
                "max_abs_error_to_8": max(to8) if to8 else None,
                "d_fit": d_fit,
                "max_abs_error_d_fit": max(abs(e) for e in errors_fit),
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(fits)
