"""Shortcuts found by reading the solution's code, before it runs.

Importing an autograd library computes the gradient for the student; importing the
grader package (or reading its files) borrows the reference. Either way the tests would
measure someone else's code, so a solution that does it gets no points for the tests,
with a message that names the line. The untrusted process refuses the same imports at
run time (``untrusted._ImportGuard``) for code that hides them from this reading.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

AUTOGRAD_LIBRARIES = {
    "torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "jaxlib": "JAX",
    "autograd": "autograd", "mxnet": "MXNet", "paddle": "PaddlePaddle",
}
GRADER_PACKAGES = {"maxpool_grader": "the grader's own package", "nbgrader": "nbgrader"}
IMPORT_FUNCTIONS = {"__import__", "import_module", "find_spec", "spec_from_file_location",
                    "SourceFileLoader"}


@dataclass(frozen=True)
class Shortcut:
    line: int
    what: str  # e.g. "imports torch (PyTorch)"
    why: str
    cell: str = ""  # the cell it is in, named for the student, when not the solution cell

    def describe(self) -> str:
        where = f"line {self.line} of {self.cell}" if self.cell else f"line {self.line}"
        return f"{where}: your solution {self.what}. {self.why}"


def _module_shortcut(name: str, line: int, how: str) -> Shortcut | None:
    root = name.split(".")[0]
    if root in AUTOGRAD_LIBRARIES:
        return Shortcut(line, f"{how} {root} ({AUTOGRAD_LIBRARIES[root]})",
                        "Its automatic differentiation would compute the gradient for you; "
                        "the assignment is to write the backward pass with NumPy.")
    if root in GRADER_PACKAGES:
        return Shortcut(line, f"{how} {root} ({GRADER_PACKAGES[root]})",
                        "The grader's code is not part of your solution.")
    return None


def find_shortcuts(source: str) -> list[Shortcut]:
    """Every import of an autograd library or of the grader, and every string naming the
    grader's package (a path to read its files), in ``source``. Code that does not
    compile has none (it fails on its own)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[Shortcut] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += filter(None, (_module_shortcut(alias.name, node.lineno, "imports")
                                   for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += filter(None, [_module_shortcut(node.module, node.lineno, "imports")])
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in IMPORT_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                found += filter(None, [_module_shortcut(node.args[0].value, node.lineno, "loads")])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "maxpool_grader" in node.value:
            found.append(Shortcut(node.lineno, "refers to maxpool_grader, the grader's package",
                                  "Reading or loading the grader's files is not part of your solution."))
    unique = {(shortcut.line, shortcut.what): shortcut for shortcut in found}
    return sorted(unique.values(), key=lambda shortcut: shortcut.line)


def shortcut_message(shortcuts: list[Shortcut]) -> str:
    listed = "\n".join(shortcut.describe() for shortcut in shortcuts)
    where = "your code" if any(shortcut.cell for shortcut in shortcuts) else "your solution cell"
    return (f"This test did not run your function, because of a shortcut in {where}:\n"
            f"{listed}\nRemove it and implement max_pool_backward with NumPy; then the tests run.")
