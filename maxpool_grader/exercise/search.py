"""Running a check on the student's function, and finding what went wrong: the graded
inputs first, then the smallest probe input that fails the same way (the reproducer a
student can paste), and the catalogue mistakes that give the student's outcome (within the
grader's tolerance, the one every check compares with) and pass every graded input the
student's function passed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .catalogue import BUGS, Bug
from .checks import GradedCheck
from .diagnosis import accepts_stride, missing_stride_message
from .geometry import as_pair
from .judges import judged_despite_error
from .rules import SMALL, Case, Given
from .student_call import CheckFailed, StudentError, call_student, quiet_student_code


@dataclass(frozen=True)
class Outcome:
    """The student's function on one case: its dx or the error it raised, and the verdict."""

    case: Case
    given: Given
    dx: np.ndarray | None
    error: CheckFailed | None
    problem: str | None

    @property
    def inputs_changed(self) -> tuple[bool, bool]:
        return _changed(self.given, self.case)


def _changed(given: Given, case: Case) -> tuple[bool, bool]:
    """Whether the call changed x and d_output (``given`` holds the arrays it received)."""
    return not np.array_equal(given.x, case.x), not np.array_equal(given.d_output, case.d_output)


def attempt(check: GradedCheck, function, case: Case, output: list[str]) -> Outcome:
    given = case.given()  # copies in the case's memory layout: the student may modify these
    try:
        dx = call_student(function, given.d_output, given.x, case.pool_size, case.stride, output=output)
    except CheckFailed as failure:
        if judged_despite_error(case):
            return Outcome(case, given, None, failure, check.verdict(case, None, given))
        return Outcome(case, given, None, failure, str(failure))
    return Outcome(case, given, dx, None, check.verdict(case, dx, given))


def _failure_kind(attempt_: Outcome) -> str:
    if isinstance(attempt_.error, StudentError):
        return type(attempt_.error.exception).__name__
    return "error" if attempt_.error else "wrong result"


WITNESSES = 3  # further failing probes used to tell apart bugs that agree on the smallest one


def smallest_failure(check: GradedCheck, function, failed: Outcome) -> tuple[Outcome, list[Outcome]]:
    """The smallest input that shows the failure the graded input showed, and a few
    more failing probes of the same kind (to tell apart the bugs that could explain it).

    The reproducer is the first probe that fails the same way (the same exception, or a
    wrong result): the probes as they are, then given in the failed case's memory layouts (a
    function that assumes contiguous memory fails only on a view); else the failed case cut
    down while it still fails so (``_cut_down``), when that is small enough to print; else the
    failed case itself if it is small, else the first probe that failed in another way.
    """
    kind, case = _failure_kind(failed), failed.case
    ways = [lambda probe: probe]
    if (case.x_layout, case.d_layout) != ("C", "C"):
        ways.append(lambda probe: replace(probe, x_layout=case.x_layout, d_layout=case.d_layout))
    first_other = None
    for way in ways:
        found, other = _failing_probes(check, function, way, kind)
        if found:
            return found[0], found[1:]
        first_other = first_other or other
    smaller = _cut_down(check, function, failed, kind)
    if smaller is not None and smaller.case.x.size <= SMALL:
        return smaller, []
    return (failed if case.x.size <= SMALL or first_other is None else first_other), []


