"""Shared pieces of the fuzz tests (tests/test_fuzz_*.py): settings, mutations, error checks.

Inputs are mutations of real seed files: truncation, bit flips, byte insertion/deletion,
empty files and wrong formats. Every run is derandomized (fixed seed) and bounded.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from disaggsim.traces.errors import TraceFormatError

FUZZ_SETTINGS = settings(
    derandomize=True,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
CORPUS = Path(__file__).parent / "fixtures" / "fuzz"


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` after 1-3 mutations: truncate, flip a bit, insert, delete or replace."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "empty", "junk"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "truncate":
            del data[pos:]
        elif op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 8))]
        elif op == "empty":
            data = bytearray()
        elif op == "junk":
            data[pos:pos] = draw(
                st.sampled_from([b" ", b"\n", b"\r\n", b"\t", b"-", b"+", b"0x", b"\xff", b"\x00"])
            )
    return bytes(data)


def assert_names_location(
    exc: BaseException, path: Path, where: str = r"(:\d+:|:byte \d+|: )"
) -> None:
    """The error is a TraceFormatError (a ValueError) naming ``path`` and a location."""
    assert isinstance(exc, TraceFormatError), repr(exc)
    text = str(exc)
    assert str(path) in text, text
    assert re.search(re.escape(str(path)) + where, text), text


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail a test that blocks (a reader waiting on a FIFO) instead of hanging: 30 s."""

    def _raise(*_: object) -> None:
        raise TimeoutError("the test blocked for 30 s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
