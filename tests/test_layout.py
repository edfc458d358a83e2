"""The package's shape: imports point one way through its layers, modules and functions
stay short enough to read, and a longer one says why in its docstring."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from maxpool_grader.names import PACKAGE_DIR

# A layer may import from layers before it in this list, never from one after it.
LAYERS = ["names", "exercise", "isolation", "glue", "operations"]
MODULE_LINES, FUNCTION_LINES = 320, 60  # "about 300" lines
SOURCES = sorted(PACKAGE_DIR.rglob("*.py"))


def _layer(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE_DIR).parts
    if len(parts) > 1:
        return parts[0]
    return path.stem if path.stem in LAYERS else None


def _imported_layers(source: str, package: list[str]):
    """The layers ``source`` (a module of the sub-package ``package``) imports from."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1] if node.level > 1 else package
            target = base + (node.module.split(".") if node.module else [])
            names = target[:1] or [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("maxpool_grader."):
            names = [node.module.split(".")[1]]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".")[1] for alias in node.names if alias.name.startswith("maxpool_grader.")]
        else:
            continue
        yield from ((name, node.lineno) for name in names if name in LAYERS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(PACKAGE_DIR)))
def test_nothing_imports_from_a_later_layer(path):
    layer = _layer(path)
    if layer is None:  # the package's __init__ and the checks.py shim sit on top of everything
        return
    package = list(path.relative_to(PACKAGE_DIR).parts[:-1])
    upward = [f"line {line}: {name}" for name, line in _imported_layers(path.read_text(), package)
              if LAYERS.index(name) > LAYERS.index(layer)]
    assert not upward, f"{layer} imports from a later layer: {upward}"


def test_the_layer_checker_sees_every_spelling_of_an_import():
    source = ("from ..glue import grades\nfrom .. import operations\nimport maxpool_grader.isolation.box\n"
              "from maxpool_grader.names import ASSIGNMENT\nfrom .rules import Case\n")
    assert list(_imported_layers(source, ["exercise"])) == [
        ("glue", 1), ("operations", 2), ("isolation", 3), ("names", 4), ("exercise", 5)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(PACKAGE_DIR)))
def test_modules_and_functions_stay_short_or_say_why(path):
    text = path.read_text()
    tree = ast.parse(text)
    says_why = "past 300 lines because" in (ast.get_docstring(tree) or "")
    assert len(text.splitlines()) <= MODULE_LINES or says_why, f"{path.name} has {len(text.splitlines())} lines"
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > FUNCTION_LINES]
    assert not long, long
