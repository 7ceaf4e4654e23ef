"""``disaggsim emulate`` on the kernel module (``backend = "kmod"``): the sweep's runs in one
boot of the QEMU guest of ``swapdev/kmod/guest`` (Debian's 6.12 kernel under TCG).

``rmem.ko`` (``backend=ram``) is the guest's swap device, each run sets its delay model
(``delay_model``, ``latency_ns``, ``bandwidth_bps``, ``/proc/rmem_cdf`` or
``/proc/rmem_dist``) and runs memtouch in a cgroup v2 group whose ``memory.high`` is the
run's local memory (``swapdev/kmod/guest/emulate.sh``). Only the ``command`` app
``["{build}/memtouch", MIB, PASSES]`` runs there (the guest is busybox, memtouch and the
module). TCG runs guest code 100-1000x slower than hardware: the JCTs are functional
(relative to the same boot's zero-delay runs), not performance figures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from disaggsim.swapdev import device

RUN_GUEST = Path(__file__).resolve().parent / "kmod" / "guest" / "run-tests.sh"


def read_guest_results(path: Path) -> dict[str, str]:
    """The guest's ``key value`` lines (``results.txt``); {} if it wrote none."""
    results: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            results[key] = value
    return results


def memtouch_args(command: list[str]) -> tuple[int, int]:
    """(MIB, PASSES) of a ``["{build}/memtouch", MIB[, PASSES]]`` command; ValueError for
    any other command (the guest has nothing else to run)."""
    if not command or command[0] != "{build}/memtouch" or not 2 <= len(command) <= 3 or \
            not all(a.isdigit() for a in command[1:]):
        raise ValueError(f'backend = "kmod": app.command must be ["{{build}}/memtouch", '
                         f'"MIB", "PASSES"] (the guest runs nothing else), got {command}')
    return int(command[1]), int(command[2]) if len(command) == 3 else 1


def _table_line(run_id: int, model: device.DelayModel, local_bytes: int, mib: int,
                passes: int, inp: Path) -> str:
    table, fmt = "-", "-"
    if model.fct_file is not None:
        table = f"table{run_id}.txt"
        shutil.copy(model.fct_file, inp / table)
        fmt = "dist" if model.kind == "fct-sample" else model.fct_format
    return (f"{run_id} {model.kind} {model.latency_ns} {model.bandwidth_bps} {table} {fmt} "
            f"{local_bytes} {mib} {passes}\n")


def run_sweep(runs: list[tuple[device.DelayModel, int]], command: list[str],
              timeout_s: float) -> list[dict[str, Any]]:
    """Boot the guest once and run memtouch per (delay model, local bytes) of ``runs``, in
    order; per run ``{"status", "jct_s", "swap_in_bytes", "swap_out_bytes", "report"}``
    (status ``ok``, or ``failed`` with the guest's exit code of memtouch).

    Raises RuntimeError (with the guest's log tail) if the guest does not finish or cannot
    set up the device; ValueError on a command other than memtouch. Hold the machine-state
    lock around it (a QEMU guest).
    """
    mib, passes = memtouch_args(command)
    with tempfile.TemporaryDirectory(prefix="disaggsim-kmod-") as tmp:
        inp, out = Path(tmp) / "in", Path(tmp) / "out"
        inp.mkdir()
        out.mkdir()
        with open(inp / "runs.txt", "w") as f:
            for i, (model, local) in enumerate(runs):
                f.write(_table_line(i, model, local, mib, passes, inp))
        proc = subprocess.run(
            [str(RUN_GUEST), str(out), str(inp)], capture_output=True, text=True,
            env={**os.environ, "RMEM_GUEST_SCRIPT": "emulate",
                 "RMEM_GUEST_TIMEOUT": str(int(120 + timeout_s * len(runs)))})
        res = read_guest_results(out / "results.txt")
        if res.get("done") != "1" or res.get("setup_rc") != "0":
            log = out / "guest.log"
            raise RuntimeError(
                f"kmod guest did not finish the sweep (rc {proc.returncode}, setup_rc "
                f"{res.get('setup_rc')}): {proc.stderr[-1000:]}\n"
                f"{log.read_text()[-2000:] if log.exists() else ''}")
        outcomes = []
        for i, (model, _) in enumerate(runs):
            if res.get(f"run_{i}_model") != model.kind:
                raise RuntimeError(f"kmod guest: run {i}: delay_model is "
                                   f"{res.get(f'run_{i}_model')!r}, expected {model.kind}")
            ok = res[f"run_{i}_rc"] == "0"
            outcomes.append({
                "status": "ok" if ok else f"failed ({res[f'run_{i}_rc']})",
                "jct_s": float(res[f"run_{i}_jct_s"]),
                "swap_in_bytes": int(res[f"run_{i}_swap_in_bytes"]),
                "swap_out_bytes": int(res[f"run_{i}_swap_out_bytes"]),
                "report": json.loads(res[f"run_{i}_json"]) if ok else {},
            })
        return outcomes
