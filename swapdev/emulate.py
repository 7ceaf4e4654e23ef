"""``disaggsim emulate CONFIG``: the paper's §3.1 experiment on this machine.

Run a real application with its local memory limited to a fraction of its working set, on
either backend of the latency-injection device (:mod:`disaggsim.swapdev.device`), once per
delay model and repeat, and report its job completion time (JCT) relative to the
zero-delay run: "relative application-level performance on the basis of job completion
time as compared to the zero-delay case" (paper §3.1; the paper takes the median of 10 runs).

Config (TOML; unknown keys are errors naming the file and line)::

    [emulate]
    name = "python-sort"            # output sub-directory and plot name
    out_dir = "results/emulate"     # relative to the config file
    backend = "swap"                # swap | uffd
    repeats = 3                     # runs per model; the median is reported, with min-max
    page_cluster = 0                # vm.page-cluster during swap runs (restored after)
    eviction = "fifo"               # uffd replacement policy: fifo | clock
    timeout_s = 600                 # per run
    [app]
    command = ["python3", "-c", "..."]   # "{build}" expands to build/swapdev
    working_set_bytes = 268435456
    local_fraction = 0.25           # local memory = fraction x working set
    [[models]]                      # the zero-delay run is added as the reference
    kind = "fixed"                  # fixed | fct-mean | fct-sample (as DelayModel)
    latency_ns = 5000
    bandwidth_bps = 40000000000

Outputs in ``out_dir/name`` (the device's own files stay in a temporary directory):
``runs.csv`` (``model, latency_ns, repeat, jct_s``),
``summary.csv`` (per model: ``median_jct_s, min_jct_s, max_jct_s, relative_jct`` = median
JCT / median zero-delay JCT, ``relative_min``/``relative_max`` = min/max JCT over that same
reference) and ``<name>.png`` (relative JCT against latency for ``fixed`` models), each
written atomically.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from disaggsim.sim.config import ConfigError, _find_line, _format_loc, _parse
from disaggsim.swapdev import device
from disaggsim.traces import collect_env
from disaggsim.traces._atomic import atomic_path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmulateSection(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    out_dir: Path = Path("results/emulate")
    backend: Literal["swap", "uffd"] = "swap"
    repeats: int = Field(3, ge=1)
    page_cluster: int = Field(0, ge=0, le=10)
    eviction: device.EvictionPolicy = "fifo"
    timeout_s: float = Field(600, gt=0)


class AppSection(_Strict):
    command: list[str] = Field(min_length=1)
    working_set_bytes: int = Field(gt=0)
    local_fraction: float = Field(gt=0, le=1)


class ModelSection(_Strict):
    kind: Literal["fixed", "fct-mean", "fct-sample"]
    latency_ns: int = Field(0, ge=0)
    bandwidth_bps: int = Field(0, ge=0)
    fct_file: Path | None = None
    fct_format: Literal["bytes-us", "pages-ns"] = "bytes-us"
    seed: int = 1
    label: str | None = None


class EmulateConfig(_Strict):
    emulate: EmulateSection
    app: AppSection
    models: list[ModelSection] = Field(min_length=1)
    base_dir: Path


def load_emulate_config(path: str | Path) -> EmulateConfig:
    """Read and validate an emulate config (TOML).

    Raises:
        ConfigError: unreadable, syntax error, unknown key, bad value; the message starts
            with ``<file>[:<line>]: <key path>: ``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    data = _parse(path, text)
    try:
        return EmulateConfig.model_validate({**data, "base_dir": path.parent.resolve()})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = _find_line(text, loc, yaml=False)
            where = f"{path}:{line}" if line else str(path)
            lines.append(f"{where}: {_format_loc(loc)}: {error['msg']}")
        raise ConfigError("\n".join(lines)) from None


@dataclass(frozen=True)
class Run:
    model: str
    latency_ns: int
    repeat: int
    jct_s: float


def _label(m: ModelSection) -> str:
    if m.label:
        return m.label
    if m.kind == "fixed":
        return f"fixed-{m.latency_ns}ns" + (f"-{m.bandwidth_bps}bps" if m.bandwidth_bps else "")
    return f"{m.kind}-{Path(str(m.fct_file)).name}"


def _delay_model(m: ModelSection | None, base: Path) -> device.DelayModel:
    if m is None:
        return device.DelayModel("none")
    fct = None if m.fct_file is None else (base / m.fct_file)
    return device.DelayModel(m.kind, m.latency_ns, m.bandwidth_bps, fct, m.fct_format, m.seed)


