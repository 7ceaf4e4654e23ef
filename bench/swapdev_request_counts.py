"""Paging requests and bytes of the requirement sweep's application, per local fraction.

For each local fraction of ``configs/emulate-sweep-python-sort.toml`` (uffd backend) run
the application twice
under the device's ``fixed`` model and read the device's own histogram
(``SWAPDEV_HIST``, :func:`disaggsim.swapdev.device.read_histograms`): with 1 µs and no
bandwidth term the ``target`` sum is ``requests x 1 µs``; with no latency and 1 Gb/s it is
``bytes x 8 ns``. The purely additive model then predicts the injected delay of any
(latency, bandwidth) point, ``requests x latency + bytes x 8 / bandwidth`` (the fixed
model's formula, paper §3.1 / ``swapdev/core/sd_delay.h``), which bench/RESULTS.md
("Requirement sweep") compares with the measured JCTs. Root; one run at a time.

    .venv/bin/python bench/swapdev_request_counts.py \
        --out bench/figures/requirements/request_counts.csv

Output CSV: ``local_pct, requests, bytes`` (one row per fraction), written atomically.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from disaggsim.atomic import atomic_path
from disaggsim.swapdev import device
from disaggsim.swapdev.emulate import EmulateConfig, load_emulate_config

REPO = Path(__file__).resolve().parent.parent


CONFIG = REPO / "configs" / "emulate-sweep-python-sort.toml"


def target_sum_ns(
    cfg: EmulateConfig, fraction: float, model: device.DelayModel, work: Path
) -> tuple[int, int]:
    """(requests, sum of target delays in ns) of one run of the config's application."""
    spec = cfg.app.preset_spec
    build = device.build_dir()
    hist = work / "uffd.hist"
    env = {
        **os.environ,
        **model.env(),
        "SWAPDEV_LOCAL_BYTES": str(int(spec.working_set_bytes * fraction)),
        "SWAPDEV_HIST": str(hist),
        "SWAPDEV_TRACE": "",
    }
    argv = [part.replace("{build}", str(build)) for part in spec.command]
    subprocess.run(
        ["env", f"LD_PRELOAD={build / 'libswapdev_uffd.so'}", *argv],
        env=env,
        check=True,
        capture_output=True,
        timeout=cfg.emulate.timeout_s,
    )
    target = device.read_histograms(hist)["target"]
    return target.n, target.sum_ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    lines = ["local_pct,requests,bytes"]
    with tempfile.TemporaryDirectory(prefix="disaggsim-counts-") as tmp:
        cfg = load_emulate_config(CONFIG)
        for fraction in cfg.app.local_fraction:
            pct = round(fraction * 100)
            requests, lat_sum = target_sum_ns(
                cfg, fraction, device.DelayModel("fixed", 1000), Path(tmp)
            )
            _, bw_sum = target_sum_ns(
                cfg, fraction, device.DelayModel("fixed", 0, 10**9), Path(tmp)
            )
            lines.append(f"{pct},{requests},{bw_sum // 8}")
            print(
                f"{pct}% local: {requests} requests ({lat_sum} ns at 1 us), {bw_sum // 8} bytes",
                flush=True,
            )
    with atomic_path(args.out) as out:
        out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
