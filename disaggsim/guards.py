"""Safe opens and resource estimates shared by every reader (issue #21, classes 2 and 3).

Every input file of the project (traces, meta files, ``meta.json``, YAPS and flow tables,
configs, a campaign's state) is opened through :func:`open_regular` /
:func:`read_regular`, or checked with :func:`check_regular` before a library opens it by
name. They refuse, with an :class:`disaggsim.errors.InputError` naming the file:

- anything that is not a regular file after following symlinks: a FIFO (reading one blocks
  until a writer appears, i.e. forever), a character device such as ``/dev/zero`` (endless),
  a directory, a socket. The file is opened with ``O_NONBLOCK`` and checked with ``fstat``
  on the open descriptor, so neither the open nor a swap of the file after the check
  blocks;
- a file larger than what the reader may hold in memory (:func:`input_byte_limit`).

:func:`require_memory` is the one resource estimate check: a request (worker processes,
generated flows, simulated hosts, a file to read) states its estimate in bytes and is
refused, with the estimate and what the machine has, when it exceeds the memory available
(``MemAvailable`` of ``/proc/meminfo``, the kernel's estimate of memory available for new
work without swapping, Documentation/filesystems/proc.rst).
"""

from __future__ import annotations

import fcntl
import io
import os
import stat
from typing import Final

from disaggsim.errors import InputError, display_path

#: A reader holds its file and what it parses from it; the parsed tables of the trace
#: readers take a few times the file's bytes (numpy columns of int64 per record field).
#: A file may therefore use at most this fraction of the available memory.
INPUT_MEMORY_FRACTION: Final = 0.25

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class ResourceError(InputError):
    """A request that the machine cannot hold (the estimate and the limit are named)."""


def memory_available_bytes() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (total memory if the field is absent,
    e.g. not Linux: ``os.sysconf``)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def input_byte_limit() -> int:
    """Largest input file a reader accepts: :data:`INPUT_MEMORY_FRACTION` of the memory
    available now."""
    return int(memory_available_bytes() * INPUT_MEMORY_FRACTION)


def require_memory(source: str | os.PathLike[str], where: str | None, what: str, need: int) -> None:
    """Refuse a request whose estimated memory ``need`` (bytes) exceeds what is available.

    Args:
        source: the file that asks for it (a config, a trace), named in the error.
        where: the key or record that asks (``campaign.jobs``), or None.
        what: the request and how it was estimated, e.g. ``"100000 worker processes x
            60 MB each"``.
        need: the estimate in bytes.

    Raises:
        ResourceError: ``<source>:<where>: expected a request this machine can hold (...),
        got <what> = <need> bytes``.
    """
    have = memory_available_bytes()
    if need > have:
        raise ResourceError(
            source,
            where,
            None,
            f"a request this machine can hold ({have / 2**30:.1f} GiB available)",
            _Estimate(f"{what} = {need / 2**30:.1f} GiB"),
        )


class _Estimate(str):
    """An estimate printed without quotes in the error."""

    def __repr__(self) -> str:
        return str(self)


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_regular(path: str | os.PathLike[str], what: str, max_bytes: int | None = None) -> int:
    """Check that ``path`` is a regular file (symlinks followed) of at most ``max_bytes``
    (default :func:`input_byte_limit`) without opening it; return its size in bytes.

    For libraries that open files by name (pyarrow, pandas). Raises like :func:`open_regular`.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(2, f"{what} not found", display_path(path)) from None
    except OSError as exc:
        raise InputError(path, None, None, f"{what} that can be read", exc.strerror) from None
    return _check_stat(path, what, st, max_bytes)


def _check_stat(
    path: str | os.PathLike[str], what: str, st: os.stat_result, max_bytes: int | None
) -> int:
    kind = _kind(st.st_mode)
    if kind is not None:
        raise InputError(path, None, None, f"{what} (a regular file)", kind)
    limit = input_byte_limit() if max_bytes is None else max_bytes
    if st.st_size > limit:
        raise ResourceError(
            path,
            None,
            None,
            f"{what} of at most {limit} bytes (a quarter of the memory available)",
            _Estimate(f"{st.st_size} bytes"),
        )
    return int(st.st_size)


def open_regular(
    path: str | os.PathLike[str], what: str, max_bytes: int | None = None
) -> io.BufferedReader:
    """Open ``path`` for binary reading if it is a regular file of at most ``max_bytes``.

    Args:
        path: the file (symlinks are followed).
        what: what the file should be, for the message (``"a pcap capture"``).
        max_bytes: size limit; default :func:`input_byte_limit`.

    Raises:
        FileNotFoundError: no such file (the message names it).
        InputError: not a regular file (FIFO, device, directory, socket), cannot be opened
            (permission...), or larger than the limit (:class:`ResourceError`).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(2, f"{what} not found", display_path(path)) from None
    except OSError as exc:
        raise InputError(path, None, None, f"{what} that can be read", exc.strerror) from None
    try:
        _check_stat(path, what, os.fstat(fd), max_bytes)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return io.BufferedReader(io.FileIO(fd, "rb", closefd=True))
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], what: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` (checked as in :func:`open_regular`); never more than the
    limit, even if the file grows while it is read."""
    limit = input_byte_limit() if max_bytes is None else max_bytes
    with open_regular(path, what, limit) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ResourceError(
            path, None, None, f"{what} of at most {limit} bytes", "a file that grew while read"
        )
    return data


def read_text(path: str | os.PathLike[str], what: str, encoding: str = "utf-8") -> str:
    """:func:`read_regular` decoded as ``encoding``; a byte that does not decode is an
    InputError naming its line and byte offset (e.g. a Latin-1 byte in a UTF-8 file)."""
    data = read_regular(path, what)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            path,
            f"{line} (byte {exc.start})",
            None,
            f"{what} in {encoding.upper()}",
            data[exc.start : exc.start + 1],
        ) from None
