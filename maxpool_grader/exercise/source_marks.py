"""What a student's code shows of a mistake: the construct a catalogue mistake needs, and the
line of their code that has it.

Two mistakes can give the same dx on every input (look-alikes); reading the code tells
them apart. Each mark answers True (the code has the construct), False (it cannot
make the mistake) or None (reading cannot tell); ``line_of`` gives the student's own line
that has the construct, which the report quotes (the pattern in their code).
"""

from __future__ import annotations

import ast
import functools


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _names_in(node) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _dx_names(tree: ast.Module) -> set[str]:
    """The names the code returns (dx), and every name bound to an expression of one of them
    (``flat_dx = dx.reshape(...)``, ``grad_plane = dx[index]``: views that write into dx)."""
    names = {node.value.id for node in ast.walk(tree)
             if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)}
    pairs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                        and len(target.elts) == len(node.value.elts):
                    pairs += list(zip(target.elts, node.value.elts))
                else:
                    pairs.append((target, node.value))
    pairs = [(target.id, _names_in(value)) for target, value in pairs if isinstance(target, ast.Name)]
    grew = bool(names)
    while grew:
        grew = False
        for name, used in pairs:
            if name not in names and used & names:
                names.add(name)
                grew = True
    return names


def _subscript_stores(source: str) -> tuple[ast.AST | None, ast.AST | None]:
    """The first statement of ``source`` that stores into the array it returns (dx, or a view
    of it), through a subscript, with ``=`` (something other than a constant), and the first
    with ``+=``. Without a ``return name``, any array counts."""
    tree = _parsed(source)
    if tree is None:
        return None, None
    dx = _dx_names(tree)

    def into_dx(target) -> bool:
        if not isinstance(target, ast.Subscript):
            return False
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        return not dx or (isinstance(target, ast.Name) and target.id in dx)

    statements = sorted((node for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign))),
                        key=lambda node: (node.lineno, node.col_offset))
    assigns = next((node for node in statements if isinstance(node, ast.Assign)
                    and not isinstance(node.value, ast.Constant) and any(map(into_dx, node.targets))), None)
    adds = next((node for node in statements if isinstance(node, ast.AugAssign)
                 and isinstance(node.op, ast.Add) and into_dx(node.target)), None)
    return assigns, adds


def _call_of(source: str, names: frozenset[str], compared: bool) -> ast.AST | None:
    tree = _parsed(source)
    if tree is None:
        return None
    scopes = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)
              and any(isinstance(op, ast.Eq) for op in node.ops)] if compared else [tree]
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) in names
                                               or getattr(node.func, "id", None) in names):
                return scope if compared else node
    return None


def calls(source: str, names: set[str], compared: bool = False) -> bool | None:
    """True when ``source`` calls a function or method named in ``names`` (inside an ``==``
    comparison, with ``compared``); None otherwise (the mistake may be written another way)."""
    return True if _call_of(source, frozenset(names), compared) is not None else None


def calling(*names: str, compared: bool = False):
    """The mark ``calls(source, names, compared)``, which ``line_of`` can locate too."""
    return functools.partial(calls, names=set(names), compared=compared)


def assigns_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if assigns else False if adds else None


def adds_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if adds else False if assigns else None


def line_of(mark, source: str) -> str:
    """The line of ``source`` with the construct ``mark`` found ("" when none is, or the mark
    cannot say where): what a report quotes as the pattern in the student's code."""
    if mark is assigns_into_dx or mark is adds_into_dx:
        node = _subscript_stores(source)[0 if mark is assigns_into_dx else 1]
    elif isinstance(mark, functools.partial) and mark.func is calls:
        node = _call_of(source, frozenset(mark.keywords["names"]), mark.keywords.get("compared", False))
    else:
        return ""
    if node is None or not getattr(node, "lineno", None):
        return ""
    line = source.splitlines()[node.lineno - 1].strip()
    return line if len(line) <= 160 else line[:157] + "..."
