"""bench/fork_inherited_pages.py: the smaps reading by hand, and the sampler on a real
process on the uffd device that forks (needs root, as every uffd test here)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import pytest
import test_swapdev_uffd
from _bench import load_bench

from disaggsim.swapdev import device

probe = load_bench("fork_inherited_pages")

#: Three mappings as /proc/PID/smaps prints them (fields abridged): 120 kB registered
#: (``um``, with ``uw`` after it), 40 kB not registered (``mw`` and ``me`` hold the letters
#: u and m only across flags), 8 kB registered with ``um`` last.
SMAPS = """\
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Size:               1024 kB
Rss:                 120 kB
Pss:                 120 kB
VmFlags: rd wr mr mw me ac um uw
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
Size:               1024 kB
Rss:                  40 kB
Pss:                  40 kB
VmFlags: rd wr mr mw me ac
7f0000400000-7f0000500000 rw-p 00000000 00:00 0
Size:               1024 kB
Rss:                   8 kB
VmFlags: rd wr mr mw me um
"""


def test_smaps_rss_kb_by_hand() -> None:
    """Oracle: the sums by hand, 120 + 8 registered of 168."""
    assert probe.smaps_rss_kb(SMAPS) == (128, 168)
    assert probe.smaps_rss_kb("") == (0, 0)


#: The parent fills 16 MiB on the device (1 MiB bytearrays: each a jemalloc mmap the
#: device registers), forks, and the child waits on stdin; argv[1] marks both.
PROGRAM = r"""
import os, sys
data = [bytearray(b"x" * (1 << 20)) for _ in range(16)]
pid = os.fork()
if pid == 0:
    sys.stdin.read()
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def _on_uffd(test: Callable[[], None]) -> Callable[[], None]:
    """The uffd tests' marks (root, swapdev built) and jemalloc's, on ``test``."""
    marks = [
        *test_swapdev_uffd.pytestmark,
        pytest.mark.skipif(not device.JEMALLOC.exists(), reason="libjemalloc2 not installed"),
    ]
    return functools.reduce(lambda t, mark: mark(t), marks, test)


