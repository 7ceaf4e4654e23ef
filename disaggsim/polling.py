"""A function called every period in a thread until stopped: the loop of the testbed's and
the device's samplers (the collector's task tracker, the memcg v1 OOM waker, emulate's
peak-PSS sampler), stated once.

:class:`PollingThread` calls ``poll()`` after each ``period_s`` of waiting (the wait
starts again when a call returns, so calls are at least ``period_s`` apart; a slow call
delays the next one rather than piling up). :meth:`PollingThread.stop` ends the wait at
once (it does not sleep out the period), lets a call in progress finish, and joins the
thread. An exception raised by ``poll`` ends the thread and is raised again by
:meth:`~PollingThread.stop`, in the caller's thread, where it can be handled; a sampler
must not stop sampling silently while its owner goes on with results it believes complete
(the standard library's threads only print such an exception, ``threading.excepthook``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class PollingThread:
    """Calls ``poll()`` every ``period_s`` seconds in a daemon thread named ``name``, from
    :meth:`start` until :meth:`stop`.

    Raises:
        ValueError: ``period_s`` is not positive.
    """

    def __init__(self, poll: Callable[[], object], period_s: float, name: str) -> None:
        if not period_s > 0:
            raise ValueError(f"{name}: period_s must be positive, got {period_s}")
        self.period_s = period_s
        self._poll = poll
        self._done = threading.Event()
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def _loop(self) -> None:
        try:
            while not self._done.wait(self.period_s):
                self._poll()
        except Exception as exc:  # handed to the caller by stop()
            self._error = exc

    def start(self) -> None:
        """Start the thread (the first call comes ``period_s`` later)."""
        self._thread.start()

    def is_alive(self) -> bool:
        """Whether the thread runs: started, neither stopped nor ended by an exception."""
        return self._thread.is_alive()

    def stop(self, last_poll: bool = False) -> None:
        """Stop polling: end the wait now, wait for a call in progress, join the thread;
        then, if ``last_poll``, call ``poll`` once more in the caller's thread (a sampler's
        last look). A second stop does nothing more than its last poll.

        Raises:
            Exception: what ``poll`` raised in the thread, if it did (once; instead of the
                last poll), or what the last poll raised.
        """
        self._done.set()
        if self._thread.ident is not None:  # started
            self._thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error
        if last_poll:
            self._poll()
