"""The built ns-3 program, or why the tests that need it are skipped.

``needs_ns3`` skips a test (or, as ``pytestmark``, a module) with the reason when
``build/sim/disaggsim-ns3`` is not built (run ``make build``); ``BINARY`` is its path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from disaggsim.sim.runner import BinaryNotFoundError, find_binary

try:
    BINARY: Path | None = find_binary()
    MISSING = ""
except BinaryNotFoundError as exc:
    BINARY = None
    MISSING = str(exc)

needs_ns3 = pytest.mark.skipif(bool(MISSING), reason=MISSING or "ns-3 program built")
