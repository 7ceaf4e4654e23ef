"""``disaggsim emulate CONFIG`` with an ``[hpe_cm]`` table: Ruan et al.'s experiments on the
swap backend (HPE composable memory, /work/shared/papers/004_*.txt).

The paper swaps to a remote RAM disk over iSER/RoCE and measures (§4.2-4.3, §5.1-5.2):

- ``experiment = "pagefault"`` (Table 2): the page-fault latency of a mapped file on each
  device with LMBench's ``lat_pagefault`` (here ``swapdev/tools/lat_pagefault.c``, which
  maps the device itself), giving D of Eq. (1) as remote / local latency. Each device is
  the swap backend's RAM-backed FUSE file behind a direct-I/O loop device
  (:func:`device.fuse_loop_device`) with its delay model; ``memory`` (a file in
  ``/dev/shm``, whose pages stay in RAM: the fault maps a resident page) is added as the
  full-memory reference;
- ``experiment = "overcommit"`` (Fig. 4, Fig. 5, Table 3): ``paging_w``
  (``swapdev/tools/paging_w.c``) writes ``over_commit x local_bytes`` in a memory cgroup
  limited to ``local_bytes``, swapping to each device (:func:`device.swap_device`), and
  the same run with no limit ("full memory", the reference run first at every point). The
  performance ratio is the full-memory duration over the device's (§5.2).

- ``experiment = "pgbench"`` (Table 4, VoltDB/TPC-C): the collector's PostgreSQL +
  pgbench (:mod:`disaggsim.testbed.apps.pgbench`, on its 2-node emulated cluster: server on
  node 0, one pgbench client node) at each ``scales`` (pgbench scale factor, ~15 MB each),
  ``shared_buffers`` sized to hold the whole database and prewarmed (so, like VoltDB, the
  database lives in the server's memory), the server in a memory cgroup limited to
  ``local_bytes`` swapping to each device, and with no limit (full memory); ``tpcb-like``
  transactions from ``clients`` connections, unthrottled, for ``duration_s``: TPS.

Devices (``[[devices]]``): a delay model of the device's name table (``device.MODEL_NAMES``)
as the emulate configs' models (:class:`device.DelayModel`), or ``hdd`` (``rpm``, ``seek_ms``,
``transfer_bytes_per_s``: :mod:`disaggsim.swapdev.hdd_model`, written as an
``fct-sample`` table per run). ``max_over_commit`` skips a slow device's larger points
(pgbench: database bytes, 15 MiB per scale unit, over ``local_bytes``).

Config (TOML; unknown keys are errors naming the file and line)::

    [hpe_cm]
    name = "pagefault"              # output sub-directory
    out_dir = "results/hpe-cm"      # relative to the config file
    experiment = "pagefault"        # pagefault | overcommit
    repeats = 3                     # runs per point, interleaved; medians reported
    page_cluster = 0                # vm.page-cluster during overcommit runs (restored)
    timeout_s = 600                 # per run: killed, reported, not counted
    device_bytes = 67108864         # pagefault: size of each mapped device (bytes)
    local_bytes = 33554432          # overcommit: the memory cgroup's limit (bytes)
    over_commit = [1.2, 2, 4]       # overcommit: working set / local_bytes
    scales = [4, 8, 16]             # pgbench: database sizes (pgbench -s)
    duration_s = 20                 # pgbench: length of the measured run (s)
    clients = 4                     # pgbench: connections
    [[devices]]
    name = "local"
    kind = "none"

Outputs in ``out_dir/name``, written atomically: ``runs.csv`` (one row per run),
``summary.csv`` (medians per point; columns in :func:`summarize_pagefault`,
:func:`summarize_overcommit`), ``machine.json`` (the machine and its speed,
:mod:`disaggsim.swapdev.machine`) and ``machine.txt`` (the load average at the start and
the end). Runs change machine state (loop devices, FUSE mounts,
swap, memory cgroups, ``vm.page-cluster``, zswap): root only, under the machine-state lock
(:func:`device.system_lock`), every change undone on exit.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from disaggsim.atomic import atomic_path
from disaggsim.signals import interrupt_on_signals
from disaggsim.sim.config import load_config_model
from disaggsim.swapdev import device, emulate_apps, hdd_model, machine
from disaggsim.testbed import collect_env
from disaggsim.testbed.apps.pgbench import BYTES_PER_SCALE, PgbenchConfig
from disaggsim.testbed.collect_apps import Cluster, make_app

PAGE = 4096
#: The full-memory reference's name in the outputs (not a device).
MEMORY = "memory"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HpeCmSection(_Strict):
    """``[hpe_cm]``: the experiment, its output and its grid (module docstring)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    out_dir: Path = Path("results/hpe-cm")
    experiment: Literal["pagefault", "overcommit", "pgbench"]
    repeats: int = Field(3, ge=1)
    page_cluster: int = Field(0, ge=0, le=10)
    timeout_s: float = Field(600, gt=0)
    device_bytes: int = Field(64 << 20, ge=1 << 20)
    local_bytes: int = Field(32 << 20, ge=4 << 20)
    over_commit: list[Annotated[float, Field(ge=1, le=64)]] = [1.2, 1.4, 2, 3, 4, 8, 16]
    scales: list[Annotated[int, Field(ge=1, le=1000)]] = [4, 8, 16]
    duration_s: float = Field(20, gt=0)
    clients: int = Field(4, ge=1, le=64)

    @field_validator("over_commit", "scales")
    @classmethod
    def _distinct(cls, v: list[float]) -> list[float]:
        if not v or len(set(v)) != len(v):
            raise ValueError(f"expected distinct values, got {v}")
        return v


