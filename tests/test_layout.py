"""The package's shape: imports point one way through its layers, modules and functions
stay short enough to read, and a longer one says why in its docstring."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

from maxpool_grader.names import PACKAGE_DIR

# The layers, first to last: a package may import from the packages of the layers before
# its own, never from a later layer nor from a sibling (a package of its own layer). What
# siblings share lives in a lower layer. docs/development.md#package draws the same.
LAYERS = [("names",), ("exercise",), ("sandbox",), ("verdict",), ("glue",), ("course",), ("backend",),
          ("cluster",), ("grading",), ("lti",), ("serve", "lms", "authoring"), ("cli",)]
PACKAGES = [package for layer in LAYERS for package in layer]
MODULE_LINES, FUNCTION_LINES = 300, 60
SOURCES = sorted(PACKAGE_DIR.rglob("*.py"))


def package_of(module: str) -> str | None:
    """The layer package of a module of maxpool_grader (``names`` is one), or None for the
    package's own ``__init__`` and the ``checks`` shim, which sit on top of everything."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PACKAGES else None


def layer_index(package: str) -> int:
    return next(number for number, layer in enumerate(LAYERS) if package in layer)


def wrong_way_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a later layer's package or a sibling's, as "module -> module"."""
    found = []
    for module, targets in sorted(graph.items()):
        here = package_of(module)
        for target in sorted(targets):
            there = package_of(target)
            if here is None or there is None or there == here:
                continue
            if layer_index(there) >= layer_index(here):
                found.append(f"{module} -> {target}")
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    return import_graph({_module_name(path): path.read_text() for path in SOURCES})


def test_every_module_is_in_a_layer():
    assert set(PACKAGES) == {path.parent.name for path in PACKAGE_DIR.glob("*/__init__.py")} | {"names"}
    loose = {path.stem for path in PACKAGE_DIR.glob("*.py")} - {"__init__", "names", "checks"}
    assert not loose, f"modules outside every package: {sorted(loose)}"


def test_nothing_imports_from_a_later_layer_or_a_sibling():
    graph = _graph()
    assert sum(len(targets) for targets in graph.values()) > 100  # the checker sees the package's imports
    assert wrong_way_imports(graph) == []


def test_the_layer_checker_sees_an_upward_import_a_sibling_s_and_one_inside_a_function():
    sources = {"maxpool_grader": "", "maxpool_grader.names": "",
               "maxpool_grader.exercise": "", "maxpool_grader.exercise.a": "from ..glue import b\n",
               "maxpool_grader.glue": "", "maxpool_grader.glue.b": "from ..names import X\n",
               "maxpool_grader.serve": "", "maxpool_grader.serve.c": "def f():\n    from ..lms import d\n",
               "maxpool_grader.lms": "", "maxpool_grader.lms.d": "from ..course import e\n",
               "maxpool_grader.course": "", "maxpool_grader.course.e": "import maxpool_grader.cli.f\n",
               "maxpool_grader.cli": "", "maxpool_grader.cli.f": "from ..serve import c\n"}
    assert wrong_way_imports(import_graph(sources)) == [
        "maxpool_grader.course.e -> maxpool_grader.cli.f", "maxpool_grader.exercise.a -> maxpool_grader.glue",
        "maxpool_grader.exercise.a -> maxpool_grader.glue.b", "maxpool_grader.serve.c -> maxpool_grader.lms",
        "maxpool_grader.serve.c -> maxpool_grader.lms.d"]


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


# An import inside a function is for a heavy or optional dependency (tornado, jupyterhub,
# distributed, playwright, matplotlib, cryptography, rich) or for what must wait, and a comment
# on its line or just above it says which. Everything else is imported at the top, where a
# reader sees what a module needs; the package's own modules too, except in these modules:
OWN_IMPORTS_INSIDE = {
    "maxpool_grader.cli.entry": "the commands are imported after Ctrl-C is listened for, the imports take a second",
    "maxpool_grader.glue.patches": "each patch imports its module as install() applies it, after the version check",
    "maxpool_grader.serve.cli": "the web layer (tornado's server) is imported only to start the page",
    "maxpool_grader.serve.web": "hub.py imports jupyterhub, only for --hub-login",
}


def function_imports(source: str) -> list[tuple[int, str, bool, bool]]:
    """Each import inside a function of ``source``, in line order: (line, the import, whether of
    the package's own modules, whether a comment says why). A comment says why on one of its
    lines, or alone on the line just above it inside the function; an import just below one
    that has a reason shares it (one comment above a run of imports)."""
    lines = source.splitlines()
    commented = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
                 if token.type == tokenize.COMMENT}
    found: dict[int, tuple[int, str, bool, bool]] = {}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        explained_ends: set[int] = set()
        imports = sorted((node for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))),
                         key=lambda node: node.lineno)
        for node in imports:
            above = node.lineno - 1
            explained = (any(line in commented for line in range(node.lineno, node.end_lineno + 1))
                         or (above > function.lineno and lines[above - 1].lstrip().startswith("#"))
                         or above in explained_ends)
            if explained:
                explained_ends.add(node.end_lineno)
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            own = bool(getattr(node, "level", 0)) or any(name.split(".")[0] == "maxpool_grader" for name in names)
            found[node.lineno] = (node.lineno, ast.unparse(node), own, explained)  # the innermost function's
    return [found[line] for line in sorted(found)]


def function_import_problems(sources: dict[str, str], own_allowed) -> list[str]:
    """Each import inside a function that no comment explains, and each of the package's own
    modules inside a function of a module not in ``own_allowed``, as "module:line: import: what"."""
    found = []
    for name, source in sorted(sources.items()):
        for line, text, own, explained in function_imports(source):
            if not explained:
                found.append(f"{name}:{line}: {text}: no comment says why it is inside a function")
            if own and name not in own_allowed:
                found.append(f"{name}:{line}: {text}: the package's own module, inside a function")
    return found


def test_imports_inside_functions_say_why_and_the_package_s_own_only_where_allowed():
    sources = {_module_name(path): path.read_text() for path in SOURCES}
    assert function_import_problems(sources, OWN_IMPORTS_INSIDE) == []
    unused = [name for name in OWN_IMPORTS_INSIDE if not any(own for _, _, own, _ in function_imports(sources[name]))]
    assert not unused, f"OWN_IMPORTS_INSIDE names modules that import none of the package inside a function: {unused}"


def test_the_function_import_checker_wants_a_comment_and_the_package_s_own_only_where_allowed():
    sources = {"p.bare": "def f():\n    import json\n",
               "p.run": "def f():\n    # rich: only on a terminal\n    from rich import a\n    from rich import b\n",
               "p.code_above": "def f():\n    x = 1  # about x\n    import csv\n",
               "p.above_the_def": "# why\ndef f():\n    import csv\n",
               "p.nested": "def f():\n    def g():\n        import os  # why\n",
               "p.own": "def f():\n    from .d import g  # after the check\n",
               "p.allowed": "def f():\n    from . import d  # after the check\n    import maxpool_grader.x  # too\n",
               "p.top": "import json\n"}
    assert function_import_problems(sources, {"p.allowed"}) == [
        "p.above_the_def:3: import csv: no comment says why it is inside a function",
        "p.bare:2: import json: no comment says why it is inside a function",
        "p.code_above:3: import csv: no comment says why it is inside a function",
        "p.own:2: from .d import g: the package's own module, inside a function"]


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
    assert readers == ["maxpool_grader.course.directory"]  # read_course_config


def stated_imports(package: str) -> set[str] | None:
    """What ``package``'s docstring says it may import: its "May import:" line (None without one)."""
    text = ast.get_docstring(ast.parse((PACKAGE_DIR / package / "__init__.py").read_text())) or ""
    found = re.search(r"^May import: (.*?)(?:\n\n|\Z)", text, re.MULTILINE | re.DOTALL)
    if found is None:
        return None
    if "every package before it" in found.group(1):
        return {other for layer in LAYERS[:layer_index(package)] for other in layer}
    return set(re.findall(r"``(\w+)``", found.group(1)))


@pytest.mark.parametrize("package", PACKAGES[1:])
def test_each_package_s_docstring_names_its_modules_and_what_it_may_import(package):
    folder = PACKAGE_DIR / package
    text = " ".join((ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or "").split())
    missing = [path.stem for path in sorted(folder.glob("*.py"))
               if path.stem != "__init__" and not re.search(rf"``{path.stem}[`.]|\b{path.stem}\.py\b", text)]
    assert not missing, f"maxpool_grader/{package}/__init__.py does not say what these are: {missing}"
    stated = stated_imports(package)
    assert stated is not None, f"maxpool_grader/{package}/__init__.py has no 'May import:' line"
    below = {other for layer in LAYERS[:layer_index(package)] for other in layer}
    assert stated <= below, f"{package} says it may import {sorted(stated - below)}, not below it"
    imported = {package_of(target) for module, targets in _graph().items() if package_of(module) == package
                for target in targets} - {package, None}
    assert imported <= stated, f"{package} imports {sorted(imported - stated)} without saying so"


def test_the_package_docstring_names_its_layers_in_order():
    text = ast.get_docstring(ast.parse((PACKAGE_DIR / "__init__.py").read_text())) or ""
    words = "no one two three four five six seven eight nine ten eleven twelve".split()
    assert f"{words[len(LAYERS)].title()} layers" in text
    positions = [text.find(f"``{package}``") for package in PACKAGES]
    assert -1 not in positions and positions == sorted(positions), "the layers, in LAYERS' order"


def drawn_layers(text: str) -> list[tuple[str, ...]]:
    """The picture of docs/development.md#package, one line per layer, last layer first:
    ``  11  cli/   <- ...``; returned first layer first."""
    picture = text.split("```text\n", 1)[1].split("```", 1)[0]
    rows = [re.match(r"\s*\d+\s+(.*?)(?:\s{2,}[^\w\s].*)?$", line) for line in picture.splitlines()]
    return [tuple(re.findall(r"(\w+)(?:/|\.py)", row.group(1))) for row in rows if row][::-1]


def test_the_developers_guide_draws_the_layers_the_code_keeps():
    """docs/development.md#package: the picture shows LAYERS (whose order the code keeps:
    test_nothing_imports_from_a_later_layer_or_a_sibling), and the table after it names every
    module of every package (a new module gets a line there, or this fails)."""
    text = (PACKAGE_DIR.parent / "docs" / "development.md").read_text()
    assert drawn_layers(text) == LAYERS
    table = text.split("| package | modules | what it holds |", 1)[1].split("\n\n", 1)[0]
    named: dict[str, set[str]] = {}
    current = ""
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        current = cells[1].strip().strip("`").removesuffix("/").removesuffix(".py") or current  # blank: same package
        named.setdefault(current, set()).update(re.findall(r"`(\w+)`", cells[2]))
    assert list(named) == PACKAGES
    for package in PACKAGES[1:]:
        missing = {path.stem for path in (PACKAGE_DIR / package).glob("*.py")} - {"__init__"} - named[package]
        assert not missing, f"docs/development.md's {package}/ rows leave out {sorted(missing)}"


def test_the_picture_reader_reads_a_drawn_layer_of_siblings():
    text = "x\n```text\n 2  serve/   lms/   <- may import names\n 1  names.py\n```\n"
    assert drawn_layers(text) == [("names",), ("serve", "lms")]


# The service is composed of its parts, never mixed from them: a class made of two bases, or of
# a class of the package, is a contract kept only in docstrings ("which holds queue, settings").
# tornado's request handlers are the exception: a page is a ``Handler`` (serve/handler.py), and
# JupyterHub's sign-in is its handlers mixed in, tornado's and JupyterHub's own way.
HANDLER_HOMES = ("tornado", "jupyterhub")


def mixed_classes(classes: list[type]) -> list[str]:
    """Each class of ``classes`` with more than one base or a base of the package, as
    "module.Class(Base, ...)"; a request handler may have only tornado's, JupyterHub's
    and the package's handlers as bases."""
    from tornado.web import RequestHandler

    def ours(base: type) -> bool:
        return base.__module__.split(".")[0] == "maxpool_grader"
    found = []
    for cls in classes:
        if issubclass(cls, RequestHandler):
            wrong = [base for base in cls.__bases__ if not (base.__module__.split(".")[0] in HANDLER_HOMES
                                                              or (ours(base) and issubclass(base, RequestHandler)))]
        else:
            wrong = list(cls.__bases__) if len(cls.__bases__) > 1 else [base for base in cls.__bases__ if ours(base)]
        if wrong:
            found.append(f"{cls.__module__}.{cls.__qualname__}({', '.join(b.__name__ for b in cls.__bases__)})")
    return found


def classes_defined_in(package: str) -> list[type]:
    """The classes each module of ``package`` defines (not those it imports)."""
    import importlib
    import inspect
    found = []
    for path in sorted((PACKAGE_DIR / package).glob("*.py")):
        module = importlib.import_module(_module_name(path))
        found += [value for _, value in inspect.getmembers(module, inspect.isclass)
                  if value.__module__ == module.__name__]
    return found


def test_the_service_is_composed_not_mixed_in():
    classes = classes_defined_in("serve") + classes_defined_in("lti")
    assert {"Service", "Policy", "ExchangeWatcher", "SignIn", "HubSignedIn"} <= {cls.__name__ for cls in classes}
    assert mixed_classes(classes) == []


def test_the_mixin_checker_sees_two_bases_and_a_base_of_the_package_but_lets_pages_be_handlers():
    from tornado.web import RequestHandler

    def made(name: str, *bases: type) -> type:
        return type(name, bases, {"__module__": "maxpool_grader.serve.x"})
    policy, exchange, page = made("Policy"), made("Way"), made("Handler", RequestHandler)
    helper = made("Helper")
    classes = [made("Service", policy, exchange), made("Strict", policy), made("Home", page),
               made("Odd", helper, page), made("Fine", Exception), policy]
    assert mixed_classes(classes) == ["maxpool_grader.serve.x.Service(Policy, Way)",
                                      "maxpool_grader.serve.x.Strict(Policy)",
                                      "maxpool_grader.serve.x.Odd(Helper, Handler)"]


# Sign-in is decided in one module: the cookies' names and values, the tokens, the Hub's client.
SIGN_IN_DEFINES = {"STUDENT_COOKIE", "INSTRUCTOR_COOKIE", "INSTRUCTOR", "token_for", "who_has", "service_secret",
                   "rotate_secret", "revoke", "generations", "Credentials", "SignIn", "hub_auth", "hub_address"}
SIGN_IN_TEXTS = ("maxpool_student", "maxpool_instructor", "HubOAuth(")


def sign_in_parts(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> which of SIGN_IN_DEFINES it defines at its top (an assignment, a def or a
    class) and which of SIGN_IN_TEXTS its text holds; modules with none left out."""
    found: dict[str, set[str]] = {}
    for name, source in sources.items():
        defined = set()
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined.update(leaf.id for target in targets for leaf in ast.walk(target) if isinstance(leaf, ast.Name))
        parts = (defined & SIGN_IN_DEFINES) | {text for text in SIGN_IN_TEXTS if text in source}
        if parts:
            found[name] = parts
    return found


def test_one_module_owns_sign_in():
    found = sign_in_parts({_module_name(path): path.read_text() for path in SOURCES})
    assert list(found) == ["maxpool_grader.serve.signin"], found
    assert found["maxpool_grader.serve.signin"] == SIGN_IN_DEFINES | set(SIGN_IN_TEXTS)


def test_the_sign_in_finder_sees_a_tuple_a_def_and_a_cookie_s_name():
    sources = {"p.a": 'STUDENT_COOKIE, X = "s", 1\ndef token_for():\n    pass\n', "p.b": 'name = "maxpool_student"\n',
               "p.c": "def f():\n    INSTRUCTOR = 1\n"}
    assert sign_in_parts(sources) == {"p.a": {"STUDENT_COOKIE", "token_for"}, "p.b": {"maxpool_student"}}


def configured_plugins(config: str) -> list[tuple[str, str]]:
    """(module, class) of every glue class nbgrader_config.py names by its dotted path."""
    return re.findall(r"maxpool_grader\.glue\.(\w+)\.([A-Z]\w+)", config)


def test_each_nbgrader_plugin_is_alone_in_a_file_named_after_it():
    """As nbgrader's own preprocessors/: saveautogrades.py holds SaveAutoGrades, and nothing else."""
    plugins = configured_plugins((PACKAGE_DIR.parent / "nbgrader_config.py").read_text())
    assert len(plugins) >= 10
    for module, name in plugins + [("sealedbox", "SealedBox")]:  # c.SealedBox: a settings class, named by its own
        tree = ast.parse((PACKAGE_DIR / "glue" / f"{module}.py").read_text())
        classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef) and not node.name.startswith("_")]
        assert module == name.lower() and classes == [name], f"glue/{module}.py holds {classes}"


