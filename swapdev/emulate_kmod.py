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
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from disaggsim.swapdev import device

RUN_GUEST = Path(__file__).resolve().parent / "kmod" / "guest" / "run-tests.sh"


def read_guest_results(path: Path) -> dict[str, str]:
    """The guest's ``key value`` lines (``results.txt``); {} if it wrote none. A line cut
    short (a guest that stopped mid-write) is read as far as it goes: only a ``done 1``
    line, written last, says the file is complete."""
    results: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            key, _, value = line.partition(" ")
            results[key] = value
    return results


def _tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of ``path``, printable (the serial console's terminal
    escapes dropped), each indented."""
    text = path.read_text(errors="replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1bc|\r", "", text)
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return "".join(f"\n    {ln}" for ln in kept)


def guest_failure(out: Path, returncode: int, stderr: str, expected: dict[str, str]) -> str | None:
    """Why the guest run whose OUT_DIR is ``out`` (``run-tests.sh``) did not deliver its
    results, or None if ``results.txt`` holds every ``expected`` key with its value (the
    scripts write ``done 1`` last).

    The host learns everything from files on the 9p share: ``results.txt`` and
    ``guest.log`` (the script's output), written by the guest as it goes, and
    ``console.log`` (the serial console: the kernel's messages up to /init). QEMU ends with
    status 0 both when the guest powers off and when its kernel panics (``panic=-1`` with
    ``-no-reboot``), so the status alone says nothing: the message names what is missing
    and quotes the console's panic line or last lines, and where the three files are.
    """
    results_path = out / "results.txt"
    res = read_guest_results(results_path)
    missing = [f"{k} {v}" for k, v in expected.items() if res.get(k) != v]
    if not missing:
        return None
    if not results_path.exists():
        got = "no results.txt (the guest never ran its script, or could not mount the share)"
    else:
        got = ", ".join(
            f"{k} {res[k]}" if k in res else f"no {k} line"
            for k in expected
            if res.get(k) != expected[k]
        )
        got += f" ({len(res)} lines)"
    parts = [
        f"kmod guest: {results_path}: expected {', '.join(missing)}, got {got}; "
        f"run-tests.sh exit status {returncode}"
    ]
    if stderr.strip():
        parts.append(f"run-tests.sh stderr:{_tail_text(stderr, 10)}")
    log = out / "guest.log"
    if not log.exists():
        parts.append(f"{log}: missing")
    elif log.stat().st_size == 0:
        parts.append(f"{log}: empty")
    else:
        parts.append(f"{log}, last lines:{_tail(log, 15)}")
    console = out / "console.log"
    if not console.exists():
        parts.append(f"{console}: missing (QEMU did not start)")
    else:
        text = console.read_text(errors="replace")
        panic = re.search(r"Kernel panic - not syncing: [^\r\n]*", text)
        if panic:
            # The oops that led to it names the trap ("Oops: int3: 0000 [#1] ...") and
            # scrolls out of the last lines' view.
            oops = re.search(r"(?:Oops|BUG): [^\r\n]*", text)
            cause = f" after {oops.group(0).strip()}" if oops else ""
            parts.append(f"{console}: the guest kernel panicked: {panic.group(0).strip()}{cause}")
        parts.append(f"{console}, last lines:{_tail(console, 15)}")
    return "\n".join(parts)


def _tail_text(text: str, lines: int) -> str:
    return "".join(f"\n    {ln}" for ln in text.strip().splitlines()[-lines:])


def memtouch_args(command: list[str]) -> tuple[int, int]:
    """(MIB, PASSES) of a ``["{build}/memtouch", MIB[, PASSES]]`` command; ValueError for
    any other command (the guest has nothing else to run)."""
    if (
        not command
        or command[0] != "{build}/memtouch"
        or not 2 <= len(command) <= 3
        or not all(a.isdigit() for a in command[1:])
    ):
        raise ValueError(
            f'backend = "kmod": app.command must be ["{{build}}/memtouch", '
            f'"MIB", "PASSES"] (the guest runs nothing else), got {command}'
        )
    return int(command[1]), int(command[2]) if len(command) == 3 else 1


def _table_line(
    run_id: int, model: device.DelayModel, local_bytes: int, mib: int, passes: int, inp: Path
) -> str:
    table, fmt = "-", "-"
    if model.fct_file is not None:
        table = f"table{run_id}.txt"
        shutil.copy(model.fct_file, inp / table)
        fmt = "dist" if model.kind == "fct-sample" else model.fct_format
    return (
        f"{run_id} {model.kind} {model.latency_ns} {model.bandwidth_bps} {table} {fmt} "
        f"{local_bytes} {mib} {passes}\n"
    )


def run_sweep(
    runs: list[tuple[device.DelayModel, int]], command: list[str], timeout_s: float
) -> list[dict[str, Any]]:
    """Boot the guest once and run memtouch per (delay model, local bytes) of ``runs``, in
    order; per run ``{"status", "jct_s", "swap_in_bytes", "swap_out_bytes", "report",
    "device_reads", "device_writes", "delay_n", "delay_mean_ns"}`` (status ``ok``, or
    ``failed`` with the guest's exit code of memtouch; the last four are rmem's own counts
    over the run, ``/proc/rmem_stats`` reset before it: requests served, delays applied and
    their mean in ns, the oracle that a model was applied, free of the guest's timing noise).

    Raises RuntimeError if the guest does not finish or cannot set up the device: the
    message is :func:`guest_failure`'s, and the guest's files (results.txt, guest.log,
    console.log) are kept in the temporary directory it names; ValueError on a command
    other than memtouch. Hold the machine-state lock around it (a QEMU guest).
    """
    mib, passes = memtouch_args(command)
    tmp = Path(tempfile.mkdtemp(prefix="disaggsim-kmod-"))
    keep = False
    try:
        inp, out = tmp / "in", tmp / "out"
        inp.mkdir()
        out.mkdir()
        with open(inp / "runs.txt", "w") as f:
            for i, (model, local) in enumerate(runs):
                f.write(_table_line(i, model, local, mib, passes, inp))
        proc = subprocess.run(
            [str(RUN_GUEST), str(out), str(inp)],
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "RMEM_GUEST_SCRIPT": "emulate",
                "RMEM_GUEST_TIMEOUT": str(int(120 + timeout_s * len(runs))),
            },
        )
        failure = guest_failure(out, proc.returncode, proc.stderr, {"setup_rc": "0", "done": "1"})
        if failure is not None:
            keep = True
            raise RuntimeError(
                f"kmod guest did not finish the sweep (its files are kept in {out}):\n{failure}"
            )
        res = read_guest_results(out / "results.txt")
        outcomes = []
        for i, (model, _) in enumerate(runs):
            if res.get(f"run_{i}_model") != model.kind:
                raise RuntimeError(
                    f"kmod guest: run {i}: delay_model is "
                    f"{res.get(f'run_{i}_model')!r}, expected {model.kind}"
                )
            ok = res[f"run_{i}_rc"] == "0"
            outcomes.append(
                {
                    "status": "ok" if ok else f"failed ({res[f'run_{i}_rc']})",
                    "jct_s": float(res[f"run_{i}_jct_s"]),
                    "swap_in_bytes": int(res[f"run_{i}_swap_in_bytes"]),
                    "swap_out_bytes": int(res[f"run_{i}_swap_out_bytes"]),
                    "report": json.loads(res[f"run_{i}_json"]) if ok else {},
                    "device_reads": int(res[f"run_{i}_reads"]),
                    "device_writes": int(res[f"run_{i}_writes"]),
                    "delay_n": int(res[f"run_{i}_delay_n"]),
                    "delay_mean_ns": int(res[f"run_{i}_delay_mean_ns"]),
                }
            )
        return outcomes
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
