"""What a student reads when a check fails: the test's title and points, what its inputs
are, the smallest input where their function goes wrong with the expected and their dx and
the positions where they differ, and the catalogue mistakes that give their dx with what
their code does (several that fit are all named; the student's code chooses between them
where it can, and the line of it that shows the mistake is quoted).

A report says what the student's code does and gives, never why the right dx is right where
Part A asks for that: the full explanations are added to the final feedback, after the
release (exercise/reveal.py). A function that is not implemented yet (it raises
NotImplementedError, returns None, or returns the same dx whatever its input) is told so
and nothing else. Arrays too large to read are cut (``reproducer.literal``)."""

from __future__ import annotations

import textwrap

import numpy as np

from .catalogue import BUGS, Bug
from .checks import GradedCheck, visible_2x2_cases
from .diagnosis import accepts_stride
from .evidence import Page
from .kinds import layout_code
from .reference import max_pool_backward
from .reproducer import call_text, cut_note, is_cut, literal
from .rules import SMALL, indented
from .search import Outcome, attempt, likely_mistakes, passed_cases, smallest_failure
from .source_marks import line_of
from .state import KEPT_AS_SHOWN_ABOVE, kept_between_calls
from .student_call import StudentError, not_an_array_message

MANY_ACCEPTED = "this test accepts more than one dx"  # what a report says of ``GradedCheck.accepts``
DIFFERING_SHOWN = 6  # positions where the student's dx differs from the expected one, listed


def _reproducer(student: Outcome, accepts: str) -> list[str]:
    """The smallest input as code to paste, the expected dx (or an accepted one), theirs, and
    the positions where theirs differs."""
    case = student.case
    code = "\n".join([f"x = {layout_code(case.x, case.x_layout, literal, 4)}",
                      f"d_output = {layout_code(case.d_output, case.d_layout, literal, 11)}",
                      call_text(case.pool_size, case.stride)])
    expected = max_pool_backward(case.d_output, case.x, case.pool_size, case.stride)
    label = f"Accepted dx: {MANY_ACCEPTED}; for example:" if accepts else "Expected dx:"
    parts = ["Smallest input where your function goes wrong (paste it into a new cell "
             "to try it):", indented(code), label, indented(literal(expected))]
    if student.dx is None:
        return parts + [f"Your function: {student.problem}"]
    parts += [f"Your dx {cut_note(student.dx)}:" if is_cut(student.dx) else "Your dx:",
              indented(literal(student.dx))]
    if not accepts:
        parts += differing_positions(expected, student.dx)
    if student.inputs_changed[0]:
        parts += ["x after your call (it must not change):", indented(literal(student.given.x))]
    if student.problem and not student.problem.startswith("dx differs"):
        parts.append(student.problem)
    return parts


def differing_positions(expected: np.ndarray, dx: np.ndarray) -> list[str]:
    """The positions where ``dx`` is not ``expected`` (the checks' tolerance), with both values."""
    if dx.shape != expected.shape:
        return []
    with np.errstate(all="ignore"):
        wrong = np.argwhere(~np.isclose(dx.astype(np.float64), expected, rtol=1e-9, atol=1e-12, equal_nan=True))
    if not len(wrong):
        return []
    shown = [f"  {tuple(int(i) for i in where)}: expected {expected[tuple(where)].item()!r}, yours "
             f"{dx[tuple(where)].item()!r}" for where in wrong[:DIFFERING_SHOWN]]
    more = [f"  and {len(wrong) - DIFFERING_SHOWN} more"] if len(wrong) > DIFFERING_SHOWN else []
    return [f"Where your dx differs ({len(wrong)} of {dx.size} positions):", *shown, *more]


def describe_failure(student: Outcome, graded: Outcome, witnesses: list[Outcome],
                     named: list[str] | None = None, source: str = "", accepts: str = "",
                     check: GradedCheck | None = None, outcomes: list[Outcome] | None = None,
                     page: Page | None = None) -> str:
    """The reproducer, expected and actual dx, and the likely mistake, for the student.

    ``student`` is the smallest attempt that went wrong, ``graded`` the graded one,
    ``witnesses`` further small inputs that went wrong the same way, ``source`` the
    student's code (it tells apart mistakes that give the same dx), ``accepts`` which dx
    the check accepts when it is not one (``GradedCheck.accepts``), ``check`` the check
    (a mistake that fails a graded input the student's function passed is not theirs),
    ``outcomes`` the student's function on every graded input of the check (when known), and
    ``page`` what the rest of the page shows (exercise/evidence.py): a mistake is named only
    where all of it agrees, and the same input and dx get the same diagnosis everywhere on it.
    """
    case = student.case
    if case.x.size <= SMALL:
        parts = _reproducer(student, accepts)
    else:
        parts = [f"Input: {case.describe()}", student.problem or ""]
    page = page or Page()
    key = (_identity(student), student.problem)
    if key not in page.diagnoses:
        if outcomes is None:
            passed, failing = (passed_cases(check, graded) if check is not None else []), []
        else:
            passed = [outcome.case for outcome in outcomes if outcome.problem is None]
            failing = [outcome for outcome in outcomes if outcome.problem is not None]
        bugs, certain = likely_mistakes(student, graded, witnesses, check, passed, failing, page.agrees)
        lines = mistakes_text(bugs, certain, source, named) if bugs else []
        if not lines and student.error is None:
            lines = [_new_to_us(student)]
        page.diagnoses[key] = lines
    elif named is not None:
        named += [name for name, bug in BUGS.items() if any(f"mistake: {bug.title}." in line
                                                             for line in page.diagnoses[key])]
    return "\n".join(parts + page.diagnoses[key])


