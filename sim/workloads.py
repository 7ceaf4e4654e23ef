"""Turn a campaign workload into a flow table (``disaggsim.schemas.FLOW_TABLE``), cached.

YAPS files hold host-level flows: they are cached as NS3_FLOWS and simulated without blade
placement. An Rcmp experiment (``kind = "rcmp"``) is generated once by
``disaggsim.sim.rcmp.generate`` and cached as SIM_FLOWS (host-level, with each flow's Rcmp
kind), with ``<key>/rcmp.json`` (``{"racks", "hosts_per_rack", "cxl_rows"}``) for the
campaign's pre-flight check of the topology. Synthetic workloads are generated per run
(nothing to cache).

Replication (``copies > 1``, ``disaggsim.sim.replication``) is per run (its offsets or
draws follow the run's seed): the cached table stays the traced cluster's, and
``<key>/replication.json`` (``{"copies": N, "mode": "replay" | "pair-cdf"}``) tells the
runner to replicate it; the options are part of the cache key and of the content hash, so
runs with other options are other runs.

Each workload is converted once per campaign and the result kept under
``<out_dir>/workloads/<key>/flows.parquet``, where ``key`` hashes the workload's inputs: the
kind, the content of its input files, the converter options, the ``window_ns``/``max_flows``
cut and the source of the converter package (``disaggsim.traces``), so an edit to any of
them converts again and nothing else does.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_dir
from disaggsim.errors import InputError
from disaggsim.flowcheck import check_flows, rows_of
from disaggsim.guards import check_regular
from disaggsim.schemas import FLOW_TABLE, NS3_FLOWS, SIM_FLOWS
from disaggsim.sim import rcmp
from disaggsim.sim.config import (
    FlowTableWorkload,
    RcmpWorkload,
    ResolvedWorkload,
    SyntheticWorkload,
    TraceSampleWorkload,
    YapsWorkload,
)
from disaggsim.sim.hashing import sha256_file, sha256_frame, sha256_json, sha256_tree
from disaggsim.sim.replication import squash_coarrivals
from disaggsim.traces import convert as convert_mod
from disaggsim.traces import workloads as synthetic
from disaggsim.traces import yaps

#: Bumped when the cached flow-table layout changes.
_CACHE_FORMAT = 1


class WorkloadError(ValueError):
    """A workload's input cannot be read or converted (message names the file)."""


@dataclass(frozen=True)
class LoadedWorkload:
    """A workload's flow table on disk, and the hash of its content.

    Attributes:
        name: the workload name (CAMPAIGN_KEYS "workload").
        flows_path: Parquet file in FLOW_TABLE schema (None for a synthetic workload).
        content_sha256: :func:`disaggsim.sim.hashing.sha256_frame` of the table; for a
            synthetic workload the hash of its parameters, CDF file and generator source.
        flows: number of flows.
        generator: synthetic workloads only: the keyword arguments of
            ``disaggsim.traces.workloads.generate`` that do not vary per run.
        hosts_given: the table is NS3_FLOWS (hosts fixed by the input: YAPS files), not
            FLOW_TABLE; it is simulated as is, without blade placement.
    """

    name: str
    flows_path: Path | None
    content_sha256: str
    flows: int
    generator: dict[str, Any] | None = None
    hosts_given: bool = False


def converter_identity() -> str:
    """SHA-256 of the converters' Python sources: the ``disaggsim.traces`` package, and
    nothing else (in particular not the testbed that collects traces, ``disaggsim.testbed``:
    editing it leaves every cached workload valid)."""
    return sha256_tree(Path(convert_mod.__file__).parent, suffixes=(".py",))


def workload_key(workload: ResolvedWorkload) -> str:
    """Cache key of a workload: SHA-256 of its kind, input content, options and cut."""
    spec = workload.spec
    if isinstance(spec, SyntheticWorkload) or workload.path is None:
        raise WorkloadError(f"workload {workload.name!r}: synthetic workloads are not cached")
    inputs: dict[str, Any] = {
        "format": _CACHE_FORMAT,
        "kind": workload.kind,
        "input_sha256": sha256_tree(workload.path),
        "window_ns": spec.window_ns,
        "max_flows": spec.max_flows,
    }
    if isinstance(spec, TraceSampleWorkload | YapsWorkload):
        inputs["converter"] = converter_identity()
    if isinstance(spec, RcmpWorkload):
        inputs["generator"] = sha256_file(Path(inspect.getfile(rcmp)))
    if isinstance(spec, TraceSampleWorkload):
        inputs["convert_options"] = workload.convert_options
    replication = replication_options(workload)
    if replication is not None:
        inputs["replication"] = replication
    if isinstance(spec, TraceSampleWorkload | FlowTableWorkload) and spec.squash:
        inputs["squash"] = sha256_file(Path(inspect.getfile(squash_coarrivals)))  # its code
    return sha256_json(inputs)


