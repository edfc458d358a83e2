"""A mistake that shows only when the function is called more than once: state kept between calls
(a global, a cache keyed by shape or by ``id(x)``, a buffer reused, a default argument changed
in place).

Such a function may get an input right as the first call of a fresh kernel and wrong after
another call, so a reproducer pasted into a new cell would show nothing. It is told as what it
is, with the calls that show it: the same input twice when a second call gives another dx, or
an earlier call and then the failing one when only a fresh start (``fresh``: a function that
returns the student's function as the provided cells and the solution cell define it, before
any call: a cell of the student's own may call it, as the notebook's "try it" cell does)
gets the input right, or in words alone when a fresh start gives another dx (the notebook's
own cells may have called it already).
"""

from __future__ import annotations

import ast

import numpy as np

from .checks import GRADED_CHECKS, GradedCheck
from .kinds import layout_code
from .reproducer import call_text, literal
from .rules import Case, indented
from .search import Outcome, attempt
from .student_call import StudentError

KEPT_AS_SHOWN_ABOVE = ("Your function gets this input wrong after the grader's earlier calls, and it keeps something "
                       "from one call to the next, as the report of an earlier test of this page shows: that may be "
                       "the whole of its mistake here. Each call must depend on its own inputs alone.")
CANDIDATES = 3  # earlier calls tried, each in a fresh start, to find the one that spoils the input


def _same(one: Outcome, other: Outcome) -> bool:
    if (one.dx is None) != (other.dx is None):
        return False
    if one.dx is None:
        return str(one.problem) == str(other.problem)
    return one.dx.shape == other.dx.shape and bool(np.array_equal(one.dx, other.dx, equal_nan=True))


def _code(calls: list[Case]) -> str:
    lines = []
    for number, case in enumerate(calls, start=1):
        suffix = "" if number == len(calls) else f"_{number}"
        lines += [f"x{suffix} = {layout_code(case.x, case.x_layout, literal, 4 + len(suffix))}",
                  f"d_output{suffix} = {layout_code(case.d_output, case.d_layout, literal, 11 + len(suffix))}",
                  call_text(case.pool_size, case.stride).replace("dx =", f"dx{suffix} =")
                  .replace("(d_output, x,", f"(d_output{suffix}, x{suffix},")]
    return "\n".join(lines)


def _earlier(check: GradedCheck, case: Case) -> list[Case]:
    """Calls the grader made before ``case`` that could have left something behind: the inputs
    of the same shapes first (a cache keyed by shape), then the check's case just before it."""
    cases = [other for graded in GRADED_CHECKS.values() for other in graded.cases()]
    same = [other for other in cases if other.x.shape == case.x.shape and other.d_output.shape == case.d_output.shape
            and not np.array_equal(other.x, case.x)]
    own = check.cases()
    where = next((number for number, other in enumerate(own) if other is case), 0)
    before = [own[where - 1]] if where > 0 else []
    return (same[:CANDIDATES - 1] + before)[:CANDIDATES]


def may_keep_state(source: str) -> bool:
    """Whether the student's code has a place to keep something between calls: a ``global`` or
    ``nonlocal``, a cache decorator, a mutable default argument, an attribute set on an object
    other than a local one, or a name bound at the top level to a container (code that cannot
    be parsed, or none given: it may)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    if not source.strip():
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            defaults = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            if any(isinstance(d, (ast.Dict, ast.List, ast.Set, ast.Call)) for d in defaults):
                return True
            decorators = getattr(node, "decorator_list", [])
            if any("cache" in ast.unparse(d) for d in decorators):
                return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            return True
    return any(isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Set,
                                                                                         ast.Call))
               for node in tree.body)


def kept_between_calls(check: GradedCheck, function, failed: Outcome, fresh=None, source: str = "") -> str | None:
    """The report's text when ``failed`` shows only because of an earlier call, else None (a
    fresh start is tried only for code that has a place to keep something: ``may_keep_state``)."""
    again = attempt(check, function, failed.case, [])
    if not _same(again, failed):
        return ("Your function gives another dx when it is called again on the same input: it keeps "
                "something from one call to the next (a global, a cache, a buffer it reuses, a default "
                "argument it changes). Each call must depend on its own inputs alone. These two calls, one "
                "after the other in a new cell, show it (compare dx_1 and dx):\n"
                + indented(_code([failed.case, failed.case])))
    if fresh is None or not may_keep_state(source):
        return None
    first = fresh()
    if first is None:
        return None
    alone = attempt(check, first, failed.case, [])
    if isinstance(alone.error, StudentError) and isinstance(alone.error.exception, NameError):
        return None  # the solution needs a cell of the student's that a fresh start leaves out
    if alone.problem is not None:
        if _same(alone, failed):
            return None  # the same wrong dx in a fresh kernel: an ordinary mistake
        return ("Your function gives another dx for this input in a fresh kernel (one that ran only your "
                "notebook's cells) than after the grader's other calls: it keeps something from one call "
                "to the next (a global, a cache keyed by the shapes or by id(x), a buffer it reuses, a "
                "default argument it changes). Each call must depend on its own inputs alone.")
    for earlier in _earlier(check, failed.case):
        spoiled = fresh()
        if spoiled is None:
            return None
        attempt(check, spoiled, earlier, [])
        if attempt(check, spoiled, failed.case, []).problem is not None:
            return ("Your function gets this input right when it is the first call in a fresh kernel, but "
                    "not after another call: it keeps something from one call to the next (a global, a "
                    "cache keyed by the shapes or by id(x), a buffer it reuses, a default argument it "
                    "changes). Each call must depend on its own inputs alone. These two calls, in a new "
                    "kernel (Kernel → Restart), show it:\n" + indented(_code([earlier, failed.case])))
    return ("Your function gets this input right when it is the first call in a fresh kernel, but not "
            "after the calls made before it (your notebook's own cells call it too, such as the one that "
            "runs check_rules, and so do the tests): it keeps something from one call to the next (a "
            "global, a cache keyed by the shapes or by id(x), a buffer it reuses). Each call must depend "
            "on its own inputs alone.")
