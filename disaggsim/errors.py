"""The one located error type: every bad input names its file, where in it, and what was
expected (issue #21, class 11).

:class:`InputError` is what every reader, loader and pre-flight check raises for a bad
input: the message is one line, ``<file>[:<where>]: [field '<f>': ]expected <what>[, got
<value>]``. ``<where>`` is a 1-based line (text formats), ``byte N`` or ``record N`` (binary
formats), or a key path (configs). The file name is printed with :func:`display_path`, so a
file name that is not valid UTF-8 (``os.fsencode`` surrogate escapes) still prints, as
``\\xNN`` escapes, and never turns the error itself into a UnicodeEncodeError.
"""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: str | os.PathLike[str] | bytes) -> str:
    """``path`` as printable text: undecodable bytes (surrogate escapes) as ``\\xNN``."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", errors="backslashreplace")


class InputError(ValueError):
    """An input (trace, table, config, state file) that does not match what is expected.

    Attributes:
        path: the file (as given).
        where: line, ``"byte N"``, ``"record N"`` or a key path; None for the whole file.
        field: the field or column, or None.
        expected: what a valid input holds there.
        got: the offending value (repr'd in the message), or None.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        where: str | int | None,
        field: str | None,
        expected: str,
        got: object = None,
    ) -> None:
        name = display_path(path)
        location = name if where is None else f"{name}:{where}"
        what = f"field '{field}': " if field else ""
        got_text = "" if got is None else f", got {_short_repr(got)}"
        super().__init__(f"{location}: {what}expected {expected}{got_text}")
        self.path = str(path)
        self.where = where
        self.field = field
        self.expected = expected
        self.got = got


def _short_repr(value: object, limit: int = 200) -> str:
    """repr of ``value`` cut to ``limit`` characters (an error stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def located_os_error(path: str | Path, exc: OSError, action: str = "read") -> InputError:
    """An OSError (no space left, permission, I/O error...) as an :class:`InputError`
    naming ``path`` and what the system said (``[Errno 28] No space left on device``)."""
    reason = exc.strerror or type(exc).__name__
    code = f"[Errno {exc.errno}] " if exc.errno is not None else ""
    return InputError(path, None, None, f"a file that can be {action}", f"{code}{reason}")