def _cut_down(check: GradedCheck, function, failed: Outcome, kind: str) -> Outcome | None:
    """The failed case made smaller while it still fails as ``kind``: each batch/channel axis
    cut to 1 entry, else 2 (a function that merges axes of a view fails only with two), else
    the first plane that fails alone; then the plane to its first or last rows and columns of
    windows (a ceil grid's clipped window is last). The case keeps its memory layouts, dtypes
    and the rule it is judged on; None when nothing smaller fails so."""
    case, best = failed.case, None

    def tried(smaller: Case) -> Outcome | None:
        try:
            smaller.expected  # noqa: B018  a valid input: each window fits, d_output's grid is x's
        except ValueError:
            return None
        outcome = attempt(check, function, smaller, [])
        return outcome if outcome.problem and _failure_kind(outcome) == kind else None

    for axis in range(case.x.ndim - 2):
        for size in (1, 2):
            if case.x.shape[axis] > size:
                cut = (slice(None),) * axis + (slice(0, size),)
                found = tried(replace(case, x=case.x[cut], d_output=case.d_output[cut]))
                if found is not None:
                    case, best = found.case, found
                    break
    for lead in np.ndindex(case.x.shape[:-2]) if best is None else ():  # a mistake of one later plane
        found = tried(replace(case, x=case.x[lead], d_output=case.d_output[lead]))
        if found is not None:
            case, best = found.case, found
            break
    (ph, pw), (oh, ow) = as_pair("pool_size", case.pool_size), case.d_output.shape[-2:]
    sh, sw = as_pair("stride", case.pool_size if case.stride is None else case.stride)
    for rows, cols in ((1, 1), (1, 2), (2, 1), (2, 2)):
        if rows > oh or cols > ow or (rows, cols) == (oh, ow):
            continue
        for x_rows, d_rows in _kept(rows, oh, ph, sh):
            for x_cols, d_cols in _kept(cols, ow, pw, sw):
                found = tried(replace(case, x=case.x[..., x_rows, x_cols], d_output=case.d_output[..., d_rows, d_cols]))
                if found is not None:
                    return found
    return best


def _kept(count: int, outputs: int, pool: int, stride: int) -> list[tuple[slice, slice]]:
    """Along one axis, the slices of x and d_output that keep ``count`` of its ``outputs``
    windows: the first ones, whole, and the last ones (with a ceil grid's clipped window)."""
    first = (slice(0, (count - 1) * stride + pool), slice(0, count))
    return [first] if count == outputs else [first, (slice((outputs - count) * stride, None),
                                                     slice(outputs - count, None))]


def _failing_probes(check: GradedCheck, function, way, kind: str) -> tuple[list[Outcome], Outcome | None]:
    """The check's probes, each given as ``way`` makes it, that fail as ``kind`` (up to one more
    than ``WITNESSES``), and the first that failed otherwise."""
    with_stride = accepts_stride(function)
    found: list[Outcome] = []
    first_other = None
    for case in check.probes():
        if case.stride is not None and not with_stride:
            continue
        probe = attempt(check, function, way(case), [])
        if probe.problem:
            if _failure_kind(probe) == kind:
                found.append(probe)
                if len(found) > WITNESSES:
                    break
            first_other = first_other or probe
    return found, first_other


def graded_failure(check: GradedCheck, function, output: list[str]) -> Outcome | str | None:
    """Run ``check``'s graded cases: None when all pass, else the first failing attempt
    (or, for a function that cannot be called with a stride, the message saying so)."""
    with_stride = accepts_stride(function)
    for case in check.cases():
        if case.stride is not None and not with_stride:
            if case.judged:  # a drawn case: the missing stride is the fixed cases' to tell
                continue
            return missing_stride_message(function)
        graded = attempt(check, function, case, output)
        if graded.problem:
            return graded
    return None


# The tolerance of the checks (rules.same_as_reference): two dx that no check tells apart are
# the same outcome, so ``mask * d / mask.sum()`` is the catalogue's ``mask / mask.sum() * d``.
RTOL, ATOL = 1e-9, 1e-12


def _same_outcome(student: Outcome, dx, error: BaseException | None, given: Given) -> bool:
    if _changed(given, student.case) != student.inputs_changed:
        return False
    if isinstance(student.error, StudentError):
        theirs = student.error.exception
        return (error is not None and type(error) is type(theirs) and str(error) == str(theirs))
    if student.dx is None or error is not None:
        return False
    dx = np.asarray(dx)
    return (dx.shape == student.dx.shape and dx.dtype.kind in "biuf"
            and (dx.dtype.kind == "f") == (student.dx.dtype.kind == "f")
            and (dx.dtype.kind != "f" or dx.dtype == student.dx.dtype)  # float32 is not float64
            and _close(dx, student.dx))


