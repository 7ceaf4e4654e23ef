"""Errors raised by the trace readers (one exception type for every malformed input)."""

from __future__ import annotations

from disaggsim.errors import InputError


class TraceFormatError(InputError):
    """A trace file does not match its format (a located :class:`disaggsim.errors.InputError`).

    The message names the file, the line (text formats, 1-based) or the byte offset /
    record index (binary formats), the field, and what was expected, e.g.
    ``node0.rmem:17: field 'npages': expected a positive integer, got '-3'``.
    """
