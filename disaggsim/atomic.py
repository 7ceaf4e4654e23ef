"""Atomic installation of files and directories, the one implementation every stage uses.

A result is built under a temporary name in its target's directory and renamed onto the
target (``os.replace``, atomic within one file system), so a reader never sees a
half-written file or a half-filled directory, and an interrupted writer leaves no result:

- :func:`atomic_path`: one file; :func:`write_text_atomic` for text.
- :func:`atomic_paths`: several files that appear together or not at all.
- :func:`atomic_dir`: a directory (a campaign run, a cached workload); the temporary
  directory is named ``.tmp-<name>-*`` so a caller holding the directory's lock can remove
  the leftovers of an interrupted writer by that prefix.

A file target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a
FIFO: :func:`is_special_file`) is written through instead, once the body has succeeded:
the bytes are built in the system's temporary directory and copied into it. Renaming onto
it would replace the device node with a regular file (as root, ``/dev/null`` became a
0644 file that every later ``> /dev/null`` of the machine then appended to, 2026-11-28);
and writing through is not atomic, which no reader of a device can expect.

A file target that is a symlink to an existing file is followed: the file it names is
replaced and the link stays a link, as a special file behind a symlink is written through
(the device's outputs, ``swapdev/src/sd_user.c``, follow the same rule).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    If the body raises, the temporary file is removed and ``path`` is left untouched, so a
    reader never sees a half-written file.
    """
    target = _followed(Path(path))
    if is_special_file(target):
        tmp = _tmp_next_to(target, ".tmp")
        try:
            yield tmp
            _write_through(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual file mode
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def is_special_file(path: str | Path) -> bool:
    """True if ``path`` exists (its symlinks followed) and is neither a regular file nor a
    directory: a character or block device, a FIFO, a socket. Such a target is written
    through, never renamed onto (module docstring)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _followed(target: Path) -> Path:
    """``target``, or the file it names if it is a symlink to an existing file: that file is
    replaced and the link stays (module docstring); a dangling symlink is replaced itself."""
    if target.is_symlink() and target.exists():
        return Path(os.path.realpath(target))
    return target


def _write_through(tmp: Path, target: Path) -> None:
    """Copy the finished ``tmp`` into special file ``target`` (opened for writing as ``>
    TARGET`` does; a FIFO blocks until it has a reader)."""
    with open(tmp, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)


def _tmp_next_to(target: Path, tag: str) -> Path:
    """An empty temporary file beside ``target``; for a special target
    (:func:`is_special_file`) in the system's temporary directory instead (``/dev`` is no
    place for it, and a non-root user cannot write there)."""
    where = None if is_special_file(target) else target.parent
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=tag, dir=where)
    os.close(fd)
    return Path(name)


@contextmanager
def atomic_paths(*paths: str | Path) -> Iterator[list[Path]]:
    """Like :func:`atomic_path` for several files that must appear together or not at all.

    Yields one temporary path per target. After the body, every target is checked first
    (a directory in the way raises IsADirectoryError naming it, nothing moved); then each
    existing target is moved aside, the new files are moved in, and only when all are in
    place are the old ones deleted. If any step fails, the new files are removed and the
    old ones put back, so the set of outputs is never half new. A special target
    (:func:`is_special_file`) is written through after the others are in place; a symlink
    to a file stays, the file it names is replaced.

    Raises:
        OSError: the body's or the file system's error (IsADirectoryError, ...).
    """
    targets = [_followed(Path(p)) for p in paths]
    special = [is_special_file(t) for t in targets]
    umask = os.umask(0)
    os.umask(umask)
    tmps: list[Path] = []
    try:
        for t, through in zip(targets, special, strict=True):
            if through:
                tmps.append(_tmp_next_to(t, ".tmp"))
                continue
            t.parent.mkdir(parents=True, exist_ok=True)
            tmp = _tmp_next_to(t, ".tmp")
            os.chmod(tmp, 0o666 & ~umask)
            tmps.append(tmp)
        yield tmps
        for t in targets:
            if t.is_dir():
                raise IsADirectoryError(errno.EISDIR, "a directory is in the way", str(t))
        moved_aside: dict[Path, Path] = {}
        placed: list[Path] = []
        try:
            for t, tmp, through in zip(targets, tmps, special, strict=True):
                if through:
                    continue
                if t.exists() or t.is_symlink():
                    backup = _tmp_next_to(t, ".old")
                    os.replace(t, backup)
                    moved_aside[t] = backup
                os.replace(tmp, t)
                placed.append(t)
        except BaseException:
            for t in placed:
                t.unlink(missing_ok=True)
            for t, backup in moved_aside.items():
                os.replace(backup, t)
            raise
        for backup in moved_aside.values():
            backup.unlink(missing_ok=True)
        for t, tmp, through in zip(targets, tmps, special, strict=True):
            if through:  # after the regular files are in place: a device cannot roll back
                _write_through(tmp, t)
    finally:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str, encoding: str | None = None) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_path`; return ``path``."""
    target = Path(path)
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding=encoding)
    return target


@contextmanager
def atomic_dir(path: str | Path, tag: str | None = None) -> Iterator[Path]:
    """Yield a fresh directory next to ``path``; on success it replaces ``path``.

    The directory is ``<parent>/.tmp-<tag>-*`` (``tag`` defaults to the first 16 characters
    of ``path``'s name). After the body, whatever is at ``path`` (a directory left by an
    interrupted older writer) is removed and the new directory renamed onto it. If the body
    raises, the temporary directory is removed (a body that moved it elsewhere to keep it,
    e.g. for debugging, leaves nothing to remove) and ``path`` is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tag = target.name[:16] if tag is None else tag
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{tag}-", dir=target.parent))
    try:
        yield tmp
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