def _start_program(marker: str, node_shm: str | None = None) -> subprocess.Popen[str]:
    """PROGRAM on the uffd device (256 MiB local: it does not page), on node segment
    ``node_shm`` if given; its stdin and stdout are pipes."""
    env = {
        **os.environ,
        **device.uffd_env(device.DelayModel("none"), 256 << 20, True, node_shm=node_shm),
    }
    return subprocess.Popen(
        [sys.executable, "-c", PROGRAM, marker],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


@_on_uffd
def test_a_forked_child_inherits_its_parents_registered_pages() -> None:
    """Oracles: the parent's registered Rss holds its 16 MiB of data (and less than twice
    that); the child's first sample, taken after the fork, equals the parent's registered
    Rss to within 64 pages (what either faulted since); the child is the parent's."""
    marker = f"fork-probe-{uuid.uuid4()}"
    proc = _start_program(marker)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        seen: dict[int, object] = {}
        deadline = time.monotonic() + 30
        while child not in seen and time.monotonic() < deadline:
            probe.sample_once(marker.encode(), seen)
        assert child in seen and proc.pid in seen, seen
    finally:
        proc.communicate("", timeout=60)
    parent_reg = seen[proc.pid].samples[0][1]  # type: ignore[attr-defined]
    child_reg = seen[child].samples[0][1]  # type: ignore[attr-defined]
    assert 16 * 1024 <= parent_reg < 32 * 1024
    assert abs(child_reg - parent_reg) <= 64 * 4
    assert seen[child].ppid == proc.pid  # type: ignore[attr-defined]
    assert proc.returncode == 0


#: A shared registered mapping (``rw-s``: PostgreSQL's buffers) of 60 kB Pss after SMAPS's.
SHARED = """\
7f0000600000-7f0000700000 rw-s 00000000 00:01 2048                       /dev/zero (deleted)
Size:               1024 kB
Rss:                 240 kB
Pss:                  60 kB
VmFlags: rd wr sh mr mw me ms um ui
"""

#: /proc/PID/maps lines of a device process on a node (abridged), its segment unlinked.
MAPS = """\
55d0c0000000-55d0c0001000 r--p 00000000 fe:01 123 /usr/bin/python3.11
7f0000800000-7f0000805000 rw-s 00000000 00:1a 77 /dev/shm/swapdev-node-7-ab-4026531840 (deleted)
7f0000900000-7f0000901000 rw-s 00000000 00:1a 78 /dev/shm/other
"""


def test_registered_pss_and_node_of_by_hand() -> None:
    """Oracles: the registered Pss by hand, private and shared apart (120 kB private: the
    third registered mapping has no Pss line; 60 kB shared); the segment file a process
    maps, "(deleted)" dropped, and none in maps without one."""
    assert probe.registered_pss_kb(SMAPS) == (120, 0)
    assert probe.registered_pss_kb(SMAPS + SHARED) == (120, 60)
    assert probe.node_of(MAPS) == device.SHM_DIR / "swapdev-node-7-ab-4026531840"
    assert probe.node_of(MAPS.splitlines()[0] + "\n" + MAPS.splitlines()[2]) is None


def test_memcg_split_by_hand() -> None:
    """Oracle: a cgroup v1 memory.stat (abridged; its own counters, then total_*) by hand:
    30 MiB anonymous, 12 MiB shmem in 16 MiB of cache, a usage of 47.5 MiB (kernel memory
    besides), limit 48 MiB: full; only the full samples count in the row
    (one at 47 of 48 MiB, under 98 %, does not)."""
    stat = {"cache": 16777216, "rss": 31457280, "shmem": 12582912, "total_rss": 99999744}
    assert probe.memcg_pages(stat, 48 << 20, 47 << 20 | 1 << 19) == (12288, 12160, 7680, 3072, 4096)
    full = (1.0, 12288, 12160, 7680, 3072, 4096)
    almost = (1.5, 12288, 12032, 7680, 3072, 4096)
    half = (2.0, 12288, 6000, 3000, 0, 3000)
    rows = probe.memcg_rows({"disaggsim-emulate-node0": [full, half, almost, full]})
    assert rows == ["disaggsim-emulate-node0,4,2,12288,7680,3072,25.0"]


def test_node_rows_count_shared_pages_in_the_node_by_hand() -> None:
    """Oracle: a shared region is in the node's count (since 2026-11-29), so the device's
    count is compared with the private plus the shared registered pages: samples of 100,
    105 and 98 device pages against 60 private + 40 shared give differences -2, 0 and 5
    (median 0, mean 1, p5 -2, p95 and p99 5), one sample in three over 1 % of a 200-page
    budget (2 pages); the private median 60, the shared median and largest 40."""
    seg = device.SHM_DIR / "swapdev-node-1-ab-7"
    samples = [(1.0, 100, 60, 40, 2), (2.0, 105, 60, 40, 2), (3.0, 98, 60, 40, 2)]
    assert probe.node_rows({seg: samples}, 200) == ["swapdev-node-1-ab-7,3,0,1,-2,5,5,33,60,40,40"]


@_on_uffd
def test_after_a_fork_the_nodes_count_is_the_kernels() -> None:
    """The node's count once a child forked from a process holding 16 MiB waits, both idle:
    the kernel's count of the node's pages (both processes' registered Pss, each shared
    page half in each) to within 8 pages (the interpreter's own faults), and one child's
    worth of pages below what counting the inherited pages in both would give. On the
    device before 2026-11-28 the count was the parent's pages twice."""
    marker = f"fork-probe-{uuid.uuid4()}"
    with device.per_node_segments([device.netns_inode()]) as (shm, (segment,)):
        proc = _start_program(marker, shm)
        try:
            assert proc.stdout is not None
            int(proc.stdout.readline())
            time.sleep(0.5)  # the child's start, fifty reconcile periods
            nodes: dict[object, list[tuple[float, int, int, int, int]]] = {}
            probe.sample_nodes(nodes)
        finally:
            proc.communicate("", timeout=60)
    assert list(nodes) == [segment.path], nodes
    (_, resident, kernel, shared, processes), *_ = nodes[segment.path]
    assert shared == 0  # no shared registered mapping
    assert processes == 2
    assert kernel >= 16 * 256  # the parent's 16 MiB, once
    assert abs(resident - kernel) <= 8, (resident, kernel)
    assert proc.returncode == 0
