"""setuptools entry point. All configuration is in pyproject.toml; this file only keeps one
fixed notice out of every ``pip install -e`` output.

The package's subpackages live in the pipeline-stage folders (``disaggsim.traces`` is
``traces/``, ...; ``[tool.setuptools] package-dir``), so setuptools installs an editable copy
through an import finder that maps each subpackage to its folder, and then always emits
``InformationOnly("Editable installation. Please be careful with folders in your working
directory with the same name as your package ...")`` (setuptools/command/editable_wheel.py,
``_TopLevelFinder.__enter__``). It is a notice about the layout, not a problem in this
configuration: the finder resolves ``disaggsim.traces`` and the others even when the
checkout's own ``disaggsim/`` folder comes first on ``sys.path`` (the tests run that way).
Only that notice is filtered; every other setuptools warning still shows.
"""

import warnings

from setuptools import setup
from setuptools.warnings import InformationOnly

warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

setup()
