"""The package's import structure: no import cycle, no hidden cross-stage dependency.

Walks the AST of every module of the package (the folders of pyproject.toml's
``package-dir``) and checks, counting imports inside functions too:

- no import cycle between modules, and none between stages (``traces``, ``testbed``,
  ``sim``, ``analysis``, ``swapdev``; the base ``disaggsim`` imports no stage);
- an import of another stage inside a function states its reason in a comment on that
  line or the line above, starting ``# import here:`` (CONTRIBUTING.md "Imports"); the
  command-line front end ``disaggsim/cli.py`` is the one module exempt, as it imports
  each stage lazily so that ``disaggsim --help`` starts fast;
- no module imports another stage's private module or private name (``_x``).
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIRS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"][
    "setuptools"
]["package-dir"]
#: The base package: what every stage may import; it imports no stage.
BASE = "disaggsim"
#: The front end that wires the stages together (exempt from the function-level rule).
FRONT_END = "disaggsim.cli"
REASON = "# import here:"


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    names: tuple[str, ...]
    line: int
    in_function: bool
    reason: bool


def _modules() -> dict[str, Path]:
    """Every package module: dotted name -> file."""
    out: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((REPO / folder).glob("*.py")):
            name = package if path.name == "__init__.py" else f"{package}.{path.stem}"
            out[name] = path
        for sub in sorted((REPO / folder).iterdir()):  # subpackages not listed on their own
            init = sub / "__init__.py"
            dotted = f"{package}.{sub.name}"
            if init.is_file() and dotted not in PACKAGE_DIRS:
                out[dotted] = init
                for path in sorted(sub.glob("*.py")):
                    if path.name != "__init__.py":
                        out[f"{dotted}.{path.stem}"] = path
    return out


MODULES = _modules()


def stage(module: str) -> str:
    """The stage a module belongs to: ``disaggsim.<stage>...`` or the base."""
    parts = module.split(".")
    if len(parts) >= 2 and f"disaggsim.{parts[1]}" in PACKAGE_DIRS:
        return parts[1]
    return "cli" if module == FRONT_END else BASE


def _resolve(module: str, names: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """``from module import names``: the modules imported (a name may be a submodule)."""
    subs = [n for n in names if f"{module}.{n}" in MODULES]
    rest = tuple(n for n in names if n not in subs)
    out = [(f"{module}.{n}", ()) for n in subs]
    if rest or not subs:
        out.append((module, rest))
    return out


def _imports(module: str, path: Path) -> list[Import]:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, str(path))
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            ):
                continue  # annotations only: not imported when the program runs
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            targets: list[tuple[str, tuple[str, ...]]] = []
            if isinstance(child, ast.Import):
                targets = [(a.name, ()) for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                targets = _resolve(child.module, tuple(a.name for a in child.names))
            for imported, names in targets:
                if imported.split(".")[0] != "disaggsim":
                    continue
                above = child.lineno - 1  # the comment block right above, and the line
                while above > 0 and lines[above - 1].strip().startswith("#"):
                    above -= 1
                around = " ".join(lines[above : child.lineno])
                found.append(
                    Import(module, imported, names, child.lineno, in_function, REASON in around)
                )
            visit(child, nested)

    visit(tree, False)
    return found


IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    return out


def test_the_walk_sees_the_package() -> None:
    # The oracle for the walk itself: modules every stage is known to have.
    for name in (
        "disaggsim.schemas",
        "disaggsim.atomic",
        "disaggsim.traces.convert",
        "disaggsim.testbed.collect",
        "disaggsim.testbed.apps.pgbench",
        "disaggsim.sim.campaign",
        "disaggsim.analysis.stats",
        "disaggsim.swapdev.device",
    ):
        assert name in MODULES, name
    assert any(
        i.importer == "disaggsim.sim.campaign" and i.imported == "disaggsim.sim.slurm"
        for i in IMPORTS
    )


def test_no_module_import_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        target = imp.imported if imp.imported in MODULES else None
        if (
            target is not None
            and target != imp.importer
            and not (
                imp.importer.startswith(target + ".")  # a package's own __init__ is no cycle
            )
        ):
            edges.setdefault(imp.importer, set()).add(target)
    assert _cycles(edges) == []


def test_no_stage_import_cycle_and_a_base_that_imports_no_stage() -> None:
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        a, b = stage(imp.importer), stage(imp.imported)
        if a != b:
            edges.setdefault(a, set()).add(b)
    assert _cycles(edges) == []
    assert edges.get(BASE, set()) == set(), f"the base imports {edges.get(BASE)}"


def test_function_level_imports_of_another_stage_state_their_reason() -> None:
    hidden = [
        f"{MODULES[i.importer].relative_to(REPO)}:{i.line}: {i.imported}"
        for i in IMPORTS
        if i.in_function
        and i.importer != FRONT_END
        and stage(i.importer) != stage(i.imported)
        and stage(i.imported) != BASE
        and not i.reason
    ]
    assert hidden == [], "move these to the top of the module, or state why not:\n" + "\n".join(
        hidden
    )


def test_no_private_module_or_name_of_another_stage() -> None:
    private = [
        f"{MODULES[i.importer].relative_to(REPO)}:{i.line}: {i.imported} {list(i.names)}"
        for i in IMPORTS
        if stage(i.importer) != stage(i.imported)
        and (
            any(p.startswith("_") and p != "__init__" for p in i.imported.split("."))
            or any(n.startswith("_") for n in i.names)
        )
    ]
    assert private == []


@pytest.mark.parametrize(
    ("edges", "expected"),
    [({"a": {"b"}, "b": {"a"}}, [["a", "b"]]), ({"a": {"b"}, "b": {"c"}}, [])],
)
def test_cycle_finder_on_hand_made_graphs(edges: dict[str, set[str]], expected: list) -> None:
    assert _cycles(edges) == expected
