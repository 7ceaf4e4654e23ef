"""Boot the kmod guest again and again and count the boots that never reach /init's script.

Each boot is ``swapdev/kmod/guest/run-tests.sh`` with ``RMEM_GUEST_SCRIPT=boot`` (the guest
loads its modules, mounts the share and writes ``done 1``) and ``RMEM_GUEST_ACCEL`` set to
one of the ``--accel`` values, taken in turn, one guest at a time; the outcome is read by
``emulate_kmod.guest_failure``, the reader the tests and ``emulate`` use, and a failed boot's
console is kept. ``--pin-cpu`` runs QEMU under ``taskset`` on one host CPU (its vCPU threads
then preempt each other, as on this machine when isolation puts every job on CPU 0), and
``--busy-loop`` adds a busy loop on that CPU at this process's nice level while the boots
run. Prints one line per boot, then per accel value: boots, failures (with their panic
lines), mean seconds per boot; and the load average before and after.

    flock /tmp/disaggsim-machine.lock nice .venv/bin/python bench/kmod_guest_boots.py \\
        --budget-s 420 --accel tcg --accel tcg,thread=single [--pin-cpu 0 [--busy-loop]]

Hold the machine lock around it (a QEMU guest). Results: bench/RESULTS.md "kmod guest
boots and the delay check (branch guest-flake)". Needs what ``make test-guest`` needs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from disaggsim.swapdev import emulate_kmod


def boot_once(accel: str, pin_cpu: int | None, keep: Path) -> tuple[float, str | None]:
    """One boot: (host seconds, None or the failure message); a failed boot's files are
    copied under ``keep``."""
    tmp = Path(tempfile.mkdtemp(prefix="kmod-boot-"))
    try:
        inp, out = tmp / "in", tmp / "out"
        inp.mkdir()
        (inp / "none").write_text("")
        cmd = [str(emulate_kmod.RUN_GUEST), str(out), str(inp)]
        if pin_cpu is not None:
            cmd = ["taskset", "-c", str(pin_cpu), *cmd]
        t0 = time.monotonic()
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "RMEM_GUEST_SCRIPT": "boot",
                "RMEM_GUEST_ACCEL": accel,
                "RMEM_GUEST_TIMEOUT": "300",
            },
        )
        seconds = time.monotonic() - t0
        failure = emulate_kmod.guest_failure(out, proc.returncode, proc.stderr, {"done": "1"})
        if failure is not None:
            shutil.copytree(out, keep / f"{time.strftime('%H%M%S')}-{accel}")
        return seconds, failure
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--accel",
        action="append",
        required=True,
        help="a value of QEMU's -accel (repeat; taken in turn)",
    )
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop after this many s")
    ap.add_argument("--boots", type=int, default=1000, help="at most this many per --accel")
    ap.add_argument("--pin-cpu", type=int, default=None, help="run QEMU on this host CPU")
    ap.add_argument(
        "--busy-loop", action="store_true", help="a busy loop on --pin-cpu while the boots run"
    )
    ap.add_argument(
        "--keep",
        type=Path,
        default=Path("/tmp/kmod-guest-boots"),
        help="where failed boots' files go",
    )
    args = ap.parse_args()
    if args.busy_loop and args.pin_cpu is None:
        ap.error("--busy-loop needs --pin-cpu")
    args.keep.mkdir(parents=True, exist_ok=True)
    print(f"load before: {os.getloadavg()}")
    hog = None
    if args.busy_loop:
        hog = subprocess.Popen(
            ["taskset", "-c", str(args.pin_cpu), "sh", "-c", "while :; do :; done"]
        )
    stats: dict[str, list[tuple[float, str | None]]] = {a: [] for a in args.accel}
    start = time.monotonic()
    try:
        for i in range(args.boots):
            if time.monotonic() - start > args.budget_s:
                break
            for accel in args.accel:
                seconds, failure = boot_once(accel, args.pin_cpu, args.keep)
                stats[accel].append((seconds, failure))
                status = "ok" if failure is None else "FAILED: " + failure.replace("\n", " | ")
                print(
                    f"{time.strftime('%H:%M:%S')} boot {i} accel={accel} {seconds:.1f} s {status}",
                    flush=True,
                )
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"load after: {os.getloadavg()}")
    print("| accel | boots | failed | mean s/boot |\n|---|---|---|---|")
    for accel, runs in stats.items():
        failed = sum(f is not None for _, f in runs)
        mean = sum(s for s, _ in runs) / len(runs) if runs else float("nan")
        print(f"| {accel} | {len(runs)} | {failed} | {mean:.1f} |")


if __name__ == "__main__":
    main()