def test_the_plugin_reader_reads_a_class_path():
    assert configured_plugins('c.X.y = ["maxpool_grader.glue.safeexecute.SafeExecute"]\n') == [
        ("safeexecute", "SafeExecute")]


def test_the_sandbox_knows_nothing_of_the_exercise():
    graph = _graph()
    found = [f"{module} -> {target}" for module, targets in graph.items() if package_of(module) == "sandbox"
             for target in targets if package_of(target) in ("exercise", "verdict")]
    assert found == [] and any(package_of(module) == "sandbox" for module in graph)


SERVE_CORE = ("service", "policy", "queue", "grading_job", "standing", "exchange", "signin", "pages", "lti_service")
SERVE_WEB = ("handler", "web", "hub", "lti_web", "lti_frame")


def test_serve_s_core_never_imports_its_web_layer():
    """The web layer (tornado's handlers and server) is given to the core by the command line."""
    graph = _graph()
    core = {f"maxpool_grader.serve.{name}" for name in SERVE_CORE}
    web = {f"maxpool_grader.serve.{name}" for name in SERVE_WEB}
    commands = {"maxpool_grader.serve.cli", "maxpool_grader.serve"}
    assert core | web | commands == {
        module for module in graph if package_of(module) == "serve"}
    assert [f"{module} -> {target}" for module in core for target in graph[module] & web] == []
    assert any(graph[module] & core for module in web)  # the web layer does use the core
