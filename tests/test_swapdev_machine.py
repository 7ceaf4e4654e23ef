"""The machine record of a sweep's windows (``swapdev/machine.py``): its identity fields
against other programs' reading of the same machine, the calibration's units against a
clock whose timings are given, and machine.json's append/replace and error cases."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from disaggsim.sim.config import ConfigError
from disaggsim.swapdev import machine


def _lscpu() -> dict[str, str]:
    out = subprocess.run(
        ["lscpu"], capture_output=True, text=True, check=True, env={"LC_ALL": "C"}
    ).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}


@pytest.mark.skipif(
    shutil.which("lscpu") is None or shutil.which("free") is None,
    reason="needs util-linux lscpu and procps free",
)
def test_a_window_names_this_machine_as_other_programs_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(machine, "calibrate", lambda: (1.0, 1.0))
    window = machine.this_window("2026-11-28T07:00:00.000Z")
    lscpu = _lscpu()
    assert window.cpu_model == lscpu["Model name"]
    assert window.cpus == int(lscpu["CPU(s)"])
    assert window.hypervisor == ("yes" if "Hypervisor vendor" in lscpu else "no")
    assert (
        window.kernel
        == subprocess.run(
            ["uname", "-r"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    free = subprocess.run(
        ["free", "-b"], capture_output=True, text=True, check=True, env={"LC_ALL": "C"}
    ).stdout.splitlines()
    assert window.mem_total_bytes == int(next(x for x in free if x.startswith("Mem:")).split()[1])
    uuid = subprocess.run(
        ["cat", "/proc/sys/kernel/random/boot_id"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert window.boot_id == uuid and len(uuid) == 36


def test_calibration_units_from_given_timings(monkeypatch: pytest.MonkeyPatch) -> None:
    # perf_counter is read 3 times a repeat: before the hash, between, after the copy.
    # Hash 0.5 s, 0.25 s, 1.0 s of 64 MiB: 128, 256, 64 MiB/s, median 128. Copy 0.25 s,
    # 0.5 s, 0.125 s of 256 MiB: 1, 0.5, 2 GiB/s, median 1.
    clock = [0.0]
    for hash_s, copy_s in [(0.5, 0.25), (0.25, 0.5), (1.0, 0.125)]:
        clock += [clock[-1], clock[-1] + hash_s, clock[-1] + hash_s + copy_s]
    readings = iter(clock[1:])
    monkeypatch.setattr(machine.time, "perf_counter", lambda: next(readings))
    assert machine.calibrate() == (128.0, 1.0)


def test_record_window_appends_on_resume_and_starts_anew_otherwise(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(machine, "calibrate", lambda: (512.04, 3.456))
    first = machine.record_window(tmp_path, "2026-11-28T07:00:00.000Z", resumed=False)
    second = machine.record_window(tmp_path, "2026-11-28T08:00:00.000Z", resumed=True)
    assert (first.sha256_mib_per_s, first.memcpy_gib_per_s) == (512.0, 3.46)
    assert machine.read_log(tmp_path) == [first, second]
    data = json.loads((tmp_path / "machine.json").read_text())
    assert [w["start_utc"] for w in data["windows"]] == [first.start_utc, second.start_utc]
    assert "base_dir" not in data
    again = machine.record_window(tmp_path, "2026-11-28T09:00:00.000Z", resumed=False)
    assert machine.read_log(tmp_path) == [again]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"windows": [{"start_utc": "x"}]}', ": windows[0].boot_id: Field required"),
        ('{"windows": [], "host": "a"}', ": host: "),
        ('{"windows": [', ":1: JSON syntax error"),
    ],
)
def test_a_bad_machine_log_names_the_file_and_key_on_each_line(
    tmp_path: Path,
    text: str,
    expected: str,
) -> None:
    (tmp_path / "machine.json").write_text(text)
    with pytest.raises(ConfigError) as err:
        machine.record_window(tmp_path, "2026-11-28T07:00:00.000Z", resumed=True)
    message = str(err.value)
    assert expected in message
    assert all(line.startswith(f"{tmp_path / 'machine.json'}") for line in message.splitlines())
    assert (tmp_path / "machine.json").read_text() == text  # left as it was


def test_other_boots_skip_this_boot_and_runs_without_one() -> None:
    assert machine.other_boots(["b", "", "a", "this", "b"], "this") == ["a", "b"]
    assert machine.other_boots(["", "this"], "this") == []


def test_describe_names_each_boot_of_the_runs_once() -> None:
    window = machine.Window(
        start_utc="2026-11-28T07:00:00.000Z",
        boot_id="1c0ffee0-aaaa-bbbb-cccc-000000000000",
        cpu_model="AMD EPYC",
        cpus=2,
        kernel="6.1.0",
        mem_total_bytes=24 << 30,
        hypervisor="yes",
        sha256_mib_per_s=512.0,
        memcpy_gib_per_s=3.5,
    )
    later = window.model_copy(
        update={"start_utc": "2026-11-28T08:00:00.000Z", "sha256_mib_per_s": 1.0}
    )
    boots = ["", "", window.boot_id, "deadbeef-0", window.boot_id]
    assert machine.describe([window, later], boots) == [
        "2 runs before machine records (2026-11-28)",
        "boot 1c0ffee0: AMD EPYC, 2 CPUs, kernel 6.1.0, 24.0 GiB; SHA-256 512 MiB/s, "
        "memcpy 3.5 GiB/s (2 runs)",
        "boot deadbeef: not recorded (1 runs)",
    ]
