"""disaggsim.signals: SIGINT, SIGTERM and SIGHUP unwind a command, and a signal during its
cleanup waits for the cleanup's end (in-process: signals sent to this process; the
end-to-end check on ``disaggsim emulate`` is in test_emulate_signals.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.signals import TERMINATING_SIGNALS, Interrupted, interrupt_on_signals
from disaggsim.testbed.collect_env import UndoStack


@pytest.fixture(scope="module", autouse=True)
def _terminal_dispositions() -> Iterator[None]:
    """The signal dispositions of a command started from a terminal, for this module's
    tests: a background job (``make test &``, a non-interactive shell's ``&``) starts with
    SIGINT ignored, which interrupt_on_signals rightly leaves ignored."""
    old = {sig: signal.getsignal(sig) for sig in TERMINATING_SIGNALS}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    for sig, handler in old.items():
        signal.signal(sig, handler)


def _signal_self(sig: signal.Signals) -> None:
    """Send ``sig`` to this process; ``signal.raise_signal`` runs the Python handler before
    it returns (CPython checks for signals right after ``raise(3)``), so the test does not
    depend on when the main thread next checks for one."""
    signal.raise_signal(sig)


@pytest.mark.parametrize("sig", TERMINATING_SIGNALS)
def test_each_signal_raises_interrupted_and_the_old_handlers_come_back(
    sig: signal.Signals,
) -> None:
    """SIGTERM and SIGHUP would end the process at once by default; in the block each
    raises Interrupted (a KeyboardInterrupt, as SIGINT's), naming the signal."""
    before = {s: signal.getsignal(s) for s in TERMINATING_SIGNALS}
    with pytest.raises(Interrupted) as err, interrupt_on_signals():
        _signal_self(sig)
    assert err.value.signum == sig and isinstance(err.value, KeyboardInterrupt)
    assert {s: signal.getsignal(s) for s in TERMINATING_SIGNALS} == before


def test_an_ignored_signal_stays_ignored() -> None:
    """Under ``nohup`` SIGHUP is ignored: the command must not start dying of it."""
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with interrupt_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            _signal_self(signal.SIGHUP)  # nothing raised
    finally:
        signal.signal(signal.SIGHUP, old)


def test_a_second_signal_does_not_cut_a_blocking_undo_step_short(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """SIGTERM in the body unwinds the stack; a SIGINT 0.1 s into an undo step that waits
    0.5 s for a child process arrives while the step waits. Python's own SIGINT handler
    would raise KeyboardInterrupt in that wait (subprocess.run then kills the child and the
    step fails: a RestoreError); here the step finishes, no failure is recorded, the
    command ends with the first signal, and the second is reported on stderr."""
    finished = []

    def slow_step() -> None:
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        subprocess.run(["sleep", "0.5"], check=True)
        finished.append(True)

    with pytest.raises(Interrupted) as err, interrupt_on_signals():
        with UndoStack() as stack:
            stack.undo("a slow step", slow_step)
            _signal_self(signal.SIGTERM)
    assert err.value.signum == signal.SIGTERM
    assert finished == [True] and stack.failures == []
    assert "SIGINT received while cleaning up" in capfd.readouterr().err


def test_a_signal_during_the_cleanup_after_an_error_is_raised_at_its_end() -> None:
    """An error unwinds the stack; a SIGTERM arriving in an undo step is held until every
    step ran, then raised, chained to the error (so a retry loop cannot swallow it)."""
    ran = []
    with pytest.raises(Interrupted) as err, interrupt_on_signals():
        with UndoStack() as stack:
            stack.undo("first", ran.append, "first")
            stack.undo("signalled", lambda: (_signal_self(signal.SIGTERM), ran.append("2nd")))
            raise ValueError("bad input")
    assert ran == ["2nd", "first"]
    assert isinstance(err.value.__cause__, ValueError)


@settings(max_examples=40, deadline=None)
@given(
    n_steps=st.integers(1, 5),
    body_signal=st.one_of(
        st.none(), st.tuples(st.integers(0, 5), st.sampled_from(TERMINATING_SIGNALS))
    ),
    step_signals=st.dictionaries(
        st.integers(0, 4), st.sampled_from(TERMINATING_SIGNALS), max_size=3
    ),
)
def test_every_registered_step_runs_once_in_reverse_whatever_step_a_signal_arrives_at(
    n_steps: int,
    body_signal: tuple[int, signal.Signals] | None,
    step_signals: dict[int, signal.Signals],
) -> None:
    """Steps 0..n-1 are pushed in order; a signal may arrive in the body before step k is
    pushed, and any undo step may receive one. Expected, independently of the mechanism:
    exactly the pushed steps run, each once, last pushed first; none fails; the command
    ends with Interrupted for the first signal that arrived (the body's, else the first
    undo step's in the order they ran), or normally if none did."""
    ran: list[int] = []

    def step(i: int) -> None:
        ran.append(i)
        if i in step_signals:
            _signal_self(step_signals[i])

    pushed = n_steps
    if body_signal is not None and body_signal[0] < n_steps:
        pushed = body_signal[0]
    expected_order = list(reversed(range(pushed)))
    if pushed < n_steps:
        assert body_signal is not None
        first: signal.Signals | None = body_signal[1]
    else:
        first = next((step_signals[i] for i in expected_order if i in step_signals), None)

    raised: Interrupted | None = None
    try:
        with interrupt_on_signals(), UndoStack() as stack:
            for i in range(n_steps):
                if i == pushed:
                    _signal_self(body_signal[1])  # type: ignore[index]
                stack.undo(f"step {i}", step, i)
    except Interrupted as exc:
        raised = exc
    assert ran == expected_order
    assert stack.failures == []
    assert (raised.signum if raised else None) == first


def test_the_cli_ends_an_interrupted_command_with_one_line_and_128_plus_the_signal(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every subcommand runs under interrupt_on_signals (a stand-in for ``report`` gets
    SIGTERM): exit status 143 = 128 + 15, one line on stderr; a SIGHUP arriving while a
    failed command cleans up is raised after the cleanup, its line naming the error."""
    from disaggsim import cli

    def terminated(_args: object) -> None:
        _signal_self(signal.SIGTERM)

    monkeypatch.setattr(cli, "_cmd_report", terminated)
    assert cli.main(["report", "campaign"]) == 128 + 15
    assert capsys.readouterr().err == "disaggsim report: interrupted by SIGTERM\n"

    def fails_then_hangup(_args: object) -> None:
        with UndoStack() as stack:
            stack.undo("hang-up", _signal_self, signal.SIGHUP)
            raise ValueError("bad input")

    monkeypatch.setattr(cli, "_cmd_report", fails_then_hangup)
    assert cli.main(["report", "campaign"]) == 128 + 1
    assert capsys.readouterr().err == (
        "disaggsim report: interrupted by SIGHUP while cleaning up after an error: bad input\n"
    )
