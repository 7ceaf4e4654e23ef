"""The collector repeats its untraced start when a node's memory cgroup OOM-kills a process
(``testbed.collect._start_apps``), with a real memcg v1 OOM kill on this machine as root.

The application here is a stand-in for the collector's (``start(stack)`` that raises
RuntimeError when its process fails, as ``Cluster.wait`` does); what is under test is the
retry rule and the kernel's ``oom_kill`` counter it reads. The group gets swappiness 0, so
an allocation over its limit cannot go to swap and the group's OOM killer ends it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.collect import _start_apps
from disaggsim.testbed.collect_env import (
    MEMCG_ROOT,
    UndoStack,
    memcg_group,
    memcg_oom_kills,
)
from disaggsim.testbed.memcg_oom import OOM_ATTEMPTS

LIMIT_BYTES = 16 << 20

needs_memcg = pytest.mark.skipif(
    os.geteuid() != 0 or not (MEMCG_ROOT / "memory.limit_in_bytes").exists(),
    reason="needs root and the cgroup v1 memory controller",
)


class Allocator:
    """Allocates ``sizes[attempt]`` bytes inside ``memcg`` and exits 0 (or is OOM-killed)."""

    def __init__(self, memcg: Path, sizes: list[int], log_dir: Path) -> None:
        self.memcg, self.sizes, self.log_dir, self.calls = memcg, sizes, log_dir, 0

    def start(self, stack: UndoStack) -> None:
        size = self.sizes[min(self.calls, len(self.sizes) - 1)]
        self.calls += 1
        log = self.log_dir / "allocator.log"
        code = f"b = bytearray({size}); b[::4096] = b'x' * len(b[::4096]); print('ok')"
        with log.open("w") as fh:
            rc = subprocess.call(
                [
                    "sh",
                    "-c",
                    'echo $$ > "$0" && exec "$@"',
                    str(self.memcg / "cgroup.procs"),
                    sys.executable,
                    "-c",
                    code,
                ],
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
        if rc != 0:
            raise RuntimeError(f"allocator exited {rc}; see {log}")


def _group(stack: UndoStack) -> Path:
    cg = memcg_group(stack, "disaggsim-test-retry")
    (cg / "memory.swappiness").write_text("0")
    (cg / "memory.limit_in_bytes").write_text(str(LIMIT_BYTES))
    return cg


class _Steps:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)


@needs_memcg
def test_an_oom_killed_start_is_repeated_and_its_logs_kept(tmp_path: Path) -> None:
    steps = _Steps()
    with UndoStack() as stack:
        cg = _group(stack)
        app = Allocator(cg, [4 * LIMIT_BYTES, LIMIT_BYTES // 4], tmp_path)
        with UndoStack() as run_stack:
            attempts = _start_apps([app], [cg], run_stack, tmp_path, steps)  # type: ignore[arg-type]
        assert memcg_oom_kills(cg) >= 1
    assert attempts == 2 and app.calls == 2
    assert len(steps.lines) == 1 and "disaggsim-test-retry OOM-killed" in steps.lines[0]
    assert (tmp_path / "attempt1-allocator.log").is_file()
    assert (tmp_path / "allocator.log").read_text().strip() == "ok"


@needs_memcg
def test_repeated_oom_kills_give_up_after_the_last_attempt(tmp_path: Path) -> None:
    with UndoStack() as stack:
        cg = _group(stack)
        app = Allocator(cg, [4 * LIMIT_BYTES], tmp_path)
        with pytest.raises(RuntimeError, match=f"in each of {OOM_ATTEMPTS} attempts"):
            with UndoStack() as run_stack:
                _start_apps([app], [cg], run_stack, tmp_path, _Steps())  # type: ignore[arg-type]
    assert app.calls == OOM_ATTEMPTS


@needs_memcg
def test_a_failure_without_an_oom_kill_is_not_repeated(tmp_path: Path) -> None:
    with UndoStack() as stack:
        cg = _group(stack)
        app = Allocator(cg, [-1], tmp_path)  # bytearray(-1): ValueError, exit 1
        with pytest.raises(RuntimeError, match="allocator exited 1"):
            with UndoStack() as run_stack:
                _start_apps([app], [cg], run_stack, tmp_path, _Steps())  # type: ignore[arg-type]
    assert app.calls == 1
