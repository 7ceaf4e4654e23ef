"""COMEX (#23) in ``disaggsim emulate``: the local-swap baselines, the comex parameter grid,
speed-ups and hit rates, and the uffd device's exit under memory pressure.

The delays are checked against the datasheet arithmetic (``swapdev/baselines.py``), the
speed-ups and hit rates against hand-made summaries."""

from __future__ import annotations

import os
import re
import statistics
from pathlib import Path

import pytest

from disaggsim.sim.config import ConfigError
from disaggsim.swapdev import baselines, device, emulate, emulate_apps

CONFIG = """\
[emulate]
name = "cx"
out_dir = "out"
backend = "uffd"
repeats = 1
paging = "comex"

[app]
preset = "numpy-sort"
local_fraction = [0.25, 0.5]

[[models]]
kind = "fixed"
label = "comex-10g"
latency_ns = 4540
bandwidth_bps = 10000000000

[models.comex]
prefetch_pages = [8, 16]
read_buffer_pages = [1024, 4096]
service_ns = 4000

[[models]]
baseline = "ssd-sata"

[[models]]
baseline = "hdd-5400"
"""


def test_ssd_baseline_is_50us_plus_530_MBps(tmp_path: Path) -> None:
    """A 4 KiB page: 50 µs + 4096 B / 530 MB/s = 50 + 7.728 µs = 57,728 ns (truncated)."""
    model = baselines.baseline_model("ssd-sata", tmp_path)
    assert (model.kind, model.latency_ns, model.bandwidth_bps) == ("fixed", 50_000, 4_240_000_000)
    assert device.fixed_delay_ns(model.latency_ns, model.bandwidth_bps, 4096) == 57_728


def test_hdd_baseline_table_has_the_5400_rpm_mean(tmp_path: Path) -> None:
    """Mean for 4 KiB: 1.0 ms seek + half a revolution (60 / 5400 / 2 = 5.5556 ms) + 4096 B
    at 100 MB/s (40.96 µs) = 6596.5 µs; the draws span one revolution (11.11 ms)."""
    baselines.write_tables(["hdd-5400"], tmp_path)
    model = baselines.baseline_model("hdd-5400", tmp_path)
    assert model.kind == "fct-sample" and model.fct_file == tmp_path / "hdd-5400.cdf"
    rows = [line.split() for line in model.fct_file.read_text().splitlines()]
    page = [float(us) for size, _, us in rows if size == "4096"]
    assert statistics.mean(page) == pytest.approx(1000 + 60e6 / 5400 / 2 + 40.96, abs=0.01)
    assert max(page) - min(page) == pytest.approx(60e6 / 5400 * 49 / 50, abs=0.01)
    with pytest.raises(ValueError, match="baseline=tape"):
        baselines.baseline_model("tape", tmp_path)