#: The device kind of the HDD-like delay model (:mod:`disaggsim.swapdev.hdd_model`).
HDD = "hdd"


class DeviceSection(_Strict):
    """``[[devices]]``: one swap device (a delay model of the swap backend)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    #: A delay model of the device's one name table (:data:`device.MODEL_NAMES`), or
    #: ``hdd`` (:mod:`disaggsim.swapdev.hdd_model`, served as an FCT table).
    kind: str
    latency_ns: int = Field(0, ge=0)
    bandwidth_bps: int = Field(0, ge=0)
    fct_file: Path | None = None
    fct_format: Literal["bytes-us", "pages-ns"] = "bytes-us"
    seed: int = 1
    rpm: float | None = Field(None, gt=0)
    seek_ms: float = Field(hdd_model.SINGLE_TRACK_SEEK_MS, ge=0)
    transfer_bytes_per_s: float = Field(hdd_model.DEFAULT_TRANSFER_BYTES_PER_S, gt=0)
    max_over_commit: float | None = Field(None, ge=1)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return device.check_name(v, (*device.MODEL_NAMES, HDD), "kind")

    @model_validator(mode="after")
    def _kind_keys(self) -> DeviceSection:
        if self.name == MEMORY:
            raise ValueError(f'name: "{MEMORY}" is the full-memory reference\'s name')
        if device.MODEL_PARAMS.get(self.kind) == "table" and self.fct_file is None:
            raise ValueError(f'fct_file: required for kind = "{self.kind}"')
        if (self.kind == HDD) != (self.rpm is not None):
            raise ValueError('rpm: required for kind = "hdd", and only for it')
        return self

    def delay(self, base_dir: Path, work: Path) -> device.DelayModel:
        """The device's :class:`device.DelayModel` (an ``hdd`` table is written in
        ``work``)."""
        if self.kind == HDD:
            assert self.rpm is not None
            table = hdd_model.write_hdd_cdf(
                work / f"{self.name}.cdf", self.rpm, self.seek_ms, self.transfer_bytes_per_s
            )
            return device.DelayModel("fct-sample", fct_file=table, seed=self.seed)
        fct = None if self.fct_file is None else base_dir / self.fct_file
        return device.DelayModel(
            self.kind, self.latency_ns, self.bandwidth_bps, fct, self.fct_format, self.seed
        )


class HpeCmConfig(_Strict):
    """A whole ``[hpe_cm]`` config; ``base_dir`` (set by the loader) resolves paths."""

    hpe_cm: HpeCmSection
    devices: list[DeviceSection] = Field(min_length=1)
    base_dir: Path

    @model_validator(mode="after")
    def _unique(self) -> HpeCmConfig:
        names = [d.name for d in self.devices]
        if len(set(names)) != len(names):
            raise ValueError(f"devices: repeated names in {names}")
        return self


def is_hpe_cm_config(path: str | Path) -> bool:
    """Whether a config file has a top-level ``[hpe_cm]`` table (then it is run here, not
    by :mod:`disaggsim.swapdev.emulate`). Unreadable or invalid TOML: False (the emulate
    loader reports it)."""
    import tomllib

    try:
        return "hpe_cm" in tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def load_hpe_cm_config(path: str | Path) -> HpeCmConfig:
    """Read and validate an ``[hpe_cm]`` config.

    Raises:
        ConfigError: unreadable, syntax error, unknown key or bad value; the message starts
            with ``<file>[:<line>]: <key path>: ``.
    """
    return load_config_model(path, HpeCmConfig)[0]


def _run_json(
    argv: list[str], timeout_s: float, memcg: Path | None, what: str
) -> tuple[str, float, dict[str, float]]:
    """Run a benchmark (in ``memcg`` if given); (status, wall s, its JSON report).

    status: ``ok``, ``timeout`` (killed) or ``oom`` (the memory cgroup's OOM killer ended
    it). Raises RuntimeError if it fails otherwise.
    """
    kills = 0 if memcg is None else collect_env.memcg_oom_kills(memcg)
    status, wall, proc = emulate_apps.run_command(argv, timeout_s, {}, memcg)
    if status != "ok":
        return status, wall, {}
    if proc.returncode != 0:
        if memcg is not None and collect_env.memcg_oom_kills(memcg) > kills:
            return "oom", wall, {}
        raise RuntimeError(f"{what} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
    return "ok", wall, json.loads(proc.stdout.strip().splitlines()[-1])


def _pagefault_once(
    cfg: HpeCmConfig, dev: DeviceSection | None, work: Path, repeat: int
) -> dict[str, object]:
    """One lat_pagefault run on ``dev`` (None: the full-memory reference).

    The row has lat_pagefault's report, the device's own delays (:func:`_device_delays`)
    and ``cpu_probe_ns``: lat_pagefault's median time for 100,000 dependent multiply-adds,
    taken every 128 faults (the vCPU's speed during the run). Why: on the 2-vCPU VM a whole
    run's faults sit in a fast or a slow mode set by the host, whatever the placement of
    application, loop worker and daemon (all on one CPU as well); the run's median fault
    latency tracks the probe partly (R^2 0.75-0.97; bench/RESULTS.md, "D: page-fault
    latency", 2026-11-28 placement subsection): a slow probe says the host slowed the
    run."""
    build = device.build_dir()
    size = cfg.hpe_cm.device_bytes - cfg.hpe_cm.device_bytes % PAGE
    work.mkdir(parents=True, exist_ok=True)
    seed = ["--seed", str(repeat + 1)]
    swapdev = None
    with collect_env.UndoStack() as stack:
        if dev is None:
            # Owned (device.SHM_FILE): a SIGKILLed run's directory, RAM until removed, is
            # reaped by the next command.
            shm = f"disaggsim-hpecm-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            collect_env.make_owned(
                stack,
                device.SHM_FILE,
                [shm],
                lambda n: (device.SHM_DIR / n).mkdir(mode=0o700),
                device.remove_shm_file,
            )
            target = device.SHM_DIR / shm / "file"
            with open(target, "wb") as fh:
                fh.write(b"\1" * size)
            name = MEMORY
        else:
            model = dev.delay(cfg.base_dir, work)
            swapdev = device.fuse_loop_device(stack, work, size, model)
            target, name = Path(swapdev.loop), dev.name
        status, wall, rep = _run_json(
            [str(build / "lat_pagefault"), str(target), *seed],
            cfg.hpe_cm.timeout_s,
            None,
            "lat_pagefault",
        )
    row: dict[str, object] = {
        "device": name,
        "kind": dev.kind if dev else MEMORY,
        "repeat": repeat,
        "status": status,
        "wall_s": wall,
    }
    for key in (
        "pages",
        "faults",
        "majflt",
        "mean_ns",
        "p10_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "max_ns",
        "cpu_probe_ns",
    ):
        row[key] = rep.get(key)
    row.update(_device_delays(swapdev))
    return row


def _device_delays(swapdev: device.SwapDevice | None) -> dict[str, object]:
    """What the device itself did in a lat_pagefault run, from the histograms its daemon
    writes on exit (:func:`device.read_histograms`): ``device_requests`` (requests served:
    the timed faults, plus any the kernel or udev made, e.g. a probe of the new loop
    device), ``target_delay_mean_ns`` (the model's mean delay), ``applied_delay_p50_ns``
    and ``applied_delay_min_ns`` (each request's time from its arrival at the daemon to its
    reply being released: ``sd_run_delay`` in swapdev/src/sd_user.c). Empty for the
    full-memory reference.

    The fault latency's excess over these is the host's (the loop worker, the wake-up of a
    faulting thread that slept through the delay), not the device's."""
    if swapdev is None:
        return {
            "device_requests": None,
            "target_delay_mean_ns": None,
            "applied_delay_p50_ns": None,
            "applied_delay_min_ns": None,
        }
    hists = device.read_histograms(swapdev.hist)
    applied, target = hists["applied"], hists["target"]
    return {
        "device_requests": applied.n,
        "target_delay_mean_ns": round(target.mean_ns),
        "applied_delay_p50_ns": round(applied.quantile_ns(0.5)) if applied.n else None,
        "applied_delay_min_ns": applied.min_ns,
    }


def prefilled_swap(
    stack: collect_env.UndoStack, work: Path, size_bytes: int, model: device.DelayModel
) -> device.SwapDevice:
    """The swap backend's device (:func:`device.fuse_loop_device`) written through once
    before ``swapon``, so the daemon's RAM store is allocated (and mlocked) up front.

    Why: the daemon allocates its store as swap-outs arrive (``MCL_ONFAULT``). Seen on this
    shared machine (2026-11-27, another job filling memory): the daemon's allocation
    entered *global* direct reclaim, which swapped to the daemon's own loop device and
    waited for it (``wbt_wait`` in ``swap_writeout``, daemon and application both in D
    state), a deadlock only ``/sys/fs/fuse/connections/N/abort`` broke. A daemon that never
    allocates while serving cannot enter it. The write-through costs one pass of large
    direct writes under the device's model; its bytes are subtracted from the swap-out
    counter (``size_bytes`` is returned as the device's ``prefill_bytes``)."""
    dev = device.fuse_loop_device(stack, work, size_bytes, model)
    collect_env.sh(
        [
            "dd",
            "if=/dev/zero",
            f"of={dev.loop}",
            "bs=4M",
            "oflag=direct",
            "status=none",
            f"count={size_bytes}",
            "iflag=count_bytes",
        ]
    )
    collect_env.disable_zswap(stack)
    collect_env.swap_area(stack, os.path.basename(dev.loop))
    return dev


def _overcommit_once(
    cfg: HpeCmConfig, dev: DeviceSection | None, over_commit: float, work: Path, repeat: int
) -> dict[str, object]:
    """One paging_w run of ``over_commit x local_bytes``: on ``dev`` with the memory
    cgroup limited to ``local_bytes``, or (``dev`` None) in an unlimited cgroup."""
    build = device.build_dir()
    local = cfg.hpe_cm.local_bytes
    ws = int(over_commit * local)
    ws -= ws % PAGE
    work.mkdir(parents=True, exist_ok=True)
    argv = [str(build / "paging_w"), str(ws), "--seed", str(repeat + 1)]
    swap_in = swap_out = None
    with collect_env.UndoStack() as stack:
        stack.enter_context(device.page_cluster(cfg.hpe_cm.page_cluster))
        if dev is None:
            memcg = collect_env.memcg_group(stack, "disaggsim-hpecm-full")
            status, wall, rep = _run_json(argv, cfg.hpe_cm.timeout_s, memcg, "paging_w")
        else:
            size = ws - local + (64 << 20)
            size -= size % PAGE
            swapdev = prefilled_swap(stack, work, size, dev.delay(cfg.base_dir, work))
            memcg = collect_env.memcg_group(stack, "disaggsim-hpecm")
            (memcg / "memory.limit_in_bytes").write_text(str(local))
            status, wall, rep = _run_json(argv, cfg.hpe_cm.timeout_s, memcg, "paging_w")
            stack.close()  # the daemon exits and prints its counters
            swap_in, swap_out = emulate_apps.device_counters(
                swapdev.log.read_text(errors="replace")
            )
            swap_out -= size  # the prefill
    return {
        "over_commit": over_commit,
        "device": dev.name if dev else MEMORY,
        "kind": dev.kind if dev else MEMORY,
        "repeat": repeat,
        "status": status,
        "local_bytes": local,
        "working_set_bytes": ws,
        "write_s": rep.get("write_s"),
        "wall_s": wall,
        "majflt": rep.get("majflt"),
        "minflt": rep.get("minflt"),
        "swap_in_bytes": swap_in,
        "swap_out_bytes": swap_out,
    }


def shared_buffers_mb(scale: int) -> int:
    """``shared_buffers`` holding a whole pgbench database of ``scale`` (MiB): 1.25 x the
    ~15 MiB per scale unit (:data:`pgbench.BYTES_PER_SCALE`; tables, indexes) + 16 MiB."""
    return (scale * BYTES_PER_SCALE * 5 // 4 >> 20) + 16


def _pgbench_once(
    cfg: HpeCmConfig, dev: DeviceSection | None, scale: int, work: Path, repeat: int
) -> dict[str, object]:
    """One PostgreSQL + pgbench run at ``scale`` (module docstring): TPS of the client."""
    hc = cfg.hpe_cm
    pg = PgbenchConfig(
        scale=scale,
        shared_buffers_mb=shared_buffers_mb(scale),
        clients_per_node=hc.clients,
        rate_tps=0,
        builtin="tpcb-like",
        prewarm=True,
    )
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o711)
    status, tps, latency_ms, swap_in, swap_out = "ok", None, None, None, None
    with collect_env.UndoStack() as stack:
        stack.enter_context(device.page_cluster(hc.page_cluster))
        collect_env.make_cluster_network(stack, 2)
        memcgs = [collect_env.memcg_group(stack, f"disaggsim-node{i}") for i in range(2)]
        server = collect_env.memcg_group(stack, "disaggsim-hpecm-pg")
        swapdev = None
        if dev is not None:
            size = scale * BYTES_PER_SCALE * 2 + (256 << 20)
            size -= size % PAGE
            swapdev = prefilled_swap(stack, work / "dev", size, dev.delay(cfg.base_dir, work))
            (server / "memory.limit_in_bytes").write_text(str(hc.local_bytes))
        dirs = [work / f"node{i}" for i in range(2)]
        for d in dirs:
            d.mkdir()
        logs = work / "logs"
        logs.mkdir()
        cluster = Cluster(
            2,
            memcgs,
            dirs,
            logs,
            seed=repeat + 1,
            placement=lambda node, name: (server if name == "postgres" else None, {}),
        )
        app = make_app(pg, cluster)
        app.prepare_data()
        app.start(stack)
        kills = collect_env.memcg_oom_kills(server)
        try:
            results = app.run(stack, hc.duration_s)
            report = results["node1"]
            assert isinstance(report, dict)
            tps, latency_ms = report["tps"], report.get("latency_average_ms")
        except RuntimeError:
            if collect_env.memcg_oom_kills(server) <= kills:
                raise
            status = "oom"
        stack.close()
        if swapdev is not None:
            swap_in, swap_out = emulate_apps.device_counters(
                swapdev.log.read_text(errors="replace")
            )
            swap_out -= size  # the prefill
    return {
        "scale": scale,
        "db_bytes": scale * BYTES_PER_SCALE,
        "shared_buffers_mb": pg.shared_buffers_mb,
        "device": dev.name if dev else MEMORY,
        "kind": dev.kind if dev else MEMORY,
        "repeat": repeat,
        "status": status,
        "local_bytes": hc.local_bytes if dev else None,
        "tps": tps,
        "latency_average_ms": latency_ms,
        "swap_in_bytes": swap_in,
        "swap_out_bytes": swap_out,
    }


def summarize_pgbench(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (scale, device), over the ``ok`` runs: ``repeats_ok``, median/min/max ``tps``,
    ``tps_vs_memory`` = median TPS / the full-memory median at that scale, and
    ``performance_diff`` = 1 - that (Table 4's "Performance diff")."""
    rows = []
    for (scale, name), grp in runs.groupby(["scale", "device"], sort=False):
        ok = grp[grp["status"] == "ok"]
        full = runs[
            (runs["scale"] == scale) & (runs["device"] == MEMORY) & (runs["status"] == "ok")
        ]["tps"]
        med = ok["tps"].median() if len(ok) else math.nan
        rel = med / full.median() if len(full) else math.nan
        rows.append(
            {
                "scale": scale,
                "db_bytes": grp["db_bytes"].iloc[0],
                "device": name,
                "kind": grp["kind"].iloc[0],
                "repeats_ok": len(ok),
                "repeats_failed": len(grp) - len(ok),
                "tps": med,
                "tps_min": ok["tps"].min() if len(ok) else math.nan,
                "tps_max": ok["tps"].max() if len(ok) else math.nan,
                "tps_vs_memory": rel,
                "performance_diff": 1 - rel,
                "swap_in_bytes": _median(ok["swap_in_bytes"]),
            }
        )
    return pd.DataFrame(rows)


def _median(values: pd.Series) -> float | None:
    kept = values.dropna()
    return float(kept.median()) if len(kept) else None


def summarize_pagefault(runs: pd.DataFrame) -> pd.DataFrame:
    """Per device, over its ``ok`` runs: ``repeats_ok``, the medians of the runs' median
    and mean fault latency (``p50_ns``, ``mean_ns``), their min and max, and D:
    ``d_paging`` = median p50 / the ``local`` device's median p50 (the paper's
    remote-over-RAM-disk multiple, Table 2), ``d_paging_mean`` the same of the means,
    ``d_memory`` = median p50 / the full-memory reference's, and ``delta_p50_ns`` = median
    p50 - local's (the added delay as seen by a fault), beside ``applied_delay_p50_ns``
    (the median of the runs' median delay the device itself applied, :func:`_device_delays`;
    empty for the full-memory reference), and ``cpu_probe_ns`` (the median of the runs'
    vCPU speed probe, :func:`_pagefault_once`). Empty where no reference ran."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for name, grp in ok.groupby("device", sort=False):
        rows.append(
            {
                "device": name,
                "kind": grp["kind"].iloc[0],
                "repeats_ok": len(grp),
                "p50_ns": grp["p50_ns"].median(),
                "p50_min_ns": grp["p50_ns"].min(),
                "p50_max_ns": grp["p50_ns"].max(),
                "mean_ns": grp["mean_ns"].median(),
                "p99_ns": grp["p99_ns"].median(),
                "majflt": grp["majflt"].median(),
                "faults": grp["faults"].median(),
                "applied_delay_p50_ns": _median(grp["applied_delay_p50_ns"]),
                "cpu_probe_ns": _median(grp["cpu_probe_ns"]),
            }
        )
    out = pd.DataFrame(rows)
    ref = {r["device"]: r for r in rows}

    def ratio(col: str, base: str) -> pd.Series:
        if base not in ref:
            return pd.Series([math.nan] * len(out))
        return out[col] / float(ref[base][col])

    out["d_paging"] = ratio("p50_ns", "local")
    out["d_paging_mean"] = ratio("mean_ns", "local")
    out["d_memory"] = ratio("p50_ns", MEMORY)
    out["delta_p50_ns"] = (
        (out["p50_ns"] - float(ref["local"]["p50_ns"])) if "local" in ref else math.nan
    )
    return out


def summarize_overcommit(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (over_commit, device), over the ``ok`` runs: ``repeats_ok``, ``repeats_failed``
    (timeouts and OOM kills), median/min/max ``write_s``, and the performance ratio
    ``ratio`` = the full-memory median write_s / the device's (§5.2), with
    ``ratio_min``/``ratio_max`` from the device's slowest and fastest runs; the medians of
    the swap counters (bytes)."""
    rows = []
    for (oc, name), grp in runs.groupby(["over_commit", "device"], sort=False):
        ok = grp[grp["status"] == "ok"]
        full = runs[
            (runs["over_commit"] == oc) & (runs["device"] == MEMORY) & (runs["status"] == "ok")
        ]["write_s"]
        ref = full.median() if len(full) else math.nan
        med = ok["write_s"].median() if len(ok) else math.nan
        rows.append(
            {
                "over_commit": oc,
                "device": name,
                "kind": grp["kind"].iloc[0],
                "repeats_ok": len(ok),
                "repeats_failed": len(grp) - len(ok),
                "write_s": med,
                "write_min_s": ok["write_s"].min() if len(ok) else math.nan,
                "write_max_s": ok["write_s"].max() if len(ok) else math.nan,
                "ratio": ref / med,
                "ratio_min": ref / ok["write_s"].max() if len(ok) else math.nan,
                "ratio_max": ref / ok["write_s"].min() if len(ok) else math.nan,
                "swap_in_bytes": _median(ok["swap_in_bytes"]),
                "swap_out_bytes": _median(ok["swap_out_bytes"]),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Outputs:
    """Where a run wrote its tables."""

    out_dir: Path
    runs: Path
    summary: Path


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


def run(cfg: HpeCmConfig, progress: bool = True, lock: bool = True) -> Outputs:
    """Run the config's experiment (root; under :func:`device.system_lock`, which
    ``lock=False`` leaves to a caller already holding it: a second ``flock`` of the same
    file from one process would wait for itself).

    Order: point-major, then repeat-major with the full-memory reference first and every
    device once per round, so a shared machine's slow drifts spread over all of them.

    Raises RuntimeError if a benchmark fails (other than a timeout or an OOM kill, which
    are recorded in runs.csv and left out of the medians), TimeoutError if the lock is
    held too long, disaggsim.signals.Interrupted on SIGINT, SIGTERM or SIGHUP (after
    undoing everything, :func:`disaggsim.signals.interrupt_on_signals`).
    """
    hc = cfg.hpe_cm
    out = (cfg.base_dir / hc.out_dir / hc.name).resolve()
    rows: list[dict[str, object]] = []
    load_start = os.getloadavg()
    window = machine.this_window(machine.utc_now())  # its machine and speed (machine.py)
    held = device.system_lock() if lock else contextlib.nullcontext()
    # SIGTERM/SIGHUP unwind as Ctrl-C (also for a caller other than the CLI).
    with (
        interrupt_on_signals(),
        held,
        tempfile.TemporaryDirectory(prefix="disaggsim-hpecm-", dir="/var/tmp") as tmpdir,
    ):
        tmp = Path(tmpdir)
        tmp.chmod(0o711)  # the PostgreSQL server runs as "postgres" below it
        points: list[float | None] = [None]
        if hc.experiment == "overcommit":
            points = list(hc.over_commit)
        elif hc.experiment == "pgbench":
            points = [float(s) for s in hc.scales]
        unit = "scale" if hc.experiment == "pgbench" else "over-commit"
        for oc in points:
            for rep in range(hc.repeats):
                for dev in [None, *cfg.devices]:
                    n = oc if hc.experiment == "overcommit" else None
                    if hc.experiment == "pgbench" and oc is not None:
                        n = oc * BYTES_PER_SCALE / hc.local_bytes
                    if (
                        dev is not None
                        and n is not None
                        and dev.max_over_commit is not None
                        and n > dev.max_over_commit
                    ):
                        continue
                    label = MEMORY if dev is None else dev.name
                    work = tmp / f"{oc}-{label}-{rep}"
                    if oc is None:
                        row = _pagefault_once(cfg, dev, work, rep)
                        text = f"p50 {row['p50_ns']} ns, mean {row['mean_ns']} ns"
                    elif hc.experiment == "pgbench":
                        row = _pgbench_once(cfg, dev, int(oc), work, rep)
                        text = f"{row['tps']} TPS"
                    else:
                        row = _overcommit_once(cfg, dev, oc, work, rep)
                        text = f"write {row['write_s']} s"
                    rows.append(row)
                    if progress:
                        where = "" if oc is None else f"{unit} {oc:g} "
                        print(
                            f"{hc.name}: {where}{label} repeat {rep}: {row['status']} {text}",
                            file=sys.stderr,
                            flush=True,
                        )
    runs = pd.DataFrame(rows)
    summary = {
        "pagefault": summarize_pagefault,
        "overcommit": summarize_overcommit,
        "pgbench": summarize_pgbench,
    }[hc.experiment](runs)
    out.mkdir(parents=True, exist_ok=True)
    _write_csv(runs, out / "runs.csv")
    _write_csv(summary, out / "summary.csv")
    machine.write_log(out, [window])
    with atomic_path(out / "machine.txt") as tmpfile:
        tmpfile.write_text(
            f"load average (1, 5, 15 min) at the start: {load_start}\n"
            f"load average at the end: {os.getloadavg()}\n"
        )
    return Outputs(out, out / "runs.csv", out / "summary.csv")
