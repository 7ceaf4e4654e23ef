"""The uffd node budget counts what the kernel counts, through forks, copy-on-write breaks,
drops and paging: a property over random sequences of them (``SWAPDEV_NODE_SHM``,
``swapdev/src/uffd_node.h``; the copy-on-write charge, ``charge_exclusive`` in
``swapdev/src/uffd_preload.c``). Needs root (userfaultfd with
vm.unprivileged_userfaultfd=0).

The processes are the ctest ``swapdev-uffd-node``'s workers (``test_uffd_node LIB worker
SEED``: a 2 MiB region of 4 KiB pages, each filled with a pattern of its page and seed,
driven by one-line commands on stdin), here on a node of 64 pages.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import test_swapdev_uffd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disaggsim.swapdev import device

pytestmark = test_swapdev_uffd.pytestmark  # root, swapdev built (its ctests with it)

BUDGET_PAGES = 64
PAGE = 4096


def registered_pss_kb(pid: int) -> int:
    """Pss of ``pid``'s mappings registered with userfaultfd (``/proc/PID/smaps``,
    ``VmFlags`` ``um``), in kB: its share of the pages the device holds local for it, a
    page mapped by two processes counting half in each (the kernel's count)."""
    total = pss = 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if line.startswith("Pss:"):
            pss = int(line.split()[1])
        elif line.startswith("VmFlags:"):
            total += pss if "um" in line.split()[1:] else 0
    return total


@dataclass
class Worker:
    """One worker process and its pipes; ``kid``: the pid of the child it forked ("F")."""

    proc: subprocess.Popen[str]
    kid: int = 0

    def ask(self, command: str) -> int:
        """Send one command, return the number its reply carries ("X n")."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"worker {self.proc.pid}: no reply to {command!r}"
        return int(line.split()[1])


@contextmanager
def node_worker(seed: int) -> Iterator[tuple[Worker, device.NodeSegment]]:
    """A worker on the device on a new node segment of :data:`BUDGET_PAGES` pages."""
    build = device.build_dir()
    with device.per_node_segments([device.netns_inode()]) as (shm, (segment,)):
        env = {
            **os.environ,
            "LD_PRELOAD": str(build / "libswapdev_uffd.so"),
            "SWAPDEV_LOCAL_BYTES": str(BUDGET_PAGES * PAGE),
            "SWAPDEV_NODE_SHM": shm,
        }
        proc = subprocess.Popen(
            [str(build / "test_uffd_node"), str(build / "libswapdev_uffd.so"), "worker", str(seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            yield Worker(proc), segment
        finally:
            proc.kill()
            proc.wait()


def node_at_rest(segment: device.NodeSegment, pids: list[int]) -> tuple[int, int]:
    """(the node's count, the kernel's count of its pages), once they agree or after 2 s
    (the device charges a page that stopped being shared within 10 ms)."""
    deadline = time.monotonic() + 2
    while True:
        counters = segment.counters()
        assert counters is not None
        kernel = sum(registered_pss_kb(pid) for pid in pids) // (PAGE // 1024)
        if counters.resident_pages == kernel or time.monotonic() > deadline:
            return counters.resident_pages, kernel
        time.sleep(0.005)


#: One step: (who: 0 the parent, 1 the child; what: "t" fill more pages, "w" write the
#: first pages anew, "d" drop pages; a size and a start, both scaled to the process's pages).
steps = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from("twd"),
        st.integers(1, 48),
        st.floats(0, 1),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.integers(1, 48), ops=steps)
def test_the_nodes_count_is_the_kernels_through_forks_and_writes(
    first: int, ops: list[tuple[int, str, int, float]]
) -> None:
    """A parent fills ``first`` pages and forks; then each step fills, writes (breaking
    copy-on-write) or drops pages in the parent or the child, under a 64-page node (the
    two may hold up to 2 x 48 + 6 x 48 pages: they page). Oracles, after every step and at
    the end: the node's count equals the kernel's (both processes' registered Pss, a page
    shared copy-on-write counted once), and never exceeds the budget at rest; at the end
    each process reads every page exactly (its own pattern, a written page's new one, a
    dropped page's zeros)."""
    with node_worker(9) as (parent, segment):
        assert parent.ask(f"t {first}") == first
        kid = parent.ask("F")
        filled = [first, first]
        pids = [parent.proc.pid, kid]
        for who, what, size, where in ops:
            prefix = "" if who == 0 else "g "
            if what == "t":
                size = min(size, 512 - filled[who])
                filled[who] = parent.ask(f"{prefix}t {size}")
            elif what == "w":
                assert parent.ask(f"{prefix}w {min(size, filled[who])}") == min(size, filled[who])
            else:
                start = int(where * (filled[who] - 1))
                assert parent.ask(f"{prefix}d {start} {min(size, filled[who] - start)}") == 0
            resident, kernel = node_at_rest(segment, pids)
            assert resident == kernel, (who, what, size, filled)
            assert resident <= BUDGET_PAGES
        assert parent.ask("g c") == 0  # bad words in the child
        assert parent.ask("c") == 0
        resident, kernel = node_at_rest(segment, pids)
        assert resident == kernel
        assert parent.ask("g q") == 0  # the child's exit status
        counters = segment.counters()
        assert counters is not None and counters.peak_pages <= BUDGET_PAGES + 32
