"""Campaigns: expand a config's grid into ns-3 runs, run the missing ones, collect the FCTs.

Layout of ``campaign.out_dir``::

    campaign.toml          copy of the config (.yaml if it was YAML) behind the tables
    workloads/<key>/       cached flow table of each workload (see sim/workloads.py)
    workloads/driver-<id>.json  the ns-3 program's --list-capabilities (runner.driver_capabilities)
    runs/<key16>/          one finished run: run_one's files + done.json (the marker)
    runs/failed/<key16>/   the files of the last failed attempt of a run (for debugging)
    fct.parquet            all runs' FCT records (schema schemas.CAMPAIGN_FCT), grid order,
                           one Parquet row group (or more) per run, written run by run
    summary.csv            the summary of fct.parquet by the function run_campaign is
                           given (the CLI: disaggsim.analysis.stats.summarize_groups),
                           one group of runs at a time (see _collect)
    runs.csv               one row per run: key, CAMPAIGN_KEYS, flows, unfinished, wall_s
    slurm/                 executor = "slurm": array script, task specs, outcomes, logs
                           (see sim/slurm.py)

``<key16>`` is the first 16 hex digits of :func:`run_key`, the SHA-256 of everything the
run's result depends on. A run is done iff ``runs/<key16>/done.json`` exists: a run is
built in ``runs/.tmp-*`` and renamed into place only after ``done.json`` is written
(``os.replace``), so an interrupted run never looks finished and is redone from scratch;
re-running a campaign skips every done run.

Before the first run :func:`preflight` checks what the ns-3 program and the workloads can
tell (protocols, attributes, topology fit), and the collected tables of an earlier config
are removed before this config's copy replaces it, so ``campaign.toml`` always describes
the tables next to it. A SIGKILL of the campaign also ends its pool workers and ns-3
processes (``runner.die_with_parent``); so does an interrupt (SIGINT, SIGTERM, SIGHUP:
:mod:`disaggsim.signals`), which kills the workers before it reaches the caller, so the
simulations then running are cut short and redone on re-run, as after a SIGKILL.
"""

from __future__ import annotations

import errno
import fcntl
import json
import shutil
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_path, write_text_atomic
from disaggsim.errors import located_os_error
from disaggsim.schemas import CAMPAIGN_FCT, CAMPAIGN_KEYS
from disaggsim.sim.config import CampaignConfig, ConfigError, config_location, load_config
from disaggsim.sim.hashing import binary_identity
from disaggsim.sim.rundir import (
    KEY_DIGITS,
    RUN_FORMAT,
    CampaignError,
    CampaignResult,
    PlannedRun,
    execute_run,
    is_done,
    reusable,
    run_key,
    run_row,
)
from disaggsim.sim.runner import (
    DriverCapabilities,
    RunSpec,
    die_with_parent,
    driver_capabilities,
    find_binary,
)
from disaggsim.sim.slurm import run_array, wait_previous
from disaggsim.sim.workloads import RCMP_FILE, LoadedWorkload, load_workload


def expand_grid(
    config: CampaignConfig,
    workloads: list[LoadedWorkload],
    binary: Path,
    binary_id: dict[str, str] | None = None,
) -> list[PlannedRun]:
    """All runs of a campaign: workload x protocol x rate_gbps x scope x seed, in that
    nesting order (the last axis varies fastest). Workloads whose hosts are fixed by the
    input (YAPS files) run with scope "datacenter" only: placement does not apply to them.

    Args:
        config: the validated config.
        workloads: the converted workloads, in config order.
        binary: the ns-3 program (its path goes into each spec).
        binary_id: its identity; computed from ``binary`` if None.
    """
    if binary_id is None:
        binary_id = binary_identity(binary)
    topology = config.topology.model_dump()
    planned = []
    for workload in workloads:
        for protocol in config.grid.protocols:
            attributes = config.attributes_for(protocol)
            for rate in config.grid.rates_gbps:
                for scope in config.grid.scopes:
                    if workload.hosts_given and scope != "datacenter":
                        continue  # hosts fixed by the input: placement scope does not apply
                    for seed in config.grid.seeds:
                        spec = RunSpec(
                            workload=workload.name,
                            flows_path=str(workload.flows_path or ""),
                            flows_sha256=workload.content_sha256,
                            protocol=protocol,
                            rate_gbps=float(rate),
                            scope=scope,
                            seed=int(seed),
                            topology=topology,
                            attributes=attributes,
                            stop_time_ns=config.limits.stop_time_ns,
                            timeout_s=config.limits.run_timeout_s,
                            binary=str(binary),
                            generator=workload.generator,
                            hosts_given=workload.hosts_given,
                        )
                        planned.append(PlannedRun(run_key(spec, binary_id), spec))
    return planned