#: Name of the replication side file in a workload's cache directory.
REPLICATION_FILE = "replication.json"
#: Name of an Rcmp workload's side file: the topology its hosts assume, and cxl rows.
RCMP_FILE = "rcmp.json"


def replication_options(workload: ResolvedWorkload) -> dict[str, Any] | None:
    """``{"copies": N, "mode": ...}`` of a workload with ``copies > 1``, else None."""
    spec = workload.spec
    if isinstance(spec, TraceSampleWorkload | FlowTableWorkload) and spec.copies > 1:
        return {"copies": spec.copies, "mode": spec.replication}
    return None


def load_workload(workload: ResolvedWorkload, cache_dir: Path) -> LoadedWorkload:
    """Convert (or reuse the cached conversion of) one workload.

    Args:
        workload: from :meth:`CampaignConfig.resolved_workloads`.
        cache_dir: ``<out_dir>/workloads``; the result goes to ``<cache_dir>/<key>/``.

    Returns:
        The cached flow table's path and content hash.

    Raises:
        WorkloadError: unreadable input or a table that does not match FLOW_TABLE.
    """
    if isinstance(workload.spec, SyntheticWorkload):
        return _synthetic(workload, workload.spec)
    key = workload_key(workload)
    final = cache_dir / key
    done = final / "done.json"
    hosts_given = isinstance(workload.spec, YapsWorkload | RcmpWorkload)
    schema = (
        SIM_FLOWS
        if isinstance(workload.spec, RcmpWorkload)
        else NS3_FLOWS
        if hosts_given
        else FLOW_TABLE
    )
    if done.is_file():
        meta = json.loads(done.read_text())
        return LoadedWorkload(
            workload.name,
            final / "flows.parquet",
            meta["content_sha256"],
            meta["flows"],
            hosts_given=hosts_given,
        )
    frame = _convert(workload)
    _validate(workload, frame)
    assert not isinstance(workload.spec, SyntheticWorkload)
    frame = _cut(frame, workload.spec.window_ns, workload.spec.max_flows)
    if isinstance(workload.spec, TraceSampleWorkload | FlowTableWorkload) and (
        workload.spec.squash
    ):
        frame = squash_coarrivals(frame)
    if frame.empty:
        raise WorkloadError(f"{workload.path}: workload {workload.name!r} has no flows")
    content = sha256_frame(frame)
    replication = replication_options(workload)
    if replication is not None:
        content = sha256_json({"flows": content, "replication": replication})
    with atomic_dir(final) as tmp:
        table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
        pq.write_table(table, tmp / "flows.parquet")
        meta = {
            "name": workload.name,
            "kind": workload.kind,
            "path": str(workload.path),
            "convert_options": workload.convert_options,
            "content_sha256": content,
            "flows": len(frame),
        }
        if replication is not None:
            (tmp / REPLICATION_FILE).write_text(json.dumps(replication) + "\n")
        if isinstance(workload.spec, RcmpWorkload):
            params = _rcmp_params(workload)
            side = {
                "racks": params.racks,
                "hosts_per_rack": params.hosts_per_rack,
                "cxl_rows": params.cxl_rows,
            }
            (tmp / RCMP_FILE).write_text(json.dumps(side) + "\n")
        (tmp / "done.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return LoadedWorkload(
        workload.name, final / "flows.parquet", content, len(frame), hosts_given=hosts_given
    )


def _synthetic(workload: ResolvedWorkload, spec: SyntheticWorkload) -> LoadedWorkload:
    try:
        cdf_path = synthetic.resolve_cdf(workload.path or spec.cdf)
        check_regular(cdf_path, "a flow-size CDF")  # before it is hashed (a FIFO blocks)
    except (FileNotFoundError, ValueError) as exc:
        raise WorkloadError(f"workload {workload.name!r}: cdf {spec.cdf!r}: {exc}") from None
    generator = {
        "cdf": str(cdf_path),
        "load": spec.load,
        "n_flows": spec.n_flows,
        "matrix": spec.matrix,
        "header_bytes": spec.header_bytes,
    }
    content = sha256_json(
        {
            "format": _CACHE_FORMAT,
            "kind": "synthetic",
            "params": {**generator, "cdf": sha256_tree(cdf_path)},
            "generator": sha256_tree(Path(synthetic.__file__)),
        }
    )
    return LoadedWorkload(workload.name, None, content, spec.n_flows, generator)