def _run_once(cfg: EmulateConfig, model: device.DelayModel, work: Path) -> float:
    """One JCT in seconds (wall time from start to exit of the application)."""
    build = device.build_dir()
    argv = [part.replace("{build}", str(build)) for part in cfg.app.command]
    local = int(cfg.app.working_set_bytes * cfg.app.local_fraction)
    timeout = cfg.emulate.timeout_s
    if cfg.emulate.backend == "uffd":
        run_env = {
            **os.environ, **model.env(), "SWAPDEV_LOCAL_BYTES": str(local),
            "SWAPDEV_EVICTION": cfg.emulate.eviction,
            "SWAPDEV_HIST": str(work / "uffd.hist"), "SWAPDEV_TRACE": "",
        }
        start = time.monotonic()
        proc = subprocess.run(
            ["env", f"LD_PRELOAD={build / 'libswapdev_uffd.so'}", *argv], env=run_env,
            capture_output=True, text=True, timeout=timeout,
        )
        jct = time.monotonic() - start
    else:
        with collect_env.UndoStack() as stack:
            stack.enter_context(device.page_cluster(cfg.emulate.page_cluster))
            size = max(2 * cfg.app.working_set_bytes, 64 << 20)
            dev = device.swap_device(stack, work, size - size % 4096, local, model)
            start = time.monotonic()
            proc = device.run_in_memcg(dev.memcg, argv, timeout)
            jct = time.monotonic() - start
            oom = (dev.memcg / "memory.oom_control").read_text()
            if proc.returncode != 0 and "oom_kill 0" not in oom:
                raise RuntimeError(
                    f"the memory cgroup's OOM killer ended the application under {model}: "
                    f"{local} bytes local are too few for the swap device's write-back "
                    "rate (memcg v1 gives up reclaim); raise app.local_fraction or use "
                    "backend = \"uffd\""
                )
    if proc.returncode != 0:
        raise RuntimeError(
            f"application failed ({proc.returncode}) under {model}: {proc.stderr[-2000:]}"
        )
    return jct


def emulate(cfg: EmulateConfig, progress: bool = True) -> Path:
    """Run the config's sweep (root; swap backend under the machine-state lock); returns
    the out dir.

    Order: repeat-major (every model once, then again), so slow drifts of a shared
    machine spread over all models. Raises RuntimeError if a run fails.
    """
    out = (cfg.base_dir / cfg.emulate.out_dir / cfg.emulate.name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    models: list[ModelSection | None] = [None, *cfg.models]
    runs: list[Run] = []
    # Only the swap backend changes machine state (swap, loop, memcg, page-cluster).
    lock = device.system_lock() if cfg.emulate.backend == "swap" else contextlib.nullcontext()
    with lock, tempfile.TemporaryDirectory(prefix="disaggsim-emulate-") as tmp:
        for rep in range(cfg.emulate.repeats):
            for m in models:
                label = "none" if m is None else _label(m)
                work = Path(tmp) / f"{label}-{rep}"
                jct = _run_once(cfg, _delay_model(m, cfg.base_dir), work)
                runs.append(Run(label, 0 if m is None else m.latency_ns, rep, jct))
                if progress:
                    print(f"{label} repeat {rep}: {jct:.3f} s", flush=True)
    _write_outputs(cfg, out, runs)
    return out


def summarize(runs: list[Run]) -> list[dict[str, float | str]]:
    """Per model: median/min/max JCT and the same over the zero-delay median JCT."""
    ref = statistics.median(r.jct_s for r in runs if r.model == "none")
    rows: list[dict[str, float | str]] = []
    for label in dict.fromkeys(r.model for r in runs):
        jcts = [r.jct_s for r in runs if r.model == label]
        lat = next(r.latency_ns for r in runs if r.model == label)
        rows.append({
            "model": label, "latency_ns": lat, "repeats": len(jcts),
            "median_jct_s": statistics.median(jcts), "min_jct_s": min(jcts),
            "max_jct_s": max(jcts), "relative_jct": statistics.median(jcts) / ref,
            "relative_min": min(jcts) / ref, "relative_max": max(jcts) / ref,
        })
    return rows


def _csv_text(rows: list[dict[str, float | str]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _write_outputs(cfg: EmulateConfig, out: Path, runs: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with atomic_path(out / "runs.csv") as tmp:
        tmp.write_text(_csv_text([r.__dict__ for r in runs]))
    rows = summarize(runs)
    with atomic_path(out / "summary.csv") as tmp:
        tmp.write_text(_csv_text(rows))
    fixed = [r for r in rows if r["model"] == "none" or str(r["model"]).startswith("fixed")]
    fixed.sort(key=lambda r: float(r["latency_ns"]))
    x = [float(r["latency_ns"]) / 1000 for r in fixed]
    y = [float(r["relative_jct"]) for r in fixed]
    lo = [y_i - float(r["relative_min"]) for y_i, r in zip(y, fixed, strict=True)]
    hi = [float(r["relative_max"]) - y_i for y_i, r in zip(y, fixed, strict=True)]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3)
    ax.set_xlabel("injected latency per paging request (µs)")
    ax.set_ylabel("JCT / zero-delay JCT")
    ax.set_title(
        f"{cfg.emulate.name}: {cfg.emulate.backend}, local {cfg.app.local_fraction:.0%}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(out / f"{cfg.emulate.name}.png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