def run_campaign(
    config_path: str | Path,
    jobs: int | None = None,
    progress: bool = True,
    summarize: SummaryFn | None = None,
) -> CampaignResult:
    """Run a campaign: convert workloads (cached), run every missing grid point, collect.

    Args:
        config_path: the campaign config (TOML preferred; see ``configs/README.md``).
        jobs: parallel ns-3 processes; default ``campaign.jobs``.
        progress: show a tqdm progress bar on stderr.
        summarize: the summary of the collected table (:data:`SummaryFn`; the CLI gives
            ``disaggsim.analysis.stats.summarize_groups``); None: no ``summary.csv``.
            Given, not imported, so that sim/ does not depend on analysis/.

    Returns:
        :class:`CampaignResult`; with the local executor ``fct_path`` and ``summary_path``
        are set. With ``executor = "slurm"`` the pending runs are submitted as one Slurm
        array, waited for and collected the same way (:mod:`disaggsim.sim.slurm`); with
        ``slurm_submit = false`` they are only written as an array job (``slurm_script``)
        and collected by a later call once all are done.

    Raises:
        ConfigError: invalid config. BinaryNotFoundError: ns-3 program not built.
        WorkloadError: a workload cannot be converted. CampaignError: another campaign
        holds the output directory's lock, or runs failed (all failures listed; the
        finished runs stay done and are skipped next time).
    """
    config = load_config(config_path)
    jobs = config.campaign.jobs if jobs is None else jobs
    if jobs < 1:
        raise CampaignError(f"jobs must be >= 1, got {jobs}")
    check_resources(Path(config_path), config, jobs)
    resolved = config.resolved_workloads()  # paths and globs: checked before any output
    binary = find_binary()
    config = rename_protocols(config, driver_capabilities(binary))
    out_dir = config.out_dir
    _make_out_dir(Path(config_path), out_dir)
    with _campaign_lock(out_dir):
        if config.campaign.executor == "slurm" and config.campaign.slurm_submit:
            wait_previous(out_dir, progress)  # before its temp run dirs are removed
        runs_dir = out_dir / "runs"
        _remove_stale_tmp(runs_dir)
        _remove_stale_tmp(out_dir / "workloads")
        loaded = [load_workload(w, out_dir / "workloads") for w in resolved]
        planned = expand_grid(config, loaded, binary)
        preflight(Path(config_path), config, planned, binary, cache_dir=out_dir / "workloads")
        # The collected tables belong to the config copy next to them: drop the old ones
        # before the copy changes; _collect writes new ones once every run is done.
        for name in (*_TABLES, *(f"campaign{s}" for s in _CONFIG_SUFFIXES)):
            (out_dir / name).unlink(missing_ok=True)
        config_copy = out_dir / f"campaign{Path(config_path).suffix.lower()}"
        write_text_atomic(config_copy, Path(config_path).read_text())
        result = CampaignResult(out_dir=out_dir)
        if config.campaign.executor == "slurm":
            _slurm(config, planned, runs_dir, result, progress)
            if result.pending:
                return result
        else:
            result.runs = _run_local(planned, runs_dir, jobs, progress)
        _collect(planned, runs_dir, result, summarize)
    return result


def rename_protocols(config: CampaignConfig, caps: DriverCapabilities) -> CampaignConfig:
    """The config with every former protocol name replaced by the current one, in
    ``grid.protocols`` and ``[protocols.<name>]``, with a one-line notice on stderr per name
    (``caps.renamed``: the ns-3 program's transport registry, README "Protocols").  The run
    key, the tables and the plots then carry the current name.

    Raises:
        ConfigError: a former name and its current name are both in the grid.
    """
    renamed = {
        old: new
        for old, new in caps.renamed.items()
        if old in config.grid.protocols or old in config.protocols
    }
    if not renamed:
        return config
    for old, new in renamed.items():
        if old in config.grid.protocols and new in config.grid.protocols:
            where = (
                config_location(config.source, ("grid", "protocols")) if config.source else "config"
            )
            raise ConfigError(
                f"{where}: grid.protocols names both {old!r} and {new!r}, its new name: the "
                "same transport twice"
            )
        print(
            f'notice: protocol {old!r} is now called {new!r} (README, "Protocols")', file=sys.stderr
        )
    grid = config.grid.model_copy(
        update={"protocols": [renamed.get(p, p) for p in config.grid.protocols]}
    )
    sections = {renamed.get(name, name): section for name, section in config.protocols.items()}
    return config.model_copy(update={"grid": grid, "protocols": sections})


