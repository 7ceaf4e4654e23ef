"""Per-blade-pair flow-size and inter-arrival CDFs: the authors' traffic generator.

The OSDI'16 artifact does not replay its traces in the simulator. It reduces each traced
(src blade, dst blade) pair to two empirical CDFs and lets the simulator draw that pair's
flows from them:

- akshayknarayan/disaggregation-flowgen ``processForSimulation.py``: groups the flows by
  (src, dst); drops pairs with fewer than 5 flows; squashes flows of a pair that arrive at
  the same time into one (``squashCoArrivals``); sizes in packets of 1460 B
  (``ceil(bytes / 1460)``); inter-arrival times in seconds, the first one measured from
  the trace's start; writes ``<src>_<dst>_sizes.cdf`` and ``<src>_<dst>_interarrivals.cdf``,
  one line ``<value> <count> <cumulative fraction>`` per distinct value, ascending, the
  last fraction 1.0; at most 65,536 lines (the simulator's table size).
- NetSys/simulator ``run/flow_generator.cpp`` (``CustomCDFFlowGenerator::make_flows``) and
  ``coresim/event.cpp`` (``FlowCreationForInitializationEvent``): per pair, a renewal
  process whose first flow starts one inter-arrival after the start, each next one an
  inter-arrival later; sizes drawn as a step CDF (``CDFRandomVariable``: the first value
  whose fraction is >= u) times 1460 B, a draw of 0 packets making no flow; inter-arrival
  times drawn with linear interpolation between CDF points (``EmpiricalRandomVariable``,
  ported from ns-2, ``coresim/random_variable.cpp``).

Differences, on purpose: ``processForSimulation.py``'s ``squashCoArrivals`` never emits the
last squashed flow of a pair (the final ``prev`` is not yielded); here every flow counts.
``make_flows`` starts three generators per pair ("each node represents 3x of that
resource": its 15 hosts stand for 5 traced nodes' blades); here one per pair, so a copy
carries its trace's load (use more ``copies`` for more).
Instead of the artifact's random subsample of tables with >= 65,536 distinct values we keep
evenly spaced ones (first and last included), so the result does not depend on a seed.

Blade ids: ours are node-major (``3 * node + {0 compute, 1 memory, 2 disk}``,
``disaggsim.schemas``); the artifact's are type-major (compute ``0..N-1``, memory
``N..2N-1``, disk ``2N..3N-1``, flowgen-spark/ProcessTrace.scala). Files we write use our
ids; :func:`read_pair_cdfs` maps the artifact's ids to ours when given ``artifact_nodes``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from disaggsim.schemas import BLADES_PER_NODE

#: Packet payload of the artifact's sizes (processForSimulation.py, ``ceil(i / 1460)``).
ARTIFACT_MSS_BYTES = 1460
#: Pairs with fewer flows get no CDF (processForSimulation.py ``processSD``).
MIN_FLOWS = 5
#: Most lines in one CDF file (NetSys/simulator ``EmpiricalRandomVariable`` maxEntry_).
MAX_ENTRIES = 65536
#: Kinds of flow between blade types (ours: 0 compute, 1 memory, 2 disk).
_KIND_OF_TYPES = {
    (1, 0): "mem_read",
    (0, 1): "mem_write",
    (2, 0): "disk_read",
    (0, 2): "disk_write",
}
_FILE_RE = re.compile(r"^(\d+)_(\d+)_(sizes|interarrivals)\.cdf$")


class PairCdfError(ValueError):
    """A CDF file that does not parse (message names the file and line)."""


@dataclass(frozen=True)
class EmpiricalCdf:
    """One empirical CDF in the artifact's form.

    Attributes:
        values: distinct values, ascending (float64; sizes in packets, times in s).
        counts: how many observations had each value (int64, > 0).
        fractions: cumulative fraction of observations <= value (ascending, last 1.0).
    """

    values: np.ndarray
    counts: np.ndarray
    fractions: np.ndarray

    @classmethod
    def of(cls, observations: np.ndarray) -> EmpiricalCdf:
        """The CDF of a sample (the artifact's ``getCdf``), thinned to MAX_ENTRIES lines."""
        values, counts = np.unique(np.asarray(observations, dtype=np.float64), return_counts=True)
        fractions = np.cumsum(counts) / counts.sum()
        fractions[-1] = 1.0
        if values.size > MAX_ENTRIES:
            keep = np.unique(np.linspace(0, values.size - 1, MAX_ENTRIES).round().astype(int))
            values, counts, fractions = values[keep], counts[keep], fractions[keep]
        return cls(values, counts.astype(np.int64), fractions)

    def sample_step(self, u: np.ndarray) -> np.ndarray:
        """Draws for uniforms ``u`` in [0, 1]: the first value whose fraction >= u
        (``CDFRandomVariable::value``)."""
        idx = np.searchsorted(self.fractions, u, side="left")
        return self.values[np.minimum(idx, self.values.size - 1)]

    def sample_interpolated(self, u: np.ndarray) -> np.ndarray:
        """Draws for uniforms ``u`` in [0, 1], interpolated linearly between the CDF's
        points (``EmpiricalRandomVariable::value``; below the first fraction: the first
        value)."""
        idx = np.minimum(np.searchsorted(self.fractions, u, side="left"), self.values.size - 1)
        out = self.values[idx].copy()
        inner = (idx > 0) & (u < self.fractions[idx])
        i = idx[inner]
        x1, x2 = self.fractions[i - 1], self.fractions[i]
        y1, y2 = self.values[i - 1], self.values[i]
        out[inner] = y1 + (u[inner] - x1) * (y2 - y1) / (x2 - x1)
        return out

    def mean_interpolated(self) -> float:
        """Mean of :meth:`sample_interpolated` (exact: piecewise-linear quantile)."""
        f = np.concatenate([[0.0], self.fractions])
        first = self.values[0] * f[1]
        inner = np.sum((f[2:] - f[1:-1]) * (self.values[1:] + self.values[:-1]) / 2)
        return float(first + inner)


@dataclass(frozen=True)
class PairCdf:
    """The two CDFs of one (src, dst) blade pair.

    Attributes:
        src, dst: blade ids (ours, ``disaggsim.schemas``).
        kind: FLOW_TABLE kind of the pair's flows (the most common one in the trace).
        sizes: flow sizes in packets of 1460 B.
        interarrivals: inter-arrival times in seconds.
    """

    src: int
    dst: int
    kind: str
    sizes: EmpiricalCdf
    interarrivals: EmpiricalCdf


def kind_of_pair(src: int, dst: int) -> str:
    """FLOW_TABLE kind of a flow between two of our blade ids (``net`` if not a
    compute<->memory/disk pair)."""
    return _KIND_OF_TYPES.get((src % BLADES_PER_NODE, dst % BLADES_PER_NODE), "net")


def build_pair_cdfs(
    flow_table: pd.DataFrame, min_flows: int = MIN_FLOWS
) -> dict[tuple[int, int], PairCdf]:
    """Per-pair CDFs of a flow table, as processForSimulation.py builds them.

    Args:
        flow_table: FLOW_TABLE rows (start_ns, src, dst, size_bytes, kind).
        min_flows: pairs with fewer flows (before squashing) are left out.

    Returns:
        ``{(src, dst): PairCdf}`` in (src, dst) order. Times are measured from the table's
        earliest start_ns.

    Raises:
        ValueError: an empty table.
    """
    if flow_table.empty:
        raise ValueError("build_pair_cdfs: empty flow table")
    t0 = int(flow_table["start_ns"].min())
    out: dict[tuple[int, int], PairCdf] = {}
    for key, group in flow_table.groupby(["src", "dst"], sort=True):
        src, dst = (int(x) for x in key)  # type: ignore[union-attr, call-overload]
        if len(group) < min_flows:
            continue
        squashed = group.groupby("start_ns", sort=True)["size_bytes"].sum()
        starts = squashed.index.to_numpy(dtype=np.int64) - t0
        inter_s = np.diff(np.concatenate([[0], starts])) / 1e9
        packets = np.ceil(squashed.to_numpy(dtype=np.float64) / ARTIFACT_MSS_BYTES)
        kind = str(group["kind"].mode().iloc[0]) if "kind" in group else kind_of_pair(src, dst)
        out[(src, dst)] = PairCdf(
            src, dst, kind, EmpiricalCdf.of(packets), EmpiricalCdf.of(inter_s)
        )
    return out


def write_pair_cdfs(cdfs: dict[tuple[int, int], PairCdf], directory: Path) -> list[Path]:
    """Write ``<src>_<dst>_{sizes,interarrivals}.cdf`` files (the artifact's format; values
    written with ``repr``, so they read back exactly).

    Returns:
        The files written, sorted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for (src, dst), pair in cdfs.items():
        for name, cdf, as_int in (
            ("sizes", pair.sizes, True),
            ("interarrivals", pair.interarrivals, False),
        ):
            path = directory / f"{src}_{dst}_{name}.cdf"
            lines = [
                f"{int(v) if as_int and float(v).is_integer() else repr(float(v))} "
                f"{int(c)} {repr(float(f))}\n"
                for v, c, f in zip(cdf.values, cdf.counts, cdf.fractions, strict=True)
            ]
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text("".join(lines))
            tmp.replace(path)
            written.append(path)
    return sorted(written)


def read_cdf_file(path: Path) -> EmpiricalCdf:
    """Read one ``<value> <count> <fraction>`` CDF file.

    Raises:
        PairCdfError: a line without three numbers, fractions that decrease or leave [0, 1],
            values that decrease, a last fraction other than 1, or no lines
            (``<file>:<line>: ...``).
    """
    values: list[float] = []
    counts: list[float] = []
    fractions: list[float] = []
    try:
        text = path.read_text()
    except OSError as exc:
        raise PairCdfError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 3:
                raise ValueError
            value, count, fraction = float(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            raise PairCdfError(
                f"{path}:{number}: expected '<value> <count> <cumulative fraction>', got {line!r}"
            ) from None
        if not 0.0 <= fraction <= 1.0 or (fractions and fraction < fractions[-1]):
            raise PairCdfError(f"{path}:{number}: fraction {fraction} not ascending in [0, 1]")
        if values and value < values[-1]:
            raise PairCdfError(f"{path}:{number}: value {value} below the previous line's")
        values.append(value)
        counts.append(count)
        fractions.append(fraction)
    if not values:
        raise PairCdfError(f"{path}: no CDF lines")
    if abs(fractions[-1] - 1.0) > 1e-9:
        raise PairCdfError(f"{path}:{len(values)}: last fraction is {fractions[-1]}, not 1")
    return EmpiricalCdf(np.array(values), np.array(counts, dtype=np.int64), np.array(fractions))


def artifact_blade(artifact_id: int, artifact_nodes: int) -> int:
    """Our blade id of the artifact's type-major id (compute ``0..N-1``, memory
    ``N..2N-1``, disk ``2N..3N-1``; flowgen-spark/ProcessTrace.scala)."""
    blade_type, node = divmod(artifact_id, artifact_nodes)
    if blade_type >= BLADES_PER_NODE:
        raise ValueError(f"artifact blade {artifact_id} >= 3 x {artifact_nodes} nodes")
    return BLADES_PER_NODE * node + blade_type


def read_pair_cdfs(
    directory: Path, artifact_nodes: int | None = None
) -> dict[tuple[int, int], PairCdf]:
    """Read a directory of ``<src>_<dst>_{sizes,interarrivals}.cdf`` files.

    Args:
        directory: written by :func:`write_pair_cdfs` or by the artifact's
            processForSimulation.py (its ``cdf/`` directory).
        artifact_nodes: the artifact's node count N, to map its type-major blade ids to
            ours (:func:`artifact_blade`); None: the ids are ours already.

    Returns:
        ``{(src, dst): PairCdf}`` for every pair with both files; kinds from
        :func:`kind_of_pair`.

    Raises:
        PairCdfError: no CDF files, a pair with only one of its two files, a bad file.
    """
    found: dict[tuple[int, int], dict[str, Path]] = {}
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        match = _FILE_RE.match(path.name)
        if match:
            found.setdefault((int(match[1]), int(match[2])), {})[match[3]] = path
    if not found:
        raise PairCdfError(f"{directory}: no <src>_<dst>_sizes.cdf / _interarrivals.cdf files")
    out: dict[tuple[int, int], PairCdf] = {}
    for (src, dst), files in sorted(found.items()):
        if set(files) != {"sizes", "interarrivals"}:
            missing = {"sizes", "interarrivals"} - set(files)
            raise PairCdfError(f"{directory}: pair {src}_{dst} lacks its {missing.pop()} file")
        if artifact_nodes is not None:
            src, dst = artifact_blade(src, artifact_nodes), artifact_blade(dst, artifact_nodes)
        out[(src, dst)] = PairCdf(
            src,
            dst,
            kind_of_pair(src, dst),
            read_cdf_file(files["sizes"]),
            read_cdf_file(files["interarrivals"]),
        )
    return out


def generate_pair_flows(
    cdfs: dict[tuple[int, int], PairCdf],
    duration_ns: int,
    rng: np.random.Generator,
    mss_bytes: int = ARTIFACT_MSS_BYTES,
) -> pd.DataFrame:
    """Draw every pair's flows over ``[0, duration_ns)`` (the authors' generator).

    Args:
        cdfs: from :func:`build_pair_cdfs` or :func:`read_pair_cdfs`.
        duration_ns: length of the generated trace (> 0).
        rng: numpy generator (all draws come from it).
        mss_bytes: bytes per packet of a size draw (1460 in the artifact).

    Returns:
        Columns ``start_ns, src, dst, size_bytes, kind`` (int64 / str), sorted by
        (start_ns, src, dst); flows of 0 packets are not made.

    Raises:
        ValueError: a pair whose inter-arrival CDF has mean 0 (it would never advance).
    """
    if duration_ns <= 0:
        raise ValueError(f"duration_ns must be > 0, got {duration_ns}")
    frames = []
    for (src, dst), pair in cdfs.items():
        mean_s = pair.interarrivals.mean_interpolated()
        if not mean_s > 0:
            raise ValueError(f"pair {src}->{dst}: inter-arrival CDF has mean 0")
        times: list[np.ndarray] = []
        t = 0.0
        batch = max(16, math.ceil(1.2 * duration_ns / (mean_s * 1e9)) + 16)
        while t < duration_ns:
            gaps = pair.interarrivals.sample_interpolated(rng.random(batch)) * 1e9
            arrivals = t + np.cumsum(gaps)
            times.append(arrivals[arrivals < duration_ns])
            t = float(arrivals[-1])
        starts = np.concatenate(times).astype(np.int64)
        packets = np.rint(pair.sizes.sample_step(rng.random(starts.size))).astype(np.int64)
        keep = packets > 0
        frames.append(
            pd.DataFrame(
                {
                    "start_ns": starts[keep],
                    "src": src,
                    "dst": dst,
                    "size_bytes": packets[keep] * mss_bytes,
                    "kind": pair.kind,
                }
            )
        )
    columns = ["start_ns", "src", "dst", "size_bytes", "kind"]
    if not frames:
        return pd.DataFrame(
            {c: pd.Series(dtype=object if c == "kind" else np.int64) for c in columns}
        )
    flows = pd.concat(frames, ignore_index=True)
    flows = flows.astype(
        {"start_ns": np.int64, "src": np.int64, "dst": np.int64, "size_bytes": np.int64}
    )
    return flows.sort_values(["start_ns", "src", "dst"], kind="stable").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m disaggsim.traces.paircdf FLOW_TABLE OUT_DIR [--min-flows N]``: write the
    per-pair CDFs of a flow table (``disaggsim convert`` output, ``.parquet`` or ``.csv``)
    in the artifact's file format. Exit 0 on success, 2 on bad input (one-line message)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m disaggsim.traces.paircdf",
        description="Write <src>_<dst>_{sizes,interarrivals}.cdf files (the OSDI'16 "
        "artifact's format) for every blade pair of a flow table.",
    )
    parser.add_argument("flow_table", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--min-flows", type=int, default=MIN_FLOWS)
    args = parser.parse_args(argv)
    path: Path = args.flow_table
    try:
        if path.suffix.lower() == ".parquet":
            table = pd.read_parquet(path)
        elif path.suffix.lower() == ".csv":
            table = pd.read_csv(path)
        else:
            raise ValueError("expected a .parquet or .csv flow table")
        missing = {"start_ns", "src", "dst", "size_bytes"} - set(table.columns)
        if missing:
            raise ValueError(f"missing columns {sorted(missing)}")
        written = write_pair_cdfs(build_pair_cdfs(table, args.min_flows), args.out_dir)
    except (OSError, ValueError) as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    print(f"{len(written) // 2} blade pairs -> {len(written)} files in {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
