"""One local budget per node on the uffd backend (``SWAPDEV_NODE_SHM``,
``swapdev/src/uffd_node.h``; the mechanism's own oracles are the ctest
``swapdev-uffd-node``): a real CPython program that forks workers, as ``pyspark.daemon``
does, under one node segment. Needs root (userfaultfd with
vm.unprivileged_userfaultfd=0).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import test_swapdev_uffd

from disaggsim.swapdev import device, emulate_apps

pytestmark = [
    *test_swapdev_uffd.pytestmark,  # root, swapdev built
    pytest.mark.skipif(not device.JEMALLOC.exists(), reason="libjemalloc2 not installed"),
]

#: The parent fills 8 MiB, then forks 3 workers that fill 16 MiB each (1 MiB bytearrays,
#: one byte per 4 KiB page set from the worker's seed) and read everything twice (CRC-32);
#: each prints its CRCs and ends with os._exit, as a PySpark worker does.
PROGRAM = r"""
import os, sys, zlib

def blocks(seed, mib):
    out = []
    for j in range(mib):
        b = bytearray(1 << 20)
        b[::4096] = bytes([(seed * 7 + j) & 255]) * 256
        out.append(b)
    return out

def crcs(bs):
    return [zlib.crc32(b"".join(bs)) for _ in range(2)]

mine = blocks(1, 8)
pids = []
for w in range(3):
    pid = os.fork()
    if pid == 0:
        got = crcs(blocks(2 + w, 16)) + crcs(mine)
        os.write(1, (" ".join(map(str, [w, *got])) + "\n").encode())  # one write
        os._exit(0)
    pids.append(pid)
for pid in pids:
    assert os.waitpid(pid, 0)[1] == 0
print("parent", *crcs(mine), flush=True)
"""
BUDGET_BYTES = 8 << 20  # the node's; the program's data is 56 MiB


def test_forked_python_workers_share_the_node_budget() -> None:
    """Oracles: the output equals the program's without the device (every byte read back
    as written); the node's processes page (summed swap-ins and swap-outs > 0); the node's
    count right after any fault never exceeded the budget by a batch (the segment's peak:
    with a budget per process the four processes could hold 4 x 2048 pages); each process
    left its slot at its exit (the count ends at 0); the segment is gone afterwards. The
    segment is named by ``%n`` (the device puts its network namespace's inode there)."""
    plain = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True, timeout=120
    )
    # Named as emulate names a Spark node's: "%n", this network namespace's inode.
    with device.per_node_segments([device.netns_inode()]) as (shm, (segment,)):
        assert shm.endswith("%n")
        env = {
            **os.environ,
            **device.uffd_env(device.DelayModel("none"), BUDGET_BYTES, True, node_shm=shm),
        }
        run = subprocess.run(
            [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=300
        )
        node = segment.counters()
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(run.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    swap_in, swap_out = emulate_apps.device_counters(run.stderr)
    assert swap_in > 0 and swap_out > 0, run.stderr
    assert node is not None
    assert node.budget_pages == BUDGET_BYTES // 4096
    assert node.peak_pages <= node.budget_pages + device.EVICT_BATCH_PAGES, (node, run.stderr)
    assert node.peak_pages >= node.budget_pages  # the budget bound (a check that it ran)
    assert node.resident_pages == 0, node
    assert not segment.path.exists()
