"""Standard synthetic datacenter workloads: Poisson flow arrivals, empirical flow sizes.

This is the workload model of the transport papers the OSDI'16 study compares against
(Gao et al., OSDI'16 §4.2: "the same simulation setup as prior work on datacenter
transports [26, 27, 32]"): pFabric (Alizadeh et al., SIGCOMM'13 §5.1) and pHost (Gao et al.,
CoNEXT'15 §4) drive a 144-host fabric with

- flow arrivals as a Poisson process whose rate gives a chosen offered *load*, the fraction
  of the access-link capacity used, summed over all hosts::

      lambda_total [flows/s] = load * hosts * rate_bps / (8 * mean_size_bytes * wire_factor)

  with ``wire_factor = (mss + header_bytes) / mss``. The YAPS simulator (NetSys/simulator,
  ``run/flow_generator.cpp``, ``PoissonFlowGenerator``) counts the 40 B header of each 1460 B
  packet (``mean_flow_size * 8.0 / 1460 * 1500``): pass ``header_bytes=40`` to match it;
  the default ``header_bytes=0`` counts payload only;
- flow sizes drawn from an empirical CDF, read and sampled exactly as YAPS's
  ``EmpiricalRandomVariable`` (``coresim/random_variable.cpp``, "ported from NS2") does: see
  :class:`FlowSizeCdf`;
- a traffic matrix: ``all_to_all`` (every flow picks a uniformly random source and a
  uniformly random other destination; YAPS runs one Poisson process per ordered host pair
  with rate ``lambda_host / (hosts - 1)``, whose superposition is this one process) or
  ``permutation`` (each host sends only to one fixed other host, a random derangement; YAPS
  ``PermutationTM``, used for the pHost paper's permutation experiments).

The output is a table in :data:`disaggsim.schemas.NS3_FLOWS` (flow_id, start_ns, src_host,
dst_host, size_bytes), the ns-3 program's input.

Shipped CDFs live in ``traces/cdfs/`` (see ``traces/cdfs/README.md`` for their sources):
``websearch`` (DCTCP, SIGCOMM'10 Fig. 4) and ``datamining`` (VL2, SIGCOMM'09 Fig. 2) in YAPS's
format (sizes in 1460 B packets), and ``hpcc-websearch`` and ``hpcc-fbhadoop`` (the two
workloads of HPCC, Li et al. SIGCOMM'19 §5.1) in the format of HPCC's traffic generator
(sizes in bytes, cumulative percent), whose 100 B-scale Hadoop flows no packet unit can hold.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_path
from disaggsim.guards import open_regular
from disaggsim.schemas import NS3_FLOWS

#: Directory of the shipped CDF files (YAPS format, ``<size_pkts> 1 <cdf>`` per line).
CDF_DIR: Final = Path(__file__).resolve().parent / "cdfs"

#: Payload bytes per packet that one CDF unit stands for (YAPS ``params.mss = 1460``,
#: ``run/params.cpp``; ``FlowCreationForInitializationEvent``: ``size = value() * 1460``).
MSS_BYTES: Final = 1460

#: Header bytes per packet in YAPS and pFabric's simulations (``params.hdr_size = 40``).
YAPS_HEADER_BYTES: Final = 40

Matrix = Literal["all_to_all", "permutation"]
MATRICES: Final = ("all_to_all", "permutation")


@dataclass(frozen=True)
class FlowSizeCdf:
    """An empirical flow-size CDF, with YAPS's sampling rule.

    File formats, told apart by the number of fields of the first point (every line of a
    file has the same number):

    - YAPS (``EmpiricalRandomVariable::loadCDF``, same as pFabric's ns-2 CDF files): one
      point per line, ``<size> <ignored> <cdf>``, whitespace-separated, size in packets of
      ``MSS_BYTES`` payload (> 0), cdf non-decreasing in [0, 1] and 1 on the last line;
    - HPCC's traffic generator (alibaba-edu/High-Precision-Congestion-Control,
      ``traffic_gen/custom_rand.py``, ``CustomRand.setCdf``): ``<size_bytes> <cdf_percent>``,
      size in bytes (>= 0), cdf in percent, non-decreasing in [0, 100] and 100 on the last
      line; the unit is one byte.

    YAPS's reader skips nothing, so shipped files carry no comments; this reader also skips
    blank lines and lines starting with ``#``.

    Sampling (YAPS ``EmpiricalRandomVariable::value``): draw ``u`` uniform in [0, 1], find
    the first point ``i`` with ``cdf[i] >= u``; if ``i > 0`` and ``u < cdf[i]`` return
    ``ceil`` of the linear interpolation between points ``i-1`` and ``i``, else
    ``size[i]``. So sizes are whole packets, piecewise-uniform between CDF points, with an
    atom of mass ``cdf[0]`` at ``size[0]``.

    HPCC's generator draws ``r`` uniform in [0, 100) and truncates the interpolated size
    (``int(...)``, at least 1 B); this rule rounds up instead, so a size drawn from an HPCC
    file is at most 1 B larger than HPCC's for the same draw.

    Attributes:
        sizes_pkts: float64 array, shape (n,), sizes in units of ``unit_bytes`` (packets for
            a YAPS file, bytes for an HPCC file), non-decreasing, > 0 (HPCC: >= 0).
        cdf: float64 array, shape (n,), cumulative probabilities, non-decreasing, last 1.
        source: the file the CDF was read from.
        unit_bytes: bytes per size unit: ``MSS_BYTES`` (YAPS) or 1 (HPCC).
    """

    sizes_pkts: np.ndarray
    cdf: np.ndarray
    source: Path
    unit_bytes: int = MSS_BYTES

    def sample_pkts(self, u: np.ndarray) -> np.ndarray:
        """Map uniform draws ``u`` (float64, shape (m,), in [0, 1]) to sizes in packets.

        Returns an int64 array of shape (m,), each >= 1 (YAPS's rule, see class docstring).
        """
        idx = np.searchsorted(self.cdf, u, side="left")
        idx = np.minimum(idx, len(self.cdf) - 1)
        lo = np.maximum(idx - 1, 0)
        x1, x2 = self.cdf[lo], self.cdf[idx]
        y1, y2 = self.sizes_pkts[lo], self.sizes_pkts[idx]
        interpolate = (idx > 0) & (u < x2)
        span = np.where(interpolate, x2 - x1, 1.0)
        interp = np.ceil(y1 + (u - x1) * (y2 - y1) / span)
        out = np.where(interpolate, interp, self.sizes_pkts[idx])
        return np.maximum(out, 1).astype(np.int64)

    def mean_pkts_linear(self) -> float:
        """Mean of the piecewise-linear distribution, in packets, before rounding up.

        This is YAPS's ``mean_flow_size / 1460`` with ``smooth_cdf: 1`` (trapezoid rule,
        ``sum (cdf_i - cdf_{i-1}) * (size_i + size_{i-1}) / 2``), plus the atom
        ``cdf[0] * size[0]`` where YAPS assumes a segment from size 1.
        """
        d_cdf = np.diff(self.cdf)
        mid = (self.sizes_pkts[1:] + self.sizes_pkts[:-1]) / 2.0
        return float(self.cdf[0] * self.sizes_pkts[0] + np.sum(d_cdf * mid))

    def mean_pkts(self) -> float:
        """Exact mean of :meth:`sample_pkts`'s distribution, in packets (with the ``ceil``).

        Within a segment the interpolated size X is uniform on [a, b], so
        E[ceil X] = (1 / (b - a)) * integral_a^b ceil(x) dx, summed exactly per unit step.
        It exceeds :meth:`mean_pkts_linear` by less than one packet.
        """
        total = float(self.cdf[0] * self.sizes_pkts[0])
        for i in range(1, len(self.cdf)):
            p = float(self.cdf[i] - self.cdf[i - 1])
            if p <= 0.0:
                continue
            a, b = float(self.sizes_pkts[i - 1]), float(self.sizes_pkts[i])
            total += p * (_mean_ceil_uniform(a, b))
        return total

    def mean_bytes(self) -> float:
        """Exact mean flow size in payload bytes (``mean_pkts() * unit_bytes``)."""
        return self.mean_pkts() * self.unit_bytes

    def sample_bytes(self, u: np.ndarray) -> np.ndarray:
        """Sizes in payload bytes of uniform draws ``u`` (float64, shape (m,), in [0, 1]):
        :meth:`sample_pkts` times ``unit_bytes``; int64, shape (m,), each >= 1."""
        return self.sample_pkts(u) * self.unit_bytes


def _mean_ceil_uniform(a: float, b: float) -> float:
    """E[ceil X] for X uniform on [a, b] (0 <= a <= b); ``ceil(a)`` when a == b.

    Closed form, so a segment of millions of units (an HPCC CDF in bytes) costs nothing:
    with F(t) = integral_0^t ceil(x) dx = n (n + 1) / 2 + (t - n)(n + 1), n = floor(t)
    (ceil(x) == k on (k - 1, k]), E = (F(b) - F(a)) / (b - a).
    """
    if b <= a:
        return float(math.ceil(a))

    def integral(t: float) -> float:
        n = math.floor(t)
        return n * (n + 1) / 2.0 + (t - n) * (n + 1)

    return (integral(b) - integral(a)) / (b - a)


def available_cdfs() -> list[str]:
    """Names of the shipped CDFs (file stems in ``traces/cdfs/``), sorted."""
    return sorted(p.stem for p in CDF_DIR.glob("*.txt"))


def resolve_cdf(cdf: str | Path) -> Path:
    """Return the path of ``cdf``: a shipped CDF name (e.g. ``"websearch"``) or a file path
    (a directory of another name is returned too, for the reader's one-line refusal; a
    shipped name wins over a directory of that name).

    Raises:
        FileNotFoundError: neither a shipped name nor an existing file; lists the names.
    """
    path = Path(cdf)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        return path  # load_cdf refuses a FIFO or device by name (disaggsim.guards)
    shipped = CDF_DIR / f"{cdf}.txt"
    if shipped.is_file():
        return shipped
    if path.is_dir():  # not a shipped name: load_cdf refuses it by name (disaggsim.guards)
        return path
    raise FileNotFoundError(
        f"flow-size CDF {str(cdf)!r}: no such file and not a shipped CDF "
        f"(shipped: {', '.join(available_cdfs())})"
    )


#: The two CDF file formats (:class:`FlowSizeCdf`), by field count: the names of the size
#: and cdf fields, the cdf's full scale, the smallest size allowed and the size unit in bytes.
_CDF_FORMATS: Final = {
    3: ("size_pkts", "cdf", 1.0, "> 0", MSS_BYTES),
    2: ("size_bytes", "cdf_percent", 100.0, ">= 0", 1),
}


def load_cdf(cdf: str | Path) -> FlowSizeCdf:
    """Read a flow-size CDF file, YAPS's or HPCC's format (see :class:`FlowSizeCdf`).

    Args:
        cdf: a shipped CDF name or a file path.

    Raises:
        FileNotFoundError: see :func:`resolve_cdf`.
        ValueError: a malformed line, naming file, line and field and what was expected.
    """
    path = resolve_cdf(cdf)
    sizes: list[float] = []
    probs: list[float] = []
    n_fields = 0
    with io.TextIOWrapper(open_regular(path, "a flow-size CDF"), encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{path}:{lineno}"
            fields = line.split()
            if not n_fields:
                if len(fields) not in _CDF_FORMATS:
                    raise ValueError(
                        f"{where}: expected 3 fields '<size_pkts> <ignored> <cdf>' (YAPS) or "
                        f"2 fields '<size_bytes> <cdf_percent>' (HPCC), got {len(fields)}: "
                        f"{line!r}"
                    )
                n_fields = len(fields)
            size_name, cdf_name, full, size_rule, unit = _CDF_FORMATS[n_fields]
            if len(fields) != n_fields:
                raise ValueError(
                    f"{where}: expected {n_fields} fields as on the first point, got "
                    f"{len(fields)}: {line!r}"
                )
            try:
                size = float(fields[0])
            except ValueError:
                raise ValueError(
                    f"{where}: field {size_name!r} must be a number, got {fields[0]!r}"
                ) from None
            try:
                prob = float(fields[-1]) / full
            except ValueError:
                raise ValueError(
                    f"{where}: field {cdf_name!r} must be a number, got {fields[-1]!r}"
                ) from None
            if not (math.isfinite(size) and (size > 0 or (unit == 1 and size == 0))):
                raise ValueError(
                    f"{where}: field {size_name!r} must be {size_rule}, got {fields[0]!r}"
                )
            if not (0.0 <= prob <= 1.0):
                raise ValueError(
                    f"{where}: field {cdf_name!r} must be in [0, {full:g}], got {fields[-1]!r}"
                )
            if sizes and size < sizes[-1]:
                raise ValueError(
                    f"{where}: field {size_name!r} must not decrease (previous "
                    f"{sizes[-1]:g}), got {fields[0]!r}"
                )
            if probs and prob < probs[-1]:
                raise ValueError(
                    f"{where}: field {cdf_name!r} must not decrease (previous "
                    f"{probs[-1] * full:g}), got {fields[-1]!r}"
                )
            sizes.append(size)
            probs.append(prob)
    if not sizes:
        raise ValueError(
            f"{path}: no CDF points (expected lines '<size_pkts> 1 <cdf>' or "
            "'<size_bytes> <cdf_percent>')"
        )
    size_name, cdf_name, full, _, unit = _CDF_FORMATS[n_fields]
    if probs[-1] != 1.0:
        raise ValueError(
            f"{path}: last line's field {cdf_name!r} must be {full:g}, got {probs[-1] * full:g}"
        )
    return FlowSizeCdf(np.asarray(sizes, dtype=np.float64), np.asarray(probs), path, unit)


def arrival_rate_per_s(
    load: float, hosts: int, rate_gbps: float, mean_size_bytes: float, header_bytes: int = 0
) -> float:
    """Total flow arrival rate (flows/s) that offers ``load`` of all access links.

    ``load * hosts * rate_gbps * 1e9 / (8 * mean_size_bytes * (MSS_BYTES + header_bytes) /
    MSS_BYTES)`` (YAPS ``PoissonFlowGenerator``: ``bandwidth * load / (mean_flow_size * 8.0 /
    1460 * 1500)`` per host, with header_bytes = 40).
    """
    wire_factor = (MSS_BYTES + header_bytes) / MSS_BYTES
    return load * hosts * rate_gbps * 1e9 / (8.0 * mean_size_bytes * wire_factor)


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` with no fixed point (n >= 2).

    Rejection sampling: a uniform permutation is a derangement with probability ~1/e, so
    the expected number of draws is ~2.72. Returns int64 array, shape (n,).
    """
    if n < 2:
        raise ValueError(f"a derangement needs at least 2 elements, got {n}")
    idx = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == idx):
            return perm


