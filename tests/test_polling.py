"""``disaggsim/polling.py``: the polling thread of the collector's task tracker, the memcg
v1 OOM waker and emulate's peak-PSS sampler.

Oracles: the documented loop (wait ``period_s``, call, wait again: consecutive calls are
at least ``period_s`` apart, the first ``period_s`` after start), ``stop`` that ends the
wait rather than sleeping out a period of an hour, and an exception of the poll that
reaches the thread calling ``stop``. Only lower bounds on time are checked (a loaded
machine delays a thread, it cannot make ``Event.wait`` return early), and an upper bound
only where the alternative is 3600 s.
"""

from __future__ import annotations

import threading
import time

import pytest

from disaggsim.polling import PollingThread

PERIOD_S = 0.02
#: time.monotonic's resolution on Linux is 1 ns; Event.wait's timeout is honoured to the
#: microsecond (a lock acquire with a timeout, CLOCK_MONOTONIC): 1 ms is a wide margin.
SLACK_S = 0.001


def test_the_body_runs_at_the_period_until_stop() -> None:
    """Five calls, each at least a period after the start or the previous call; none once
    stop returned."""
    calls: list[float] = []
    five = threading.Event()

    def poll() -> None:
        calls.append(time.monotonic())
        if len(calls) == 5:
            five.set()

    poller = PollingThread(poll, PERIOD_S, "test-poller")
    start = time.monotonic()
    poller.start()
    assert five.wait(60)
    poller.stop()
    n = len(calls)
    gaps = [b - a for a, b in zip([start, *calls], calls, strict=False)]
    assert n >= 5 and all(g >= PERIOD_S - SLACK_S for g in gaps), gaps
    time.sleep(3 * PERIOD_S)
    assert len(calls) == n  # stopped: no call after stop returned
    poller.stop()  # a second stop: nothing to do, nothing raised


def test_stop_ends_the_wait_instead_of_sleeping_out_the_period() -> None:
    """With a period of an hour, stop returns long before it (the thread joined, the body
    never called)."""
    calls: list[int] = []
    poller = PollingThread(lambda: calls.append(1), 3600.0, "test-poller")
    poller.start()
    start = time.monotonic()
    poller.stop()
    assert time.monotonic() - start < 600  # not the 3600 s a slept-out period takes
    assert calls == [] and not poller.is_alive()


def test_an_exception_in_the_body_reaches_the_caller_of_stop() -> None:
    """The third call raises: polling ends there (no fourth call), stop raises that very
    exception in the calling thread, once."""
    calls: list[int] = []
    error = OSError(16, "Device or resource busy")

    def poll() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise error

    poller = PollingThread(poll, PERIOD_S, "test-poller")
    poller.start()
    for _ in range(6000):  # the thread ends by itself, at the exception
        if not poller.is_alive():
            break
        time.sleep(0.01)
    assert not poller.is_alive() and len(calls) == 3
    with pytest.raises(OSError) as info:
        poller.stop(last_poll=True)
    assert info.value is error and len(calls) == 3  # raised instead of the last poll
    poller.stop()  # raised once: a later stop (an undo stack's) does not raise it again


def test_the_last_poll_runs_in_the_callers_thread_after_the_join() -> None:
    """stop(last_poll=True): the thread is gone, then one more call, from the caller."""
    threads: list[str] = []
    poller = PollingThread(
        lambda: threads.append(threading.current_thread().name), 3600.0, "test-poller"
    )
    poller.start()
    poller.stop(last_poll=True)
    assert threads == [threading.current_thread().name] and not poller.is_alive()


def test_a_period_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="test-poller: period_s must be positive, got 0"):
        PollingThread(lambda: None, 0, "test-poller")