def _new_to_us(student: Outcome) -> str:
    """What a failure no catalogue mistake explains says; the advice to compare dx entry by
    entry only where its entries are wrong (not for inputs changed, or a dtype, alone)."""
    said = (f"None of the {len(BUGS)} mistakes in our catalogue gives your result on every input where this test "
            "found it wrong and agrees with what your function gets right, so this one is new to us")
    dx, expected = student.dx, student.case.expected
    with np.errstate(all="ignore"):
        right = dx is not None and dx.shape == expected.shape and dx.dtype.kind in "biuf" and bool(
            np.allclose(dx.astype(np.float64), expected, rtol=1e-9, atol=1e-12, equal_nan=True))
    return said + ("." if right else ": compare your dx with the expected one entry by entry, and check which "
                   "window each entry comes from.")


def _identity(outcome: Outcome) -> tuple:
    """An input and the student's dx on it, as bytes: the same cause wherever it shows."""
    case, dx = outcome.case, outcome.dx
    arrays = [case.x, case.d_output] + ([dx] if dx is not None else [])
    return (tuple((a.dtype.str, a.shape, a.tobytes()) for a in arrays), repr(case.pool_size), repr(case.stride),
            case.x_layout, case.d_layout)


def mistakes_text(bugs: list[Bug], certain: bool, source: str = "",
                  named: list[str] | None = None) -> list[str]:
    """The lines that name the catalogue mistakes that give the student's dx.

    One mistake is "likely". Several that give the same dx (look-alikes) are all named,
    each a "possible" mistake, unless the student's code shows which one was made
    (``Bug.in_source``): then that one alone is named, one explanation per mistake, with the
    line of their code that shows it. A mistake whose construct the code does not contain is
    named only when no other fits, with a warning that the student's may be another mistake
    with the same effect. The names of the mistakes called likely go to ``named`` (the class
    report's fingerprints).
    """
    marks = {bug.name: bug.in_source(source) if source else None for bug in bugs}
    fitting = [bug for bug in bugs if marks[bug.name] is not False]
    unlike = [bug for bug in bugs if marks[bug.name] is False]
    decided = [bug for bug in fitting if marks[bug.name]]
    likely = decided if decided else fitting if len(fitting) == 1 else []
    lines = []
    if not certain:
        lines.append("No mistake in our catalogue gives your result on every input where this test found "
                     "your dx wrong (your code may make two mistakes, or one we do not know). On this small "
                     "input your result is what the following mistake"
                     f"{'s give' if len(likely or fitting or unlike) > 1 else ' gives'}:")
    elif not likely and len(fitting) > 1:
        lines.append(f"{len(fitting)} known mistakes give exactly this dx, and your code does not show "
                     "which one you made:")
    for bug in likely or fitting:
        lines.append(mistake_text(bug, "Likely" if likely and certain else "Possible"))
        quoted = line_of(bug.in_source, source) if source and marks[bug.name] else ""
        if quoted:
            lines.append(f"  In your code: {quoted}")
    if not fitting:
        lines += [f"(The same dx comes from this mistake: {bug.title}; but your code does not do that, so "
                  "yours is probably another mistake with the same effect.)" for bug in unlike]
        lines.append("Compare your dx with the expected one entry by entry, and check which window each "
                     "entry comes from.")
    if named is not None and certain:
        named += [bug.name for bug in (likely or fitting)]
    return lines


def mistake_text(bug: Bug, kind: str, full: bool = False) -> str:
    """One named mistake and what the code does (``full``: its whole explanation, which the
    final feedback gives): ``kind`` is "Likely" or "Possible"."""
    return f"{kind} mistake: {bug.title}.\n{indented(bug.explanation if full else bug.before_release, 2)}"


WIDTH = 92  # notebook outputs and nbgrader's feedback scroll sideways instead of wrapping


