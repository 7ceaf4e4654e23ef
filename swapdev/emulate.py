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
    repeats = 5                     # runs per point (at least); the median is reported
    repeats_max = 8                 # adaptive: up to this many rounds while a point is
                                    # unsettled (jct_stats.settled; default = repeats);
                                    # below MIN_RUNS (6) no point can be decided: the
                                    # loader warns
    half_width = 0.015              # ... i.e. its interval is wider than +-half_width and
                                    # straddles the 5 % threshold
    confidence = 0.95               # of the intervals, simultaneous over every round
                                    # (jct_stats: repeated confidence intervals)
    app_cpus = [1]                  # pin the sweep's processes (the application) to these
                                    # CPUs (default: not pinned)
    handler_cpus = [0]              # pin the device's handler (uffd thread, swap's FUSE
                                    # daemon) to these CPUs (default: not pinned)
    handler_spin_us = 0             # uffd: the handler spins this long after a fault
                                    # before it blocks (SWAPDEV_SPIN_US; default: the
                                    # device's 500); 0 when it shares the application's CPU
    page_cluster = 0                # vm.page-cluster during swap runs (restored after)
    eviction = "fifo"               # uffd replacement policy (device.EVICTION_POLICIES)
    paging = "demand"               # uffd paging policy: demand | comex (PAGING_POLICIES)
    queue_depth = 1                 # swap: requests the FUSE device serves at once
    timeout_s = 600                 # per run: a longer run is killed, reported, not counted
    [app]
    preset = "memcached-ycsb"       # a name of emulate_apps.PRESETS (its table), or:
    # command = ["python3", "-c", "..."]   # "{build}" expands to build/swapdev
    working_set_bytes = 268435456   # required with command or params; a preset has its own
    params = { graph_scale = 18 }   # a cluster preset's size: fields of its collector
                                    # config (testbed/apps, the class in its PRESETS entry)
                                    # overridden and validated by that class
    local_fraction = [0.5, 0.75]    # local memory = fraction x working set (one or a grid)
    jemalloc = true                 # uffd: preload jemalloc too (default: the preset's)
    [[models]]                      # the zero-delay run is added as the reference;
                                    # no [[models]]: Figure 2's grid (FIGURE2_LATENCIES_NS x
                                    # FIGURE2_BANDWIDTHS_BPS, fixed)
    kind = "fixed"                  # a delay model of device.MODEL_NAMES but none
    latency_ns = [1000, 5000]       # fixed: one value or a grid (with bandwidth_bps)
    bandwidth_bps = [40000000000, 100000000000]

A ``fixed`` model with lists expands to every (latency, bandwidth) pair; the sweep is
local fraction x models (paper Figs. 3-5 and Table 3).

Noise control (issue #22, item 4; :mod:`disaggsim.swapdev.jct_stats`): each round runs the
zero-delay reference and then every point still unsettled, so the reference is interleaved
with the points, and each run of a point is paired with the reference run of its own
round (:func:`paired_jcts`): the relative JCT is the median of the rounds' ratios, with an
order-statistic interval of the rounds' ratios; after ``repeats`` rounds a point stops when
it has :data:`MIN_RUNS` pairs and its interval of the relative
JCT is within +-``half_width`` or lies wholly on one side of the 5 % threshold, and the
sweep stops at ``repeats_max`` rounds. A sequential design: the intervals are repeated
confidence intervals, covering at every number of pairs at once, so a verdict is wrong
with probability <= 2.5 % however the sweep stops, at any cap and after any top-up
(:mod:`~disaggsim.swapdev.jct_stats`). Each run records the
machine's load (1-minute load average at its end, the hypervisor's steal share during it).
A sweep is resumable: ``runs.csv`` is rewritten after every run with ``sweep.json`` (the
config; its run-defining part, all but the round keys, must match for a resume); running
the same config again reuses those runs, a round at a
time (:func:`emulate`): a round is the unit of resume, since its points are compared with
its own reference. A round that a window's end cut (not all of its runs, the reference and
the points its reference's row lists in ``round_points``, are in ``runs.csv``) is rerun
whole in the new window and its runs already made are dropped, so no point is compared
with a reference from another measurement window; ``start_utc`` says which window each run
came from. A complete round is never rerun, whatever the current stopping rule would have
run in it (:func:`round_plan`).

