"""The machine a sweep's runs ran on: its identity and a speed calibration, per window.

A relative JCT is a property of an application *on a machine*: the same device delay adds
about the same time per run on a VM 1.8-3.6x slower, so a smaller share of its JCT, and
the application study's classes moved from "fail" to "undecided" on a second VM of the
same kind (bench/RESULTS.md "The classification points on a second VM (2026-11-28)").
So every measurement window of a sweep appends one entry to ``machine.json`` in its out
directory (:func:`record_window`), and every run records the boot it ran in
(``boot_id``, a column of runs.csv, :mod:`disaggsim.swapdev.emulate`):

- ``boot_id``: ``/proc/sys/kernel/random/boot_id`` (random(4): a new UUID at every boot;
  two VMs cloned from one image share ``/etc/machine-id`` but never a boot id);
- ``cpu_model`` (``/proc/cpuinfo`` "model name" of the first CPU), ``cpus``
  (``os.cpu_count()``), ``kernel`` (``uname -r``), ``mem_total_bytes`` (``/proc/meminfo``
  MemTotal), ``hypervisor`` (the ``hypervisor`` CPU flag: "yes"/"no");
- a calibration, measured in this process before the window's runs (median of
  :data:`CALIBRATION_REPEATS`): ``sha256_mib_per_s`` (SHA-256 over
  :data:`SHA256_BYTES`, one core's integer speed) and ``memcpy_gib_per_s`` (a copy of
  :data:`MEMCPY_BYTES`, memory bandwidth). They compare machines (or one machine over
  time); they are no model input.

A sweep resumed in another boot pools rounds measured on two machines (or one machine
rebooted): :func:`other_boots` names them and emulate says so in one line.
"""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from disaggsim.atomic import write_text_atomic
from disaggsim.owners import boot_id  # the owner records' reader: a boot's UUID
from disaggsim.sim.config import load_config_model

#: Bytes hashed per calibration repeat (64 MiB: ~0.1-0.3 s on the study's VMs).
SHA256_BYTES: Final = 64 << 20
#: Bytes copied per calibration repeat (256 MiB: past any cache).
MEMCPY_BYTES: Final = 256 << 20
#: Calibration repeats; the median is kept.
CALIBRATION_REPEATS: Final = 3


class Window(BaseModel):
    """One measurement window's machine (a ``machine.json`` entry); fields as above."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    start_utc: str
    boot_id: str = Field(min_length=1)
    cpu_model: str
    cpus: int = Field(ge=1)
    kernel: str
    mem_total_bytes: int = Field(ge=0)
    hypervisor: str
    sha256_mib_per_s: float = Field(gt=0)
    memcpy_gib_per_s: float = Field(gt=0)


class MachineLog(BaseModel):
    """``machine.json``: the windows of one sweep, oldest first."""

    model_config = ConfigDict(extra="forbid", strict=True)
    base_dir: Path = Field(exclude=True)  # added by the loader (load_config_model)
    windows: list[Window]


def utc_now() -> str:
    """Now, UTC, ISO 8601 to the millisecond (a window's and a run's ``start_utc``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _cpuinfo_field(name: str) -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""


def _mem_total_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024  # the kernel's "kB" is KiB
    raise RuntimeError("/proc/meminfo: no MemTotal line")


def calibrate(repeats: int = CALIBRATION_REPEATS) -> tuple[float, float]:
    """(SHA-256 MiB/s over :data:`SHA256_BYTES`, memcpy GiB/s of :data:`MEMCPY_BYTES`),
    each the median of ``repeats`` timings in this process."""
    data = os.urandom(1 << 20) * (SHA256_BYTES >> 20)
    src = bytearray(MEMCPY_BYTES)
    dst = bytearray(MEMCPY_BYTES)
    sha, copy = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        hashlib.sha256(data).digest()
        t1 = time.perf_counter()
        dst[:] = src  # one memmove in CPython's bytearray slice assignment
        t2 = time.perf_counter()
        sha.append(SHA256_BYTES / (1 << 20) / (t1 - t0))
        copy.append(MEMCPY_BYTES / (1 << 30) / (t2 - t1))
    return statistics.median(sha), statistics.median(copy)


def this_window(start_utc: str) -> Window:
    """This machine now, calibrated (:func:`calibrate`), for a window starting at
    ``start_utc`` (ISO 8601 UTC)."""
    sha, copy = calibrate()
    flags = _cpuinfo_field("flags").split()
    return Window(
        start_utc=start_utc,
        boot_id=boot_id(),
        cpu_model=_cpuinfo_field("model name"),
        cpus=os.cpu_count() or 1,
        kernel=platform.release(),
        mem_total_bytes=_mem_total_bytes(),
        hypervisor="yes" if "hypervisor" in flags else "no",
        sha256_mib_per_s=round(sha, 1),
        memcpy_gib_per_s=round(copy, 2),
    )


def read_log(out: Path) -> list[Window]:
    """The windows ``out/machine.json`` records (empty if there is none: a sweep made
    before 2026-11-28). Raises disaggsim.sim.config.ConfigError (one line naming the file
    and key) if it is not such a log."""
    path = out / "machine.json"
    if not path.is_file():
        return []
    log, _ = load_config_model(path, MachineLog)
    return log.windows


def write_log(out: Path, windows: list[Window]) -> None:
    """Write ``windows`` as ``out/machine.json`` (atomically; the directory must exist)."""
    log = MachineLog(base_dir=out, windows=windows)
    write_text_atomic(out / "machine.json", log.model_dump_json(indent=1) + "\n")


def record_window(out: Path, start_utc: str, *, resumed: bool) -> Window:
    """Write this window (:func:`this_window`) into ``out/machine.json`` (:func:`write_log`),
    after the windows already there if the sweep is ``resumed`` (else they belong to runs
    no longer in it), and return it. Raises ConfigError as :func:`read_log`."""
    windows = [*(read_log(out) if resumed else []), this_window(start_utc)]
    write_log(out, windows)
    return windows[-1]


def other_boots(recorded: Iterable[str], current: str) -> list[str]:
    """The boot ids in ``recorded`` (runs' ``boot_id``; empty for runs made before the
    column existed) other than ``current``, sorted."""
    return sorted({b for b in recorded if b and b != current})


def describe(windows: Sequence[Window], boots: Iterable[str]) -> list[str]:
    """One line per boot the runs ran in (``boots``: their ``boot_id``, in run order),
    first seen first, from its first window in ``windows`` (:func:`read_log`): "boot
    1c0ffee0: AMD EPYC, 2 CPUs, kernel 6.1.0, 23.4 GiB; SHA-256 512 MiB/s, memcpy 3.5
    GiB/s (12 runs)"; a boot with no window "boot X: not recorded (N runs)", runs
    without a boot id "N runs before machine records (2026-11-28)"."""
    counts = Counter(boots)  # first seen first
    first: dict[str, Window] = {}
    for window in windows:
        first.setdefault(window.boot_id, window)
    lines = []
    for boot, n in counts.items():
        if not boot:
            lines.append(f"{n} runs before machine records (2026-11-28)")
        elif (w := first.get(boot)) is None:
            lines.append(f"boot {boot[:8]}: not recorded ({n} runs)")
        else:
            lines.append(
                f"boot {boot[:8]}: {w.cpu_model}, {w.cpus} CPUs, kernel {w.kernel}, "
                f"{w.mem_total_bytes / (1 << 30):.1f} GiB; SHA-256 "
                f"{w.sha256_mib_per_s:g} MiB/s, memcpy {w.memcpy_gib_per_s:g} GiB/s "
                f"({n} runs)"
            )
    return lines
