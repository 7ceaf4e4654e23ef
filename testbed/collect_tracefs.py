"""Save and restore the ftrace (tracefs) settings ``disaggsim collect`` changes.

Every tracefs control file has its own text format, and several cannot be written back as
read (kernel/trace/trace.c, Documentation/trace/ftrace.rst):

- ``buffer_size_kb`` (per-CPU ring buffer size, KiB) reads ``N`` when every CPU has the same
  size, ``X`` when they differ (then only ``per_cpu/cpuK/buffer_size_kb`` tell the sizes),
  and ``N (expanded: M)`` until tracing is first used after boot: the kernel boots with a
  minimal buffer of ``N`` KiB and grows it to the boot size ``M`` (``trace_buf_size=``,
  default 1408 KiB) when a tracer or event is first switched on. Writes take one decimal
  number (``kstrtoul``); ``X`` and ``N (expanded: M)`` are rejected with EINVAL.
- choice files show every choice with the current one in brackets
  (``trace_clock``: ``[local] global counter ... mono ...``) and take one choice; others show
  only the current value (``current_tracer``: ``nop``).
- ``tracing_on`` and ``options/*`` read and take ``0``/``1``.

The kernel never returns to the unexpanded boot state, so ``N (expanded: M)`` is restored as
``M``: the size the buffer would have had as soon as anyone used tracing (memory: ``M`` instead
of ``N`` KiB per CPU). :func:`tracefs_state` therefore reports buffer sizes as the size a tracer
runs with, the same number before (unexpanded) and after (restored) a collection.

:class:`Tracefs` is the one path through which the collector reads and writes tracefs, so the
tests can run the same save/restore against a fake directory that rejects what the kernel
rejects. The saved writes are also what the collector's owner records hold (one
``FILE=VALUE`` each, :func:`disaggsim.testbed.collect_env.own_settings`), so that the next
command writes them back if the collector is SIGKILLed; it tells a changed file by reading
it in the same forms (:func:`disaggsim.testbed.collect_env.read_setting`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Where the collector mounts tracefs (Documentation/trace/ftrace.rst).
TRACEFS: Final = Path("/sys/kernel/tracing")

#: Bytes of a ring-buffer sub-buffer page header (``struct buffer_data_page``: u64
#: ``time_stamp`` + local_t ``commit``, kernel/trace/ring_buffer.c ``BUF_PAGE_HDR_SIZE``).
BUF_PAGE_HDR_BYTES: Final = 16

#: Files whose state :func:`tracefs_state` reports (besides the per-CPU buffer sizes).
STATE_FILES: Final = (
    "tracing_on",
    "current_tracer",
    "trace_clock",
    "buffer_size_kb",
    "buffer_subbuf_size_kb",
    "buffer_percent",
    "tracing_cpumask",
    "options/bin",
    "options/context-info",
    "options/blk_classic",
    "options/blk_cgroup",
    "events/enable",
    "events/block/enable",
)

_UNEXPANDED = re.compile(r"^(\d+) \(expanded: (\d+)\)$")


class Tracefs:
    """A mounted tracefs at ``root``; every read and write of the collector goes through it.

    ``read`` returns the file's text without the trailing newline; ``write`` raises the
    kernel's OSError (e.g. EINVAL for a value the file does not take).
    """

    def __init__(self, root: Path = TRACEFS) -> None:
        self.root = Path(root)

    def exists(self, name: str) -> bool:
        """True if control file ``name`` (relative to the root) exists."""
        return (self.root / name).exists()

    def read(self, name: str) -> str:
        """Text of ``name`` without the trailing newline."""
        return (self.root / name).read_text().rstrip("\n")

    def write(self, name: str, value: str) -> None:
        """Write ``value`` to ``name`` in one ``write(2)``, as ``echo VALUE > NAME`` does."""
        (self.root / name).write_text(value)

    def cpus(self) -> list[int]:
        """The CPUs with a ``per_cpu/cpuK`` directory, ascending."""
        per_cpu = self.root / "per_cpu"
        if not per_cpu.is_dir():
            return []
        return sorted(int(p.name[3:]) for p in per_cpu.iterdir() if re.match(r"cpu\d+$", p.name))


@dataclass(frozen=True, slots=True)
class BufferSize:
    """A parsed ``buffer_size_kb``: ``kb`` per CPU (None for ``X``: CPUs differ) and, before
    the first use of tracing, ``expanded_kb`` (the size the kernel will grow it to)."""

    kb: int | None
    expanded_kb: int | None = None


def parse_buffer_size_kb(text: str, where: str = "buffer_size_kb") -> BufferSize:
    """Parse ``N``, ``N (expanded: M)`` or ``X`` (module docstring).

    Raises:
        ValueError: any other text, naming ``where`` and what was expected.
    """
    text = text.strip()
    if text == "X":
        return BufferSize(None)
    if text.isdigit():
        return BufferSize(int(text))
    m = _UNEXPANDED.match(text)
    if m:
        return BufferSize(int(m.group(1)), int(m.group(2)))
    raise ValueError(f"{where}: expected 'N', 'N (expanded: M)' or 'X' (KiB), got {text!r}")


def parse_choice(text: str) -> str:
    """The current choice of a choice file: ``"[local] global"`` -> ``"local"``; a file that
    shows only its value (``current_tracer``) -> that value."""
    m = re.search(r"\[([^\]]*)\]", text)
    return m.group(1) if m else text.strip()


def ring_buffer_kb(kb: int, subbuf_kb: int = 4) -> int:
    """``buffer_size_kb`` the kernel shows after a resize to ``kb`` KiB per CPU.

    The ring buffer holds whole sub-buffers of ``subbuf_kb`` KiB, each with
    :data:`BUF_PAGE_HDR_BYTES` of header, at least 2 (kernel/trace/ring_buffer.c
    ``ring_buffer_resize``); the file shows their data bytes >> 10. E.g. 32768 -> 32771
    (8225 sub-buffers of 4080 B; measured on Linux 6.18), 1408 -> 1410. Reading a size and
    resizing to it again gives the same size.
    """
    data_bytes = subbuf_kb * 1024 - BUF_PAGE_HDR_BYTES
    n_subbufs = max(2, -(-kb * 1024 // data_bytes))
    return n_subbufs * data_bytes >> 10


def _subbuf_kb(fs: Tracefs) -> int:
    if fs.exists("buffer_subbuf_size_kb"):
        return int(fs.read("buffer_subbuf_size_kb"))
    return os.sysconf("SC_PAGE_SIZE") // 1024


def _effective_sizes(fs: Tracefs) -> tuple[BufferSize, dict[int, int]]:
    """The top-level size and the per-CPU sizes a tracer runs with (expanded if not yet)."""
    top = parse_buffer_size_kb(fs.read("buffer_size_kb"), str(fs.root / "buffer_size_kb"))
    per_cpu = {}
    for cpu in fs.cpus():
        name = f"per_cpu/cpu{cpu}/buffer_size_kb"
        if fs.exists(name):
            size = parse_buffer_size_kb(fs.read(name), str(fs.root / name))
            per_cpu[cpu] = size.kb if size.kb is not None else -1
    if top.expanded_kb is not None:  # every CPU grows to M on first use
        per_cpu = dict.fromkeys(per_cpu, top.expanded_kb)
    return top, per_cpu


@dataclass(frozen=True, slots=True)
class SavedTracefs:
    """The writes that put tracefs back as it was: ``(file, value)`` in order."""

    writes: tuple[tuple[str, str], ...]


def save_tracefs(fs: Tracefs, names: Iterable[str]) -> SavedTracefs:
    """Read the settings ``names`` (skipping files this kernel lacks) into restore writes.

    ``buffer_size_kb`` is saved as one top-level write (``N``; ``M`` for the unexpanded
    ``N (expanded: M)``), or as one write per ``per_cpu/cpuK/buffer_size_kb`` when it reads
    ``X``; choice files as their bracketed choice; ``tracing_on`` is written last so nothing is
    logged between the other steps.

    Raises:
        ValueError: a file in a format not listed in the module docstring (names the file).
    """
    writes: list[tuple[str, str]] = []
    for name in names:
        if not fs.exists(name):
            continue
        if name == "buffer_size_kb":
            top, per_cpu = _effective_sizes(fs)
            if top.kb is None:
                writes += [(f"per_cpu/cpu{c}/buffer_size_kb", str(kb)) for c, kb in per_cpu.items()]
            else:
                writes.append((name, str(top.expanded_kb or top.kb)))
            continue
        value = parse_choice(fs.read(name))
        if not value or "\n" in value or " " in value:
            raise ValueError(
                f"{fs.root / name}: expected one value or a [bracketed] choice, "
                f"got {fs.read(name)!r}"
            )
        writes.append((name, value))
    writes.sort(key=lambda w: w[0] == "tracing_on")
    return SavedTracefs(tuple(writes))


def restore_tracefs(fs: Tracefs, saved: SavedTracefs) -> list[str]:
    """Do every write of ``saved``, also after one fails; return the failures (empty: all
    restored), each naming the file, the value and the kernel's error."""
    failures = []
    for name, value in saved.writes:
        try:
            fs.write(name, value)
        except OSError as exc:
            failures.append(f"{fs.root / name}: writing {value!r}: {exc.strerror or exc}")
    return failures


