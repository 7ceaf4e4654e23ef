"""``disaggsim emulate CONFIG``: the paper's §3.1 experiment on this machine.

Run a real application with its local memory limited to a fraction of its working set, on
either backend of the latency-injection device (:mod:`disaggsim.swapdev.device`), once per
local fraction, delay model and repeat, and report its job completion time (JCT) relative
to the zero-delay run at the same local fraction: "relative application-level performance
on the basis of job completion time as compared to the zero-delay case" (paper §3.1; the
paper takes the median of 10 runs). The applications are in
:mod:`disaggsim.swapdev.emulate_apps`.

Config (TOML; unknown keys are errors naming the file and line)::

    [emulate]
    name = "python-sort"            # output sub-directory and plot name
    out_dir = "results/emulate"     # relative to the config file
    backend = "swap"                # swap | uffd | kmod (the kernel module in its QEMU
                                    # guest; app.command memtouch only, emulate_kmod.py)
    repeats = 5                     # runs per point; the median is reported, with min-max
    page_cluster = 0                # vm.page-cluster during swap runs (restored after)
    eviction = "fifo"               # uffd replacement policy (device.EVICTION_POLICIES)
    paging = "demand"               # uffd paging policy: demand | comex (PAGING_POLICIES)
    queue_depth = 1                 # swap: requests the FUSE device serves at once
    timeout_s = 600                 # per run: a longer run is killed, reported, not counted
    [app]
    preset = "memcached-ycsb"       # a name of emulate_apps.PRESETS (its table), or:
    # command = ["python3", "-c", "..."]   # "{build}" expands to build/swapdev
    working_set_bytes = 268435456   # required with command; a preset has its own
    local_fraction = [0.5, 0.75]    # local memory = fraction x working set (one or a grid)
    jemalloc = true                 # uffd: preload jemalloc too (default: the preset's)
    [[models]]                      # the zero-delay run is added as the reference
    kind = "fixed"                  # a delay model of device.MODEL_NAMES but none
    latency_ns = [1000, 5000]       # fixed: one value or a grid (with bandwidth_bps)
    bandwidth_bps = [40000000000, 100000000000]

A ``fixed`` model with lists expands to every (latency, bandwidth) pair; the sweep is
local fraction x models (paper Figs. 3-5 and Table 3).

Outputs in ``out_dir/name`` (the device's own files stay in a temporary directory), each
written atomically:

- ``runs.csv``: one row per run: ``local_fraction, model, kind, latency_ns,
  bandwidth_bps, repeat, status`` (``ok``/``timeout``), ``jct_s`` (empty on timeout),
  ``wall_s``, ``swap_in_bytes, swap_out_bytes`` (the device's own counters),
  ``swap_bandwidth_bytes_per_s`` (in + out over the JCT), ``memory_bandwidth_bytes_per_s``
  and ``memory_bandwidth_source`` (see :func:`memory_bandwidth_probe`), ``peak_rss_bytes``
  (presets: the data-holding processes' peak summed PSS, ``emulate_apps._PeakRss``, a
  check of the working set);
- ``summary.csv``: per (local fraction, model), over the ``ok`` runs: ``repeats_ok,
  repeats_timeout, median_jct_s, min_jct_s, max_jct_s, relative_jct`` (median JCT /
  median zero-delay JCT at that fraction), ``relative_min, relative_max`` and the medians
  of the bandwidth columns;
- ``table3.csv``: per (latency, bandwidth) of the ``fixed`` models, the smallest local
  fraction keeping the degradation under 5 % (paper Table 3), see :func:`table3`;
- ``<name>.png``: relative JCT against latency per (fraction, bandwidth);
  ``<name>-fig6.png``: relative JCT against swap bandwidth (paper Fig. 6a).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from disaggsim.atomic import atomic_path
from disaggsim.errors import InputError
from disaggsim.guards import read_text
from disaggsim.sim.config import ConfigError, config_location, load_config_model
from disaggsim.swapdev import device, emulate_apps, emulate_kmod
from disaggsim.testbed import collect_env

#: Table 3's criterion: "performance degradation < 5%" (paper §3.2).
DEGRADATION_THRESHOLD = 1.05

NonNegInt = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1)]


class _Strict(BaseModel):
    """Strict types, no inf/nan (issue #21, class 8; as ``disaggsim.sim.config``)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def _as_list(value: object) -> object:
    return value if isinstance(value, list) else [value]


def _check_grid(values: list[Any], what: str) -> list[Any]:
    if not values:
        raise ValueError(f"{what}: expected a value or a non-empty list")
    if len(set(values)) != len(values):
        raise ValueError(f"{what}: repeated values in the grid {values}")
    return values


class EmulateSection(_Strict):
    """``[emulate]``: name, output, backend, repeats per point, page-cluster, the uffd
    backend's policies, the swap backend's queue depth, per-run limit (s)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    out_dir: Annotated[Path, Field(strict=False)] = Path("results/emulate")
    backend: Literal["swap", "uffd", "kmod"] = "swap"
    #: The issue's default: "the median of N repeats (default 5) with the spread".
    repeats: int = Field(5, ge=1)
    page_cluster: int = Field(0, ge=0, le=10)
    eviction: device.EvictionPolicy = "fifo"
    paging: device.PagingPolicy = "demand"
    queue_depth: int = Field(1, ge=1, le=256)
    timeout_s: float = Field(600, gt=0)

    @field_validator("eviction")
    @classmethod
    def _eviction(cls, v: str) -> str:
        return device.check_name(v, device.EVICTION_POLICIES, "eviction")

    @field_validator("paging")
    @classmethod
    def _paging(cls, v: str) -> str:
        return device.check_name(v, device.PAGING_POLICIES, "paging")


class AppSection(_Strict):
    """``[app]``: a preset (:data:`emulate_apps.PRESETS`) or a command; the working set
    (bytes, per data-holding process; a preset has a measured default), the local
    fraction(s) of it (0, 1] and whether jemalloc is preloaded with the uffd device."""

    preset: str | None = None
    command: list[str] | None = Field(None, min_length=1)
    working_set_bytes: int | None = Field(None, gt=0)
    local_fraction: list[Fraction]
    jemalloc: bool | None = None

    _grid = field_validator("local_fraction", mode="before")(_as_list)

    @field_validator("preset")
    @classmethod
    def _preset(cls, v: str | None) -> str | None:
        if v is not None and v not in emulate_apps.PRESETS:
            raise ValueError(f"Input should be one of {', '.join(emulate_apps.PRESETS)}")
        return v

    @field_validator("local_fraction")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        return _check_grid(v, "local_fraction")

    @model_validator(mode="after")
    def _one_app(self) -> AppSection:
        if (self.preset is None) == (self.command is None):
            raise ValueError("give exactly one of preset and command")
        if self.command is not None and self.working_set_bytes is None:
            raise ValueError("working_set_bytes: required with command")
        return self

    @property
    def preset_spec(self) -> emulate_apps.Preset:
        """The preset (a command app is a preset without a cluster)."""
        if self.preset is not None:
            spec = emulate_apps.PRESETS[self.preset]
            if self.working_set_bytes is None:
                return spec
            return replace(spec, working_set_bytes=self.working_set_bytes)
        assert self.command is not None and self.working_set_bytes is not None
        return emulate_apps.Preset("command", self.working_set_bytes, tuple(self.command))

    @property
    def use_jemalloc(self) -> bool:
        return self.preset_spec.jemalloc if self.jemalloc is None else self.jemalloc


class ModelSection(_Strict):
    """``[[models]]``: one delay model (:class:`device.DelayModel`); a ``fixed`` model's
    ``latency_ns`` (ns) and ``bandwidth_bps`` (bit/s) may be lists (their product)."""

    kind: str
    latency_ns: list[NonNegInt] = [0]
    bandwidth_bps: list[NonNegInt] = [0]
    fct_file: Annotated[Path | None, Field(strict=False)] = None
    fct_format: Literal["bytes-us", "pages-ns"] = "bytes-us"
    seed: int = 1
    label: str | None = None

    _grid = field_validator("latency_ns", "bandwidth_bps", mode="before")(_as_list)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        # "none" is the reference every sweep gets anyway.
        return device.check_name(v, tuple(k for k in device.MODEL_NAMES if k != "none"),
                                 "kind")

    @field_validator("latency_ns", "bandwidth_bps")
    @classmethod
    def _values(cls, v: list[int]) -> list[int]:
        return _check_grid(v, "grid")

    @model_validator(mode="after")
    def _grid_only_fixed(self) -> ModelSection:
        grid = len(self.latency_ns) * len(self.bandwidth_bps) > 1
        rate = device.MODEL_PARAMS[self.kind] == "rate"
        if grid and not rate:
            raise ValueError("latency_ns/bandwidth_bps lists: only for a model configured by "
                             "them (fixed, link)")
        if grid and self.label is not None:
            raise ValueError("label: not with a latency/bandwidth grid (labels are made per "
                             "point)")
        if device.MODEL_PARAMS[self.kind] == "table" and self.fct_file is None:
            raise ValueError(f"fct_file: required for kind = \"{self.kind}\"")
        return self


class EmulateConfig(_Strict):
    """A whole emulate config; ``base_dir`` (set by the loader) resolves relative paths."""

    emulate: EmulateSection
    app: AppSection
    models: list[ModelSection] = Field(min_length=1)
    base_dir: Path


def load_emulate_config(path: str | Path) -> EmulateConfig:
    """Read and validate an emulate config (TOML).

    Raises:
        ConfigError: unreadable, syntax error, unknown key, bad value or grid; the message
            starts with ``<file>[:<line>]: <key path>: ``.
    """
    cfg = load_config_model(path, EmulateConfig)[0]
    try:
        expand_models(cfg)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    problems = preflight(Path(path), cfg)
    if problems:
        raise ConfigError("\n".join(problems))
    return cfg


#: Longest sweep accepted: its worst case (every run reaching ``timeout_s``) within 30 days.
MAX_SWEEP_S = 30 * 86400


def preflight(path: Path, cfg: EmulateConfig) -> list[str]:
    """Everything checkable before the machine's state is touched (issue #21, class 10):
    each ``fct_file`` is a regular, non-empty file of 2 or 3 finite non-negative numbers
    per line (``<bytes> <fct_us>`` or the distribution form); the command's program
    exists; a fixed latency is shorter than the per-run timeout (no page could arrive
    within a run otherwise); the worst-case sweep (runs x ``timeout_s``) ends within
    :data:`MAX_SWEEP_S`. Returns one ``<file>:<line>: <key>: <what>`` line per problem.
    """
    problems: list[str] = []
    try:
        cfg.app.preset_spec.check_backend(cfg.emulate.backend)
    except ValueError as exc:
        problems.append(f"{config_location(path, ('emulate', 'backend'))}: emulate.backend: "
                        f"{exc}")
    for i, m in enumerate(cfg.models):
        if m.fct_file is not None:
            f = cfg.base_dir / m.fct_file
            where = config_location(path, ("models", i, "fct_file"))
            try:
                text = read_text(f, "an FCT file", "ascii")
                rows = [ln.split() for ln in text.splitlines() if ln.strip()]
                if not rows:
                    raise InputError(f, None, None, "at least one '<bytes> <fct_us>' line")
                for n, row in enumerate(rows, 1):
                    values = [float(v) for v in row] if len(row) in (2, 3) else []
                    if not values or not all(0 <= v < float("inf") for v in values):
                        raise InputError(f, n, None, "2 or 3 finite numbers >= 0", " ".join(row))
            except (OSError, InputError, ValueError) as exc:
                problems.append(f"{where}: models[{i}].fct_file: {exc}")
        limit_ns = cfg.emulate.timeout_s * 1e9
        for lat in m.latency_ns:
            if lat >= limit_ns:
                problems.append(
                    f"{config_location(path, ('models', i, 'latency_ns'))}: models[{i}]."
                    f"latency_ns: {lat} ns: expected less than the per-run timeout_s "
                    f"({cfg.emulate.timeout_s} s)"
                )
    if cfg.app.command is not None:
        program = cfg.app.command[0].replace("{build}", str(device.build_dir()))
        if shutil.which(program) is None and not (
            os.path.isfile(program) and os.access(program, os.X_OK)
        ):
            problems.append(
                f"{config_location(path, ('app', 'command'))}: app.command[0]: expected an "
                f"executable program (on PATH or a path), got {program!r}"
            )
    runs = len(expand_models(cfg)) * len(cfg.app.local_fraction) * cfg.emulate.repeats
    if runs * cfg.emulate.timeout_s > MAX_SWEEP_S:
        problems.append(
            f"{config_location(path, ('emulate', 'repeats'))}: emulate.repeats: {runs} runs x "
            f"timeout_s {cfg.emulate.timeout_s} s = {runs * cfg.emulate.timeout_s / 86400:.0f} "
            f"days at worst: expected a sweep within {MAX_SWEEP_S // 86400} days"
        )
    return problems


@dataclass(frozen=True)
class Point:
    """One delay model of the sweep (a ``[[models]]`` entry or one point of its grid)."""

    label: str
    kind: str
    latency_ns: int
    bandwidth_bps: int
    delay: device.DelayModel


def _label(kind: str, latency_ns: int, bandwidth_bps: int, fct_file: Path | None) -> str:
    if device.MODEL_PARAMS[kind] == "none":
        return kind
    if device.MODEL_PARAMS[kind] == "rate":
        return f"{kind}-{latency_ns}ns" + (f"-{bandwidth_bps}bps" if bandwidth_bps else "")
    return f"{kind}-{Path(str(fct_file)).name}"


def expand_models(cfg: EmulateConfig) -> list[Point]:
    """The zero-delay reference, then every model (grids expanded latency-major).

    Raises ValueError if two points get the same label.
    """
    points = [Point("none", "none", 0, 0, device.DelayModel("none"))]
    for m in cfg.models:
        fct = None if m.fct_file is None else (cfg.base_dir / m.fct_file)
        for lat in m.latency_ns:
            for bw in m.bandwidth_bps:
                label = m.label or _label(m.kind, lat, bw, m.fct_file)
                model = device.DelayModel(m.kind, lat, bw, fct, m.fct_format, m.seed)
                points.append(Point(label, m.kind, lat, bw, model))
    labels = [p.label for p in points]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"models: the same point twice: {', '.join(dup)} (give labels)")
    return points


@dataclass(frozen=True)
class Run:
    """One run (a row of runs.csv); times in s, bytes, bandwidths in bytes/s."""

    local_fraction: float
    model: str
    kind: str
    latency_ns: int
    bandwidth_bps: int
    repeat: int
    status: str
    jct_s: float | None
    wall_s: float = math.nan
    swap_in_bytes: int | None = None
    swap_out_bytes: int | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    memory_bandwidth_source: str = ""
    peak_rss_bytes: int | None = None

    @property
    def swap_bandwidth_bytes_per_s(self) -> float | None:
        """Swap traffic (in + out) over the JCT."""
        if self.jct_s is None or self.swap_in_bytes is None or self.swap_out_bytes is None:
            return None
        return (self.swap_in_bytes + self.swap_out_bytes) / self.jct_s

    def row(self) -> dict[str, object]:
        out: dict[str, object] = asdict(self)
        out["swap_bandwidth_bytes_per_s"] = self.swap_bandwidth_bytes_per_s
        return out


def memory_bandwidth_probe() -> tuple[list[str] | None, str]:
    """Whether this machine can measure memory bandwidth, and how.

    The paper reads the integrated memory controllers' uncore counters with Intel PCM
    (§3.2 footnote 3). Here the only candidate is ``perf stat`` with the last-level cache
    miss events (64 B per miss: reads from and write-backs to memory). Returns
    (``perf`` events, "") if they are counted, else (None, the reason), e.g. on a VM whose
    hypervisor exposes no PMU (``perf stat -e cache-misses`` says ``<not supported>``).
    """
    events = ["LLC-load-misses", "LLC-store-misses"]
    if shutil.which("perf") is None:
        return None, "unavailable: perf not installed (apt-get install linux-perf)"
    proc = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(events), "true"],
                          capture_output=True, text=True)
    if proc.returncode != 0 or "<not supported>" in proc.stderr or \
            "<not counted>" in proc.stderr:
        return None, ("unavailable: no hardware PMU here (perf stat -e "
                      f"{','.join(events)}: not supported)")
    return events, "perf LLC-load-misses+LLC-store-misses x 64 B, system-wide"


@contextlib.contextmanager
def _perf_stat(events: list[str] | None, out: Path) -> Any:
    """System-wide ``perf stat`` over the block; yields a callable giving bytes (or None)."""
    if events is None:
        yield lambda: None
        return
    proc = subprocess.Popen(["perf", "stat", "-a", "-x", ",", "-o", str(out), "-e",
                             ",".join(events)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    result: list[float | None] = [None]
    try:
        yield lambda: result[0]
    finally:
        proc.send_signal(2)
        proc.wait(10)
        total = 0.0
        for line in out.read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] in events and fields[0].strip().isdigit():
                total += int(fields[0]) * 64
        result[0] = total


def _run_command_once(
    cfg: EmulateConfig, model: device.DelayModel, local: int, work: Path
) -> emulate_apps.Outcome:
    """One run of a command application (a JCT = wall time from start to exit)."""
    spec = cfg.app.preset_spec
    build = device.build_dir()
    argv = [part.replace("{build}", str(build)) for part in spec.command]
    timeout = cfg.emulate.timeout_s
    work.mkdir(parents=True, exist_ok=True)
    if cfg.emulate.backend == "uffd":
        extra = device.uffd_env(model, local, cfg.app.use_jemalloc, cfg.emulate.eviction,
                                cfg.emulate.paging)
        extra["SWAPDEV_HIST"] = str(work / "uffd.hist")
        status, wall, proc = emulate_apps.run_command(argv, timeout, extra)
        counters = emulate_apps.device_counters(proc.stderr)
    else:
        with collect_env.UndoStack() as stack:
            stack.enter_context(device.page_cluster(cfg.emulate.page_cluster))
            size = max(2 * spec.working_set_bytes, 64 << 20)
            dev = device.swap_device(stack, work, size - size % 4096, local, model,
                                     queue_depth=cfg.emulate.queue_depth)
            status, wall, proc = emulate_apps.run_command(argv, timeout, {}, dev.memcg)
            oom = (dev.memcg / "memory.oom_control").read_text()
            if status == "ok" and proc.returncode != 0 and "oom_kill 0" not in oom:
                raise RuntimeError(
                    f"the memory cgroup's OOM killer ended the application under {model}: "
                    f"{local} bytes local are too few for the swap device's write-back "
                    "rate (memcg v1 gives up reclaim); raise app.local_fraction or use "
                    "backend = \"uffd\""
                )
        counters = emulate_apps.device_counters(dev.log.read_text(errors="replace"))
    if status == "ok" and proc.returncode != 0:
        raise RuntimeError(
            f"application failed ({proc.returncode}) under {model}: {proc.stderr[-2000:]}"
        )
    return emulate_apps.Outcome(status, wall if status == "ok" else None, *counters, wall)



def _run_preset_with_retries(
    cfg: Any, session: Any, delay: Any, local: int, work: Path
) -> Any:
    """One run of a cluster preset; a run whose application a memory cgroup OOM-killed
    measured nothing and is repeated in a fresh directory (its logs kept), at most
    ``emulate_apps.OOM_ATTEMPTS`` times (emulate_apps.MemcgOomKill)."""
    for attempt in range(1, emulate_apps.OOM_ATTEMPTS + 1):
        run_dir = work if attempt == 1 else work.with_name(f"{work.name}-attempt{attempt}")
        try:
            return emulate_apps.run_preset_once(
                session, cfg.emulate.backend, delay, local, cfg.emulate.timeout_s, run_dir,
                cfg.emulate.page_cluster, cfg.app.use_jemalloc, cfg.emulate.eviction,
                cfg.emulate.paging, cfg.emulate.queue_depth)
        except emulate_apps.MemcgOomKill as exc:
            if attempt == emulate_apps.OOM_ATTEMPTS:
                raise
            print(f"emulate: {str(exc).splitlines()[-1]} in {run_dir}; repeating the run "
                  f"(attempt {attempt + 1}/{emulate_apps.OOM_ATTEMPTS})", file=sys.stderr,
                  flush=True)
    raise AssertionError("unreachable")

def emulate(cfg: EmulateConfig, progress: bool = True) -> Path:
    """Run the config's sweep (root; under the machine-state lock for the swap backend and
    the cluster presets); returns the out dir.

    Order: fraction-major, then repeat-major (every model once, then again), so slow drifts
    of a shared machine spread over all models. A run over ``timeout_s`` is killed,
    reported (console and runs.csv) and left out of the medians. Raises RuntimeError if a
    run fails, ValueError on duplicate model labels.
    """
    out = (cfg.base_dir / cfg.emulate.out_dir / cfg.emulate.name).resolve()
    points = expand_models(cfg)
    spec = cfg.app.preset_spec
    if cfg.emulate.backend == "kmod":
        with device.system_lock():
            kmod_runs = _kmod_runs(cfg, points, progress)
        _write_outputs(cfg, out, kmod_runs)
        return out
    events, mem_source = memory_bandwidth_probe()
    if progress:
        print(f"memory bandwidth: {mem_source}", flush=True)
    runs: list[Run] = []
    # The swap backend and the cluster presets change machine state.
    locked = cfg.emulate.backend == "swap" or spec.app is not None
    lock = device.system_lock() if locked else contextlib.nullcontext()
    with lock, collect_env.UndoStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="disaggsim-emulate-", dir="/var/tmp")))
        tmp.chmod(0o711)  # memcached runs as "nobody": its device writes into a run dir
        session = None
        if spec.app is not None:
            session = stack.enter_context(emulate_apps.cluster_session(stack, spec, tmp))
        for fraction in cfg.app.local_fraction:
            local = int(spec.working_set_bytes * fraction)
            for rep in range(cfg.emulate.repeats):
                for pt in points:
                    work = tmp / f"{fraction}-{pt.label}-{rep}"
                    with _perf_stat(events, tmp / "perf.txt") as mem_bytes:
                        if session is None:
                            res = _run_command_once(cfg, pt.delay, local, work)
                        else:
                            res = _run_preset_with_retries(cfg, session, pt.delay, local, work)
                    mem = mem_bytes()
                    run = Run(fraction, pt.label, pt.kind, pt.latency_ns, pt.bandwidth_bps,
                              rep, res.status, res.jct_s, res.wall_s, res.swap_in_bytes,
                              res.swap_out_bytes,
                              None if mem is None else mem / res.wall_s, mem_source,
                              res.peak_rss_bytes)
                    runs.append(run)
                    if progress:
                        _print_run(run, cfg.emulate.timeout_s)
    _write_outputs(cfg, out, runs)
    return out


def _kmod_runs(cfg: EmulateConfig, points: list[Point], progress: bool) -> list[Run]:
    """The sweep on the kernel module: every run in one guest boot, in emulate's order."""
    spec = cfg.app.preset_spec
    if cfg.app.command is None:
        raise ValueError('backend = "kmod": only app.command (memtouch) runs in the guest')
    order = [(fraction, rep, pt) for fraction in cfg.app.local_fraction
             for rep in range(cfg.emulate.repeats) for pt in points]
    outcomes = emulate_kmod.run_sweep(
        [(pt.delay, int(spec.working_set_bytes * fraction)) for fraction, _, pt in order],
        cfg.app.command, cfg.emulate.timeout_s)
    runs = []
    for (fraction, rep, pt), res in zip(order, outcomes, strict=True):
        if res["status"] != "ok":
            raise RuntimeError(f"memtouch {res['status']} in the kmod guest under {pt.delay}")
        run = Run(fraction, pt.label, pt.kind, pt.latency_ns, pt.bandwidth_bps, rep, "ok",
                  res["jct_s"], res["jct_s"], res["swap_in_bytes"], res["swap_out_bytes"],
                  None, "unavailable: QEMU TCG guest")
        runs.append(run)
        if progress:
            _print_run(run, cfg.emulate.timeout_s)
    return runs


