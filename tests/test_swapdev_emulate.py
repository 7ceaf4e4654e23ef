"""``disaggsim emulate``: config validation (errors name file, line and key), the JCT
summary on hand-made runs, and one real sweep on the uffd backend."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from disaggsim.cli import main
from disaggsim.sim.config import ConfigError
from disaggsim.swapdev import device, emulate

CONFIG = """\
[emulate]
name = "memtouch"
out_dir = "out"
backend = "uffd"
repeats = 2

[app]
command = ["{build}/memtouch", "64", "1"]
working_set_bytes = 67108864
local_fraction = 0.25

[[models]]
kind = "fixed"
latency_ns = 20000
"""


def test_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(CONFIG.replace("repeats = 2", "repeats = 2\nrepeat = 3"))
    with pytest.raises(ConfigError, match=rf"{path}:6: emulate.repeat: Extra inputs"):
        emulate.load_emulate_config(path)
    path.write_text(CONFIG.replace("local_fraction = 0.25", "local_fraction = 1.5"))
    with pytest.raises(ConfigError, match=rf"{path}:10: app.local_fraction: "):
        emulate.load_emulate_config(path)


def test_summary_is_relative_to_the_zero_delay_median() -> None:
    runs = [
        emulate.Run("none", 0, 0, 10.0), emulate.Run("none", 0, 1, 12.0),
        emulate.Run("none", 0, 2, 11.0), emulate.Run("fixed-5000ns", 5000, 0, 22.0),
        emulate.Run("fixed-5000ns", 5000, 1, 16.5), emulate.Run("fixed-5000ns", 5000, 2, 20.0),
    ]
    rows = {r["model"]: r for r in emulate.summarize(runs)}
    assert rows["none"]["relative_jct"] == 1.0  # median 11 / 11
    assert rows["fixed-5000ns"]["median_jct_s"] == 20.0
    assert rows["fixed-5000ns"]["relative_jct"] == pytest.approx(20.0 / 11.0)
    assert rows["fixed-5000ns"]["relative_min"] == pytest.approx(16.5 / 11.0)
    assert rows["fixed-5000ns"]["relative_max"] == pytest.approx(22.0 / 11.0)


@pytest.mark.skipif(os.geteuid() != 0, reason="userfaultfd needs root here")
def test_uffd_sweep_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """memtouch over 64 MiB with 16 MiB local: its read pass alone faults ~12 k pages
    back (plus the write pass's evictions), so +20 us per request costs >= 0.25 s against
    a zero-delay JCT of well under 1 s: the relative JCT must exceed 1."""
    device.build_dir()
    path = tmp_path / "memtouch.toml"
    path.write_text(CONFIG)
    assert main(["emulate", str(path), "--quiet"]) == 0
    out = tmp_path / "out" / "memtouch"
    assert "results:" in capsys.readouterr().out
    with open(out / "summary.csv") as handle:
        rows = {r["model"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"none", "fixed-20000ns"}
    assert float(rows["none"]["relative_jct"]) == 1.0
    jct_none = float(rows["none"]["median_jct_s"])
    jct_fixed = float(rows["fixed-20000ns"]["median_jct_s"])
    assert jct_fixed - jct_none > 12_000 * 20e-6  # at least the read pass's swap-ins
    assert float(rows["fixed-20000ns"]["relative_jct"]) > 1.0
    with open(out / "runs.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 4  # 2 models x 2 repeats
    assert (out / "memtouch.png").stat().st_size > 0


def test_cli_reports_config_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(CONFIG.replace('backend = "uffd"', 'backend = "nbd"'))
    assert main(["emulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("disaggsim emulate: error: ") and f"{path}:4: emulate.backend" in err


@pytest.mark.skipif(os.geteuid() != 0, reason="swap, loop and memcg need root")
def test_swap_oom_is_reported_and_the_machine_left_as_found(tmp_path: Path) -> None:
    """An application that cannot be swapped (mlockall, then 128 MiB in a 32 MiB group)
    is killed by the memcg OOM killer: emulate says so, and undoes every change."""
    from disaggsim.traces import collect_env

    path = tmp_path / "oom.toml"
    script = (
        "import ctypes\nctypes.CDLL(None).mlockall(3)\nb = bytearray(128 << 20)\n"
        "print(len(b))"
    )
    path.write_text(
        CONFIG.replace('backend = "uffd"', 'backend = "swap"')
        .replace('repeats = 2', 'repeats = 1')
        .replace('command = ["{build}/memtouch", "64", "1"]',
                 f'command = ["/usr/bin/python3", "-c", {script!r}]'.replace("'", '"'))
        .replace("local_fraction = 0.25", "local_fraction = 0.5")
    )
    cfg = emulate.load_emulate_config(path)
    with device.system_lock():
        before = collect_env.system_state()
        page_cluster = device.PAGE_CLUSTER.read_text()
    with pytest.raises(RuntimeError, match="OOM killer"):
        emulate.emulate(cfg, progress=False)
    with device.system_lock():
        assert collect_env.system_state() == before
        assert device.PAGE_CLUSTER.read_text() == page_cluster