#: Memory of one local worker process before its run: 150 MB, the peak RSS of a Python
#: process that imported the campaign modules (``ru_maxrss``, measured 2026-11-27 on the
#: development VM, CPython 3.11).
WORKER_BYTES = 150 * 2**20
#: Memory per synthetic flow while a run generates its workload: 170 B, the peak RSS growth
#: of ``traces.workloads.generate`` making 10**6 websearch flows (165 MB, same machine).
GENERATED_FLOW_BYTES = 170


def check_resources(config_path: Path, config: CampaignConfig, jobs: int) -> None:
    """Estimate the memory a campaign's local execution needs and refuse what this machine
    cannot hold (``disaggsim.guards.require_memory``), before any process starts: ``jobs``
    workers of :data:`WORKER_BYTES` each, each generating the largest synthetic workload
    (``n_flows`` x :data:`GENERATED_FLOW_BYTES`) at once.

    Raises:
        ResourceError: names the config's key and the estimate.
    """
    from disaggsim.guards import require_memory
    from disaggsim.sim.config import SyntheticWorkload

    index, n_flows = max(
        (
            (i, w.n_flows)
            for i, w in enumerate(config.workloads)
            if isinstance(w, SyntheticWorkload)
        ),
        key=lambda t: t[1],
        default=(None, 0),
    )
    if config.campaign.executor == "local":
        require_memory(
            config_location(config_path, ("campaign", "jobs")),
            None,
            f"campaign.jobs = {jobs} workers x {WORKER_BYTES // 2**20} MiB each",
            jobs * WORKER_BYTES,
        )
    if index is not None:
        workers = jobs if config.campaign.executor == "local" else 1
        require_memory(
            config_location(config_path, ("workloads", index, "n_flows")),
            None,
            f"workloads[{index}].n_flows = {n_flows} flows x {GENERATED_FLOW_BYTES} B in "
            f"each of {workers} concurrent run(s)",
            workers * n_flows * GENERATED_FLOW_BYTES,
        )


#: Collected tables of a campaign directory (written by _collect, removed on a new run).
_TABLES = ("fct.parquet", "summary.csv", "runs.csv")
_CONFIG_SUFFIXES = (".toml", ".yaml", ".yml")


def _make_out_dir(config_path: Path, out_dir: Path) -> None:
    """Create ``campaign.out_dir`` or say why it cannot be (CampaignError naming the key)."""
    where = config_location(config_path, ("campaign", "out_dir"))
    if out_dir.exists() and not out_dir.is_dir():
        raise CampaignError(f"{where}: campaign.out_dir: {out_dir} exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CampaignError(
            f"{where}: campaign.out_dir: cannot create {out_dir}: {exc.strerror or exc}"
        ) from None


def preflight(
    config_path: Path,
    config: CampaignConfig,
    planned: list[PlannedRun],
    binary: Path,
    cache_dir: Path | None = None,
) -> None:
    """Check everything checkable before the first run, and report every problem at once.

    Checked: each grid protocol is implemented by the ns-3 program and each ns-3 attribute
    path exists there (:func:`disaggsim.sim.runner.driver_capabilities`, the program's
    ``--list-capabilities``); each workload's blades fit the topology under every scope
    and seed (``disaggsim.sim.placement.place``, the same call the run makes) and YAPS
    host ids are below racks x hosts_per_rack.

    Raises:
        CampaignError: one line per problem, ``<config>:<line>: <key>: <what is wrong>``.
    """
    problems: list[str] = []
    caps = driver_capabilities(binary, cache_dir)
    for index, protocol in enumerate(config.grid.protocols):
        wrong = caps.check_protocol(protocol)
        if wrong:
            where = config_location(config_path, ("grid", "protocols"))
            problems.append(f"{where}: grid.protocols[{index}]: {wrong}")
    attribute_keys = [(("attributes", a), a) for a in config.attributes] + [
        (("protocols", name, "attributes", a), a)
        for name, section in config.protocols.items()
        for a in section.attributes
    ]
    for loc, path in attribute_keys:
        wrong = caps.check_attribute(path)
        if not wrong:
            protocol = loc[1] if loc[0] == "protocols" else config.grid.protocols[0]
            wrong = _attribute_value_problem(binary, str(protocol), path, loc, config)
        if wrong:
            dotted = ".".join(f'"{p}"' if "::" in p else p for p in loc)
            problems.append(f"{config_location(config_path, loc)}: {dotted}: {wrong}")
    problems += _placement_problems(config_path, planned)
    if problems:
        raise CampaignError(
            f"{config_path}: {len(problems)} problem(s) found before any run:\n"
            + "\n".join(problems)
        )


