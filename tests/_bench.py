"""bench/ scripts loaded by path, for their tests: bench/ is not a package, and is not put
on sys.path (its scripts' names would shadow modules)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/NAME.py`` as module ``name``, registered in ``sys.modules`` (dataclasses
    resolve their module by name). Raises FileNotFoundError if there is no such script."""
    path = BENCH / f"{name}.py"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such bench script")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
