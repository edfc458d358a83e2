"""The package's shape: imports point one way through its layers, modules and functions
stay short enough to read, and a longer one says why in its docstring."""

from __future__ import annotations

import ast
import re
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.Module) -> set[int]:
    """Lines of ``if TYPE_CHECKING:`` blocks: imports for annotations, which never run."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the package's modules it imports, at the top or inside a function (what runs),
    from ``sources`` (module name -> its text; a package's name is its __init__'s)."""
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for name, source in sources.items():
        tree = ast.parse(source)
        skipped, package = _type_only(tree), name.split(".")
        if not any(other.startswith(name + ".") for other in sources):  # a module, not a package
            package = package[:-1]
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package[:len(package) - node.level + 1] if node.level else []
                module = ".".join(base + (node.module.split(".") if node.module else []))
                targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
            graph[name].update(target for target in targets if target in sources and target != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle (Tarjan)."""
    order, low, stack, found, counter = {}, {}, [], [], [0]

    def visit(node: str) -> None:
        order[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in order:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1 or node in graph[node]:
                found.append(sorted(group))
    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def test_no_modules_import_each_other_around_a_circle():
    graph = import_graph({_module_name(path): path.read_text() for path in SOURCES})
    assert sum(len(targets) for targets in graph.values()) > 100  # the checker sees the package's imports
    assert circles(graph) == []


def test_the_circle_checker_sees_a_circle_through_a_function_and_not_a_type_only_import():
    sources = {"p": "", "p.a": "from . import b\n", "p.b": "def f():\n    from .c import g\n",
               "p.c": "from .a import x\n", "p.d": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
               "    from .e import Y\n", "p.e": "from .d import z\n"}
    assert circles(import_graph(sources)) == [["p.a", "p.b", "p.c"]]


def private_names_used_across(sources: dict[str, str]) -> list[str]:
    """Where a module takes another module's private name (``from .m import _x``, or ``m._x``
    on a module of the package it imported): a name meant for its own module alone."""
    found = []
    for name, source in sources.items():
        tree, modules = ast.parse(source), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("maxpool_grader")):
                modules.update(alias.asname or alias.name for alias in node.names)
                found += [f"{name}:{node.lineno}: imports {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
        found += [f"{name}:{node.lineno}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in modules and node.attr.startswith("_") and not node.attr.startswith("__")]
    return found


def test_no_module_uses_another_module_s_private_names():
    assert private_names_used_across({_module_name(path): path.read_text() for path in SOURCES}) == []


def test_the_private_name_checker_sees_both_spellings():
    sources = {"p.a": "from .b import _x, y\nfrom . import c\nc._z()\nc.__name__\n"}
    assert private_names_used_across(sources) == ["p.a:1: imports _x", "p.a:3: c._z"]


def test_the_course_configuration_is_read_in_one_place():
    readers = [_module_name(path) for path in SOURCES if "PyFileConfigLoader" in path.read_text()]
    assert readers == ["maxpool_grader.operations.course"]  # read_course_config


@pytest.mark.parametrize("layer", LAYERS[1:])
def test_each_layer_s_docstring_names_every_module_of_it(layer):
    folder = PACKAGE_DIR / layer
    text = " ".join((ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or "").split())
    missing = [path.stem for path in sorted(folder.glob("*.py"))
               if path.stem != "__init__" and not re.search(rf"``{path.stem}[`.]|\b{path.stem}\.py\b", text)]
    assert not missing, f"maxpool_grader/{layer}/__init__.py does not say what these are: {missing}"


def test_the_package_docstring_counts_its_layers():
    text = ast.get_docstring(ast.parse((PACKAGE_DIR / "__init__.py").read_text())) or ""
    words = ["no", "one", "two", "three", "four", "five", "six", "seven"]
    assert f"{words[len(LAYERS)].title()} layers" in text
    assert all(f"``{layer}``" in text for layer in LAYERS)


def test_the_developers_guide_s_table_lists_every_module_in_its_layer_in_order():
    """docs/development.md#package: one row group per layer, in LAYERS' order, naming every
    module of it (a new module gets a line there, or this fails)."""
    text = (PACKAGE_DIR.parent / "docs" / "development.md").read_text()
    table = text.split("| layer | modules | what it holds |", 1)[1].split("\n\n", 1)[0]
    named: dict[str, set[str]] = {}
    current = ""
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        current = cells[1].strip().strip("`").removesuffix("/").removesuffix(".py") or current  # blank: same layer
        named.setdefault(current, set()).update(re.findall(r"`(\w+)`", cells[2]))
    assert list(named) == LAYERS
    for layer in LAYERS[1:]:
        missing = {path.stem for path in (PACKAGE_DIR / layer).glob("*.py")} - {"__init__"} - named[layer]
        assert not missing, f"docs/development.md's {layer}/ rows leave out {sorted(missing)}"
