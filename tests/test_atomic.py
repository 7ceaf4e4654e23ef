"""disaggsim.atomic: the one implementation of atomic file and directory installation."""

from __future__ import annotations

from pathlib import Path

import pytest

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