def _print_run(run: Run, timeout_s: float) -> None:
    head = f"local {run.local_fraction:.0%} {run.model} repeat {run.repeat}:"
    if run.status != "ok":
        print(f"{head} TIMEOUT after {timeout_s:g} s: killed, not counted", flush=True)
        return
    bw = run.swap_bandwidth_bytes_per_s
    print(f"{head} {run.jct_s:.3f} s, swap {0 if bw is None else bw / 1e6:.1f} MB/s",
          flush=True)


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def summarize(runs: list[Run]) -> list[dict[str, object]]:
    """Per (local fraction, model), over the ``ok`` runs: median/min/max JCT, the same over
    the median zero-delay JCT of that fraction, and the medians of the bandwidths.

    Timed-out runs are only counted (``repeats_timeout``); a point (or a fraction's
    reference) with no ``ok`` run has empty JCT (and relative) columns.
    """
    rows: list[dict[str, object]] = []
    keys = dict.fromkeys((r.local_fraction, r.model) for r in runs)
    for fraction, label in keys:
        mine = [r for r in runs if r.local_fraction == fraction and r.model == label]
        ok = [r for r in mine if r.status == "ok" and r.jct_s is not None]
        ref = _median([r.jct_s for r in runs if r.local_fraction == fraction
                       and r.model == "none" and r.status == "ok"])
        jcts = [float(r.jct_s) for r in ok if r.jct_s is not None]
        med = statistics.median(jcts) if jcts else None

        def rel(x: float | None, ref: float | None = ref) -> float | None:
            return None if x is None or not ref else x / ref

        rows.append({
            "local_fraction": fraction, "model": label, "kind": mine[0].kind,
            "latency_ns": mine[0].latency_ns, "bandwidth_bps": mine[0].bandwidth_bps,
            "repeats_ok": len(ok), "repeats_timeout": len(mine) - len(ok),
            "median_jct_s": med, "min_jct_s": min(jcts) if jcts else None,
            "max_jct_s": max(jcts) if jcts else None, "relative_jct": rel(med),
            "relative_min": rel(min(jcts) if jcts else None),
            "relative_max": rel(max(jcts) if jcts else None),
            "swap_in_bytes": _median([r.swap_in_bytes for r in ok]),
            "swap_out_bytes": _median([r.swap_out_bytes for r in ok]),
            "swap_bandwidth_bytes_per_s": _median([r.swap_bandwidth_bytes_per_s for r in ok]),
            "memory_bandwidth_bytes_per_s": _median(
                [r.memory_bandwidth_bytes_per_s for r in ok]),
            "memory_bandwidth_source": mine[0].memory_bandwidth_source,
        })
    return rows


