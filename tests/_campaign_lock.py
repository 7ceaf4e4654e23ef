"""A campaign directory's lock (``sim/campaign.py _campaign_lock``: a POSIX record lock on
``.campaign.lock``) as another process sees it. A record lock never excludes the process
that holds it, so these checks run in a separate Python process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLD = """
import fcntl, sys
handle = open(sys.argv[1], "w")
fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""

_TRY = """
import fcntl, sys
with open(sys.argv[1], "w") as handle:
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(1)
"""


@contextmanager
def holding_campaign_lock(out_dir: Path) -> Iterator[None]:
    """Another process holds ``out_dir``'s campaign lock for the block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out_dir / ".campaign.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n", "the helper could not take the lock"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


def another_process_can_lock(out_dir: Path) -> bool:
    """Whether a process other than this one can take ``out_dir``'s campaign lock now."""
    proc = subprocess.run([sys.executable, "-c", _TRY, str(out_dir / ".campaign.lock")], timeout=30)
    return proc.returncode == 0