def wrap_prose(text: str) -> str:
    """Wrap the prose lines of a report; code and arrays (indented 4 or more) stay as they are."""
    lines = []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if indent >= 4 or len(line) <= WIDTH:
            lines.append(line)
        else:
            lines += textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent,
                                   break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def checks_line(check: GradedCheck) -> str:
    """The report's second line: what the test's inputs are."""
    return f"What it checks: {check.what}"


def report(check: GradedCheck, body: str) -> str:
    points = points_label(check.points)
    kind = "Hidden test" if check.hidden else "Test"
    return wrap_prose(f"{kind} failed: {check.title} (0 of {points}).\n{checks_line(check)}\n\n{body}")


def not_implemented_report(check: GradedCheck, why: str) -> str:
    """The report of a function that is not implemented yet: that, and nothing else."""
    kind = "Hidden test" if check.hidden else "Test"
    return wrap_prose(f"{kind} failed: {check.title} (0 of {points_label(check.points)}).\n\n"
                      f"max_pool_backward is not implemented yet ({why}).")


def not_implemented(check: GradedCheck, function, failed: Outcome) -> str | None:
    """Why the function is not implemented yet, or None: it raises NotImplementedError, it
    returns None, or it returns one value everywhere, the same for another input too, and
    leaves its inputs alone (a function that changes x does something: that is reported)."""
    if isinstance(failed.error, StudentError) and isinstance(failed.error.exception, NotImplementedError):
        # Not implemented only when it raises it on every call: the plain input of the first
        # visible test, and another input of this test, too (a NotImplementedError for one
        # unsupported kind of input is reported as what it is, with that input)
        others = [visible_2x2_cases()[0], *(case for case in check.probes()[:1] if function is not None)]
        if function is None:
            return "it raises NotImplementedError" if not str(failed.error.exception).strip() else None
        if all(_raises_not_implemented(attempt(check, function, case, [])) for case in others):
            return "it raises NotImplementedError"
        return None
    if failed.error is not None and failed.problem == not_an_array_message("NoneType"):
        return "it returns None"
    dx = failed.dx
    if dx is None or dx.size < 2 or dx.dtype.kind not in "biuf" or not np.all(dx == dx.flat[0]) \
            or any(failed.inputs_changed):
        return None
    value = dx.flat[0].item()
    if function is not None:
        other = next((case for case in check.probes() if case.x.shape != failed.case.x.shape), None)
        again = attempt(check, function, other, []) if other is not None else None
        if again is None or again.dx is None or not np.all(again.dx == value) or any(again.inputs_changed):
            return None
    return f"it returns {value!r} at every position of dx, whatever the input"


def _raises_not_implemented(outcome: Outcome) -> bool:
    return isinstance(outcome.error, StudentError) and isinstance(outcome.error.exception, NotImplementedError)


def explain(check: GradedCheck, function, failed: Outcome, named: list[str] | None = None,
            after: str = "", source: str = "", page: Page | None = None, fresh=None) -> str:
    """The report for a failed graded attempt: reproducer, expected and actual dx, likely
    mistake (whose catalogue names are added to ``named``), then ``after``. ``function``
    None: no search for a smaller input (the graded one is shown). ``source``: the
    student's code, which tells apart mistakes that give the same dx. ``fresh``: gives the
    function as a fresh kernel defines it (exercise/state.py: state kept between calls)."""
    after = f"\n\n{after}" if after else ""
    page = page or Page()
    if function is not None:
        # state kept between calls first: a function right on a first call only is implemented.
        # A fresh start (a new process) is tried once a page.
        kept = kept_between_calls(check, function, failed, None if page.fresh_tried else fresh, source)
        kept = kept or (KEPT_AS_SHOWN_ABOVE if page.keeps_state else None)  # once found, it explains the page
        page.fresh_tried, page.keeps_state = True, bool(kept)
        if kept:
            return report(check, f"Input: {failed.case.describe()}\n{kept}" + after)
    # a function that passed a test of the page is implemented: the page would contradict a
    # report that says it is not
    missing = None if page.passed_tests else not_implemented(check, function, failed)
    if missing:
        return not_implemented_report(check, missing) + after
    if function is None:
        return report(check, describe_failure(failed, failed, [], named, source, check.accepts, check, page=page)
                      + after)
    with_stride = accepts_stride(function)  # a function without stride is told so, and judged without it
    outcomes = [attempt(check, function, case, []) for case in check.cases() if case.stride is None or with_stride]
    reproducer, witnesses = smallest_failure(check, function, failed)
    return report(check, describe_failure(reproducer, failed, witnesses, named, source, check.accepts, check,
                                          outcomes, page) + after)


def passed_message(check: GradedCheck) -> str:
    return f"Passed: {check.title} ({points_label(check.points)})."


def points_label(points: int) -> str:
    """"1 point", "2 points"."""
    return f"{points} point" + ("s" if points != 1 else "")