def generate(
    cdf: str | Path,
    load: float,
    hosts: int,
    n_flows: int,
    rate_gbps: float,
    matrix: Matrix = "all_to_all",
    seed: int = 0,
    hosts_per_rack: int | None = None,
    scope: Literal["datacenter", "rack"] = "datacenter",
    header_bytes: int = 0,
    start_ns: int = 0,
) -> pd.DataFrame:
    """Generate ``n_flows`` flows of a standard synthetic workload (module docstring).

    Args:
        cdf: shipped CDF name (``websearch``, ``datamining``, ``hpcc-websearch``, ...) or a
            CDF file in YAPS's or HPCC's format.
        load: offered load, fraction of access-link capacity summed over hosts (> 0).
        hosts: number of hosts (>= 2), numbered rack-major (NS3_FLOWS).
        n_flows: number of flows (>= 1).
        rate_gbps: access-link rate in Gbit/s (> 0).
        matrix: ``all_to_all`` or ``permutation``.
        seed: seed of numpy's PCG64 generator; equal arguments give equal tables.
        hosts_per_rack: rack size; required for ``scope="rack"``, else unused.
        scope: ``datacenter`` (any destination) or ``rack`` (destinations in the source's
            rack only: the OSDI'16 paper's rack-scale disaggregation, §4.2).
        header_bytes: header bytes per MSS_BYTES packet counted in the load (40 = YAPS).
        start_ns: time origin; the first flow starts one exponential gap after it.

    Returns:
        DataFrame with NS3_FLOWS's columns and dtypes, ``n_flows`` rows in start order,
        flow_id 0..n_flows-1; sizes are whole units of the CDF (multiples of MSS_BYTES for a
        YAPS file, bytes for an HPCC file).

    Raises:
        ValueError: an argument out of range, naming it and what was expected.
        FileNotFoundError / ValueError: from :func:`load_cdf`.
    """
    if not (math.isfinite(load) and load > 0):
        raise ValueError(f"load must be a finite number > 0, got {load!r}")
    if hosts < 2:
        raise ValueError(f"hosts must be >= 2, got {hosts!r}")
    if n_flows < 1:
        raise ValueError(f"n_flows must be >= 1, got {n_flows!r}")
    if not (math.isfinite(rate_gbps) and rate_gbps > 0):
        raise ValueError(f"rate_gbps must be a finite number > 0, got {rate_gbps!r}")
    if matrix not in MATRICES:
        raise ValueError(f"matrix must be one of {MATRICES}, got {matrix!r}")
    if scope not in ("datacenter", "rack"):
        raise ValueError(f"scope must be 'datacenter' or 'rack', got {scope!r}")
    if header_bytes < 0:
        raise ValueError(f"header_bytes must be >= 0, got {header_bytes!r}")
    group = hosts
    if scope == "rack":
        if hosts_per_rack is None or hosts_per_rack < 2 or hosts % hosts_per_rack != 0:
            raise ValueError(
                f"scope='rack' needs hosts_per_rack >= 2 dividing hosts={hosts}, "
                f"got {hosts_per_rack!r}"
            )
        group = hosts_per_rack

    size_cdf = load_cdf(cdf)
    rng = np.random.default_rng(seed)
    lam = arrival_rate_per_s(load, hosts, rate_gbps, size_cdf.mean_bytes(), header_bytes)
    gaps_ns = rng.exponential(1e9 / lam, size=n_flows)
    starts = start_ns + np.rint(np.cumsum(gaps_ns)).astype(np.int64)
    sizes = size_cdf.sample_bytes(rng.random(n_flows))
    src = rng.integers(0, hosts, size=n_flows)
    base = (src // group) * group
    if matrix == "all_to_all":
        # uniform over the group's other members: draw in [0, group-1), skip the source
        offset = rng.integers(0, group - 1, size=n_flows)
        local_src = src - base
        dst = base + offset + (offset >= local_src)
    else:
        perm = np.concatenate([g * group + derangement(group, rng) for g in range(hosts // group)])
        dst = perm[src]
    table = pd.DataFrame(
        {
            "flow_id": np.arange(n_flows, dtype=np.int64),
            "start_ns": starts,
            "src_host": src.astype(np.int32),
            "dst_host": dst.astype(np.int32),
            "size_bytes": sizes.astype(np.int64),
        }
    )
    return table[NS3_FLOWS.names]


def write_sim_flows_csv(flows: pd.DataFrame, path: str | Path) -> None:
    """Write ``flows`` as NS3_FLOWS CSV (header, column order), atomically (temp + replace).

    Raises:
        ValueError: ``flows`` lacks a NS3_FLOWS column (names it).
    """
    _check_columns(flows)
    with atomic_path(path) as tmp:
        flows[NS3_FLOWS.names].to_csv(tmp, index=False)


def write_flows(flows: pd.DataFrame, path: str | Path) -> None:
    """Write a generated workload by the file's extension, atomically.

    - ``.csv``: NS3_FLOWS CSV (the ns-3 driver's input), :func:`write_sim_flows_csv`;
    - ``.parquet``: a Parquet table in the NS3_FLOWS schema;
    - ``.yaps``: a YAPS flow file, :func:`disaggsim.traces.yaps.write_yaps` (sizes are whole
      1460 B packets already, so it round-trips exactly).

    Raises:
        ValueError: an unknown extension, or a missing NS3_FLOWS column.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        write_sim_flows_csv(flows, path)
    elif suffix == ".parquet":
        _check_columns(flows)
        table = pa.Table.from_pandas(flows[NS3_FLOWS.names], schema=NS3_FLOWS, preserve_index=False)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
    elif suffix == ".yaps":
        from disaggsim.traces.yaps import write_yaps

        _check_columns(flows)
        write_yaps(flows, path)
    else:
        raise ValueError(
            f"{path}: unknown output extension {suffix!r}; expected .csv, .parquet or .yaps"
        )


def _check_columns(flows: pd.DataFrame) -> None:
    missing = [c for c in NS3_FLOWS.names if c not in flows.columns]
    if missing:
        raise ValueError(f"flows table lacks NS3_FLOWS column(s) {missing}")