def tracefs_state(fs: Tracefs) -> dict[str, str]:
    """Snapshot of :data:`STATE_FILES` and ``per_cpu/cpuK/buffer_size_kb`` for comparison.

    Choice files give their choice; buffer sizes the size a tracer runs with
    (:func:`ring_buffer_kb` of ``M`` while unexpanded, of ``N`` after), so that a restored
    unexpanded buffer compares equal (module docstring). Missing files are left out.
    """
    state: dict[str, str] = {}
    subbuf = _subbuf_kb(fs)
    for name in STATE_FILES:
        if not fs.exists(name):
            continue
        if name == "buffer_size_kb":
            top, per_cpu = _effective_sizes(fs)
            kb = top.expanded_kb or top.kb
            state[name] = "X" if kb is None else str(ring_buffer_kb(kb, subbuf))
            for cpu, cpu_kb in per_cpu.items():
                state[f"per_cpu/cpu{cpu}/buffer_size_kb"] = str(ring_buffer_kb(cpu_kb, subbuf))
        else:
            state[name] = parse_choice(fs.read(name))
    return state


def read_tracefs_state(root: Path = TRACEFS) -> dict[str, str]:
    """:func:`tracefs_state` of the kernel's tracefs, also when it is not mounted.

    If ``root`` holds no tracefs, it is mounted in a private mount namespace of a child
    process (``unshare --mount``), so the machine's mount table is not changed. Returns
    ``{}`` on a kernel without tracefs.

    Raises:
        RuntimeError: the child failed (e.g. not root).
    """
    if (root / "trace_pipe").exists():
        return tracefs_state(Tracefs(root))
    if "tracefs" not in Path("/proc/filesystems").read_text():
        return {}
    proc = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            'mount -t tracefs nodev "$0" && exec "$@"',
            str(root),
            sys.executable,
            "-m",
            "disaggsim.testbed.collect_tracefs",
            str(root),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"reading tracefs in a private mount namespace failed "
            f"({proc.returncode}): {proc.stderr.strip()}"
        )
    return dict(json.loads(proc.stdout))


def main(argv: list[str] | None = None) -> int:
    """Print :func:`tracefs_state` of the tracefs at ``argv[0]`` as JSON (used by
    :func:`read_tracefs_state` inside its private mount namespace)."""
    args = sys.argv[1:] if argv is None else argv
    with contextlib.suppress(BrokenPipeError):
        print(json.dumps(tracefs_state(Tracefs(Path(args[0] if args else TRACEFS)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