Outputs in ``out_dir/name`` (the device's own files stay in a temporary directory), each
written atomically:

- ``runs.csv``: one row per run: ``local_fraction, model, kind, latency_ns,
  bandwidth_bps, repeat, status`` (``ok``/``timeout``), ``jct_s`` (empty on timeout),
  ``load_1m`` and ``steal_fraction`` (see above),
  ``wall_s``, ``swap_in_bytes, swap_out_bytes`` (the device's own counters),
  ``swap_bandwidth_bytes_per_s`` (in + out over the JCT), ``memory_bandwidth_bytes_per_s``
  and ``memory_bandwidth_source`` (see :func:`memory_bandwidth_probe`), ``peak_rss_bytes``
  (presets: the data-holding processes' peak summed PSS, ``emulate_apps._PeakRss``, a
  check of the working set), ``start_utc`` (the run's start, UTC, ISO 8601 to the
  millisecond; empty for the kmod backend, whose runs share one guest boot, and in a
  runs.csv written before the column existed, which reads back as such),
  ``round_points`` (the reference's row: the labels of the points of its round, a JSON
  list, recorded before they run; :func:`round_plan`), ``boot_id`` (the boot the run ran
  in, :mod:`disaggsim.swapdev.machine`; empty in a runs.csv written before 2026-11-28);
- ``machine.json``: each measurement window's machine (CPU model, CPUs, kernel, memory,
  boot id) and its speed calibration (:mod:`disaggsim.swapdev.machine`); a resume in
  another boot says so on stderr (its rounds are pooled with the earlier ones);
- ``summary.csv``: per (local fraction, model), over the ``ok`` runs: ``repeats_ok,
  repeats_timeout, pairs`` (the rounds with an ``ok`` run of the point and of the
  reference), ``median_jct_s, min_jct_s, max_jct_s, relative_jct`` (the median over
  those rounds of JCT / the round's zero-delay JCT), ``relative_min, relative_max`` (the
  smallest and largest of those ratios), the medians of the bandwidth columns, ``ci_low,
  ci_high, ci_half_width`` (the relative JCT's interval), ``verdict`` (``pass``/``fail``/
  ``undecided`` at 5 %), ``load_1m_median`` and ``steal_fraction_max``;
- ``table3.csv``: per (latency, bandwidth) of the ``fixed`` models, the smallest local
  fraction keeping the degradation under 5 % (paper Table 3), see :func:`table3`;
- ``classification.csv``: per local fraction holding Figure 2's point (5 µs, 40 Gb/s),
  dolphin / shark / undecided (:func:`classify`);
- ``<name>.png``: relative JCT against latency per (fraction, bandwidth);
  ``<name>-fig6.png``: relative JCT against swap bandwidth (paper Fig. 6a).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import warnings
from dataclasses import MISSING, asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from disaggsim.atomic import atomic_path, write_text_atomic
from disaggsim.errors import InputError
from disaggsim.guards import read_text
from disaggsim.signals import StopRequest, interrupt_on_signals, stop_requests
from disaggsim.sim.config import ConfigError, config_location, load_config_model
from disaggsim.swapdev import (
    baselines,
    comex_params,
    device,
    emulate_apps,
    emulate_kmod,
    jct_stats,
    machine,
)
from disaggsim.swapdev.comex_params import NonNegInt
from disaggsim.testbed import collect_env, memcg_oom

#: Table 3's criterion: "performance degradation < 5%" (paper §3.2).
DEGRADATION_THRESHOLD = 1.05

#: Figure 2's grid (paper §3.2): end-to-end latencies 1, 3, 5, 10 µs ...
FIGURE2_LATENCIES_NS = [1000, 3000, 5000, 10000]
#: ... times bandwidths 10, 40, 100 Gb/s, at 25 % local memory (:data:`FIGURE2_FRACTION`).
FIGURE2_BANDWIDTHS_BPS = [10 * 10**9, 40 * 10**9, 100 * 10**9]
FIGURE2_FRACTION = 0.25
#: The dolphin / shark boundary (§3.2): dolphins stay within 5 % at 5 µs and 40 Gb/s.
CLASSIFY_LATENCY_NS = 5000
CLASSIFY_BANDWIDTH_BPS = 40 * 10**9
#: Pairs (rounds with an ``ok`` run of the point and of its reference) a point needs
#: before a verdict at the default confidence: 6, the first n at which the repeated
#: confidence sequence has an interval (:func:`jct_stats.min_pairs`: all n ratios on one
#: side of the median has probability 2^-n, 1.56 % <= 2.5 % at 6; bench/RESULTS.md
#: "Sequential verdicts").
MIN_RUNS = jct_stats.min_pairs()
Fraction = Annotated[float, Field(gt=0, le=1)]


class _Strict(BaseModel):
    """Strict types, no inf/nan (issue #21, class 8; as ``disaggsim.sim.config``)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


_as_list = comex_params.as_list
_check_grid = comex_params.check_grid


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
    repeats_max: int | None = Field(None, ge=1)
    half_width: float = Field(jct_stats.HALF_WIDTH, gt=0, lt=1)
    confidence: float = Field(jct_stats.CONFIDENCE, gt=0, lt=1)
    app_cpus: list[NonNegInt] | None = Field(None, min_length=1)
    handler_cpus: list[NonNegInt] | None = Field(None, min_length=1)
    #: SWAPDEV_SPIN_US for the uffd handler (None: the device's default, 500 us).
    handler_spin_us: NonNegInt | None = None

    @model_validator(mode="after")
    def _repeat_cap(self) -> EmulateSection:
        if self.repeats_max is not None and self.repeats_max < self.repeats:
            raise ValueError(
                f"repeats_max: {self.repeats_max} is less than repeats ({self.repeats})"
            )
        return self

    @property
    def max_rounds(self) -> int:
        """Rounds at most: ``repeats_max``, or ``repeats`` if not adaptive."""
        return self.repeats if self.repeats_max is None else self.repeats_max

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
    #: Overrides of the preset's collector config (its size): validated by that class.
    params: dict[str, int | float | str | bool] | None = None

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
        if self.params is not None:
            if self.preset is None or emulate_apps.PRESETS[self.preset].app is None:
                raise ValueError("params: only for a cluster preset (its collector config)")
            if self.working_set_bytes is None:
                raise ValueError(
                    "working_set_bytes: required with params (the preset's "
                    "is measured at its own size)"
                )
            self._sized_app()  # a bad field or value is an error here, naming it
        return self

    def _sized_app(self) -> emulate_apps.AppConfig:
        """The preset's collector config with ``params`` applied, validated by its class
        (raises ValueError naming the field and what it expected)."""
        assert self.preset is not None
        app = emulate_apps.PRESETS[self.preset].app
        assert app is not None and self.params is not None
        try:
            return type(app).model_validate({**app.model_dump(), **self.params})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "params"
            raise ValueError(f"params.{where}: {first['msg']} ({type(app).__name__})") from None

    @property
    def preset_spec(self) -> emulate_apps.Preset:
        """The preset (a command app is a preset without a cluster)."""
        if self.preset is not None:
            spec = emulate_apps.PRESETS[self.preset]
            if self.params is not None:
                spec = replace(spec, app=self._sized_app())
            if self.working_set_bytes is None:
                return spec
            return replace(spec, working_set_bytes=self.working_set_bytes)
        assert self.command is not None and self.working_set_bytes is not None
        return emulate_apps.Preset("command", self.working_set_bytes, tuple(self.command))

    @property
    def use_jemalloc(self) -> bool:
        return self.preset_spec.jemalloc if self.jemalloc is None else self.jemalloc


class ModelSection(_Strict):
    """``[[models]]``: one delay model (:class:`device.DelayModel`) or a local-swap
    ``baseline`` (:mod:`disaggsim.swapdev.baselines`: ``hdd-5400``, ``ssd-sata``); a
    ``fixed`` model's ``latency_ns`` (ns) and ``bandwidth_bps`` (bit/s) may be lists (their
    product). uffd: ``paging`` overrides ``[emulate] paging`` for this entry (a baseline's
    default is ``demand``, a swap to a local disk); ``[models.comex]`` sets the comex
    policy's parameters."""

    kind: str | None = None
    baseline: baselines.BaselineName | None = None
    paging: device.PagingPolicy | None = None
    comex: comex_params.ComexSection | None = None
    latency_ns: list[NonNegInt] = [0]
    bandwidth_bps: list[NonNegInt] = [0]
    fct_file: Annotated[Path | None, Field(strict=False)] = None
    fct_format: Literal["bytes-us", "pages-ns"] = "bytes-us"
    seed: int = 1
    label: str | None = None

    _grid = field_validator("latency_ns", "bandwidth_bps", mode="before")(_as_list)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        # "none" is the reference every sweep gets anyway.
        if v is None:
            return v
        return device.check_name(v, tuple(k for k in device.MODEL_NAMES if k != "none"), "kind")

    @field_validator("paging")
    @classmethod
    def _paging(cls, v: str | None) -> str | None:
        return None if v is None else device.check_name(v, device.PAGING_POLICIES, "paging")

    @field_validator("latency_ns", "bandwidth_bps")
    @classmethod
    def _values(cls, v: list[int]) -> list[int]:
        return _check_grid(v, "grid")

    @model_validator(mode="after")
    def _grid_only_fixed(self) -> ModelSection:
        if (self.kind is None) == (self.baseline is None):
            raise ValueError("give exactly one of kind and baseline")
        if self.baseline is not None:
            if len(self.latency_ns) * len(self.bandwidth_bps) > 1 or self.fct_file:
                raise ValueError(
                    "baseline: its parameters are fixed (swapdev/baselines.py); "
                    "no latency_ns/bandwidth_bps grid or fct_file"
                )
            return self
        assert self.kind is not None
        grid = len(self.latency_ns) * len(self.bandwidth_bps) > 1
        rate = device.MODEL_PARAMS[self.kind] == "rate"
        if grid and not rate:
            raise ValueError(
                "latency_ns/bandwidth_bps lists: only for a model configured by them (fixed, link)"
            )
        if grid and self.label is not None:
            raise ValueError("label: not with a latency/bandwidth grid (labels are made per point)")
        if device.MODEL_PARAMS[self.kind] == "table" and self.fct_file is None:
            raise ValueError(f'fct_file: required for kind = "{self.kind}"')
        return self


def figure2_models() -> list[ModelSection]:
    """Figure 2's grid as one ``fixed`` model (the default of ``[[models]]``)."""
    return [
        ModelSection(
            kind="fixed", latency_ns=FIGURE2_LATENCIES_NS, bandwidth_bps=FIGURE2_BANDWIDTHS_BPS
        )
    ]


class EmulateConfig(_Strict):
    """A whole emulate config; ``base_dir`` (set by the loader) resolves relative paths."""

    emulate: EmulateSection
    app: AppSection
    models: list[ModelSection] = Field(default_factory=figure2_models, min_length=1)
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
    _warn_undecidable(Path(path), cfg)
    return cfg


class UndecidableSweepWarning(UserWarning):
    """A sweep config that can run but never decide a point (:func:`load_emulate_config`)."""


def _warn_undecidable(path: Path, cfg: EmulateConfig) -> None:
    """Warn (once per load, one line naming the file, line and key) if ``repeats_max`` is
    below :data:`MIN_RUNS`: an adaptive sweep then stops before any point has the pairs a
    verdict needs, so every point stays undecided. A warning, not an error: such a sweep
    still measures each point's relative JCT and its range (the committed Spark grids,
    ``configs/app-study-spark-*-fig2.toml``, cap at 3 or 4 rounds to bound their time). A
    config without ``repeats_max`` runs a fixed ``repeats`` and asks for no verdict."""
    cap, need = cfg.emulate.repeats_max, jct_stats.min_pairs(cfg.emulate.confidence)
    if cap is not None and cap < need:
        warnings.warn(
            UndecidableSweepWarning(
                f"{config_location(path, ('emulate', 'repeats_max'))}: emulate.repeats_max: "
                f"{cap} rounds is below the {need} pairs a verdict needs (emulate.MIN_RUNS at "
                f"confidence {cfg.emulate.confidence:g}): every point of this sweep will stay "
                "undecided"
            ),
            stacklevel=3,
        )


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
    for i, m in enumerate(cfg.models):
        paging = m.paging or (baselines.BASELINE_PAGING if m.baseline else cfg.emulate.paging)
        if (m.paging is not None or m.comex is not None) and cfg.emulate.backend != "uffd":
            problems.append(
                f"{config_location(path, ('models', i))}: models[{i}]: paging "
                f'and comex: only for backend = "uffd"'
            )
        elif m.comex is not None and paging != comex_params.POLICY:
            problems.append(
                f"{config_location(path, ('models', i, 'comex'))}: models[{i}]."
                f'comex: only with paging = "{comex_params.POLICY}"'
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
    # The machine's CPUs, not this process's: a config names the machine's CPUs, and a
    # cpuset that keeps the checking process off some of them for a while (isolate.sh)
    # does not make the config wrong; _pinned reports a pin the sweep may not use.
    online = online_cpus()
    for key in ("app_cpus", "handler_cpus"):
        for cpu in getattr(cfg.emulate, key) or []:
            if cpu not in online:
                problems.append(
                    f"{config_location(path, ('emulate', key))}: emulate.{key}: CPU {cpu}: "
                    f"expected one of this machine's online CPUs {sorted(online)}"
                )
    if cfg.emulate.backend == "kmod" and (cfg.emulate.app_cpus or cfg.emulate.handler_cpus):
        problems.append(
            f"{config_location(path, ('emulate', 'backend'))}: emulate.backend: "
            "app_cpus/handler_cpus: expected swap or uffd (the kmod guest is "
            "one QEMU process)"
        )
    runs = len(expand_models(cfg)) * len(cfg.app.local_fraction) * cfg.emulate.max_rounds
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
    #: uffd: this point's paging policy (None: ``[emulate] paging``) and the comex
    #: policy's ``SWAPDEV_COMEX_*`` variables; ``baseline``: the local-swap baseline's name
    #: (:data:`baselines.BASELINE_NAMES`), "" for a network model.
    paging: str | None = None
    device_env: tuple[tuple[str, str], ...] = ()
    baseline: str = ""


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
        comex = m.comex.points() if m.comex is not None else [("", {})]
        if m.baseline is not None:
            model = baselines.baseline_model(m.baseline, baseline_dir(cfg))
            points.append(
                Point(
                    m.label or m.baseline,
                    model.kind,
                    model.latency_ns,
                    model.bandwidth_bps,
                    model,
                    m.paging or baselines.BASELINE_PAGING,
                    baseline=m.baseline,
                )
            )
            continue
        assert m.kind is not None
        for lat in m.latency_ns:
            for bw in m.bandwidth_bps:
                for suffix, env in comex:
                    label = (m.label or _label(m.kind, lat, bw, m.fct_file)) + suffix
                    model = device.DelayModel(m.kind, lat, bw, fct, m.fct_format, m.seed)
                    points.append(
                        Point(label, m.kind, lat, bw, model, m.paging, tuple(sorted(env.items())))
                    )
    labels = [p.label for p in points]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"models: the same point twice: {', '.join(dup)} (give labels)")
    return points