def _close(dx: np.ndarray, theirs: np.ndarray) -> bool:
    """Equal within the checks' tolerance, NaN where NaN (never a warning: the bug's values are ours)."""
    with np.errstate(all="ignore"):
        ours, yours = dx.astype(np.float64), theirs.astype(np.float64)
        return bool(np.array_equal(ours, yours, equal_nan=True)
                    or np.allclose(ours, yours, rtol=RTOL, atol=ATOL, equal_nan=True))


def _run(bug: Bug, case: Case):
    """The bug on a copy of ``case``: (dx, the exception it raised, the arrays it was given)."""
    given = case.given()
    dx, error = None, None
    with quiet_student_code():
        try:
            dx = bug.function(given.d_output, given.x, case.pool_size, case.stride)
        except Exception as exc:  # a bug may well crash on this input, as the student's did
            error = exc
    return dx, error, given


def matches(bug: Bug, student: Outcome) -> bool:
    """Whether ``bug`` gives the student's outcome (dx within the checks' tolerance, or the
    same error, and changed inputs) on the student's input."""
    return _same_outcome(student, *_run(bug, student.case))


def passes(bug: Bug, check: GradedCheck, case: Case) -> bool:
    """Whether ``bug`` passes ``check`` on ``case`` (as the student's function did)."""
    dx, error, given = _run(bug, case)
    if error is not None or not isinstance(dx, np.ndarray) or dx.dtype.kind not in "biuf":
        return judged_despite_error(case) and check.verdict(case, None, given) is None
    with np.errstate(all="ignore"):
        return check.verdict(case, np.array(dx), given) is None


def passed_cases(check: GradedCheck, failed: Outcome) -> list[Case]:
    """The graded cases before the one that failed: the student's function passed them."""
    found = []
    for case in check.cases():
        if (case.x.shape == failed.case.x.shape and np.array_equal(case.x, failed.case.x)
                and np.array_equal(case.d_output, failed.case.d_output) and case.pool_size == failed.case.pool_size
                and case.stride == failed.case.stride):
            return found
        found.append(case)
    return []  # not one of the check's cases (a plane of one, say): nothing is known to have passed


def likely_mistakes(student: Outcome, graded: Outcome, witnesses: list[Outcome],
                    check: GradedCheck | None = None, passed: list[Case] = (), failing: list[Outcome] = (),
                    agrees=lambda bug: True) -> tuple[list[Bug], bool]:
    """The catalogue's bugs that explain the student's outcomes.

    Returns (bugs, certain). A bug explains them when it gives the student's outcome on the
    reproducer, on the graded input that cost the points, on every other failing input of the
    test (``failing``) and on the further small failing inputs (``witnesses``), passes every
    input of ``check`` the student's function ``passed``, and ``agrees`` with the rest of the
    page (exercise/evidence.py). Those are certain. When none does, the bugs that match the
    reproducer and as many of the other failing inputs as any bug does are returned, not
    certain: the student's mistake is not in the catalogue (or two at once), and the report
    says so.
    """
    first = [bug for bug in BUGS.values() if matches(bug, student) and agrees(bug)
             and (check is None or all(passes(bug, check, case) for case in passed))]
    others = [other for other in (graded, *witnesses, *failing) if other is not student]

    def reproduces(bug: Bug, other: Outcome) -> bool:
        """The student's dx where they returned one; where their code raised, the bug fails too
        (which error another implementation of the same mistake raises is its own)."""
        if other.error is not None and check is not None:
            return not passes(bug, check, other.case)
        return matches(bug, other)
    every = [bug for bug in first if all(reproduces(bug, other) for other in others)]
    if every or not first:
        return every, True
    agreement = {bug.name: sum(reproduces(bug, other) for other in others) for bug in first}
    best = max(agreement.values())
    return [bug for bug in first if agreement[bug.name] == best], False