def table3(summary: list[dict[str, object]],
           threshold: float = DEGRADATION_THRESHOLD) -> list[dict[str, object]]:
    """Paper Table 3: per (latency, bandwidth) of the ``fixed`` models, the smallest local
    fraction f such that the median relative JCT is below ``threshold`` at f and at every
    larger measured fraction (so one lucky point below a failing one does not count).

    ``min_local_fraction`` is empty if even the largest fraction fails, or a fraction in
    the way has no result (every run timed out).
    """
    out: list[dict[str, object]] = []
    fixed = [r for r in summary if r["kind"] == "fixed"]
    for lat, bw in dict.fromkeys((r["latency_ns"], r["bandwidth_bps"]) for r in fixed):
        pts = sorted(((float(str(r["local_fraction"])), r["relative_jct"]) for r in fixed
                      if r["latency_ns"] == lat and r["bandwidth_bps"] == bw), reverse=True)
        best: float | None = None
        for fraction, rel in pts:
            if rel is None or float(str(rel)) >= threshold:
                break
            best = fraction
        out.append({"latency_ns": lat, "bandwidth_bps": bw, "threshold": threshold,
                    "fractions": " ".join(f"{f:g}" for f, _ in sorted(pts)),
                    "min_local_fraction": best})
    return out


def _csv_text(rows: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows([{k: "" if v is None else v for k, v in r.items()} for r in rows])
    return buf.getvalue()


def _save_png(fig: Any, path: Path) -> None:
    """Lay out ``fig``, write it to ``path`` as PNG atomically, close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def _write_outputs(cfg: EmulateConfig, out: Path, runs: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "runs.csv") as tmp:
        tmp.write_text(_csv_text([r.row() for r in runs]))
    rows = summarize(runs)
    with atomic_path(out / "summary.csv") as tmp:
        tmp.write_text(_csv_text(rows))
    t3 = table3(rows)
    if t3:
        with atomic_path(out / "table3.csv") as tmp:
            tmp.write_text(_csv_text(t3))
    ok = [r for r in rows if r["relative_jct"] is not None]
    app = cfg.app.preset or cfg.emulate.name
    title = f"{cfg.emulate.name}: {app}, {cfg.emulate.backend}"

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    groups = dict.fromkeys((r["local_fraction"], r["bandwidth_bps"]) for r in ok
                           if r["kind"] == "fixed")
    for fraction, bw in groups:
        pts = sorted([r for r in ok if r["model"] == "none" and r["local_fraction"] == fraction]
                     + [r for r in ok if r["kind"] == "fixed" and r["local_fraction"] == fraction
                        and r["bandwidth_bps"] == bw], key=lambda r: float(str(r["latency_ns"])))
        x = [float(str(r["latency_ns"])) / 1000 for r in pts]
        y = [float(str(r["relative_jct"])) for r in pts]
        lo = [yi - float(str(r["relative_min"])) for yi, r in zip(y, pts, strict=True)]
        hi = [float(str(r["relative_max"])) - yi for yi, r in zip(y, pts, strict=True)]
        bw_text = f", {float(str(bw)) / 1e9:g} Gb/s" if bw else ""
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3,
                    label=f"local {float(str(fraction)):.0%}{bw_text}")
    ax.axhline(DEGRADATION_THRESHOLD, color="grey", ls=":", lw=1)
    ax.set_xlabel("injected latency per paging request (µs)")
    ax.set_ylabel("JCT / zero-delay JCT")
    ax.set_title(title, fontsize=9)
    if groups:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save_png(fig, out / f"{cfg.emulate.name}.png")

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for fraction in dict.fromkeys(r["local_fraction"] for r in ok):
        pts = [r for r in ok if r["local_fraction"] == fraction
               and r["swap_bandwidth_bytes_per_s"] is not None]
        ax.scatter([float(str(r["swap_bandwidth_bytes_per_s"])) / 1e6 for r in pts],
                   [(float(str(r["relative_jct"])) - 1) * 100 for r in pts],
                   label=f"{app}, local {float(str(fraction)):.0%}", s=18)
    ax.set_xlabel("swap bandwidth, in + out (MB/s)")
    ax.set_ylabel("performance degradation (%)")
    mem = next((str(r["memory_bandwidth_source"]) for r in rows), "")
    ax.set_title(f"{title} (paper Fig. 6a)\nmemory bandwidth: {mem}", fontsize=8)
    if ok:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save_png(fig, out / f"{cfg.emulate.name}-fig6.png")