def test_the_grid_expands_to_comex_points_and_baselines(tmp_path: Path) -> None:
    path = tmp_path / "cx.toml"
    path.write_text(CONFIG)
    cfg = emulate.load_emulate_config(path)
    points = {p.label: p for p in emulate.expand_models(cfg)}
    assert list(points) == [
        "none",
        "comex-10g-P8-B1024",
        "comex-10g-P8-B4096",
        "comex-10g-P16-B1024",
        "comex-10g-P16-B4096",
        "ssd-sata",
        "hdd-5400",
    ]
    env = dict(points["comex-10g-P16-B1024"].device_env)
    assert env == {
        "SWAPDEV_COMEX_PREFETCH_PAGES": "16",
        "SWAPDEV_COMEX_READ_BUFFER_PAGES": "1024",
        "SWAPDEV_COMEX_SERVICE_NS": "4000",
    }
    assert points["comex-10g-P8-B1024"].paging is None  # [emulate] paging: comex
    assert points["ssd-sata"].paging == "demand" and points["ssd-sata"].baseline == "ssd-sata"
    assert points["hdd-5400"].delay.fct_file == emulate.baseline_dir(cfg) / "hdd-5400.cdf"
    assert cfg.app.preset_spec.working_set_bytes == 32 << 20 and cfg.app.use_jemalloc


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'baseline = "ssd-sata"',
            'baseline = "ssd-sata"\nkind = "fixed"',
            "exactly one of kind and baseline",
        ),
        (
            'baseline = "ssd-sata"',
            'baseline = "ssd-sata"\nlatency_ns = [1, 2]',
            "baseline: its parameters are fixed",
        ),
        (
            'baseline = "ssd-sata"',
            'baseline = "floppy"',
            "bad.toml:24: models[1].baseline: Input should be",
        ),
        ("prefetch_pages = [8, 16]", "prefetch_pages = [8, 128]", "prefetch_pages"),
        ('backend = "uffd"', 'backend = "swap"', "paging and comex: only for backend"),
        ('paging = "comex"', 'paging = "demand"', 'comex: only with paging = "comex"'),
    ],
)
def test_bad_comex_and_baseline_entries_are_named(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(CONFIG.replace(old, new, 1))
    with pytest.raises(ConfigError, match=re.escape(message)):
        emulate.load_emulate_config(path)


def _row(fraction: float, model: str, jct: float | None, timeouts: int = 0) -> dict[str, object]:
    return {
        "local_fraction": fraction,
        "model": model,
        "median_jct_s": jct,
        "repeats_timeout": timeouts,
    }


def test_speedup_is_baseline_over_comex_or_a_lower_bound_on_timeout() -> None:
    """10 s on the SSD against 2 s: 5x; an HDD past its 120 s limit against 4 s: >= 30x."""
    summary = [
        _row(0.5, "none", 1.0),
        _row(0.5, "comex", 2.0),
        _row(0.5, "ssd", 10.0),
        _row(0.25, "none", 1.0),
        _row(0.25, "comex", 4.0),
        _row(0.25, "hdd", None, 1),
    ]
    got = emulate.speedups(summary, ["ssd", "hdd"], 120.0)
    assert [
        (r["local_fraction"], r["baseline"], r["model"], r["speedup"], r["speedup_at_least"])
        for r in got
    ] == [(0.5, "ssd", "comex", 5.0, None), (0.25, "hdd", "comex", None, 30.0)]


def test_hit_rate_counts_both_buffers_over_all_remote_faults() -> None:
    """25 read-buffer and 5 write-buffer hits beside 10 reads: 30 / 40 = 0.75."""
    run = emulate.Run(
        0.5,
        "comex",
        "fixed",
        0,
        0,
        0,
        "ok",
        1.0,
        paging="comex",
        comex_reads=10,
        comex_read_hits=25,
        comex_write_hits=5,
    )
    assert run.hit_rate == 0.75 and run.row()["hit_rate"] == 0.75
    assert emulate.Run(0.5, "x", "fixed", 0, 0, 0, "ok", 1.0).hit_rate is None


def test_comex_counters_sum_over_processes() -> None:
    line = (
        "swapdev comex: {r} reads of 16 pages, {h} read-buffer hits, 1 write-buffer hits, "
        "32 prefetched, 2 prefetched unused, 3 write batches (9 pages), 0 write-buffer-full "
        "waits, node 1 of 12, 0 rehashes\n"
    )
    got = device.comex_counters(line.format(r=4, h=20) + "noise\n" + line.format(r=6, h=5))
    assert got["reads"] == 10 and got["read_hits"] == 25 and got["write_hits"] == 2
    assert got["prefetch_pages"] == 16 and got["write_pages"] == 18
    assert device.comex_counters("swapdev uffd: nothing") == {}


@pytest.mark.skipif(os.geteuid() != 0, reason="userfaultfd needs root here")
def test_numpy_sort_under_comex_exits_and_writes_its_histogram(tmp_path: Path) -> None:
    """numpy-sort (jemalloc heap, registered) at a quarter of its working set local with
    SWAPDEV_HIST: the exit's histogram file is heap work that faults; the device must
    serve it (it used to hold its lock there and hang). The histogram of applied waits
    counts the requests the application waited for: every swap-in (the comex reads),
    never the asynchronous write batches (no write-buffer-full wait at this size)."""
    spec = emulate_apps.PRESETS["numpy-sort"]
    env = device.uffd_env(
        device.DelayModel("none"), spec.working_set_bytes // 4, True, "fifo", "comex"
    )
    env["SWAPDEV_HIST"] = str(tmp_path / "run.hist")
    status, _, proc = emulate_apps.run_command(list(spec.command), 120, env)
    assert status == "ok" and proc.returncode == 0, proc.stderr[-500:]
    ins, outs = (
        int(x)
        for x in re.findall(
            r"swapdev uffd: (\d+) swap-ins \(\d+ pages\), (\d+) swap-outs", proc.stderr
        )[0]
    )
    counters = device.comex_counters(proc.stderr)
    assert ins > 0 and outs == counters["write_batches"] and counters["full_waits"] == 0
    assert device.read_histograms(tmp_path / "run.hist")["applied"].n == ins == counters["reads"]