def read_flow_table(path: Path) -> pd.DataFrame:
    """Read a flow table (``.parquet`` or ``.csv``) and check it against FLOW_TABLE.

    Returns:
        A DataFrame with exactly FLOW_TABLE's columns, in order, with its dtypes.

    Raises:
        WorkloadError: missing columns, or a CSV value that is not of the column's type
            (message ``<file>:<line>: <column>: ...``).
    """
    names = FLOW_TABLE.names
    suffix = path.suffix.lower()
    check_regular(path, "a flow table")
    if suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise WorkloadError(f"{path}: cannot read Parquet: {exc}") from None
        missing = [n for n in names if n not in table.column_names]
        if missing:
            raise WorkloadError(f"{path}: missing FLOW_TABLE columns {missing}")
        try:
            table = table.select(names).cast(FLOW_TABLE)
        except (pa.ArrowException, ValueError) as exc:
            raise WorkloadError(f"{path}: columns do not cast to FLOW_TABLE: {exc}") from None
        return table.to_pandas()
    if suffix == ".csv":
        try:
            raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (OSError, pd.errors.ParserError) as exc:
            raise WorkloadError(f"{path}: cannot read CSV: {exc}") from None
        missing = [n for n in names if n not in raw.columns]
        if missing:
            raise WorkloadError(f"{path}:1: header: missing FLOW_TABLE columns {missing}")
        out = {}
        for field in FLOW_TABLE:
            column = raw[field.name]
            if pa.types.is_integer(field.type):
                parsed = pd.to_numeric(column, errors="coerce")
                bad = parsed.isna() | (parsed != parsed.round())
                if bad.any():
                    row = int(bad.to_numpy().nonzero()[0][0])
                    raise WorkloadError(
                        f"{path}:{row + 2}: {field.name}: expected an integer, "
                        f"got {column.iloc[row]!r}"
                    )
                out[field.name] = parsed.astype(field.type.to_pandas_dtype())
            else:
                out[field.name] = column.astype(object)
        return pd.DataFrame(out, columns=names)
    raise WorkloadError(f"{path}: expected a .parquet or .csv flow table")


def _convert(workload: ResolvedWorkload) -> pd.DataFrame:
    spec = workload.spec
    if isinstance(spec, FlowTableWorkload):
        return read_flow_table(workload.path)
    if isinstance(spec, TraceSampleWorkload):
        frame = convert_mod.convert(workload.path, _convert_options(workload.convert_options))
        return _as_flow_table(frame, workload.path)
    if isinstance(spec, RcmpWorkload):
        flows = rcmp.generate(_rcmp_params(workload)).flows
        return pa.Table.from_pandas(flows, schema=SIM_FLOWS, preserve_index=False).to_pandas()
    if isinstance(spec, YapsWorkload):
        frame = yaps.read_yaps(workload.path)
        table = pa.Table.from_pandas(frame[NS3_FLOWS.names], preserve_index=False)
        return table.cast(NS3_FLOWS).to_pandas()
    raise WorkloadError(f"{workload.path}: unknown workload kind {workload.kind!r}")


def _rcmp_params(workload: ResolvedWorkload) -> rcmp.RcmpParams:
    """The ``[rcmp]`` experiment of an Rcmp workload (one loader: ``rcmp.load_params``)."""
    assert workload.path is not None
    try:
        return rcmp.load_params(workload.path)
    except InputError as exc:
        raise WorkloadError(f"workload {workload.name!r}: {exc}") from None


def _validate(workload: ResolvedWorkload, frame: pd.DataFrame) -> None:
    """Every kind's flows through the one validator (``disaggsim.flowcheck.check_flows``),
    naming the user's file and row: a flow table's CSV line or Parquet row, a converted
    sample's trace file and record (YAPS files are checked by their reader)."""
    spec = workload.spec
    assert workload.path is not None
    if isinstance(spec, FlowTableWorkload):
        rows, word = rows_of(frame, workload.path.suffix.lower())
        check_flows(frame, workload.path, rows, word)
    elif isinstance(spec, TraceSampleWorkload):
        sample, _ = convert_mod.load_any(workload.path)
        check_flows(
            frame,
            workload.path,
            frame["source_record"].to_numpy(),
            "record",
            n_nodes=max(n.node for n in sample.nodes) + 1,
            files=frame["source_file"].to_numpy(),
        )


def _convert_options(options: dict[str, Any]) -> Any:
    """The converter's options object: ``ConvertOptions(**options)`` if the converter
    defines that class, else the dict itself."""
    cls = getattr(convert_mod, "ConvertOptions", None)
    if cls is None:
        return dict(options)
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise WorkloadError(f"convert options {options}: {exc}") from None


def _as_flow_table(frame: pd.DataFrame, source: Path) -> pd.DataFrame:
    missing = [n for n in FLOW_TABLE.names if n not in frame.columns]
    if missing:
        raise WorkloadError(f"{source}: converter output lacks FLOW_TABLE columns {missing}")
    table = pa.Table.from_pandas(frame[FLOW_TABLE.names], preserve_index=False)
    return table.cast(FLOW_TABLE).to_pandas()


def _cut(frame: pd.DataFrame, window_ns: int | None, max_flows: int | None) -> pd.DataFrame:
    if window_ns is not None:
        frame = frame[frame["start_ns"] < window_ns]
    if max_flows is not None:
        frame = frame.sort_values("flow_id", kind="stable").head(max_flows)
    return frame.reset_index(drop=True)
