"""Signals that end a command: SIGINT, SIGTERM and SIGHUP unwind it like Ctrl-C, and a
signal that arrives while it cleans up waits until the cleanup is done.

Why: Python's default action for SIGTERM and SIGHUP ends the process at once, running no
``finally`` block and no ``__exit__`` (the signal(7) default "Term"); a command that had set
up machine state (network namespaces, cgroups, a swap area, an application in its own
session) left all of it behind. SIGINT raises KeyboardInterrupt, which unwinds, but a second
SIGINT raises again in whatever undo step is running and cuts that step short.

Two context managers, one mechanism:

- :func:`interrupt_on_signals`, at a command's entry point (``disaggsim/cli.py`` wraps
  every subcommand in it; the collector's ``python -m`` front end and its library function
  too): for the block, in the main thread, the first of SIGINT, SIGTERM, SIGHUP raises
  :class:`Interrupted` (a KeyboardInterrupt) where the main thread is, so every ``with``
  block and every :class:`~disaggsim.testbed.collect_env.UndoStack` step unwinds. Every
  later one while the command unwinds is reported on stderr (one line) and otherwise
  ignored: the cleanup finishes, then the command ends (``disaggsim``: exit status 128 +
  the signal's number, one line ``interrupted by SIGTERM``). A signal whose disposition
  is "ignore" on entry (SIGHUP under ``nohup``, SIGINT of a background job) stays ignored.
  SIGKILL cannot be caught: it ends the process at once and leaves whatever it set up;
  the next command that needs the same names reaps it (:mod:`disaggsim.owners`).
- :func:`deferred_signals`, around a cleanup (the unwinding of an ``UndoStack``) or around
  "change a piece of machine state, then push its undo" (so that no signal lands between
  the two): a signal arriving in the block is held, reported on stderr, and raised as
  :class:`Interrupted` when the outermost such block ends; not if that block ends by
  raising (the error, e.g. a ``RestoreError`` naming what is left behind, propagates and
  the signal stays held for the next block's end) or while a KeyboardInterrupt is already
  unwinding. Raised after a cleanup that ran for another error, it is chained to it
  (``__cause__``).

Only the main thread receives Python signal handlers (``signal`` module docs): in another
thread these context managers do nothing.

A third, not an interruption: :func:`stop_requests`, around a long sweep made of units
(``disaggsim emulate`` / ``classify``: rounds), turns SIGUSR1 into a request to stop after
the unit in progress (:data:`STOP_AFTER_UNIT_SIGNAL`). The sweep then ends normally, its
results written, and the same command resumes with the next unit. Why: ending a measurement
window by hand with SIGINT cut a round, whose runs are dropped on resume (a round is
compared with its own reference, ``swapdev/emulate.py``); bench/RESULTS.md "Spark SQL's
Figure 2 grid under the node budget" needed a watcher script to send it between rounds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any, Final

#: The signals :func:`interrupt_on_signals` turns into :class:`Interrupted`.
TERMINATING_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: The signal :func:`stop_requests` turns into a request to stop after the unit in
#: progress (SIGUSR1: its default action ends the process, so it is caught only there).
STOP_AFTER_UNIT_SIGNAL: Final = signal.SIGUSR1


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread for SIGINT, SIGTERM or SIGHUP (``signum``) so that the
    command unwinds; a KeyboardInterrupt, so code that handles Ctrl-C handles it."""

    def __init__(self, signum: int) -> None:
        self.signum = signal.Signals(signum)
        super().__init__(f"signal {self.signum.name}")


@dataclass
class _State:
    """The handler's state (main thread only)."""

    #: Nesting of :func:`interrupt_on_signals` blocks (the outermost installs the handler).
    depth: int = 0
    #: The handlers the outermost block replaced.
    previous: dict[signal.Signals, Any] = field(default_factory=dict)
    #: The signal raised as :class:`Interrupted`, once one was.
    raised: signal.Signals | None = None
    #: Nesting of :func:`deferred_signals` blocks.
    deferring: int = 0
    #: A signal held by :func:`deferred_signals`, to raise at the outermost block's end.
    held: signal.Signals | None = None


