"""Ruan et al.'s experiments on the swap backend (``swapdev/hpe_cm.py``, papers/004): the HDD
delay model as the device's core reads it, the config's errors, lat_pagefault on two
devices whose delays differ by a known amount (the delay in every fault, D's arithmetic),
and paging_w's pattern at 200 % over-commit through the swap device; the machine left as
found. The machine tests are root only and run under the machine-state lock
(:func:`device.system_lock`)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from disaggsim.sim.config import ConfigError
from disaggsim.swapdev import device, emulate_apps, hdd_model, hpe_cm, machine
from disaggsim.testbed import collect_env

try:
    BUILD = device.build_dir()
except FileNotFoundError:  # pragma: no cover
    BUILD = None
needs_build = pytest.mark.skipif(BUILD is None, reason="swapdev not built (make build)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="swap, loop, FUSE and memcg need root")
needs_memcg = pytest.mark.skipif(
    not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists(),
    reason="needs the cgroup v1 memory controller",
)


def test_hdd_model_mean_is_seek_plus_half_a_revolution_plus_transfer() -> None:
    # 7,200 rpm: one revolution 60/7200 s = 8.333 ms; 4 KiB at 100 MB/s = 40.96 us; single
    # track seek 1.0 ms (Hitachi 7K320 §4.4.2.3): 1 + 4.1667 + 0.04096 = 5.2076 ms.
    assert hdd_model.mean_service_time_ns(4096, 7200) == pytest.approx(5_207_627, abs=1)
    lines = hdd_model.hdd_cdf_lines(7200, sizes=[4096], points=4)
    # Rotation fractions 1/8, 3/8, 5/8, 7/8 of 8.333 ms (midpoints): mean half a turn.
    fcts = [float(line.split()[2]) for line in lines]
    assert [line.split()[1] for line in lines] == ["0.25", "0.5", "0.75", "1"]
    assert statistics.mean(fcts) == pytest.approx(5207.627, abs=0.002)
    assert fcts[0] == pytest.approx(1000 + 8333.333 / 8 + 40.96, abs=0.001)


@needs_build
def test_hdd_table_as_the_device_core_draws_it(tmp_path: Path) -> None:
    """The swap device's own core (sd-tool, fct-sample) reads the table: 4 KiB delays lie
    within one revolution above seek + transfer and average half a revolution more; a
    64 KiB request pays 15 pages more transfer (61440 B at 100 MB/s = 614.4 us); 1 MiB is
    served from the largest listed size, 512 KiB."""
    assert BUILD is not None
    table = hdd_model.write_hdd_cdf(tmp_path / "hdd.cdf", 7200)
    env = {**os.environ, **device.DelayModel("fct-sample", fct_file=table, seed=7).env()}
    n = 4000
    out = subprocess.run(
        [str(BUILD / "sd-tool"), "delay", *["4096"] * n, "65536", "1048576"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    d4k = [int(line.split()[1]) for line in out[:n]]
    lo, rev = 1_000_000 + 40_960, 60e9 / 7200
    assert lo <= min(d4k) and max(d4k) <= lo + rev
    # Sample mean of a uniform over one revolution: sd = 8.33 ms / sqrt(12 n) = 38 us.
    assert statistics.mean(d4k) == pytest.approx(lo + rev / 2, abs=4 * rev / (12 * n) ** 0.5)
    d64k, d1m = (int(out[n + i].split()[1]) for i in range(2))
    assert lo + 614_400 <= d64k <= lo + 614_400 + rev
    assert lo + (512 << 10) * 10 - 40_960 <= d1m <= lo + (512 << 10) * 10 - 40_960 + rev


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hpe.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            '[hpe_cm]\nname = "x"\nexperiment = "pagefault"\nbogus = 1\n[[devices]]\nname = "a"\n'
            'kind = "none"\n',
            r"hpe\.toml:4: hpe_cm\.bogus",
        ),
        (
            '[hpe_cm]\nname = "x"\nexperiment = "overcommit"\n[[devices]]\nname = "h"\n'
            'kind = "hdd"\n',
            r"hpe\.toml:4: devices\[0\].*rpm: required",
        ),
        (
            '[hpe_cm]\nname = "x"\nexperiment = "overcommit"\nover_commit = [2, 2]\n[[devices]]\n'
            'name = "a"\nkind = "none"\n',
            r"hpe\.toml:4: hpe_cm\.over_commit.*distinct",
        ),
        (
            '[hpe_cm]\nname = "x"\nexperiment = "pagefault"\n[[devices]]\nname = "memory"\n'
            'kind = "none"\n',
            r"full-memory reference",
        ),
    ],
)
def test_config_errors_name_file_line_and_key(tmp_path: Path, body: str, match: str) -> None:
    path = _write(tmp_path, body)
    assert hpe_cm.is_hpe_cm_config(path)
    with pytest.raises(ConfigError, match=match):
        hpe_cm.load_hpe_cm_config(path)


def test_emulate_configs_without_the_table_are_not_taken(tmp_path: Path) -> None:
    assert not hpe_cm.is_hpe_cm_config(_write(tmp_path, '[emulate]\nname = "x"\n'))
    assert not hpe_cm.is_hpe_cm_config(_write(tmp_path, "[hpe_cm\n"))  # emulate reports it
    repo = Path(__file__).resolve().parents[1]
    for name in ("emulate-hpe-cm-pagefault.toml", "emulate-hpe-cm-overcommit.toml"):
        cfg = hpe_cm.load_hpe_cm_config(repo / "configs" / name)
        assert {d.name for d in cfg.devices} >= {"local", "remote", "hdd-7200"}


def _machine_state() -> dict[str, list[str]]:
    state = collect_env.system_state()
    state["fuse_mounts"] = [
        line for line in Path("/proc/mounts").read_text().splitlines() if "fuse" in line
    ]
    state["page_cluster"] = [device.PAGE_CLUSTER.read_text().strip()]
    state["shm"] = sorted(p.name for p in Path("/dev/shm").glob("disaggsim-hpecm-*"))
    return state


@pytest.fixture(scope="module")
def locked() -> Iterator[None]:
    """The machine-state lock for the module; the machine is left as found."""
    with device.system_lock():
        before = _machine_state()
        yield
        assert _machine_state() == before


#: The added delay of the second device (ns).
#:
#: Why the test checks the device's own histograms and a per-fault lower bound, not the
#: end-to-end difference of the median fault latencies: that difference is the host's, not
#: the device's. On this 2-vCPU VM a whole lat_pagefault run is in one of two modes, its
#: faults all ~27 us slower in one (local: p50 18-19 us or 45 us; +20 us: 39 us or
#: 66-68 us; 2026-11-27, six runs each, load 1.3-1.9), while the device applied 20.097 us
#: (p50) to every request in every run. So the medians of 3 runs differ by anything from
#: about -6 us to +49 us: a band of 0.85-2.5 times the delay failed a quiet CI run at
#: 52.1 us. The D values are measurements, reported in bench/RESULTS.md (HPE-CM D table).
#: The modes are the host's speed of the vCPU, not a placement (2026-11-28: all on one CPU
#: too; runs.csv's ``cpu_probe_ns`` tracks them in part).
DELAY_DIFF_NS = 20_000
#: The daemon's spin overshoots its deadline by a clock read and the histogram's bucket
#: (<= 1.6 % wide, device.Histogram): the applied median lies within 2 % above the delay.
APPLIED_SLACK = 0.02


@needs_root
@needs_build
def test_every_fault_on_the_delayed_device_waits_for_its_delay(
    locked: None, tmp_path: Path
) -> None:
    """lat_pagefault on the RAM-backed device with no delay and with +20 us per request:
    every timed access is a major fault that reached the device exactly once; the device
    applied the configured delay to every request (its histograms: median within 2 % above
    20 us, none below; under 1 us with no delay); so every fault on the delayed device took
    at least 20 us (its p10). D is the ratio of the medians."""
    path = _write(
        tmp_path,
        f"""
