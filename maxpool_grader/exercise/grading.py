"""The checks run in the student's kernel: ``run_check`` is what each hidden test cell
calls (through maxpool_grader.checks), ``evaluate`` what it and the tests use."""

from __future__ import annotations

import inspect
from typing import Callable

from ..names import FUNCTION
from .checks import GRADED_CHECKS, HIDDEN_CHECKS
from .diagnosis import why_missing
from .evidence import Page, self_check_results
from .explain import explain, passed_message, report
from .search import graded_failure
from .student_call import CheckFailed, quiet_student_code, show_captured


def page_of(function, tools: str = "") -> Page:
    """What a page shows of ``function`` besides one failure: the graded tests it passes (and,
    given the tools cell's code, the self-check's rules it passes). Computed once per function;
    a test that passed when its cell ran counts too (a function that keeps state between calls
    may fail it when it runs again here)."""
    for known, page in _PAGES:
        if known is function and page.tools == tools:
            page.passed_tests |= _passed_in_cells(function)
            return page
    with quiet_student_code():
        passed = frozenset(grade_id for grade_id, check in GRADED_CHECKS.items()
                           if graded_failure(check, function, []) is None)
        page = Page(passed | _passed_in_cells(function), self_check_results(tools, function) if tools else None,
                    tools)
    _PAGES[:] = [*_PAGES[-7:], (function, page)]
    return page


_PAGES: list = []  # (function, its Page): the last few functions evaluated
_PASSED: list = []  # (function, the grade ids of the tests it passed in evaluate): the last few


def _passed_in_cells(function) -> frozenset[str]:
    """The tests ``function`` passed when ``evaluate`` ran them."""
    return next((passed for known, passed in _PASSED if known is function), frozenset())


def _passed_now(function, grade_id: str) -> None:
    others = [(known, passed) for known, passed in _PASSED if known is not function]
    _PASSED[:] = [*others[-7:], (function, _passed_in_cells(function) | {grade_id})]


def evaluate(grade_id: str, student_function, source: str | Callable[[], str] = "",
             page: Page | None = None) -> str | None:
    """Run one check; return None when it passes, else the message for the student
    (``source``: the student's code, see ``explain``, or what gives it when a test fails;
    ``page``: what the rest of the page shows, by default computed here)."""
    check = GRADED_CHECKS[grade_id]
    if not callable(student_function):
        return report(check, f"max_pool_backward is not a function (it is "
                              f"{type(student_function).__name__}).")
    output: list[str] = []
    try:
        failed = graded_failure(check, student_function, output)
    finally:
        show_captured(output)
    if failed is None:
        _passed_now(student_function, grade_id)
        return None
    if isinstance(failed, str):
        return report(check, failed)
    return explain(check, student_function, failed, source=source() if callable(source) else source,
                   page=page or page_of(student_function))


def run_check(grade_id: str, namespace) -> None:
    """Entry point of a hidden test cell: ``run_check('<grade id>', globals())``.

    Passes quietly or raises CheckFailed, whose message (and nothing else) the student
    sees. ``namespace`` is the notebook's globals (or the function itself).
    """
    if isinstance(namespace, dict):
        if FUNCTION not in namespace:
            raise CheckFailed(report(HIDDEN_CHECKS[grade_id], why_missing(namespace)))
        function = namespace[FUNCTION]
    else:
        function = namespace
    problem = evaluate(grade_id, function, lambda: _source_of(function))
    if problem:
        raise CheckFailed(problem)
    print(passed_message(HIDDEN_CHECKS[grade_id]))


def _source_of(function) -> str:
    """The function's own code (the notebook's other cells hold the provided helpers too),
    read only for a failed test's explanation."""
    try:
        return inspect.getsource(function)
    except (TypeError, OSError):
        return ""