def baseline_dir(cfg: EmulateConfig) -> Path:
    """Where the baselines' delay tables are written: ``out_dir/name/baselines``."""
    return (cfg.base_dir / cfg.emulate.out_dir / cfg.emulate.name / "baselines").resolve()


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
    #: uffd: the paging policy; comex: its counters (``device.comex_counters``, summed
    #: over the data-holding processes) and the fault hit rate, (read-buffer hits +
    #: write-buffer hits) / (those + remote reads), COMEX Fig. 14's prefetch hit share.
    paging: str = ""
    comex_reads: int | None = None
    comex_read_hits: int | None = None
    comex_write_hits: int | None = None
    comex_prefetched_unused: int | None = None
    comex_write_batches: int | None = None

    load_1m: float | None = None
    steal_fraction: float | None = None
    #: the run's start, UTC, ISO 8601 (:func:`machine.utc_now`): which measurement window
    #: it ran in
    start_utc: str = ""
    #: the reference run's row only: the labels of the points its round runs after it (a
    #: JSON list), recorded before they run: what a resume checks the round against
    #: (:func:`round_plan`); empty on the points' rows and in older runs.csv files
    round_points: str = ""
    #: the boot the run ran in (:func:`machine.boot_id`; its window's machine and speed
    #: are in machine.json); empty in a runs.csv written before 2026-11-28
    boot_id: str = ""

    @property
    def hit_rate(self) -> float | None:
        """Faults served from COMEX's buffers over all faults on remote pages."""
        if (
            self.comex_reads is None
            or self.comex_read_hits is None
            or self.comex_write_hits is None
        ):
            return None
        hits = self.comex_read_hits + self.comex_write_hits
        return hits / (hits + self.comex_reads) if hits + self.comex_reads else None

    @property
    def swap_bandwidth_bytes_per_s(self) -> float | None:
        """Swap traffic (in + out) over the JCT."""
        if self.jct_s is None or self.swap_in_bytes is None or self.swap_out_bytes is None:
            return None
        return (self.swap_in_bytes + self.swap_out_bytes) / self.jct_s

    def row(self) -> dict[str, object]:
        out: dict[str, object] = asdict(self)
        out["swap_bandwidth_bytes_per_s"] = self.swap_bandwidth_bytes_per_s
        out["hit_rate"] = self.hit_rate
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
    proc = subprocess.run(
        ["perf", "stat", "-x", ",", "-e", ",".join(events), "true"], capture_output=True, text=True
    )
    if proc.returncode != 0 or "<not supported>" in proc.stderr or "<not counted>" in proc.stderr:
        return None, (
            f"unavailable: no hardware PMU here (perf stat -e {','.join(events)}: not supported)"
        )
    return events, "perf LLC-load-misses+LLC-store-misses x 64 B, system-wide"


