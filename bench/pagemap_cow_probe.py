"""What ``/proc/PID/pagemap`` shows for a private anonymous page shared copy-on-write after
a fork: the kernel fact the designed fix of the node budget's copy-on-write double count
rests on (bench/RESULTS.md "The node budget's copy-on-write double count, measured":
a forked child would join the node with its inherited pages uncharged and charge each one
once it is no longer shared).

Linux Documentation/admin-guide/mm/pagemap.rst: each virtual page has a 64-bit entry; bit
63 "page present", bit 56 "page exclusively mapped" (``PM_MMAP_EXCLUSIVE``), bits 0-54 the
page frame number (PFN; zero unless the reader has CAP_SYS_ADMIN). The probe maps two
private anonymous pages, writes both, forks, and reads both processes' entries:

1. parent, page 0, before the fork;
2. child, page 0, inherited and not touched; then after the child read it;
3. child, page 0, after the child wrote it (a copy-on-write break in the child);
4. parent, page 0, after that write;
5. parent, page 1, still shared;
6. child, page 1, after the parent dropped its copy (``MADV_DONTNEED``).

Prints a Markdown table: state, present, bit 56, and the PFN relative to the parent's
page 0 (``A``) and page 1 (``A'``), or ``new`` for another frame (``hidden`` without
CAP_SYS_ADMIN). Run (no machine lock: it touches two pages of its own):

    .venv/bin/python bench/pagemap_cow_probe.py

Raises OSError if pagemap cannot be read; exits 1 if the child fails.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import struct
import sys

PAGE = mmap.PAGESIZE
PRESENT_BIT = 63
EXCLUSIVE_BIT = 56  # PM_MMAP_EXCLUSIVE
PFN_MASK = (1 << 55) - 1


def entry(address: int) -> tuple[int, int, int]:
    """(present, exclusive, PFN) of the virtual page at ``address`` in this process."""
    with open("/proc/self/pagemap", "rb") as pagemap:
        pagemap.seek(address // PAGE * 8)
        (value,) = struct.unpack("<Q", pagemap.read(8))
    return value >> PRESENT_BIT & 1, value >> EXCLUSIVE_BIT & 1, value & PFN_MASK


def main() -> int:
    area = mmap.mmap(-1, 2 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    area[0] = area[PAGE] = 1
    rows: list[tuple[str, tuple[int, int, int]]] = [("parent, before the fork", entry(base))]
    to_parent, from_child = os.pipe()
    to_child_read, to_child = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its rows go to the parent through the pipe
        mine = [("child, inherited, not touched", entry(base))]
        _ = area[0]
        mine.append(("child, after reading it", entry(base)))
        area[0] = 2
        mine.append(("child, after writing it", entry(base)))
        os.write(from_child, b"w")
        os.read(to_child_read, 1)  # the parent dropped its page 1
        mine.append(("child, page 1 after the parent's MADV_DONTNEED", entry(base + PAGE)))
        os.write(from_child, json.dumps(mine).encode())
        os._exit(0)
    os.read(to_parent, 1)
    rows.append(("parent, after the child's write", entry(base)))
    shared = entry(base + PAGE)
    rows.append(("parent, page 1, still shared", shared))
    area.madvise(mmap.MADV_DONTNEED, PAGE, PAGE)
    os.write(to_child, b"d")
    _, status = os.waitpid(pid, 0)
    if status:
        print(f"pagemap_cow_probe: the child failed (wait status {status})", file=sys.stderr)
        return 1
    os.close(from_child)
    child = [(state, (p, e, f)) for state, (p, e, f) in json.loads(os.read(to_parent, 1 << 16))]
    rows[1:1] = child[:3]
    rows.append(child[3])
    names = {rows[0][1][2]: "A", shared[2]: "A'"}
    print("| state of one private anonymous page | present | bit 56 | PFN |")
    print("| --- | --- | --- | --- |")
    for state, (present, exclusive, pfn) in rows:
        frame = "hidden" if pfn == 0 else names.get(pfn, "new")
        print(f"| {state} | {present} | {exclusive} | {frame} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
