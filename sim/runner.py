"""One ns-3 run: flow table + run parameters -> ``disaggsim-ns3`` -> FCT records.

:func:`run_one` places the workload's blades on hosts (``disaggsim.sim.placement``),
writes the SIM_FLOWS CSV, runs the ns-3 program (``sim/disaggsim-ns3``, built by
``make build``) and turns its FCT_RECORDS CSV into ``fct.parquet`` with the flow kind and
the campaign keys added (schema :data:`disaggsim.schemas.CAMPAIGN_FCT`).

Files written in the run directory:

==================  ===========================================================
``flows.csv``       NS3_FLOWS: the ns-3 input (the SIM_FLOWS columns ns-3 reads)
``placement.csv``   ``blade,host``: where each blade was put (not for synthetic)
``command.txt``     the exact command line, run in this directory (re-run it to debug)
``fct.csv``         FCT_RECORDS as written by ns-3
``stats.json``      run statistics from ns-3 (wall_s, events, peak_rss_kb, ...)
``stderr.log``      ns-3's standard error (and ``stdout.log``)
``fct.parquet``     CAMPAIGN_FCT: FCT_RECORDS + kind + CAMPAIGN_KEYS
==================  ===========================================================
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from disaggsim.atomic import write_text_atomic
from disaggsim.paths import BUILD_DIR, REPO_ROOT
from disaggsim.schemas import CAMPAIGN_FCT, FCT_RECORDS, NS3_FLOWS, SIM_FLOWS
from disaggsim.traces.workloads import generate

#: Environment variable that overrides the ns-3 program's location.
BINARY_ENV = "DISAGGSIM_NS3"


class BinaryNotFoundError(FileNotFoundError):
    """The ns-3 program is not built (or ``$DISAGGSIM_NS3`` points nowhere)."""


class RunError(RuntimeError):
    """An ns-3 run failed: non-zero exit, timeout, or output not in FCT_RECORDS form."""


#: ``prctl`` option that makes the kernel signal a process when its parent dies
#: (linux/prctl.h, prctl(2)).
_PR_SET_PDEATHSIG = 1
#: The C library, loaded at import: a ``preexec_fn`` runs between fork and exec, where
#: loading a library (dlopen's locks, possibly held by another thread) could deadlock.
_LIBC = ctypes.CDLL(None, use_errno=True)


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``signum`` to this process when its parent dies.

    Used in the ns-3 child (``subprocess`` ``preexec_fn``) and in campaign pool workers, so
    a SIGKILL of ``disaggsim run`` takes its simulations with it instead of leaving them
    to run to the end (prctl(2) ``PR_SET_PDEATHSIG``; the signal is tied to the thread
    that forked the process, here always a process's main thread). If the parent died
    before the call (the process was re-parented already), ``signum`` is raised at once.

    Raises:
        OSError: prctl failed (not on Linux).
    """
    parent = os.getppid()
    if _LIBC.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    if os.getppid() != parent or parent == 1:
        os.kill(os.getpid(), signum)


@dataclass(frozen=True)
class DriverCapabilities:
    """What an ns-3 program accepts, from ``disaggsim-ns3 --list-capabilities``.

    Attributes:
        protocols: registered transports (``--protocol`` values).
        attributes: every ``ns3::Class::Attribute`` path its command line accepts
            (inherited attributes listed under each class).
        renamed: former protocol name -> current one (the program's ``alias FORMER NAME``
            lines: its transport registry holds the one table, README "Protocols").
    """

    protocols: tuple[str, ...]
    attributes: frozenset[str]
    renamed: Mapping[str, str] = field(default_factory=dict)

    def check_protocol(self, protocol: str) -> str | None:
        """None if ``protocol`` is implemented, else what is wrong (one sentence)."""
        if protocol in self.protocols:
            return None
        return f"protocol {protocol!r} is not implemented by the ns-3 program; " + (
            f"expected one of {', '.join(self.protocols)}"
        )

    def check_attribute(self, path: str) -> str | None:
        """None if ``path`` (``ns3::Class::Attribute``) exists, else what is wrong."""
        if path in self.attributes:
            return None
        cls, _, attr = path.rpartition("::")
        known = sorted(a.rpartition("::")[2] for a in self.attributes if a.startswith(cls + "::"))
        if not known:
            return f"attribute {path!r}: the ns-3 program has no TypeId {cls!r}"
        declared = sorted(a for a in self.attributes if a.rpartition("::")[2] == attr)
        hint = f"; {attr} is declared by {' and '.join(declared)}" if declared else ""
        return (
            f"attribute {path!r}: {cls} has no attribute {attr!r} of its own (ns-3 sets an "
            f"attribute on the class that declares it){hint}; {cls} has {', '.join(known)}"
        )


