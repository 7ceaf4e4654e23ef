"""disaggsim.atomic: the one implementation of atomic file and directory installation."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.atomic import atomic_dir, atomic_path, atomic_paths, write_text_atomic


def test_atomic_path_failure_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    target = write_text_atomic(tmp_path / "a.txt", "old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer died")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_atomic_paths_all_or_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("old a")
    (tmp_path / "b").mkdir()  # a directory in the way of the second target
    with pytest.raises(IsADirectoryError), atomic_paths(a, b) as (ta, tb):
        ta.write_text("new a")
        tb.write_text("new b")
    assert a.read_text() == "old a"  # the first target was not replaced alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_atomic_dir_replaces_a_leftover_and_cleans_up_on_failure(tmp_path: Path) -> None:
    final = tmp_path / "0123456789abcdef0123"
    final.mkdir()
    (final / "stale").write_text("interrupted writer")
    with atomic_dir(final) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".tmp-0123456789abcdef-")
        (tmp / "done.json").write_text("{}")
    assert sorted(p.name for p in final.iterdir()) == ["done.json"]
    with pytest.raises(ValueError), atomic_dir(tmp_path / "other") as tmp:
        (tmp / "part").write_text("x")
        raise ValueError("run failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == [final.name]


# A target that is a device or a FIFO is written through, never renamed onto: renaming
# replaced /dev/null with a regular 0644 file on 2026-11-28 (disaggsim/atomic.py).

KINDS = ("missing", "regular", "symlink-to-regular", "fifo", "devnull", "symlink-to-fifo")


def _target(tmp: Path, kind: str) -> Path:
    if kind == "devnull":
        return Path(os.devnull)
    target = tmp / "out"
    if kind == "regular":
        target.write_bytes(b"old")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink-to-regular":
        (tmp / "real").write_bytes(b"old")
        target.symlink_to(tmp / "real")
    elif kind == "symlink-to-fifo":
        os.mkfifo(tmp / "pipe")
        target.symlink_to(tmp / "pipe")
    return target


def _file_type(path: Path) -> int | None:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    payload=st.binary(max_size=3 * 65536),
    writer=st.sampled_from(["atomic_path", "atomic_paths", "write_text_atomic"]),
)
def test_a_special_target_is_written_through_and_keeps_its_type(
    kind: str, payload: bytes, writer: str
) -> None:
    """Whatever the target is, after the write it is the same kind of file (a device
    stays a device, a FIFO a FIFO, a symlink a symlink) and holds or passed on exactly
    the bytes written: a FIFO's reader gets them all; a regular or missing target reads
    them back; nothing is left next to the target or in the temporary directory."""
    if writer == "write_text_atomic":
        payload = payload.decode("latin-1").encode("utf-8")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        target = _target(tmp, kind)
        before = _file_type(target)
        tmpdir_before = set(Path(tempfile.gettempdir()).glob(".out.*.tmp"))
        got: list[bytes] = []
        reader = None
        if kind in ("fifo", "symlink-to-fifo"):
            reader = threading.Thread(target=lambda: got.append(target.read_bytes()), daemon=True)
            reader.start()
        if writer == "atomic_path":
            with atomic_path(target) as t:
                t.write_bytes(payload)
        elif writer == "atomic_paths":
            with atomic_paths(tmp / "other", target) as (t_other, t):
                t_other.write_bytes(b"other")
                t.write_bytes(payload)
            assert (tmp / "other").read_bytes() == b"other"
        else:
            write_text_atomic(target, payload.decode("utf-8"), encoding="utf-8")
        if reader is not None:
            reader.join(timeout=10)
            assert got == [payload]
        assert _file_type(target) == (stat.S_IFREG if before is None else before)
        if kind in ("missing", "regular", "symlink-to-regular"):
            assert target.read_bytes() == payload
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
        left = {p.name for p in tmp.iterdir()} - {"out", "pipe", "real", "other"}
        assert not left, left
        assert set(Path(tempfile.gettempdir()).glob(".out.*.tmp")) <= tmpdir_before
        assert set(Path(tempfile.gettempdir()).glob(".null.*.tmp")) == set()


def test_a_failed_body_leaves_a_special_target_untouched(tmp_path: Path) -> None:
    """The body raises: nothing is written to the device (a FIFO with no reader would
    block a write; here the context exits without opening it) and no temporary stays."""
    target = tmp_path / "pipe"
    os.mkfifo(target)
    with pytest.raises(RuntimeError), atomic_path(target) as t:
        t.write_bytes(b"half")
        raise RuntimeError("writer died")
    assert stat.S_ISFIFO(os.stat(target).st_mode)
    assert not t.exists()