#: What the ns-3 program prints once its command line parsed: every attribute value was
#: accepted (it then stops for want of --flows; sim/disaggsim-ns3.cc).
_PARSED_MARK = "--flows, --out and --stats are required"


def _attribute_value_problem(
    binary: Path, protocol: str, path: str, loc: tuple[str, ...], config: CampaignConfig
) -> str:
    """Whether the ns-3 program accepts an attribute's value ("" if it does).

    The program parses ``--ns3::Class::Attribute=value`` with the attribute's own checker
    (ns-3 ``CommandLine`` -> ``Config::SetDefaultFailSafe``): a value it rejects ends the
    program (an abort, or "Invalid command-line argument") before it reaches the check of
    its required file options. One short process per attribute, before any run, so the
    error names the key rather than a failed run.
    """
    import subprocess

    from disaggsim.sim.config import attribute_string

    section = config.protocols[loc[1]].attributes if loc[0] == "protocols" else config.attributes
    value = attribute_string(section[path])
    try:
        proc = subprocess.run(
            [str(binary), f"--protocol={protocol}", f"--{path}={value}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot check the value with {binary}: {exc}"
    if _PARSED_MARK in proc.stderr:
        return ""
    said = next((ln for ln in proc.stderr.splitlines() if ln.strip()), f"exit {proc.returncode}")
    return f"the ns-3 program rejects the value {value!r}: {said.strip()}"


def _placement_problems(config_path: Path, planned: list[PlannedRun]) -> list[str]:
    from disaggsim.sim.placement import place

    problems: list[str] = []
    seen: set[tuple[str, str, int]] = set()
    where = config_location(config_path, ("topology",))
    for run in planned:
        spec = run.spec
        topo = spec.topology
        n_hosts = topo["racks"] * topo["hosts_per_rack"]
        key = (spec.flows_path, spec.scope, spec.seed)
        if spec.hosts_given:  # per run: the CXL check depends on the protocol's attributes
            problems += [p for p in _rcmp_problems(where, spec) if p not in problems]
        if spec.generator is not None or key in seen:
            continue
        seen.add(key)
        flows = pq.read_table(spec.flows_path).to_pandas()
        if spec.hosts_given:
            hosts = pd.concat([flows["src_host"], flows["dst_host"]])
            if len(hosts) and int(hosts.max()) >= n_hosts:
                problems.append(
                    f"{where}: topology: workload {spec.workload!r} uses host "
                    f"{int(hosts.max())} but racks x hosts_per_rack = {n_hosts} hosts"
                )
            continue
        try:
            place(flows, topo["racks"], topo["hosts_per_rack"], spec.scope, spec.seed)
        except ValueError as exc:
            problems.append(
                f"{where}: topology: workload {spec.workload!r} does not fit "
                f"(scope {spec.scope}, seed {spec.seed}): {exc}"
            )
    return problems


def _rcmp_problems(where: str, spec: RunSpec) -> list[str]:
    """An Rcmp workload's hosts are its racks' daemons and clients (``rcmp.json``, written
    by ``disaggsim.sim.workloads``): the topology must have its racks x hosts_per_rack, and
    its ``cxl`` rows need the CXL tier (else ns-3 would carry them over Ethernet)."""
    side = Path(spec.flows_path).parent / RCMP_FILE
    if not side.is_file():
        return []
    want = json.loads(side.read_text())
    topo = spec.topology
    problems = []
    if (topo["racks"], topo["hosts_per_rack"]) != (want["racks"], want["hosts_per_rack"]):
        problems.append(
            f"{where}: topology: workload {spec.workload!r} (Rcmp) expects racks = "
            f"{want['racks']} and hosts_per_rack = {want['hosts_per_rack']} (clients_per_rack "
            f"+ 1, host 0 of each rack its daemon), got {topo['racks']} and "
            f"{topo['hosts_per_rack']}"
        )
    if want["cxl_rows"] and spec.attributes.get("ns3::CxlRackTier::Enabled") != "true":
        problems.append(
            f"{where}: workload {spec.workload!r} (Rcmp) has cxl rows (cxl_rows = true): "
            f'expected "ns3::CxlRackTier::Enabled" = true in [attributes] for protocol '
            f"{spec.protocol!r}"
        )
    return problems


def _run_local(
    planned: list[PlannedRun], runs_dir: Path, jobs: int, progress: bool
) -> list[dict[str, Any]]:
    from tqdm import tqdm

    records: dict[int, dict[str, Any]] = {}
    todo = []
    for index, run in enumerate(planned):
        if reusable(runs_dir / run.dir_name):
            records[index] = execute_run(run, runs_dir)
        else:
            todo.append(index)
    failures: list[str] = []
    bar = tqdm(
        total=len(planned),
        initial=len(records),
        disable=not progress,
        unit="run",
        desc="runs",
        file=sys.stderr,
    )
    with bar:
        if jobs == 1:
            for index in todo:
                _gather(index, planned, runs_dir, records, failures, None)
                bar.update()
        else:
            # die_with_parent: a SIGKILL of this process ends the workers, whose ns-3
            # children then die with them (runner.run_one sets the same in each child).
            with ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent) as pool:
                futures = {pool.submit(execute_run, planned[i], runs_dir): i for i in todo}
                try:
                    for future in as_completed(futures):
                        _gather(futures[future], planned, runs_dir, records, failures, future)
                        bar.update()
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        # An interrupt ends the running simulations as a SIGKILL of the
                        # campaign does (die_with_parent): a SIGTERM from Slurm or a user
                        # must not wait hours for them. Their ns-3 children die with them.
                        for worker in list(pool._processes.values()):
                            worker.kill()
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
    if failures:
        raise CampaignError(
            f"{len(failures)} of {len(planned)} runs failed (finished runs are kept and "
            f"will be skipped on re-run):\n" + "\n\n".join(failures)
        )
    return [run_row(planned[i], records[i]) for i in range(len(planned))]


def _gather(
    index: int,
    planned: list[PlannedRun],
    runs_dir: Path,
    records: dict[int, dict[str, Any]],
    failures: list[str],
    future: Future[dict[str, Any]] | None,
) -> None:
    run = planned[index]
    try:
        records[index] = future.result() if future is not None else execute_run(run, runs_dir)
    except Exception as exc:  # reported with the run's identity below
        spec = run.spec
        what = (
            f"{spec.workload} {spec.protocol} {spec.rate_gbps:g}Gbps {spec.scope} seed={spec.seed}"
        )
        detail = str(exc) or traceback.format_exception_only(exc)[-1].strip()
        failures.append(f"{what}: {type(exc).__name__}: {detail}")


#: The summary a campaign is given (``disaggsim.analysis.stats.summarize_groups``): from
#: the collected table's parts, one summary group each (the runs that differ only in their
#: seed, CAMPAIGN_FCT rows in grid order), handed over one at a time, to the summary table.
SummaryFn = Callable[[Iterable[pd.DataFrame]], pd.DataFrame]

#: The runs pooled in one summary group: those that differ only in their seed.
_POOLED_KEYS = tuple(k for k in CAMPAIGN_KEYS if k != "seed")


def _collect(
    planned: list[PlannedRun],
    runs_dir: Path,
    result: CampaignResult,
    summarize: SummaryFn | None,
) -> None:
    """Write ``fct.parquet``, ``runs.csv`` and, given ``summarize``, ``summary.csv`` from
    the done runs.

    Streams: the runs of one summary group (those that differ only in their seed) are
    read, appended to ``fct.parquet`` (one ``pyarrow.parquet.ParquetWriter``, one or more
    row groups per run, in grid order) and handed to ``summarize`` as one part, then
    dropped; peak memory is one group's flows, not the campaign's (Figure 7 on whole
    traces: 51 M flows). ``fct.parquet`` is the concatenation of the runs' tables in grid
    order. Every file is written through a temporary file and renamed.
    """
    groups: dict[tuple[Any, ...], list[PlannedRun]] = {}
    for run in planned:
        groups.setdefault(tuple(getattr(run.spec, k) for k in _POOLED_KEYS), []).append(run)
    summary: pd.DataFrame | None = None

    def parts(writer: pq.ParquetWriter) -> Iterator[pd.DataFrame]:
        for runs in groups.values():
            tables = []
            for run in runs:
                path = runs_dir / run.dir_name / "fct.parquet"
                try:
                    table = pq.read_table(path).cast(CAMPAIGN_FCT)
                except (OSError, ValueError, pa.ArrowException) as exc:
                    raise CampaignError(
                        f"{path}: expected a run's CAMPAIGN_FCT table, got an unreadable "
                        f"file ({exc}); remove {path.parent} and run the campaign again"
                    ) from None
                writer.write_table(table)
                tables.append(table)
            yield pa.concat_tables(tables).to_pandas()
        if not groups:
            yield CAMPAIGN_FCT.empty_table().to_pandas()

    out_dir = result.out_dir
    fct_path = out_dir / "fct.parquet"
    with _written(fct_path) as tmp, pq.ParquetWriter(tmp, CAMPAIGN_FCT) as writer:
        every_part = parts(writer)
        summary = summarize(every_part) if summarize is not None else None
        for _ in every_part:  # the parts a summary did not read still go into the table
            pass
    summary_path = None
    if summary is not None:
        summary_path = out_dir / "summary.csv"
        with _written(summary_path) as tmp:
            summary.to_csv(tmp, index=False)
    with _written(out_dir / "runs.csv") as tmp:
        pd.DataFrame(result.runs).to_csv(tmp, index=False)
    result.fct_path, result.summary_path, result.summary = fct_path, summary_path, summary


@contextmanager
def _written(path: Path) -> Iterator[Path]:
    """:func:`disaggsim.atomic.atomic_path` for a campaign output.

    Raises:
        InputError: the file system's error (no space left, read-only...) naming ``path``
            (``disaggsim.errors.located_os_error``, issue #21 class 11); ``path`` is left
            as it was.
    """
    try:
        with atomic_path(path) as tmp:
            yield tmp
    except OSError as exc:
        raise located_os_error(path, exc, "written") from None


def _slurm(
    config: CampaignConfig,
    planned: list[PlannedRun],
    runs_dir: Path,
    result: CampaignResult,
    progress: bool = False,
) -> None:
    """The Slurm executor: :func:`disaggsim.sim.slurm.run_array`."""
    run_array(config, planned, runs_dir, result, progress)


#: Output directories (resolved) whose lock this process holds: a record lock does not
#: exclude its own process, so a second campaign of this process is refused here.
_LOCKED_HERE: set[Path] = set()
_LOCKED_HERE_GUARD = threading.Lock()


@contextmanager
def _campaign_lock(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir/.campaign.lock`` for the block: an exclusive POSIX record lock
    (``fcntl.lockf``, fcntl(2) ``F_SETLK``).

    Not flock(2): a flock belongs to the open file description, which fork() shares, so
    every pool worker (and every child between fork and exec) held the campaign's lock,
    and after a SIGKILL it stayed held until the last of them was gone (measured: up to
    ~0.2 s after the campaign was reaped, ~10 ms after its workers were zombies). A
    record lock belongs to this process alone and the kernel drops it as the process
    closes its files on exit, so it is free by the time the campaign's parent has reaped
    it. Closing any descriptor of the file would drop it too: only this function opens it.

    Raises:
        CampaignError: another process, or another campaign of this process, holds it.
    """
    lock_path = out_dir / ".campaign.lock"
    busy = f"{out_dir}: another campaign is running in this directory ({lock_path})"
    key = out_dir.resolve()
    with _LOCKED_HERE_GUARD:
        if key in _LOCKED_HERE:  # checked before opening: a close would drop our lock
            raise CampaignError(busy)
        _LOCKED_HERE.add(key)
    try:
        with open(lock_path, "w") as handle:
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
                raise CampaignError(busy) from None
            try:
                yield
            finally:
                fcntl.lockf(handle, fcntl.LOCK_UN)
    finally:
        with _LOCKED_HERE_GUARD:
            _LOCKED_HERE.discard(key)


def _remove_stale_tmp(directory: Path) -> None:
    """Remove ``.tmp-*`` directories left by interrupted runs (we hold the lock)."""
    if directory.is_dir():
        for path in directory.glob(".tmp-*"):
            shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m disaggsim.sim.campaign CONFIG``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1:
        result = run_campaign(args[0])
        print(f"{result.ran} ran, {result.skipped} skipped, {result.pending} pending")
        return 0
    print("usage: python -m disaggsim.sim.campaign CONFIG", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "KEY_DIGITS",
    "RUN_FORMAT",
    "CampaignError",
    "CampaignResult",
    "PlannedRun",
    "execute_run",
    "expand_grid",
    "is_done",
    "run_campaign",
    "run_key",
    "run_row",
]