def driver_capabilities(binary: Path, cache_dir: Path | None = None) -> DriverCapabilities:
    """Ask the ns-3 program which protocols and attributes it accepts (cached per binary).

    The listing is cached in memory and, if ``cache_dir`` is given, in
    ``cache_dir/driver-<id>.json`` where ``<id>`` hashes the program's identity
    (:func:`disaggsim.sim.hashing.binary_identity`): a rebuilt program is asked again.

    Raises:
        RunError: the program does not support ``--list-capabilities`` (built from an
            older source: run ``make build``) or its output is malformed.
    """
    from disaggsim.sim.hashing import binary_identity, sha256_json

    ident = sha256_json(binary_identity(binary))[:16]
    cached = _CAPABILITIES.get(ident)
    if cached is not None:
        return cached
    cache = cache_dir / f"driver-{ident}.json" if cache_dir is not None else None
    lines: list[str] | None = None
    if cache is not None and cache.is_file():
        try:
            lines = list(json.loads(cache.read_text())["lines"])
        except (ValueError, KeyError, TypeError):
            lines = None
    if lines is None:
        try:
            proc = subprocess.run(
                [str(binary), "--list-capabilities"],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RunError(f"{binary} --list-capabilities: {exc}") from None
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or not any(x.startswith("protocol ") for x in lines):
            raise RunError(
                f"{binary} --list-capabilities failed (exit {proc.returncode}); "
                "rebuild the ns-3 program with `make build`"
            )
        if cache is not None:
            write_text_atomic(cache, json.dumps({"binary": str(binary), "lines": lines}) + "\n")
    protocols: list[str] = []
    attributes: set[str] = set()
    renamed: dict[str, str] = {}
    for line in lines:
        kind, _, value = line.partition(" ")
        if kind == "protocol":
            protocols.append(value)
        elif kind == "attribute":
            attributes.add(value)
        elif kind == "alias":
            former, _, current = value.partition(" ")
            renamed[former] = current
    caps = DriverCapabilities(tuple(protocols), frozenset(attributes), renamed)
    _CAPABILITIES[ident] = caps
    return caps


_CAPABILITIES: dict[str, DriverCapabilities] = {}


@dataclass(frozen=True)
class RunSpec:
    """Everything one ns-3 run depends on (plain data: picklable, JSON-able).

    Attributes:
        workload: workload name (CAMPAIGN_KEYS).
        flows_path: the workload's flow table (Parquet, FLOW_TABLE schema).
        flows_sha256: content hash of that table (part of the run key).
        protocol: transport, e.g. "tcp", "dctcp" (ns-3 ``--protocol``).
        rate_gbps: access link rate in Gb/s (``--accessRateGbps``; paper §4.2: 40, 100).
        scope: "datacenter" or "rack" (placement scope, paper §4.2).
        seed: seed of placement and of ns-3's RNG run number.
        topology: ``TopologySection`` fields (racks, hosts_per_rack, ... mss_bytes).
        attributes: ns-3 attribute overrides ``{"ns3::Class::Attr": "value"}``.
        stop_time_ns: simulated-time cap (None: the program's default).
        timeout_s: wall-clock limit of the ns-3 process.
        binary: path of the ns-3 program.
        generator: synthetic workloads: ``disaggsim.traces.workloads.generate`` keyword
            arguments (cdf, load, n_flows, matrix, header_bytes); then ``flows_path`` is
            empty and the flows are generated here for the run's rate, scope and seed.
        hosts_given: ``flows_path`` holds host-level flows (YAPS: NS3_FLOWS; Rcmp:
            SIM_FLOWS with its kinds): simulated as is.
    """

    workload: str
    flows_path: str
    flows_sha256: str
    protocol: str
    rate_gbps: float
    scope: str
    seed: int
    topology: dict[str, Any]
    attributes: dict[str, str] = field(default_factory=dict)
    stop_time_ns: int | None = None
    timeout_s: float = 3600.0
    binary: str = ""
    generator: dict[str, Any] | None = None
    hosts_given: bool = False

    def to_json(self) -> dict[str, Any]:
        """The spec as a JSON-able dict (inverse: :meth:`from_json`)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        """Rebuild a spec written by :meth:`to_json`."""
        return cls(**data)


@dataclass(frozen=True)
class RunResult:
    """Outcome of one finished run.

    Attributes:
        run_dir: where its files are.
        flows: flows simulated; unfinished: flows not done at the end (finished == 0).
        wall_s: wall time of the ns-3 process (measured here, s).
        stats: the ns-3 program's ``stats.json`` (events, peak_rss_kb, ...).
    """

    run_dir: Path
    flows: int
    unfinished: int
    wall_s: float
    stats: dict[str, Any]


def find_binary() -> Path:
    """Locate the ns-3 program: ``$DISAGGSIM_NS3`` or ``<repo>/build/sim/disaggsim-ns3``.

    Raises:
        BinaryNotFoundError: neither exists or is executable ("run `make build`").
    """
    env = os.environ.get(BINARY_ENV)
    if env:
        path = Path(env).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BinaryNotFoundError(
                f"${BINARY_ENV}={env}: not an executable file (unset it to use the build, "
                "or run `make build`)"
            )
        return path.resolve()
    path = BUILD_DIR / "sim" / "disaggsim-ns3"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BinaryNotFoundError(
            f"ns-3 program not found at {path}: run `make build` (or set ${BINARY_ENV})"
        )
    return path


def repo_root() -> Path:
    """The checkout's root directory (``disaggsim.paths.REPO_ROOT``)."""
    return REPO_ROOT


#: ``topology`` keys of :func:`driver_argv` -> the driver's flags (``disaggsim-ns3 --help``).
DRIVER_TOPOLOGY_FLAGS: dict[str, str] = {
    "racks": "racks",
    "hosts_per_rack": "hostsPerRack",
    "spines": "spines",
    "rate_gbps": "accessRateGbps",
    "spine_rate_factor": "spineRateFactor",
    "buffer_bytes": "bufferBytes",
    "switch_delay_ns": "switchDelayNs",
    "intra_rack_cable_m": "intraRackCableM",
    "inter_rack_cable_m": "interRackCableM",
    "prop_ns_per_m": "propNsPerM",
    "mss_bytes": "mssBytes",
}


def driver_argv(
    binary: str | Path,
    flows_csv: str | Path,
    fct_csv: str | Path,
    stats_json: str | Path,
    protocol: str,
    rate_gbps: float,
    seed: int,
    topology: Mapping[str, Any],
    attributes: Iterable[tuple[str, str]] = (),
    stop_time_ns: int | None = None,
) -> list[str]:
    """The ``disaggsim-ns3`` command line: the one place its flags are spelled.

    Args:
        binary, flows_csv, fct_csv, stats_json: the program, its NS3_FLOWS input, its
            FCT_RECORDS output and its statistics JSON.
        protocol, rate_gbps, seed: ``--protocol``, ``--accessRateGbps``, ``--seed``.
        topology: values of :data:`DRIVER_TOPOLOGY_FLAGS` keys (``[topology]`` of a
            config), and ``fabric`` (``--fabric``, passed only when not "lossy"); a key
            left out keeps the driver's default. Other keys are ignored.
        attributes: ``(ns3::Type::Attribute, value)`` pairs, passed in this order.
        stop_time_ns: ``--stopTimeNs`` if given.
    """
    cmd = [
        str(binary),
        f"--flows={flows_csv}",
        f"--out={fct_csv}",
        f"--stats={stats_json}",
        f"--protocol={protocol}",
    ]
    values = {**topology, "rate_gbps": rate_gbps}
    cmd += [
        f"--{flag}={_num(values[key])}"
        for key, flag in DRIVER_TOPOLOGY_FLAGS.items()
        if key in values
    ]
    cmd.append(f"--seed={seed}")
    if topology.get("fabric", "lossy") != "lossy":
        cmd.append(f"--fabric={topology['fabric']}")  # the driver's default is the lossy fabric
    if stop_time_ns is not None:
        cmd.append(f"--stopTimeNs={stop_time_ns}")
    cmd += [f"--{path}={value}" for path, value in attributes]
    return cmd


def ns3_command(spec: RunSpec, flows_csv: Path, fct_csv: Path, stats_json: Path) -> list[str]:
    """The ``disaggsim-ns3`` command line of a run (flags: ``disaggsim-ns3 --help``)."""
    from disaggsim.sim.delays import preset

    topo = spec.topology
    delays = preset(topo.get("delays", "table4"))
    switch_delay_ns = (
        topo["switch_delay_ns"] if delays.switch_delay_ns is None else (delays.switch_delay_ns)
    )
    return driver_argv(
        spec.binary,
        flows_csv,
        fct_csv,
        stats_json,
        spec.protocol,
        spec.rate_gbps,
        spec.seed,
        topology={**topo, "switch_delay_ns": switch_delay_ns},
        attributes=[*sorted(delays.attributes.items()), *sorted(spec.attributes.items())],
        stop_time_ns=spec.stop_time_ns,
    )


def run_one(run_spec: RunSpec, run_dir: Path) -> RunResult:
    """Place, simulate and collect one run into ``run_dir`` (created if missing).

    Args:
        run_spec: the run's parameters; ``binary`` empty means :func:`find_binary`.
        run_dir: directory for the run's files (see module docstring).

    Returns:
        :class:`RunResult`; ``run_dir/fct.parquet`` holds one CAMPAIGN_FCT row per flow.

    Raises:
        BinaryNotFoundError: the ns-3 program is missing.
        RunError: ns-3 exited non-zero or timed out (message has its stderr tail and the
            command), or its FCT CSV is malformed or lacks flows.
    """
    spec = run_spec
    if not spec.binary:
        spec = RunSpec(**{**asdict(spec), "binary": str(find_binary())})
    run_dir.mkdir(parents=True, exist_ok=True)
    sim_flows = _sim_flows(spec, run_dir)[SIM_FLOWS.names]
    flows_csv = run_dir / "flows.csv"
    write_ns3_flows_csv(sim_flows, flows_csv)

    fct_csv, stats_json = run_dir / "fct.csv", run_dir / "stats.json"
    # file names relative to the run directory (the working directory of ns-3), so
    # command.txt still works after the directory is renamed into place
    cmd = ns3_command(spec, Path(flows_csv.name), Path(fct_csv.name), Path(stats_json.name))
    (run_dir / "command.txt").write_text(shlex.join(cmd) + "\n")
    started = time.monotonic()
    with open(run_dir / "stdout.log", "wb") as out, open(run_dir / "stderr.log", "wb") as err:
        try:
            proc = subprocess.run(
                cmd,
                stdout=out,
                stderr=err,
                timeout=spec.timeout_s,
                check=False,
                cwd=run_dir,
                preexec_fn=die_with_parent,  # a killed campaign kills its simulations
            )
        except subprocess.TimeoutExpired:
            raise RunError(
                f"{run_dir}: ns-3 exceeded the run timeout of {spec.timeout_s:g} s "
                f"(limits.run_timeout_s); command: {shlex.join(cmd)}"
            ) from None
    wall_s = time.monotonic() - started
    if proc.returncode != 0:
        tail = _tail(run_dir / "stderr.log")
        raise RunError(
            f"{run_dir}: ns-3 exited with code {proc.returncode}"
            f"{' (bad input)' if proc.returncode == 2 else ''}:\n{tail}\n"
            f"command: {shlex.join(cmd)}"
        )
    records = read_fct_csv(fct_csv)
    _check_flows(records, sim_flows, fct_csv)
    fct = _with_campaign_columns(records, sim_flows, spec)
    pq.write_table(
        pa.Table.from_pandas(fct, schema=CAMPAIGN_FCT, preserve_index=False),
        run_dir / "fct.parquet",
    )
    stats: dict[str, Any] = {}
    if stats_json.is_file():
        try:
            stats = json.loads(stats_json.read_text())
        except json.JSONDecodeError as exc:
            raise RunError(f"{stats_json}: not JSON: {exc}") from None
    return RunResult(
        run_dir=run_dir,
        flows=len(fct),
        unfinished=int((fct["finished"] == 0).sum()),
        wall_s=wall_s,
        stats=stats,
    )


def write_ns3_flows_csv(flows: pd.DataFrame, path: Path) -> None:
    """Write the NS3_FLOWS columns of ``flows`` as the ns-3 program's input CSV: the
    header line, then one row of decimal integers per flow, as ``DataFrame.to_csv`` writes
    them byte for byte (``pyarrow.csv``: ~6x faster on a 225,000-flow run, bench/RESULTS.md
    issue #26 "Campaign CPU").

    Raises:
        pyarrow.ArrowInvalid: a column does not fit its NS3_FLOWS type.
    """
    table = pa.Table.from_pandas(flows[NS3_FLOWS.names], schema=NS3_FLOWS, preserve_index=False)
    with open(path, "wb") as out:
        out.write((",".join(NS3_FLOWS.names) + "\n").encode())
        # no header from pyarrow: before pyarrow 19 it always quotes the column names
        pacsv.write_csv(
            table, out, write_options=pacsv.WriteOptions(include_header=False, quoting_style="none")
        )


def _sim_flows(spec: RunSpec, run_dir: Path) -> pd.DataFrame:
    """The run's SIM_FLOWS: blades placed on hosts (``disaggsim.sim.placement.place``,
    writing ``placement.csv``), or host-level flows (NS3_FLOWS) completed by
    :func:`_host_level`: a synthetic workload generated for this run's rate, scope and
    seed, or flows as given (YAPS)."""
    topo = spec.topology
    if spec.generator is not None:
        flows = generate(
            **spec.generator,
            hosts=topo["racks"] * topo["hosts_per_rack"],
            rate_gbps=spec.rate_gbps,
            seed=spec.seed,
            hosts_per_rack=topo["hosts_per_rack"],
            scope=spec.scope,  # type: ignore[arg-type]
        )
        return _host_level(flows)
    if spec.hosts_given:
        flows = pq.read_table(spec.flows_path).to_pandas()
        n_hosts = topo["racks"] * topo["hosts_per_rack"]
        beyond = flows[(flows["src_host"] >= n_hosts) | (flows["dst_host"] >= n_hosts)]
        if len(beyond):
            raise RunError(
                f"{spec.workload}: flow {int(beyond['flow_id'].iloc[0])} uses host "
                f"{int(beyond[['src_host', 'dst_host']].max(axis=1).iloc[0])} but the "
                f"topology has {n_hosts} hosts (racks x hosts_per_rack)"
            )
        return _host_level(flows)
    from disaggsim.sim.placement import place

    flow_table = pq.read_table(spec.flows_path).to_pandas()
    cluster_of = None
    replication_json = Path(spec.flows_path).parent / "replication.json"
    if replication_json.is_file():  # written by disaggsim.sim.workloads (copies > 1)
        from disaggsim.sim.replication import replicate

        options = json.loads(replication_json.read_text())
        replicated = replicate(flow_table, options["copies"], options["mode"], spec.seed)
        flow_table, cluster_of = replicated.flows, replicated.cluster_of
    try:
        sim_flows, blade_to_host = place(
            flow_table,
            topo["racks"],
            topo["hosts_per_rack"],
            spec.scope,
            spec.seed,
            cluster_of,
        )
    except ValueError as exc:
        raise RunError(f"{spec.workload}: placement: {exc}") from None
    _write_placement(blade_to_host, run_dir / "placement.csv")
    return sim_flows


def _host_level(flows: pd.DataFrame) -> pd.DataFrame:
    """SIM_FLOWS of host-level flows: an Rcmp workload's keep their kinds; NS3_FLOWS
    (synthetic or YAPS) carry no blade traffic: kind "net"."""
    return flows if "kind" in flows.columns else flows.assign(kind="net")


def read_fct_csv(path: Path) -> pd.DataFrame:
    """Read an FCT_RECORDS CSV written by the ns-3 program.

    Returns:
        DataFrame with FCT_RECORDS columns and dtypes (slowdown NaN where unfinished).

    Raises:
        RunError: missing file, wrong header, or a value of the wrong type
            (``<file>:<line>: <column>: ...``).
    """
    if not path.is_file():
        raise RunError(f"{path}: ns-3 wrote no FCT file")
    fast = _read_fct_csv_typed(path)
    if fast is not None:
        return fast
    # The typed reader refused the file: read it as text to name the first bad cell.
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise RunError(f"{path}: cannot parse CSV: {exc}") from None
    if list(raw.columns) != FCT_RECORDS.names:
        raise RunError(
            f"{path}:1: header: expected {','.join(FCT_RECORDS.names)}, "
            f"got {','.join(map(str, raw.columns))}"
        )
    out: dict[str, pd.Series] = {}
    for fld in FCT_RECORDS:
        column = raw[fld.name]
        parsed = pd.to_numeric(column.replace({"nan": "NaN", "": "NaN"}), errors="coerce")
        if pa.types.is_integer(fld.type):
            bad = parsed.isna() | (parsed != parsed.round())
        else:
            bad = parsed.isna() & ~column.str.lower().isin(["nan", "", "-nan"])
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise RunError(
                f"{path}:{row + 2}: {fld.name}: expected "
                f"{'an integer' if pa.types.is_integer(fld.type) else 'a number'}, "
                f"got {column.iloc[row]!r}"
            )
        out[fld.name] = parsed.astype(fld.type.to_pandas_dtype())
    frame = pd.DataFrame(out, columns=FCT_RECORDS.names)
    frame.loc[frame["finished"] == 0, "slowdown"] = float("nan")
    return frame


def _read_fct_csv_typed(path: Path) -> pd.DataFrame | None:
    """FCT_RECORDS from ``path`` parsed straight into the schema's types
    (``pyarrow.csv``, ~15x faster than pandas text-then-numbers on a 225,000-flow run:
    bench/RESULTS.md issue #26 "Campaign CPU"), or None where the file is not a clean
    FCT_RECORDS CSV (another header, a cell that is not of its column's type, an empty
    integer cell) so that :func:`read_fct_csv` reads it again as text and names the cell.

    Every file it accepts reads to the same values as the text path: integers are
    decimal in both; a float cell is the nearest double in both (tests/test_runner_csv.py
    checks 2,000 against ``float``; every run's table of a Figure 7 campaign was equal);
    "nan", "-nan" and "" are NaN in both (pyarrow's default null spellings, nulls to NaN)."""
    with open(path, "rb") as head:
        if head.readline().rstrip(b"\r\n") != ",".join(FCT_RECORDS.names).encode():
            return None
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(use_threads=False),
            convert_options=pacsv.ConvertOptions(
                column_types={f.name: f.type for f in FCT_RECORDS}, strings_can_be_null=True
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.schema.names != FCT_RECORDS.names or any(
        table.column(f.name).null_count for f in FCT_RECORDS if not f.nullable
    ):
        return None
    frame = table.to_pandas()
    frame.loc[frame["finished"] == 0, "slowdown"] = float("nan")
    return frame


def _check_flows(records: pd.DataFrame, sim_flows: pd.DataFrame, path: Path) -> None:
    got_sorted = np.sort(records["flow_id"].to_numpy())
    if (got_sorted[1:] != got_sorted[:-1]).all() and np.array_equal(
        got_sorted, np.unique(sim_flows["flow_id"].to_numpy())
    ):
        return  # one record per input flow (sorted arrays: the sets below cost 6x more)
    got, want = set(records["flow_id"]), set(sim_flows["flow_id"])
    if len(records) != len(got):
        raise RunError(f"{path}: duplicate flow_id rows")
    if got != want:
        missing, extra = sorted(want - got), sorted(got - want)
        raise RunError(
            f"{path}: FCT records do not match the input flows: "
            f"{len(missing)} missing (e.g. {missing[:5]}), {len(extra)} unknown "
            f"(e.g. {extra[:5]})"
        )


def _with_campaign_columns(
    records: pd.DataFrame, sim_flows: pd.DataFrame, spec: RunSpec
) -> pd.DataFrame:
    """CAMPAIGN_FCT rows: the FCT records, the SIM_FLOWS columns ns-3 did not see (joined
    by flow_id) and the run's CAMPAIGN_KEYS."""
    carried = [c for c in SIM_FLOWS.names if c not in FCT_RECORDS.names]
    by_id = sim_flows.set_index("flow_id")
    fct = records.copy()
    for column in carried:
        fct[column] = fct["flow_id"].map(by_id[column])
    fct["protocol"] = spec.protocol
    fct["rate_gbps"] = float(spec.rate_gbps)
    fct["scope"] = spec.scope
    fct["workload"] = spec.workload
    fct["seed"] = int(spec.seed)
    return fct[CAMPAIGN_FCT.names].sort_values("flow_id", kind="stable").reset_index(drop=True)


def _write_placement(blade_to_host: Any, path: Path) -> None:
    if isinstance(blade_to_host, pd.Series):
        mapping = blade_to_host.to_dict()
    elif isinstance(blade_to_host, pd.DataFrame):
        blade_to_host.to_csv(path, index=False)
        return
    else:
        mapping = dict(blade_to_host)
    pd.DataFrame({"blade": list(mapping), "host": list(mapping.values())}).to_csv(path, index=False)


def _num(value: float | int) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _tail(path: Path, head: int = 3, tail: int = 10) -> str:
    """The first and last lines of a log (ns-3 prints a bad option first, then its help)."""
    try:
        lines = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no stderr)"
    if not lines:
        return "(empty stderr)"
    if len(lines) <= head + tail:
        return "\n".join(lines)
    skipped = len(lines) - head - tail
    return "\n".join([*lines[:head], f"... ({skipped} lines) ...", *lines[-tail:]])


def main(argv: list[str] | None = None) -> int:
    """``python -m disaggsim.sim.runner SPEC.json RUN_DIR``: run one spec (debugging)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m disaggsim.sim.runner SPEC.json RUN_DIR", file=sys.stderr)
        return 2
    spec = RunSpec.from_json(json.loads(Path(args[0]).read_text()))
    result = run_one(spec, Path(args[1]))
    print(f"{result.flows} flows, {result.unfinished} unfinished, {result.wall_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