[hpe_cm]
name = "d"
out_dir = "{tmp_path / "out"}"
experiment = "pagefault"
repeats = 3
device_bytes = 4194304
[[devices]]
name = "local"
kind = "none"
[[devices]]
name = "plus"
kind = "fixed"
latency_ns = {DELAY_DIFF_NS}
""",
    )
    outs = hpe_cm.run(hpe_cm.load_hpe_cm_config(path), progress=False, lock=False)
    runs = pd.read_csv(outs.runs)
    dev_runs = runs[runs["device"] != hpe_cm.MEMORY]
    assert (dev_runs["status"] == "ok").all()
    assert (dev_runs["majflt"] == dev_runs["faults"]).all()  # no page-cache hit
    assert (dev_runs["faults"] == 1024).all()
    # One 4 KiB read per fault (MADV_RANDOM: no read-around) and nothing else.
    assert (dev_runs["device_requests"] == dev_runs["faults"]).all(), dev_runs
    plus = dev_runs[dev_runs["device"] == "plus"]
    local = dev_runs[dev_runs["device"] == "local"]
    assert (plus["target_delay_mean_ns"] == DELAY_DIFF_NS).all()
    assert (plus["applied_delay_min_ns"] >= DELAY_DIFF_NS).all(), plus
    assert (plus["applied_delay_p50_ns"] <= DELAY_DIFF_NS * (1 + APPLIED_SLACK)).all(), plus
    assert (local["target_delay_mean_ns"] == 0).all()
    assert (local["applied_delay_p50_ns"] < 1000).all(), local
    # A fault waits for its request's reply, so none is faster than the delay.
    assert (plus["p10_ns"] >= DELAY_DIFF_NS).all(), plus
    summary = pd.read_csv(outs.summary).set_index("device")
    # D is the ratio of the medians; the full-memory reference never read the device.
    assert summary.loc["plus", "d_paging"] == pytest.approx(  # summary.csv: 6 significant digits
        summary.loc["plus", "p50_ns"] / summary.loc["local", "p50_ns"], rel=1e-5
    )
    assert (runs[runs["device"] == hpe_cm.MEMORY]["majflt"] == 0).all()
    # Every run measured its vCPU's speed (the fast/slow mode, hpe_cm._pagefault_once):
    # 100,000 dependent multiply-adds take >= 4 cycles each (imul 3 + add 1) at <= 6 GHz,
    # so >= 66 us; and less than the whole run.
    assert (runs["cpu_probe_ns"] >= 66_000).all(), runs
    assert (runs["cpu_probe_ns"] < runs["wall_s"] * 1e9).all(), runs
    [window] = machine.read_log(outs.out_dir)  # the run's one window, this boot's
    assert window.boot_id == machine.boot_id()


@needs_root
@needs_build
@needs_memcg
def test_paging_w_at_200_percent_writes_and_reads_back_its_pattern(
    locked: None, tmp_path: Path
) -> None:
    """paging_w writes 64 MiB in a 32 MiB memory cgroup swapping to the RAM-backed device,
    then reads every word back: all 8 Mi words intact, and at least the 32 MiB beyond the
    limit went out to the device and came back (the device's own counters)."""
    assert BUILD is not None
    local, ws = 32 << 20, 64 << 20
    with collect_env.UndoStack() as stack:
        stack.enter_context(device.page_cluster(0))
        dev = hpe_cm.prefilled_swap(stack, tmp_path, 128 << 20, device.DelayModel("none"))
        memcg = collect_env.memcg_group(stack, "disaggsim-hpecm-test")
        (memcg / "memory.limit_in_bytes").write_text(str(local))
        proc = device.run_in_memcg(
            memcg, [str(BUILD / "paging_w"), str(ws), "--verify", "--seed", "5"], 600
        )
        stack.close()
        swap_in, swap_out = emulate_apps.device_counters(dev.log.read_text(errors="replace"))
        swap_out -= 128 << 20  # the prefill
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["words"] == ws // 8 and report["bad_words"] == 0
    assert swap_out >= ws - local and swap_in >= ws - local - (4 << 20)
