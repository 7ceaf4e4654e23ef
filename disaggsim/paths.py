"""Where the checkout and its build live, stated once for every stage.

The package is installed editable from a checkout (``make venv``): the stages' folders and
``build/`` (``make build``: the ns-3 driver in ``build/sim``, the swap device in
``build/swapdev``) sit next to ``disaggsim/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: The checkout's root directory (parent of the ``disaggsim`` package folder).
REPO_ROOT: Final = Path(__file__).resolve().parent.parent
#: ``make build``'s output directory.
BUILD_DIR: Final = REPO_ROOT / "build"