@contextlib.contextmanager
def _perf_stat(events: list[str] | None, out: Path) -> Any:
    """System-wide ``perf stat`` over the block; yields a callable giving bytes (or None).
    ``perf`` gets SIGINT (it writes its counts and exits) when this process dies, even by
    SIGKILL (``setpriv --pdeathsig``, PR_SET_PDEATHSIG of prctl(2), kept across exec):
    a system-wide counter left running would load every later measurement."""
    if events is None:
        yield lambda: None
        return
    proc = subprocess.Popen(
        [
            "setpriv",
            "--pdeathsig",
            "INT",
            "perf",
            "stat",
            "-a",
            "-x",
            ",",
            "-o",
            str(out),
            "-e",
            ",".join(events),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
    cfg: EmulateConfig, pt: Point, local: int, work: Path
) -> emulate_apps.Outcome:
    """One run of a command application (a JCT = wall time from start to exit)."""
    model = pt.delay
    spec = cfg.app.preset_spec
    build = device.build_dir()
    argv = [part.replace("{build}", str(build)) for part in spec.command]
    timeout = cfg.emulate.timeout_s
    work.mkdir(parents=True, exist_ok=True)
    if cfg.emulate.backend == "uffd":
        # The command and every process it forks or execs on the device: one node, one
        # budget (emulate_apps' module docstring).
        with device.node_segment() as segment:
            extra = device.uffd_env(
                model,
                local,
                cfg.app.use_jemalloc,
                cfg.emulate.eviction,
                pt.paging or cfg.emulate.paging,
                segment.name,
            )
            extra.update(pt.device_env)
            extra["SWAPDEV_HIST"] = str(work / "uffd.hist")
            status, wall, proc = emulate_apps.run_command(argv, timeout, extra)
            node = segment.counters()
        counters = emulate_apps.device_counters(proc.stderr)
        if status == "ok" and proc.returncode == 0:
            cx = device.comex_counters(proc.stderr)
            return emulate_apps.Outcome(
                status,
                wall,
                *counters,
                wall,
                detail={"comex_counters": cx, "node_counters": [node]},
            )
    else:
        with collect_env.UndoStack() as stack:
            stack.enter_context(device.page_cluster(cfg.emulate.page_cluster))
            size = max(2 * spec.working_set_bytes, 64 << 20)
            dev = device.swap_device(
                stack, work, size - size % 4096, local, model, queue_depth=cfg.emulate.queue_depth
            )
            if cfg.emulate.handler_cpus:
                _pin_process(dev.daemon.pid, cfg.emulate.handler_cpus)
            status, wall, proc = emulate_apps.run_command(argv, timeout, {}, dev.memcg)
            oom = (dev.memcg / "memory.oom_control").read_text()
            if status == "ok" and proc.returncode != 0 and "oom_kill 0" not in oom:
                raise RuntimeError(
                    f"the memory cgroup's OOM killer ended the application under {model}: "
                    f"{local} bytes local are too few for the swap device's write-back "
                    "rate (memcg v1 gives up reclaim); raise app.local_fraction or use "
                    'backend = "uffd"'
                )
        counters = emulate_apps.device_counters(dev.log.read_text(errors="replace"))
    if status == "ok" and proc.returncode != 0:
        raise RuntimeError(
            f"application failed ({proc.returncode}) under {model}: {proc.stderr[-2000:]}"
        )
    return emulate_apps.Outcome(status, wall if status == "ok" else None, *counters, wall)


def _run_preset_with_retries(
    cfg: Any,
    session: Any,
    delay: Any,
    local: int,
    work: Path,
    paging: str | None = None,
    device_env: dict[str, str] | None = None,
) -> Any:
    """One run of a cluster preset; a run whose application a memory cgroup OOM-killed
    measured nothing and is repeated in a fresh directory (its logs kept), at most
    ``memcg_oom.OOM_ATTEMPTS`` times (memcg_oom.MemcgOomKill). ``paging`` and
    ``device_env``: the point's (:class:`Point`), over ``[emulate] paging``."""
    more = {"device_env": device_env} if device_env else {}
    for attempt in range(1, memcg_oom.OOM_ATTEMPTS + 1):
        run_dir = work if attempt == 1 else work.with_name(f"{work.name}-attempt{attempt}")
        try:
            return emulate_apps.run_preset_once(
                session,
                cfg.emulate.backend,
                delay,
                local,
                cfg.emulate.timeout_s,
                run_dir,
                cfg.emulate.page_cluster,
                cfg.app.use_jemalloc,
                cfg.emulate.eviction,
                paging or cfg.emulate.paging,
                cfg.emulate.queue_depth,
                **more,
            )
        except memcg_oom.MemcgOomKill as exc:
            if attempt == memcg_oom.OOM_ATTEMPTS:
                raise
            print(
                f"emulate: {str(exc).splitlines()[-1]} in {run_dir}; repeating the run "
                f"(attempt {attempt + 1}/{memcg_oom.OOM_ATTEMPTS})",
                file=sys.stderr,
                flush=True,
            )
    raise AssertionError("unreachable")


ONLINE_CPUS = Path("/sys/devices/system/cpu/online")


def online_cpus(path: Path = ONLINE_CPUS) -> set[int]:
    """The machine's online CPUs, from the kernel's cpulist ``path`` (``0-3,6,8-9``;
    Documentation/ABI/testing/sysfs-devices-system-cpu), whatever this process's affinity
    or cpuset; ``range(os.cpu_count())`` where the file is missing. Raises InputError on a
    file that is not a cpulist."""
    if not path.exists():
        return set(range(os.cpu_count() or 1))
    text = path.read_text().strip()
    cpus: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise InputError(path, 1, None, "a CPU list like 0-3,6", part)
        cpus.update(range(int(first), int(last if dash else first) + 1))
    return cpus


def _set_affinity(pid: int, cpus: list[int], key: str) -> None:
    """sched_setaffinity, with the error a cpuset narrower than ``cpus`` gives explained."""
    try:
        os.sched_setaffinity(pid, cpus)
    except ProcessLookupError:
        raise
    except OSError as exc:
        allowed = (
            Path(f"/proc/{pid or 'self'}/status")
            .read_text()
            .split("Cpus_allowed_list:")[1]
            .split()[0]
        )
        raise RuntimeError(
            f"emulate.{key} = {cpus}: this process may run on CPUs {allowed} only (a "
            f"cpuset, e.g. isolate.sh on: start the sweep inside the CPUs it pins to): "
            f"{exc.strerror}"
        ) from exc


def _pin_process(pid: int, cpus: list[int]) -> None:
    """Pin every thread of process ``pid`` to ``cpus`` (threads it creates later inherit)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):
            _set_affinity(int(task.name), cpus, "handler_cpus")


@contextlib.contextmanager
def _pinned(cfg: EmulateConfig) -> Any:
    """For the block: this process (and so every process the sweep starts) on
    ``app_cpus``; the uffd handler thread on ``handler_cpus`` (``SWAPDEV_HANDLER_CPUS``)
    spinning ``handler_spin_us`` (``SWAPDEV_SPIN_US``), both inherited by the
    applications; all restored after."""
    old_affinity = os.sched_getaffinity(0)
    names = ("SWAPDEV_HANDLER_CPUS", "SWAPDEV_SPIN_US")
    old_env = {name: os.environ.get(name) for name in names}
    try:
        if cfg.emulate.app_cpus:
            _set_affinity(0, cfg.emulate.app_cpus, "app_cpus")
        if cfg.emulate.handler_cpus:
            os.environ["SWAPDEV_HANDLER_CPUS"] = ",".join(map(str, cfg.emulate.handler_cpus))
        if cfg.emulate.handler_spin_us is not None:
            os.environ["SWAPDEV_SPIN_US"] = str(cfg.emulate.handler_spin_us)
        yield
    finally:
        os.sched_setaffinity(0, old_affinity)
        for name, value in old_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


#: ``[emulate]`` keys that decide how many runs a sweep makes, not what one run measures:
#: a sweep resumed with other values of these reuses the runs already made.
_ROUND_KEYS = ("repeats", "repeats_max", "half_width", "confidence", "timeout_s")


def _sweep_record(cfg: EmulateConfig) -> dict[str, Any]:
    """The whole config as JSON data (``sweep.json``, :func:`_sweep_json`): the
    run-defining part (:func:`_sweep_identity`) and the round keys (``_ROUND_KEYS``) it
    was last run with, which :func:`resummarize` needs (``confidence`` sets the interval,
    ``timeout_s`` a timed-out baseline's speed-up bound). A sweep.json written before
    2026-11-28 lacks the round keys; they then take their defaults."""
    return cfg.model_dump(mode="json", exclude={"base_dir": True})


def _sweep_identity(cfg: EmulateConfig) -> dict[str, Any]:
    """The config's run-defining part: :func:`_sweep_record` without the round keys and
    ``out_dir`` (where the sweep is, as ``base_dir``: a sweep moved or copied elsewhere
    resumes there, ``disaggsim emulate --out-dir``), what a reused run needs (a resume
    compares it, :func:`previous_runs`)."""
    data = _sweep_record(cfg)
    data["emulate"] = {
        k: v for k, v in data["emulate"].items() if k not in (*_ROUND_KEYS, "out_dir")
    }
    return data


def _sweep_json(data: dict[str, Any]) -> str:
    """``data`` as sweep.json's text: indented, keys sorted, one final newline."""
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


_RUN_TYPES = {name: f.type for name, f in Run.__dataclass_fields__.items()}
#: the columns an older runs.csv may lack: those with a default (start_utc, the COMEX
#: counters, paging), which such a row takes
_RUN_DEFAULTS = {
    name: f.default for name, f in Run.__dataclass_fields__.items() if f.default is not MISSING
}


def _run_from_row(
    row: dict[str, str], sweep: tuple[list[float], dict[str, Point]] | None = None
) -> Run:
    """A runs.csv row back into a :class:`Run` (empty cells are None; a column with a
    default that an older runs.csv lacks, such as ``start_utc`` or the COMEX counters,
    takes its default). A row of the first format (2026-11-24: ``model, latency_ns,
    repeat, jct_s``, e.g. bench/figures/requirements/sweep-local60/) lacks columns without
    a default; it takes them from ``sweep``, its config's local fractions and points by
    label (:func:`read_runs`): ``status`` ``ok`` (that emulate wrote a row only for a
    finished run; a failed run raised), ``local_fraction`` the config's only fraction,
    ``kind``, ``latency_ns`` and ``bandwidth_bps`` those of the point of that label.

    Raises:
        ValueError: a column missing that neither a default nor ``sweep`` gives (the
            message names it and what was expected).
    """
    row = dict(row)
    if "status" not in row and "jct_s" in row:
        row["status"] = "ok"
    if sweep is not None and "local_fraction" not in row:
        fractions = sweep[0]
        if len(fractions) != 1:
            raise ValueError(
                f"column 'local_fraction': missing, and the sweep's config has "
                f"{len(fractions)} fractions, not one"
            )
        row["local_fraction"] = repr(fractions[0])
    if sweep is not None and ("kind" not in row or "bandwidth_bps" not in row):
        point = sweep[1].get(row.get("model", ""))
        if point is None:
            raise ValueError(
                f"model {row.get('model')!r}: a point of the sweep's config "
                "(its kind and bandwidth are not in this older runs.csv)"
            )
        row.setdefault("kind", point.kind)
        row.setdefault("latency_ns", str(point.latency_ns))
        row.setdefault("bandwidth_bps", str(point.bandwidth_bps))
    values: dict[str, Any] = {}
    for name, kind in _RUN_TYPES.items():
        if name not in row and name in _RUN_DEFAULTS:
            continue
        if name not in row:
            raise ValueError(
                f"column {name!r}: missing (a runs.csv this old is read with its sweep's config)"
            )
        text = row[name]
        kind = str(kind)
        if text == "" and "None" in kind:
            values[name] = None
        elif kind.startswith("int"):
            values[name] = int(text)
        elif kind.startswith("float"):
            values[name] = float(text)
        else:
            values[name] = text
    return Run(**values)


def read_runs(table: Path, cfg: EmulateConfig | None = None) -> list[Run]:
    """The runs of a ``runs.csv``, of any format emulate wrote (:func:`_run_from_row`;
    ``cfg``, the sweep's config, is needed for the first one).

    Raises:
        InputError: a row that does not read back (naming the file, its line and why).
    """
    sweep = (
        None if cfg is None else (cfg.app.local_fraction, {p.label: p for p in expand_models(cfg)})
    )
    runs: list[Run] = []
    with open(table, newline="") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            try:
                runs.append(_run_from_row(row, sweep))
            except ValueError as exc:
                raise InputError(
                    table, reader.line_num, None, f"a run of emulate's runs.csv ({exc})"
                ) from None
    return runs


def _recorded_identity(stamp: Path) -> dict[str, Any] | None:
    """The run-defining part ``stamp`` (a ``sweep.json``) records, read by the one config
    loader (:func:`load_config_model`, as :func:`resummarize` reads it) through the current
    schema: a key added to the schema after the sweep ran takes its default, as the sweep
    ran without it (``[app] params`` was added after the first isolated grids,
    bench/RESULTS.md "Sixth rounds"); None if the stamp is no longer a valid config."""
    try:
        recorded, _ = load_config_model(stamp, EmulateConfig)
    except ConfigError:
        return None
    return _sweep_identity(recorded)


def _first_difference(recorded: object, current: object, path: str = "") -> str:
    """The first key path at which two JSON values differ, with both values."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        for key in sorted(recorded.keys() | current.keys()):
            if recorded.get(key, MISSING) != current.get(key, MISSING):
                return _first_difference(
                    recorded.get(key), current.get(key), f"{path}.{key}" if path else key
                )
    if isinstance(recorded, list) and isinstance(current, list) and len(recorded) == len(current):
        for i, (a, b) in enumerate(zip(recorded, current, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
    return f"{path}: recorded {json.dumps(recorded)}, this config {json.dumps(current)}"


def previous_runs(cfg: EmulateConfig, out: Path) -> dict[tuple[float, str, int], Run]:
    """The runs of an earlier, interrupted or finished, sweep of the same config in
    ``out``, by (local fraction, model, repeat); empty if there is none. The same config:
    ``sweep.json``, read through the current schema (:func:`_recorded_identity`), equals
    this config's run-defining part; the keys that only decide how many rounds run
    (``_ROUND_KEYS``) may differ.

    Raises:
        InputError: ``out`` holds a sweep of a different config (naming its sweep.json, the
            first key that differs and both values). Its runs are measurements: they are
            never replaced by another config's, so nothing is written.
    """
    stamp, table = out / "sweep.json", out / "runs.csv"
    if not table.is_file():
        return {}
    if not stamp.is_file():
        raise InputError(
            stamp,
            None,
            None,
            "the sweep.json beside runs.csv (the config "
            "its runs ran with); its runs are kept: give this config another "
            "[emulate] name, or move the directory away",
        )
    current = _sweep_identity(cfg)
    recorded = _recorded_identity(stamp)
    if recorded != current:
        differs = (
            "it no longer reads as an emulate config"
            if recorded is None
            else _first_difference(recorded, current)
        )
        raise InputError(
            stamp,
            None,
            None,
            "the config this sweep's runs ran with, to "
            "resume it; its runs are kept: give this config another [emulate] "
            "name, or move the directory away",
            got=differs,
        )
    return {(r.local_fraction, r.model, r.repeat): r for r in read_runs(table, cfg)}


@dataclass(frozen=True)
class Pairs:
    """A point's ``ok`` JCTs (s) paired by round with its fraction's zero-delay reference:
    ``point[i]`` and ``reference[i]`` ran in round ``rounds[i]`` (ascending);
    ``unpaired``: the rounds with an ``ok`` run of the point but none of the reference,
    whose runs are left out of the ratio."""

    rounds: list[int]
    point: list[float]
    reference: list[float]
    unpaired: int


def _round_jcts(runs: list[Run], fraction: float, label: str) -> dict[int, float]:
    """Per round, the ``ok`` JCT (s) of ``label`` at ``fraction``. A sweep runs each point
    once per round (runs are keyed by fraction, model and round, :func:`previous_runs`; a
    cut round is rerun whole and its earlier runs dropped); a table holding several ``ok``
    runs of one model in one round gives that round their median."""
    by_round: dict[int, list[float]] = {}
    for r in runs:
        if (
            r.local_fraction == fraction
            and r.model == label
            and r.status == "ok"
            and r.jct_s is not None
        ):
            by_round.setdefault(r.repeat, []).append(float(r.jct_s))
    return {rep: statistics.median(jcts) for rep, jcts in by_round.items()}


def paired_jcts(runs: list[Run], fraction: float, label: str) -> Pairs:
    """Point ``label``'s JCTs at ``fraction`` paired with the zero-delay reference's of the
    same round (``repeat``): each round runs the reference and then the points still
    unsettled, so a drift of the machine's speed between rounds or measurement windows
    (5 % between two isolated windows here, bench/RESULTS.md "Application study (#22)")
    reaches both runs of a round and cancels in their ratio. A point's run in a round whose
    reference has no ``ok`` run is never paired with another round's reference: it is left
    out and counted (``unpaired``)."""
    mine = _round_jcts(runs, fraction, label)
    ref = _round_jcts(runs, fraction, "none")
    rounds = sorted(rep for rep in mine if rep in ref)
    return Pairs(
        rounds, [mine[rep] for rep in rounds], [ref[rep] for rep in rounds], len(mine) - len(rounds)
    )


def _unsettled(
    cfg: EmulateConfig, runs: list[Run], fraction: float, points: list[Point]
) -> list[Point]:
    """The points of ``fraction`` that need another round: no pair (:func:`paired_jcts`)
    or an interval not :func:`jct_stats.settled` (fewer than :data:`MIN_RUNS` pairs: not
    decisive, never settled)."""
    out = []
    for pt in points:
        pairs = paired_jcts(runs, fraction, pt.label)
        if not pairs.rounds:
            out.append(pt)  # no pair yet (or timeouts): try again
            continue
        ci = jct_stats.paired_ratio_ci(pairs.point, pairs.reference, cfg.emulate.confidence)
        if not jct_stats.settled(ci, DEGRADATION_THRESHOLD, cfg.emulate.half_width):
            out.append(pt)
    return out


@dataclass(frozen=True)
class RoundPlan:
    """What a sweep does with round ``rep`` of a local fraction (:func:`round_plan`):
    ``reused``, the runs of a complete round from the earlier sweep (runs.csv order), or
    ``active``, the points to run after the reference, with ``dropped`` runs of that
    round, cut by a window's end, made again. Neither: the fraction is done."""

    reused: list[Run]
    active: list[Point]
    dropped: int


def round_plan(
    cfg: EmulateConfig,
    points: list[Point],
    done: dict[tuple[float, str, int], Run],
    runs: list[Run],
    fraction: float,
    rep: int,
) -> RoundPlan:
    """Round ``rep`` at ``fraction`` on a (resumed) sweep; ``points[0]`` is the reference,
    ``done`` the earlier sweep's runs (:func:`previous_runs`), ``runs`` this sweep's so far.

    A round records its plan, the labels of the points it runs, in its reference's row
    (``round_points``) before any of them runs. It is complete, and reused with all its
    runs, when every planned point has a run; else a window's end cut it, and it is run
    again whole. A round the earlier sweep did not reach runs every point in the first
    ``repeats`` rounds, then the points not yet settled (:func:`_unsettled`) under the
    current rule. So a changed stopping rule (``emulate.MIN_RUNS``, ``half_width``, the
    estimator) adds rounds where it needs more and never reruns a measured round.

    Rounds of a runs.csv older than ``round_points`` have no plan and are reused as they
    are: which points such a round meant to run cannot be told from its runs (judging it
    by the current rule reran complete rounds after the paired estimator raised
    ``MIN_RUNS``: bench/RESULTS.md "Top-up rounds"). Its runs are still paired within the
    round, so one cut by a window's end only lacks some points' runs of that round.
    """
    mine = [r for r in done.values() if r.local_fraction == fraction and r.repeat == rep]
    ref = done.get((fraction, points[0].label, rep))
    if mine and (ref is None or not ref.round_points):
        return RoundPlan(mine, [], 0)  # no plan recorded: reused as it is
    if ref is not None and all(
        (fraction, label, rep) in done for label in json.loads(ref.round_points)
    ):
        return RoundPlan(mine, [], 0)
    active = (
        points[1:] if rep < cfg.emulate.repeats else _unsettled(cfg, runs, fraction, points[1:])
    )
    if not active:  # nothing left to run: a cut round's runs are kept, not dropped
        return RoundPlan(mine, [], 0)
    return RoundPlan([], active, len(mine))


def emulate(cfg: EmulateConfig, progress: bool = True) -> Path:
    """Run the config's sweep (root; under the machine-state lock for the swap backend and
    the cluster presets); returns the out dir.

    Order: fraction-major, then round-major: each round runs the zero-delay reference and
    then every point not yet settled (all of them in the first ``repeats`` rounds), so
    slow drifts of a shared machine spread over all models and the reference. A run over
    ``timeout_s`` is killed (a command's: every process it started, by its process cgroup,
    :func:`emulate_apps.run_command`), reported (console and runs.csv) and left out of
    the medians.
    Runs of an earlier sweep of the same config in the out dir are reused
    (:func:`previous_runs`) a round at a time (:func:`round_plan`): a round whose planned
    runs (the reference and the points its reference's row lists) are not all there was
    cut by the end of a measurement window; it is rerun whole, its runs already made
    dropped (one progress line says so), so that its points are compared with a reference
    of their own window (:func:`paired_jcts`). Raises RuntimeError if a run fails,
    ValueError on duplicate model labels, disaggsim.signals.Interrupted on SIGINT, SIGTERM
    or SIGHUP (after undoing everything, :func:`disaggsim.signals.interrupt_on_signals`;
    ``runs.csv`` keeps the finished runs).
    SIGUSR1 (:func:`disaggsim.signals.stop_requests`) ends the sweep normally after the
    round in progress, its outputs written as for a complete sweep (a line says so, also
    with ``progress`` off): nothing is cut, and the same config resumes with the next round.
    """
    # SIGUSR1: stop after the round in progress (the kmod backend: after its one guest boot).
    unit = "sweep (one guest boot)" if cfg.emulate.backend == "kmod" else "round"
    with stop_requests(unit) as stop:
        return _emulate(cfg, stop, progress)


def _emulate(cfg: EmulateConfig, stop: StopRequest, progress: bool) -> Path:
    """:func:`emulate`'s body; ``stop``: set by SIGUSR1, checked after each round."""
    out = (cfg.base_dir / cfg.emulate.out_dir / cfg.emulate.name).resolve()
    points = expand_models(cfg)
    spec = cfg.app.preset_spec
    baselines.write_tables([p.baseline for p in points if p.baseline], baseline_dir(cfg))
    if cfg.emulate.backend == "kmod":
        host = machine.this_window(machine.utc_now())  # the guest's host, written last
        with device.system_lock():
            kmod_runs = [
                replace(r, boot_id=host.boot_id) for r in _kmod_runs(cfg, points, progress)
            ]
        _write_outputs(cfg, out, kmod_runs)
        machine.write_log(out, [host])
        return out
    done = previous_runs(cfg, out)
    if done and progress:
        print(f"resuming: {len(done)} runs found in {out / 'runs.csv'}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "sweep.json", _sweep_json(_sweep_record(cfg)))
    events, mem_source = memory_bandwidth_probe()
    if progress:
        print(f"memory bandwidth: {mem_source}", flush=True)
    runs: list[Run] = []
    # The swap backend and the cluster presets change machine state.
    locked = cfg.emulate.backend == "swap" or spec.app is not None
    lock = device.system_lock() if locked else contextlib.nullcontext()
    # SIGTERM/SIGHUP unwind as Ctrl-C (also for a caller other than the CLI).
    with interrupt_on_signals(), lock, collect_env.UndoStack() as stack, _pinned(cfg):
        tmp = Path(
            stack.enter_context(
                tempfile.TemporaryDirectory(
                    prefix=f"disaggsim-emulate-{os.getpid()}-", dir="/var/tmp"
                )
            )
        )
        tmp.chmod(0o711)  # memcached runs as "nobody": its device writes into a run dir
        session = None
        here: machine.Window | None = None
        rerun: set[tuple[float, int]] = set()  # rounds this sweep runs anew
        for fraction in cfg.app.local_fraction:
            if stop.requested:
                break
            local = int(spec.working_set_bytes * fraction)
            for rep in range(cfg.emulate.max_rounds):
                plan = round_plan(cfg, points, done, runs, fraction, rep)
                runs.extend(plan.reused)  # a complete round
                if not plan.active:
                    if plan.reused:
                        continue
                    break
                rerun.add((fraction, rep))
                if plan.dropped and progress:
                    print(
                        f"round {rep} at local {fraction:.0%} was cut by the end of a "
                        f"window: rerunning it whole, {plan.dropped} runs dropped",
                        flush=True,
                    )
                planned = json.dumps([pt.label for pt in plan.active])
                for pt in [points[0], *plan.active]:
                    if session is None and spec.app is not None:
                        session = stack.enter_context(
                            emulate_apps.cluster_session(stack, spec, tmp)
                        )
                    if here is None:  # this window's first run
                        here = _record_window(out, done)
                    work = tmp / f"{fraction}-{pt.label}-{rep}"
                    start_utc = machine.utc_now()
                    load_before = jct_stats.read_cpu_times()
                    with _perf_stat(events, tmp / "perf.txt") as mem_bytes:
                        if spec.app is None:
                            res = _run_command_once(cfg, pt, local, work)
                        else:
                            assert session is not None  # opened above for a preset
                            res = _run_preset_with_retries(
                                cfg, session, pt.delay, local, work, pt.paging, dict(pt.device_env)
                            )
                            # The holders' logs hold the device's exit summaries.
                            logs = [
                                log
                                for log in session.cluster.logs.values()
                                if log.name.startswith(spec.holders) and log.exists()
                            ]
                            res.detail["comex_counters"] = device.comex_counters(
                                "".join(log.read_text(errors="replace") for log in logs)
                            )
                    steal = jct_stats.steal_fraction(load_before, jct_stats.read_cpu_times())
                    mem = mem_bytes()
                    cx: dict[str, int] = dict(res.detail.get("comex_counters") or {})  # type: ignore[call-overload]
                    paging = (
                        "" if cfg.emulate.backend != "uffd" else (pt.paging or cfg.emulate.paging)
                    )
                    run = Run(
                        fraction,
                        pt.label,
                        pt.kind,
                        pt.latency_ns,
                        pt.bandwidth_bps,
                        rep,
                        res.status,
                        res.jct_s,
                        res.wall_s,
                        res.swap_in_bytes,
                        res.swap_out_bytes,
                        None if mem is None else mem / res.wall_s,
                        mem_source,
                        res.peak_rss_bytes,
                        paging,
                        cx.get("reads"),
                        cx.get("read_hits"),
                        cx.get("write_hits"),
                        cx.get("prefetched_unused"),
                        cx.get("write_batches"),
                        jct_stats.load_average_1m(),
                        steal,
                        start_utc,
                        planned if pt is points[0] else "",
                        here.boot_id,
                    )
                    runs.append(run)
                    with atomic_path(out / "runs.csv") as part:  # resumable (see above)
                        part.write_text(
                            _csv_text([r.row() for r in sweep_table(done, runs, rerun)])
                        )
                    if progress:
                        _print_run(run, cfg.emulate.timeout_s)
                if stop.requested:  # SIGUSR1 (after this complete round)
                    print(
                        f"stopped on SIGUSR1 after round {rep} at local {fraction:.0%}: the "
                        "same command resumes with the next round",
                        flush=True,
                    )
                    break
    if here is None:  # every run reused: runs.csv stays as it is, in its own columns
        _write_summaries(cfg, out, sweep_table(done, runs, rerun))
    else:
        _write_outputs(cfg, out, sweep_table(done, runs, rerun))
    return out


def _record_window(out: Path, done: dict[tuple[float, str, int], Run]) -> machine.Window:
    """Record this window's machine in ``out/machine.json`` (:func:`machine.record_window`,
    at its first run: on the CPUs the runs use, a window that reuses every run records
    none) and say on stderr if the earlier runs (``done``) ran in another boot."""
    here = machine.record_window(out, machine.utc_now(), resumed=bool(done))
    if others := machine.other_boots((r.boot_id for r in done.values()), here.boot_id):
        print(
            f"disaggsim emulate: {out / 'runs.csv'}: resuming in boot {here.boot_id}, "
            f"its runs so far ran in {', '.join(others)}: rounds from each are pooled; "
            f"{out / 'machine.json'} has each window's machine and speed",
            file=sys.stderr,
            flush=True,
        )
    return here


def sweep_table(
    done: dict[tuple[float, str, int], Run], runs: list[Run], rerun: set[tuple[float, int]]
) -> list[Run]:
    """The rows of a resumed sweep's ``runs.csv`` at any moment: this sweep's ``runs`` (the
    earlier rounds it reused and the runs it made), then every run of the earlier sweep
    (``done``, :func:`previous_runs`) it has not reached, a later local fraction or round
    or one past the cap, except the rounds it runs anew (``rerun``: (fraction, round), cut
    rounds run again whole). So a window's end, a signal or a lowered ``repeats_max`` never
    drops a measured run: only a round run anew replaces its earlier runs (bench/RESULTS.md
    "Sixth rounds": the table used to hold only the runs reached so far, and a sweep
    stopped in an earlier fraction lost the later fractions' runs)."""
    made = {(r.local_fraction, r.model, r.repeat) for r in runs}
    return runs + [
        r
        for key, r in done.items()
        if key not in made and (r.local_fraction, r.repeat) not in rerun
    ]


def _kmod_runs(cfg: EmulateConfig, points: list[Point], progress: bool) -> list[Run]:
    """The sweep on the kernel module: every run in one guest boot, in emulate's order."""
    spec = cfg.app.preset_spec
    if cfg.app.command is None:
        raise ValueError('backend = "kmod": only app.command (memtouch) runs in the guest')
    order = [
        (fraction, rep, pt)
        for fraction in cfg.app.local_fraction
        for rep in range(cfg.emulate.repeats)
        for pt in points
    ]
    outcomes = emulate_kmod.run_sweep(
        [(pt.delay, int(spec.working_set_bytes * fraction)) for fraction, _, pt in order],
        cfg.app.command,
        cfg.emulate.timeout_s,
    )
    runs = []
    for (fraction, rep, pt), res in zip(order, outcomes, strict=True):
        if res["status"] != "ok":
            raise RuntimeError(f"memtouch {res['status']} in the kmod guest under {pt.delay}")
        run = Run(
            fraction,
            pt.label,
            pt.kind,
            pt.latency_ns,
            pt.bandwidth_bps,
            rep,
            "ok",
            res["jct_s"],
            res["jct_s"],
            res["swap_in_bytes"],
            res["swap_out_bytes"],
            None,
            "unavailable: QEMU TCG guest",
        )
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
    print(
        f"{head} {run.jct_s:.3f} s, swap {0 if bw is None else bw / 1e6:.1f} MB/s, "
        f"load {run.load_1m}, steal {run.steal_fraction or 0:.1%}",
        flush=True,
    )


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def summarize(
    runs: list[Run],
    confidence: float = jct_stats.CONFIDENCE,
    threshold: float = DEGRADATION_THRESHOLD,
) -> list[dict[str, object]]:
    """Per (local fraction, model), over the ``ok`` runs: ``repeats_ok``,
    ``repeats_timeout``, ``pairs`` (:func:`paired_jcts`: the rounds with an ``ok`` run of
    the point and of the reference), median/min/max JCT; ``relative_jct``, the median over
    the pairs of JCT / the round's zero-delay JCT, with its interval
    (:func:`jct_stats.paired_ratio_ci` at ``confidence``) and ``relative_min`` /
    ``relative_max``, the smallest and largest of those ratios; the verdict at
    ``threshold`` (``undecided`` below :data:`MIN_RUNS` pairs, where the interval shown is
    the ratios' range); the medians of the
    bandwidths, the runs' median load average and largest steal share.

    The reference's own row has no interval nor verdict: its ``pairs`` is its ``ok`` runs,
    its ``relative_*`` columns its median, smallest and largest JCT over its median (1 and
    its spread).
    Timed-out runs are only counted (``repeats_timeout``); a point's ``ok`` run in a round
    without an ``ok`` reference run is in its JCT columns but not in a pair
    (``repeats_ok`` - ``pairs``); a point (or a fraction's reference) with no pair has
    empty relative columns.
    """
    rows: list[dict[str, object]] = []
    keys = dict.fromkeys((r.local_fraction, r.model) for r in runs)
    for fraction, label in keys:
        mine = [r for r in runs if r.local_fraction == fraction and r.model == label]
        ok = [r for r in mine if r.status == "ok" and r.jct_s is not None]
        jcts = [float(r.jct_s) for r in ok if r.jct_s is not None]
        med = statistics.median(jcts) if jcts else None
        ci: jct_stats.RatioInterval | None = None
        if label == "none":
            pairs = len(jcts)
            ratios = [j / med for j in jcts] if med else []
            relative = 1.0 if med else None
        else:
            paired = paired_jcts(runs, fraction, label)
            pairs = len(paired.rounds)
            ratios = [p / r for p, r in zip(paired.point, paired.reference, strict=True)]
            if pairs:
                ci = jct_stats.paired_ratio_ci(paired.point, paired.reference, confidence)
            relative = None if ci is None else ci.estimate
        steals = [r.steal_fraction for r in mine if r.steal_fraction is not None]
        rows.append(
            {
                "local_fraction": fraction,
                "model": label,
                "kind": mine[0].kind,
                "latency_ns": mine[0].latency_ns,
                "bandwidth_bps": mine[0].bandwidth_bps,
                "repeats_ok": len(ok),
                "repeats_timeout": len(mine) - len(ok),
                "pairs": pairs,
                "median_jct_s": med,
                "min_jct_s": min(jcts) if jcts else None,
                "max_jct_s": max(jcts) if jcts else None,
                "relative_jct": relative,
                "relative_min": min(ratios) if ratios else None,
                "relative_max": max(ratios) if ratios else None,
                "swap_in_bytes": _median([r.swap_in_bytes for r in ok]),
                "swap_out_bytes": _median([r.swap_out_bytes for r in ok]),
                "swap_bandwidth_bytes_per_s": _median([r.swap_bandwidth_bytes_per_s for r in ok]),
                "memory_bandwidth_bytes_per_s": _median(
                    [r.memory_bandwidth_bytes_per_s for r in ok]
                ),
                "memory_bandwidth_source": mine[0].memory_bandwidth_source,
                "paging": mine[0].paging,
                "hit_rate": _median([r.hit_rate for r in ok]),
                "ci_low": None if ci is None else ci.low,
                "ci_high": None if ci is None else ci.high,
                "ci_half_width": None if ci is None else ci.half_width,
                "verdict": None if ci is None else jct_stats.verdict(ci, threshold),
                "load_1m_median": _median([r.load_1m for r in mine]),
                "steal_fraction_max": max(steals) if steals else None,
            }
        )
    return rows


def speedups(
    summary: list[dict[str, object]], baseline_labels: list[str], timeout_s: float
) -> list[dict[str, object]]:
    """COMEX's "speed-up over local swap" (paper 002 Figs. 13, 17): per local fraction,
    per baseline point ``b`` and every other point ``m`` but the zero-delay reference,
    ``speedup = median JCT(b) / median JCT(m)``. A baseline whose runs all timed out gives
    ``speedup_at_least = timeout_s / median JCT(m)`` instead (the baseline took longer
    than ``timeout_s``); a point without a result gives neither."""
    out: list[dict[str, object]] = []
    for fraction in dict.fromkeys(r["local_fraction"] for r in summary):
        here = [r for r in summary if r["local_fraction"] == fraction]
        for base in (r for r in here if r["model"] in baseline_labels):
            for row in here:
                if row["model"] in baseline_labels or row["model"] == "none":
                    continue
                jct, bjct = row["median_jct_s"], base["median_jct_s"]
                speed = at_least = None
                if jct is not None and bjct is not None:
                    speed = float(str(bjct)) / float(str(jct))
                elif jct is not None and base["repeats_timeout"]:
                    at_least = timeout_s / float(str(jct))
                out.append(
                    {
                        "local_fraction": fraction,
                        "baseline": base["model"],
                        "model": row["model"],
                        "baseline_median_jct_s": bjct,
                        "median_jct_s": jct,
                        "speedup": speed,
                        "speedup_at_least": at_least,
                    }
                )
    return out


def table3(
    summary: list[dict[str, object]], threshold: float = DEGRADATION_THRESHOLD
) -> list[dict[str, object]]:
    """Paper Table 3: per (latency, bandwidth) of the ``fixed`` models, the smallest local
    fraction f whose point passes (its interval wholly at or below ``threshold``,
    :func:`jct_stats.verdict`) at f and at every larger measured fraction, so one lucky
    point below a failing one does not count.

    ``status`` is ``decided`` when the walk down from the largest fraction ends on a fail
    or at the smallest fraction, ``undecided`` when it ends on an undecided point (the
    true requirement may then be lower) or on a point without a result (every run timed
    out). ``min_local_fraction`` is empty if even the largest fraction does not pass.
    """
    out: list[dict[str, object]] = []
    fixed = [r for r in summary if r["kind"] == "fixed"]
    for lat, bw in dict.fromkeys((r["latency_ns"], r["bandwidth_bps"]) for r in fixed):
        pts = sorted(
            (
                (float(str(r["local_fraction"])), r.get("verdict"))
                for r in fixed
                if r["latency_ns"] == lat and r["bandwidth_bps"] == bw
            ),
            reverse=True,
        )
        best: float | None = None
        status = "decided"
        for fraction, point_verdict in pts:
            if point_verdict != "pass":
                status = "decided" if point_verdict == "fail" else "undecided"
                break
            best = fraction
        out.append(
            {
                "latency_ns": lat,
                "bandwidth_bps": bw,
                "threshold": threshold,
                "fractions": " ".join(f"{f:g}" for f, _ in sorted(pts)),
                "min_local_fraction": best,
                "status": status,
            }
        )
    return out


def classify(summary: list[dict[str, object]]) -> list[dict[str, object]]:
    """The paper's dolphins and sharks (§3.2, Figure 2), per local fraction holding the
    ``fixed`` point at :data:`CLASSIFY_LATENCY_NS` / :data:`CLASSIFY_BANDWIDTH_BPS`:
    ``class`` (:func:`jct_stats.app_class` of that point's verdict), its relative JCT,
    interval and rounds paired (``pairs``), and what the application needs to stay
    within 5 % at 40 and at 100 Gb/s: ``max_latency_ns_at_<G>gbps``, the largest swept
    latency whose point passes with every smaller swept latency passing too (empty if
    none), and ``status_at_<G>gbps``, ``undecided`` if the first latency that does not
    pass is undecided.
    Fig. 2's paper reading: dolphins need 5 µs and 40 Gb/s, sharks 3 µs and 40-100 Gb/s.
    """
    out: list[dict[str, object]] = []
    fixed = [r for r in summary if r["kind"] == "fixed"]
    for fraction in dict.fromkeys(r["local_fraction"] for r in fixed):
        here = {
            (int(str(r["latency_ns"])), int(str(r["bandwidth_bps"]))): r
            for r in fixed
            if r["local_fraction"] == fraction
        }
        point = here.get((CLASSIFY_LATENCY_NS, CLASSIFY_BANDWIDTH_BPS))
        if point is None:
            continue
        row: dict[str, object] = {
            "local_fraction": fraction,
            "class": "undecided"
            if point["verdict"] is None
            else jct_stats.app_class(point["verdict"]),  # type: ignore[arg-type]
            "relative_jct": point["relative_jct"],
            "ci_low": point["ci_low"],
            "ci_high": point["ci_high"],
            "pairs": point["pairs"],
        }
        for bw in (40 * 10**9, 100 * 10**9):
            best: int | None = None
            status = "decided"
            for lat in sorted(lat for lat, b in here if b == bw):
                v = here[lat, bw]["verdict"]
                if v != "pass":
                    status = "decided" if v == "fail" else "undecided"
                    break
                best = lat
            row[f"max_latency_ns_at_{bw // 10**9}gbps"] = best
            row[f"status_at_{bw // 10**9}gbps"] = status
        out.append(row)
    return out


def read_classification(out: Path) -> list[dict[str, object]]:
    """``classification.csv`` of a sweep's out dir, with its numbers typed again."""
    rows: list[dict[str, object]] = []
    with open(out / "classification.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            typed: dict[str, object] = dict(row)
            for key, text in row.items():
                if key.startswith("max_latency"):
                    typed[key] = int(text) if text else None
            rows.append(typed)
    return rows


def format_classification(rows: list[dict[str, object]]) -> str:
    """The classification as a text table (what ``disaggsim classify`` prints)."""
    lines = [
        f"{'local':>6} {'class':>10} {'JCT ratio at 5 us, 40 Gb/s (95% CI)':>36} "
        f"{'pairs':>5} {'needs at 40 Gb/s':>17} {'at 100 Gb/s':>12}"
    ]
    for r in rows:

        def need(gbps: int, r: dict[str, object] = r) -> str:
            v = r[f"max_latency_ns_at_{gbps}gbps"]
            text = "none" if v is None else f"{int(str(v)) / 1000:g} us"
            return text + ("?" if r[f"status_at_{gbps}gbps"] == "undecided" else "")

        rel = (
            ""
            if r["relative_jct"] in (None, "")
            else (
                f"{float(str(r['relative_jct'])):.3f} ({float(str(r['ci_low'])):.3f}-"
                f"{float(str(r['ci_high'])):.3f})"
            )
        )
        lines.append(
            f"{float(str(r['local_fraction'])):>6.0%} {str(r['class']):>10} "
            f"{rel:>36} {str(r['pairs']):>5} "
            f"{need(40):>17} {need(100):>12}"
        )
    lines.append(
        "needs: the largest swept latency within 5 % (with every smaller one); "
        "'?': the next latency is undecided"
    )
    return "\n".join(lines) + "\n"


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
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "runs.csv") as tmp:
        tmp.write_text(_csv_text([r.row() for r in runs]))
    _write_summaries(cfg, out, runs)


def resummarize(out: Path, cfg: EmulateConfig | None = None) -> Path:
    """Rewrite a sweep's summaries (``summary.csv``, ``speedup.csv``, ``table3.csv``,
    ``classification.csv`` and the plots) from its ``runs.csv`` and ``sweep.json`` alone,
    running nothing and leaving those two as they are: what a change of the estimator
    needs (bench/app_study_resummarize.py). A ``sweep.json`` written before 2026-11-28
    lacks the round keys (``_ROUND_KEYS``, :func:`_sweep_record`); they take their
    defaults: ``confidence`` 0.95, ``timeout_s`` 600 s (the lower bound of a timed-out
    baseline's speed-up; every such committed sweep has no baseline). Returns ``out``.

    ``cfg``: the sweep's config, for a sweep made before emulate wrote ``sweep.json``
    (2026-11-25) or one of an older ``runs.csv`` format (:func:`read_runs`), given by the
    caller (bench/emulate_resummarize.py); ``sweep.json`` is then not read.

    Raises:
        InputError: ``runs.csv`` missing, ``sweep.json`` missing (without ``cfg``), or a
            row of ``runs.csv`` that does not read back (naming the file and the first
            problem).
        ConfigError: ``sweep.json`` is not an emulate config (the one config loader,
            :func:`disaggsim.sim.config.load_config_model`, naming the file and key).
    """
    stamp, table = out / "sweep.json", out / "runs.csv"
    for path in (stamp, table) if cfg is None else (table,):
        if not path.is_file():
            raise InputError(
                path,
                None,
                None,
                "a sweep's file (emulate writes runs.csv and sweep.json in its out dir)",
                "no such file",
            )
    if cfg is None:
        cfg, _ = load_config_model(stamp, EmulateConfig)
    _write_summaries(cfg, out, read_runs(table, cfg))
    return out


def _write_summaries(cfg: EmulateConfig, out: Path, runs: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarize(runs, cfg.emulate.confidence)
    with atomic_path(out / "summary.csv") as tmp:
        tmp.write_text(_csv_text(rows))
    bases = [p.label for p in expand_models(cfg) if p.baseline]
    if bases:
        with atomic_path(out / "speedup.csv") as tmp:
            tmp.write_text(_csv_text(speedups(rows, bases, cfg.emulate.timeout_s)))
    t3 = table3(rows)
    if t3:
        with atomic_path(out / "table3.csv") as tmp:
            tmp.write_text(_csv_text(t3))
    classes = classify(rows)
    if classes:
        write_text_atomic(out / "classification.csv", _csv_text(classes))
    ok = [r for r in rows if r["relative_jct"] is not None]
    app = cfg.app.preset or cfg.emulate.name
    title = f"{cfg.emulate.name}: {app}, {cfg.emulate.backend}"

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    groups = dict.fromkeys(
        (r["local_fraction"], r["bandwidth_bps"]) for r in ok if r["kind"] == "fixed"
    )
    for fraction, bw in groups:
        pts = sorted(
            [r for r in ok if r["model"] == "none" and r["local_fraction"] == fraction]
            + [
                r
                for r in ok
                if r["kind"] == "fixed"
                and r["local_fraction"] == fraction
                and r["bandwidth_bps"] == bw
            ],
            key=lambda r: float(str(r["latency_ns"])),
        )
        x = [float(str(r["latency_ns"])) / 1000 for r in pts]
        y = [float(str(r["relative_jct"])) for r in pts]
        lo = [yi - float(str(r["relative_min"])) for yi, r in zip(y, pts, strict=True)]
        hi = [float(str(r["relative_max"])) - yi for yi, r in zip(y, pts, strict=True)]
        bw_text = f", {float(str(bw)) / 1e9:g} Gb/s" if bw else ""
        ax.errorbar(
            x,
            y,
            yerr=[lo, hi],
            marker="o",
            capsize=3,
            label=f"local {float(str(fraction)):.0%}{bw_text}",
        )
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
        pts = [
            r
            for r in ok
            if r["local_fraction"] == fraction and r["swap_bandwidth_bytes_per_s"] is not None
        ]
        ax.scatter(
            [float(str(r["swap_bandwidth_bytes_per_s"])) / 1e6 for r in pts],
            [(float(str(r["relative_jct"])) - 1) * 100 for r in pts],
            label=f"{app}, local {float(str(fraction)):.0%}",
            s=18,
        )
    ax.set_xlabel("swap bandwidth, in + out (MB/s)")
    ax.set_ylabel("performance degradation (%)")
    mem = next((str(r["memory_bandwidth_source"]) for r in rows), "")
    ax.set_title(f"{title} (paper Fig. 6a)\nmemory bandwidth: {mem}", fontsize=8)
    if ok:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save_png(fig, out / f"{cfg.emulate.name}-fig6.png")
