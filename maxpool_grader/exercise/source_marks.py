"""What a student's code shows of a mistake: the construct a catalogue mistake needs.

Two mistakes can give the same dx on every input (look-alikes); reading the code tells
them apart. Each function answers True (the code has the construct), False (it cannot
make the mistake) or None (reading cannot tell).
"""

from __future__ import annotations

import ast


def _subscript_stores(source: str) -> tuple[bool, bool]:
    """Whether ``source`` stores into the array it returns (dx), through a subscript, with
    ``=`` (something other than a constant) and with ``+=``. Without a ``return name``,
    any array counts."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False, False
    returned = {node.value.id for node in ast.walk(tree)
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)}

    def into_dx(target) -> bool:
        if not isinstance(target, ast.Subscript):
            return False
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        return not returned or (isinstance(target, ast.Name) and target.id in returned)

    assigns = any(isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant)
                  and any(into_dx(target) for target in node.targets) for node in ast.walk(tree))
    adds = any(isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and into_dx(node.target)
               for node in ast.walk(tree))
    return assigns, adds


def calls(source: str, names: set[str], compared: bool = False) -> bool | None:
    """True when ``source`` calls a function or method named in ``names`` (inside an ``==``
    comparison, with ``compared``); None otherwise (the mistake may be written another way)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scopes = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)
              and any(isinstance(op, ast.Eq) for op in node.ops)] if compared else [tree]
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) in names
                                               or getattr(node.func, "id", None) in names):
                return True
    return None


def assigns_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if assigns else False if adds else None


def adds_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if adds else False if assigns else None
