"""A test session run without root fails and names the tests that need root (conftest.py).

Run as a normal user (``nobody`` through ``setpriv`` when this session is root): the
userfaultfd tests skip themselves ("needs root"), so the session must exit 1 and list each
of them; with ``--allow-unprivileged-skips`` the same run exits 0 and still lists them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534


def _as_normal_user(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    if os.geteuid() == 0:
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = {**os.environ, "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _normal_user_can_read_the_checkout() -> bool:
    if os.geteuid() != 0:
        return True
    probe = [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        sys.executable,
        "-c",
        f"open({str(REPO / 'tests' / 'conftest.py')!r}).read()",
    ]
    return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) missing")
def test_a_normal_user_session_fails_listing_what_it_could_not_run() -> None:
    if not _normal_user_can_read_the_checkout():
        pytest.skip(f"user nobody cannot read the checkout or the venv ({REPO})")
    selection = ("tests/test_atomic.py", "tests/test_swapdev_uffd.py")
    strict = _as_normal_user(*selection)
    assert strict.returncode == 1, strict.stdout[-2000:]
    listed = [
        line
        for line in strict.stdout.splitlines()
        if line.startswith("tests/test_swapdev_uffd.py::") and "needs root" in line
    ]
    assert len(listed) >= 8, strict.stdout[-2000:]  # every uffd test, by name
    assert "NOT RUN: they need root" in strict.stdout
    # the tests that need no root (all of test_atomic.py's, the special-file ones included:
    # /dev/null is written through, which needs no write access to /dev) still ran
    n_atomic = len(re.findall(r"^def test_", (REPO / selection[0]).read_text(), re.MULTILINE))
    assert f"{n_atomic} passed" in strict.stdout, strict.stdout[-2000:]
    allowed = _as_normal_user("--allow-unprivileged-skips", *selection)
    assert allowed.returncode == 0, allowed.stdout[-2000:]
    assert "NOT RUN: they need root" in allowed.stdout
