"""Shared by the tests that run ``disaggsim emulate`` for real (root): one run that must
leave the machine as it found it.

The machine's state is ``collect_env.system_state()`` (swap areas, loop devices, memory
cgroups, network namespaces, ``vm.page-cluster`` ...), read under the device's system lock
before and after, so a concurrent root test cannot make the comparison lie, and the uffd
device's node segments in /dev/shm that this process created (``device.node_segments``:
their names carry the creator's pid, so another engineer's concurrent run does not count).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from disaggsim.swapdev import device, emulate
from disaggsim.testbed import collect_env


def emulate_as_found(path: Path, *, progress: bool = False) -> list[dict[str, str]]:
    """Run the emulate config at ``path``; assert the machine's state after equals the state
    before; return the rows of its ``runs.csv`` (one dict per run, strings as written).

    Raises: AssertionError if anything the run set up is left behind; whatever
    ``emulate.emulate`` raises for the config or a failed run.
    """
    cfg = emulate.load_emulate_config(path)
    assert device.node_segments(os.getpid()) == []
    with device.system_lock():
        before = collect_env.system_state()
    try:
        out = emulate.emulate(cfg, progress=progress)
    finally:  # a failed run too
        assert device.node_segments(os.getpid()) == []
    with device.system_lock():
        assert collect_env.system_state() == before
    with open(out / "runs.csv") as handle:
        return list(csv.DictReader(handle))
