"""Autouse fixture of the collector tests: the machine is as it was after every test.

Import ``machine_left_as_found`` into a test module to use it. It compares
:func:`disaggsim.testbed.collect_env.system_state` (tracefs, sysctls, swap, loop devices,
mounts, memory cgroups, network namespaces, zswap, block-device tracing) before and after
each test. Needs root to read that state; without root it checks nothing (the tests that
change machine state are skipped then too).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from disaggsim.testbed.collect_env import system_state


@pytest.fixture(autouse=True)
def machine_left_as_found() -> Iterator[None]:
    """Fail the test if it left any part of :func:`system_state` changed."""
    if os.geteuid() != 0:
        yield
        return
    before = system_state()
    yield
    after = system_state()
    changed = {
        key: {
            "gone": sorted(set(before[key]) - set(after.get(key, []))),
            "new": sorted(set(after.get(key, [])) - set(before[key])),
        }
        for key in before
        if before[key] != after.get(key)
    }
    assert not changed, f"machine state changed by the test: {changed}"
