"""Errors raised by the trace readers (one exception type for every malformed input)."""

from __future__ import annotations

from pathlib import Path


class TraceFormatError(ValueError):
    """A trace file does not match its format.

    The message names the file, the line (text formats, 1-based) or the byte offset /
    record index (binary formats), the field, and what was expected, e.g.
    ``node0.rmem:17: field 'npages': expected a positive integer, got '-3'``.
    """

    def __init__(
        self,
        path: str | Path,
        where: str | int | None,
        field: str | None,
        expected: str,
        got: object = None,
    ) -> None:
        location = str(path) if where is None else f"{path}:{where}"
        what = f"field '{field}': " if field else ""
        got_text = "" if got is None else f", got {got!r}"
        super().__init__(f"{location}: {what}expected {expected}{got_text}")
        self.path = str(path)
        self.where = where
        self.field = field
