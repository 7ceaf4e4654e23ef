"""A fake tracefs directory that shows and rejects what the kernel's does (for unit tests).

Oracle: kernel/trace/trace.c (Linux 6.x) ``tracing_entries_read``/``tracing_entries_write``
(``buffer_size_kb``: ``N (expanded: M)`` before the first use, ``X`` when CPUs differ, writes
parsed by ``kstrtoul`` base 10, 0 rejected), ``tracing_set_tracer`` (unknown tracer: EINVAL;
expands the boot buffer), ``tracing_set_clock`` (unknown clock: EINVAL), ``trace_options_write``
(options take 0/1), and kernel/trace/ring_buffer.c ``ring_buffer_resize`` (whole 4 KiB
sub-buffers with a 16-byte header, at least 2). Sizes checked against this machine: writing
32768 shows 32771.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from disaggsim.testbed.collect_tracefs import Tracefs

CLOCKS = (
    "local",
    "global",
    "counter",
    "uptime",
    "perf",
    "mono",
    "mono_raw",
    "boot",
    "tai",
    "x86-tsc",
)
SUBBUF_DATA_BYTES = 4096 - 16
BOOT_KB = 1408  # TRACE_BUF_SIZE_DEFAULT 1441792 B


def _einval(path: Path) -> OSError:
    return OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(path))


def _kstrtoul(value: str, path: Path) -> int:
    if not re.fullmatch(r"\+?\d+\n?", value):
        raise _einval(path)
    return int(value)


class FakeTracefs(Tracefs):
    """Files in ``root`` as a freshly booted kernel shows them (``expanded=False``) or after
    tracing was used. ``refuse`` maps a file to values its next writes fail on (EIO), to
    simulate a failing restore step."""

    def __init__(self, root: Path, n_cpus: int = 2, expanded: bool = False) -> None:
        super().__init__(root)
        self.expanded = expanded
        self.refuse: dict[str, set[str]] = {}
        self.n_writes = 0
        size_kb = BOOT_KB if expanded else 0  # unexpanded: the 2-sub-buffer minimum
        self.entries = {cpu: self._resized_bytes(size_kb) for cpu in range(n_cpus)}
        files = {
            "available_tracers": "blk function nop",
            "current_tracer": "nop",
            "trace_clock": "[local] " + " ".join(CLOCKS[1:]),
            "tracing_on": "1",
            "buffer_subbuf_size_kb": "4",
            "buffer_percent": "50",
            "tracing_cpumask": "3",
            "options/bin": "0",
            "options/context-info": "1",
            "options/blk_classic": "0",
            "options/blk_cgroup": "0",
            "events/enable": "0",
            "events/block/enable": "0",
            "trace": "",
            "trace_pipe": "",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text + "\n")
        for cpu in range(n_cpus):
            (root / f"per_cpu/cpu{cpu}").mkdir(parents=True, exist_ok=True)
        self._render_sizes()

    @staticmethod
    def _resized_bytes(kb: int) -> int:
        return max(2, -(-kb * 1024 // SUBBUF_DATA_BYTES)) * SUBBUF_DATA_BYTES

    def _render_sizes(self) -> None:
        sizes = set(self.entries.values())
        if len(sizes) > 1:
            top = "X"
        elif self.expanded:
            top = str(sizes.pop() >> 10)
        else:
            top = f"{sizes.pop() >> 10} (expanded: {BOOT_KB})"
        (self.root / "buffer_size_kb").write_text(top + "\n")
        for cpu, size in self.entries.items():
            (self.root / f"per_cpu/cpu{cpu}/buffer_size_kb").write_text(f"{size >> 10}\n")

    def _expand(self) -> None:
        if not self.expanded:
            self.expanded = True
            self.entries = dict.fromkeys(self.entries, self._resized_bytes(BOOT_KB))
            self._render_sizes()

    def write(self, name: str, value: str) -> None:
        """Validate ``value`` as the kernel does, then update the files."""
        path = self.root / name
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        if value.strip() in self.refuse.get(name, set()):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        self.n_writes += 1
        m = re.fullmatch(r"per_cpu/cpu(\d+)/buffer_size_kb", name)
        if name == "buffer_size_kb" or m:
            kb = _kstrtoul(value, path)
            if kb == 0:
                raise _einval(path)
            cpus = [int(m.group(1))] if m else list(self.entries)
            for cpu in cpus:
                self.entries[cpu] = self._resized_bytes(kb)
            self.expanded = True
            self._render_sizes()
        elif name == "current_tracer":
            if value.strip() not in self.read("available_tracers").split():
                raise _einval(path)
            self._expand()
            path.write_text(value.strip() + "\n")
        elif name == "trace_clock":
            clock = value.strip()
            if clock not in CLOCKS:
                raise _einval(path)
            path.write_text(" ".join(f"[{c}]" if c == clock else c for c in CLOCKS) + "\n")
        elif name == "tracing_on":
            path.write_text(f"{int(_kstrtoul(value, path) != 0)}\n")
        elif name.startswith("options/") or name.endswith("/enable"):
            if _kstrtoul(value, path) not in (0, 1):
                raise _einval(path)
            path.write_text(f"{int(value)}\n")
        elif name == "trace":
            path.write_text("")
        else:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))


def fake_block_device(sys_block: Path, dev: str) -> Path:
    """``SYS_BLOCK/DEV/trace/{enable,act_mask}`` as an untraced device shows them."""
    trace = sys_block / dev / "trace"
    trace.mkdir(parents=True)
    (trace / "enable").write_text("0\n")
    (trace / "act_mask").write_text("disabled\n")
    return trace
