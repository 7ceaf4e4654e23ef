"""The testbed takes the paging-recorder device from its caller (it does not import swapdev):
without it, a collection that records on the device stops before touching the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from disaggsim.swapdev.device import recorder_env
from disaggsim.testbed.collect import PRESETS, collect


def test_device_recording_without_the_device_env_is_refused_first(tmp_path: Path) -> None:
    config = PRESETS["smoke"].model_copy(update={"paging_recorder": "swapdev-uffd"})
    with pytest.raises(ValueError, match=r"device_env=disaggsim\.swapdev\.device\.recorder_env"):
        collect(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_recorder_env_runs_the_uffd_device_with_no_delay() -> None:
    try:
        env = recorder_env(64 << 20)
    except (FileNotFoundError, RuntimeError) as exc:  # not built / no jemalloc
        pytest.skip(str(exc))
    assert env["SWAPDEV_MODEL"] == "none" and env["SWAPDEV_LOCAL_BYTES"] == str(64 << 20)
    assert env["LD_PRELOAD"].split()[0].endswith("libswapdev_uffd.so")
    assert "libjemalloc" in env["LD_PRELOAD"]
