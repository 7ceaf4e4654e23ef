"""Content hashes that key the campaign's run directories and caches.

A run's directory name is the SHA-256 of its canonical inputs (see
:func:`disaggsim.sim.campaign.run_key`); the pieces are hashed here so that equal content
gives equal keys whatever the file names, mtimes or pandas index.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

_CHUNK_BYTES = 1 << 20


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal strings.

    Floats use ``repr`` (exact round trip), so ``40`` and ``40.0`` differ only if the caller
    passes different types; callers normalise numbers first (rates are always floats).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def sha256_json(value: Any) -> str:
    """SHA-256 hex digest of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tree(root: Path, suffixes: tuple[str, ...] | None = None) -> str:
    """SHA-256 over every regular file below ``root``: relative path and content, in sorted
    path order (so renaming a file changes the hash, touching it does not).

    Args:
        root: a directory or a single file.
        suffixes: if given, only files whose name ends with one of them.
    """
    if root.is_file():
        return sha256_file(root)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        if suffixes is not None and not path.name.endswith(suffixes):
            continue
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(sha256_file(path).encode("ascii"))
    return digest.hexdigest()


def sha256_frame(frame: pd.DataFrame) -> str:
    """SHA-256 of a table's content: column names, dtypes and values in row order, not its
    index. Uses ``pandas.util.hash_pandas_object`` per column (stable across runs)."""
    digest = hashlib.sha256()
    for column in frame.columns:
        digest.update(f"{column}:{frame[column].dtype}\0".encode())
        hashed = pd.util.hash_pandas_object(frame[column], index=False)
        digest.update(hashed.to_numpy().tobytes())
    digest.update(str(len(frame)).encode())
    return digest.hexdigest()


def binary_identity(binary: Path) -> dict[str, str]:
    """Identity of the ns-3 program: SHA-256 of the executable and of every shared library
    it loads from outside the system directories (the project's own ns-3 modules), as
    reported by ``ldd``. Rebuilding with a change anywhere in them changes the identity.

    Returns:
        ``{file name: sha256}`` for the binary and each project library (names, not paths,
        so a moved checkout keeps its caches).
    """
    binary = binary.resolve()
    stat = binary.stat()
    return dict(_binary_identity(str(binary), stat.st_size, stat.st_mtime_ns))


_SYSTEM_PREFIXES = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


@lru_cache(maxsize=8)
def _binary_identity(binary: str, size: int, mtime_ns: int) -> tuple[tuple[str, str], ...]:
    del size, mtime_ns  # part of the cache key only
    parts = {Path(binary).name: sha256_file(Path(binary))}
    try:
        out = subprocess.run(
            ["ldd", binary], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for match in re.finditer(r"=>\s+(/\S+)\s+\(0x", out):
        lib = os.path.realpath(match.group(1))
        if not lib.startswith(_SYSTEM_PREFIXES):
            parts[Path(lib).name] = sha256_file(Path(lib))
    return tuple(sorted(parts.items()))