_state: Final = _State()


def _say(message: str) -> None:
    # os.write, not print: a handler may run while the main thread is inside a print to
    # stderr, and the buffered writer refuses a reentrant call.
    with contextlib.suppress(OSError):
        os.write(2, f"disaggsim: {message}\n".encode())


def _handler(signum: int, _frame: FrameType | None) -> None:
    sig = signal.Signals(signum)
    if _state.raised is None and not _state.deferring:
        _state.raised = sig
        raise Interrupted(sig)
    if _state.raised is None and _state.held is None:
        _state.held = sig
    _say(
        f"{sig.name} received while cleaning up: the cleanup finishes first "
        "(SIGKILL ends at once and leaves the machine state it set up behind)"
    )


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """For the block (main thread): SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted`,
    once; later ones are held while the command unwinds (module docstring). The previous
    handlers are back after the block. Nested blocks share the outermost one's handler.
    """
    if not _in_main_thread():
        yield
        return
    _state.depth += 1
    if _state.depth == 1:
        for sig in TERMINATING_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                _state.previous[sig] = signal.signal(sig, _handler)
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0:
            for sig, old in _state.previous.items():
                signal.signal(sig, old)
            _state.previous.clear()
            _state.raised = _state.held = None


def deferred_signals(unwinding: BaseException | None = None) -> _DeferredSignals:
    """A context manager: hold a terminating signal that arrives during the block; raise it
    as :class:`Interrupted` at the end of the outermost such block (module docstring).

    ``unwinding``: the exception the block is cleaning up after, if any: a held signal is
    chained to it, and dropped if it is a KeyboardInterrupt (the command is already
    stopping). Has an effect only under :func:`interrupt_on_signals` (no other handler
    holds signals) and in the main thread.
    """
    return _DeferredSignals(unwinding)


class _DeferredSignals(contextlib.AbstractContextManager["_DeferredSignals"]):
    """:func:`deferred_signals`' context manager."""

    def __init__(self, unwinding: BaseException | None = None) -> None:
        self.unwinding = unwinding
        self.main = False

    def __enter__(self) -> _DeferredSignals:
        self.main = _in_main_thread()
        if self.main:
            _state.deferring += 1
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.main:
            return
        _state.deferring -= 1
        if _state.deferring or _state.held is None or exc is not None:
            return  # an error of the block propagates; the signal stays held
        sig, _state.held = _state.held, None
        if isinstance(self.unwinding, KeyboardInterrupt) or _state.raised is not None:
            return
        _state.raised = sig
        raise Interrupted(sig) from self.unwinding


@dataclass
class StopRequest:
    """:func:`stop_requests`' flag: ``requested`` turns True at the first
    :data:`STOP_AFTER_UNIT_SIGNAL` received in the block (main thread)."""

    requested: bool = False


@contextlib.contextmanager
def stop_requests(unit: str) -> Iterator[StopRequest]:
    """For the block (main thread): :data:`STOP_AFTER_UNIT_SIGNAL` (SIGUSR1) sets the
    yielded :class:`StopRequest` and says on stderr, once, that the command stops after the
    ``unit`` in progress (e.g. "round"); the caller checks the flag between units. Another
    SIGUSR1 is ignored. The previous handler is back after the block. In another thread it
    yields a flag no signal sets.

    Use: ``kill -USR1 PID`` to the sweep's own Python process, not to a ``timeout`` or
    process group around it (bench/app_study.sh's header has a ``pkill`` pattern).
    """
    request = StopRequest()
    if not _in_main_thread():
        yield request
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        if not request.requested:
            request.requested = True
            _say(f"SIGUSR1: stopping after the {unit} in progress (the same command resumes)")

    previous = signal.signal(STOP_AFTER_UNIT_SIGNAL, handler)
    try:
        yield request
    finally:
        signal.signal(STOP_AFTER_UNIT_SIGNAL, previous)
