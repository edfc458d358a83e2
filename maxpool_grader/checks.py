"""The hidden checks: each hidden test cell of the notebook is one ``run_check`` call.

A check is a named, pointed set of fixed inputs (no randomness at grading time: the
same notebook always gets the same grade) and a verdict on the student's dx for each.
``HIDDEN_CHECKS`` is the single source of truth for grade ids, titles and points; the
notebook's hidden cells and their nbgrader metadata are checked against it by tests.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .catalogue import BUGS, Bug
from .diagnosis import accepts_stride, missing_stride_message, why_missing
from .geometry import forward_geometry
from .reference import max_pool_backward, max_pool_forward
from .reproducer import ProbeConfig, all_configs, call_text, literal, upstream, values
from .student_call import (CheckFailed, StudentError, call_student, quiet_student_code,
                           show_captured)


@dataclass(frozen=True)
class Case:
    """One input to the student's function."""

    d_output: np.ndarray
    x: np.ndarray
    pool_size: object
    stride: object = None

    def describe(self) -> str:
        lines = [f"pool_size={self.pool_size!r}, stride={self.stride!r}, "
                 f"x of shape {self.x.shape} ({self.x.dtype}), d_output of shape {self.d_output.shape}"]
        if self.x.size <= SMALL:
            lines += [f"x =\n{_show(self.x)}", f"d_output =\n{_show(self.d_output)}"]
        return "\n".join(lines)


@dataclass(frozen=True)
class Given:
    """The arrays actually handed to the student's function (copies of the case's)."""

    d_output: np.ndarray
    x: np.ndarray


@dataclass(frozen=True)
class HiddenCheck:
    """A hidden test cell: its grade id, title, points and what it verifies."""

    grade_id: str
    title: str
    points: int
    checks: str  # one sentence for the student: what was checked
    cases: Callable[[], list[Case]]
    verdict: Callable[[Case, np.ndarray, Given], str | None]  # None when dx is right
    probes: Callable[[], tuple[Case, ...]]  # small inputs of the same kind, smallest first


SMALL = 48  # inputs up to this size are printed in full, as a paste-able reproducer


def _show(array: np.ndarray) -> str:
    return np.array2string(np.asarray(array), precision=4, suppress_small=True, separator=", ")


def _distinct(shape, seed: int) -> np.ndarray:
    """Values 1 apart in random order: no ties anywhere, arg-max well defined."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) - 10.0


def _ties(shape, seed: int, values=(0, 1)) -> np.ndarray:
    return np.random.default_rng(seed).choice(np.array(values, dtype=np.int64), size=shape)


def _case(x, pool_size, stride=None, seed=0, ceil_mode=False, d_output=None) -> Case:
    geometry = forward_geometry(x.shape, pool_size, stride, ceil_mode)
    if d_output is None:
        rng = np.random.default_rng(seed + 1000)
        d_output = rng.integers(1, 9, size=geometry.leading + geometry.out_shape) * 0.5
        d_output = d_output * rng.choice([-1.0, 1.0], size=d_output.shape)
    return Case(np.asarray(d_output), x, pool_size, stride)


# ---------------------------------------------------------------- verdicts
def same_as_reference(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    expected = max_pool_backward(case.d_output, case.x, case.pool_size, case.stride)
    if dx.shape != expected.shape:
        return f"dx has shape {dx.shape}, but it must have x's shape {expected.shape}."
    if np.allclose(dx, expected, rtol=1e-9, atol=1e-12, equal_nan=True):
        return None
    text = "dx differs from the expected gradient."
    if dx.size > SMALL:
        wrong = np.argwhere(~np.isclose(dx, expected, rtol=1e-9, atol=1e-12, equal_nan=True))
        where = tuple(int(i) for i in wrong[0])
        text += (f" {len(wrong)} of {dx.size} entries are wrong; the first at index {where}: "
                 f"expected {expected[where]:g}, yours {dx[where]:g}.")
    return text


def valid_subgradient(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """Non-overlapping windows: each window's gradient is spread over its maxima only,
    with weights in [0, 1] summing to 1 (any valid subgradient, ties may be split)."""
    geometry = forward_geometry(case.x.shape, case.pool_size, case.stride)
    if dx.shape != case.x.shape:
        return f"dx has shape {dx.shape}, but it must have x's shape {case.x.shape}."
    maxima = max_pool_forward(case.x, case.pool_size, case.stride)
    (ph, pw), (sh, sw) = geometry.pool, geometry.stride
    covered = np.zeros(case.x.shape, dtype=bool)
    for index in np.ndindex(case.d_output.shape):
        *lead, i, j = index
        rows, cols = slice(i * sh, i * sh + ph), slice(j * sw, j * sw + pw)
        window_x, window_dx = case.x[(*lead, rows, cols)], dx[(*lead, rows, cols)]
        covered[(*lead, rows, cols)] = True
        upstream = case.d_output[index]
        if not np.isclose(window_dx.sum(), upstream, rtol=1e-9, atol=1e-12):
            return (f"The window at output position {index} passes back {upstream:g} in total, "
                    f"but your dx holds {window_dx.sum():g} in that window:\n"
                    f"window of x:\n{_indented(_show(window_x))}\nyour dx there:\n{_indented(_show(window_dx))}")
        weights = window_dx / upstream
        off_max = (window_x != maxima[index]) & ~np.isclose(window_dx, 0, atol=1e-12)
        if off_max.any() or (weights < -1e-9).any() or (weights > 1 + 1e-9).any():
            return (f"In the window at output position {index}, gradient must go only to the "
                    f"window's maxima (value {maxima[index]}), split with non-negative weights:\n"
                    f"window of x:\n{_indented(_show(window_x))}\nyour dx there:\n{_indented(_show(window_dx))}")
    if not np.allclose(dx[~covered], 0):
        return "dx is non-zero at positions that no pooling window covers."
    return None


def finite_differences(case: Case, dx: np.ndarray, given: Given | None = None,
                       step: float = 1e-4) -> str | None:
    """Central differences of sum(d_output * forward(x)); x's values are 1 apart, so a
    step of 1e-4 never changes which element of a window is the maximum."""
    if dx.shape != case.x.shape:
        return f"dx has shape {dx.shape}, but it must have x's shape {case.x.shape}."
    ceil_mode = case.d_output.shape[-2:] != forward_geometry(
        case.x.shape, case.pool_size, case.stride).out_shape

    def loss(values):
        return float(np.sum(case.d_output * max_pool_forward(values, case.pool_size, case.stride, ceil_mode)))

    numeric = np.zeros(case.x.shape)
    for index in np.ndindex(case.x.shape):
        shifted = case.x.copy()
        shifted[index] += step
        up = loss(shifted)
        shifted[index] -= 2 * step
        numeric[index] = (up - loss(shifted)) / (2 * step)
    if np.allclose(dx, numeric, atol=1e-6):
        return None
    worst = np.unravel_index(np.argmax(np.abs(dx - numeric)), dx.shape)
    return (f"The numerical gradient (central differences, step {step}) disagrees with your dx: "
            f"at index {tuple(int(i) for i in worst)} it is {numeric[worst]:g}, yours is {dx[worst]:g}.")


def leaves_inputs_and_returns_float(case: Case, dx: np.ndarray, given: Given) -> str | None:
    if not np.array_equal(given.x, case.x):
        return "Your function changed its input x. Work on a new array (e.g. np.zeros(x.shape)) instead."
    if not np.array_equal(given.d_output, case.d_output):
        return "Your function changed its input d_output. Leave the inputs as they are."
    if dx.dtype.kind != "f":
        return (f"dx has dtype {dx.dtype}, but a gradient must be floating point: with integer x, "
                "np.zeros_like(x) makes an integer array that truncates fractional gradients. "
                "Use np.zeros(x.shape) (float64).")
    return same_as_reference(case, dx)


# ---------------------------------------------------------------- cases
def rectangular_and_leading_axes_cases() -> list[Case]:
    return [
        _case(_distinct((4, 6), 1), (2, 3), seed=1),
        _case(_distinct((3, 6, 4), 2), (3, 2), (3, 2), seed=2),
        _case(_distinct((2, 3, 4, 6), 3), (2, 3), seed=3),
        _case(_distinct((2, 5, 4), 4), (1, 2), seed=4),
    ]


def overlapping_cases() -> list[Case]:
    peak = np.zeros((4, 4))
    peak[1:3, 1:3] = [[1, 2], [3, 9]]
    return [
        _case(peak, 2, 1, seed=10),
        _case(_distinct((5, 5), 11), 3, 1, seed=11),
        _case(_distinct((2, 6, 7), 12), (3, 2), (2, 1), seed=12),
    ]


def ties_cases() -> list[Case]:
    return [
        _case(np.array([[1, 7], [7, 7]]), 2, seed=20),
        _case(_ties((2, 4, 6), 21), 2, seed=21),
        _case(_ties((7, 5), 22, (-1, 0, 1)), (2, 3), seed=22),
        _case(np.full((4, 4), 3.0), 2, seed=23),
    ]


def first_maximum_cases() -> list[Case]:
    return ties_cases() + [
        _case(_ties((2, 5, 6), 30), (2, 3), 1, seed=30),
        _case(_ties((6, 6), 31, (0, 1, 2)), 3, 2, seed=31, ceil_mode=True),
    ]


def gradient_check_cases() -> list[Case]:
    return [
        _case(_distinct((2, 7, 6), 40), 3, 2, seed=40),
        _case(_distinct((6, 5), 41), 2, 1, seed=41),
        _case(_distinct((5, 7), 42), (2, 3), (2, 2), seed=42, ceil_mode=True),
        _case(_distinct((4, 6), 43) - 30, (2, 3), seed=43),  # all negative: a scan from 0 fails
    ]


def forum_integer_cases() -> list[Case]:
    x = np.arange(1, 10, dtype=np.int64).reshape(3, 3)
    return [_case(x, 2, d_output=np.array([[0.5, -1.25], [2.5, 0.75]]))]


def ceil_border_cases() -> list[Case]:
    border_heavy = _distinct((5, 7), 50)
    border_heavy[-1, :] += 100  # the clipped last row holds the maxima
    border_heavy[:, -1] += 100
    return [
        _case(border_heavy, 2, seed=50, ceil_mode=True),
        _case(_distinct((2, 6, 6), 51), 3, 2, seed=51, ceil_mode=True),
        _case(_distinct((4, 7), 52), (2, 3), (3, 3), seed=52, ceil_mode=True),
        _case(_distinct((2, 5, 5), 53) - 60, 2, seed=53, ceil_mode=True),  # all negative: zero padding fails
    ]


def unmodified_and_float_cases() -> list[Case]:
    return [
        _case(np.arange(16, dtype=np.int64).reshape(4, 4)[::-1].copy(), 2, seed=60,
              d_output=np.array([[1, 2], [3, 4]], dtype=np.int64)),
        _case(_distinct((2, 4, 4), 61).astype(np.float32), 2, 1, seed=61),
    ]


# ---------------------------------------------------------------- probes
def _probes(where: Callable[[ProbeConfig], bool], patterns=("distinct", "negative"),
            dtype=np.float64, d_output="whole", limit: int = 300) -> Callable[[], list[Case]]:
    """Probe inputs from the small configurations ``where`` accepts, smallest first."""
    @functools.lru_cache(maxsize=1)
    def build() -> tuple[Case, ...]:
        cases: list[Case] = []
        for config in all_configs():
            if len(cases) >= limit:
                break
            if where(config):
                cases += [Case(_frozen(upstream(config, d_output)), _frozen(values(config, pattern, dtype)),
                               config.pool_size, config.stride_argument) for pattern in patterns]
        return tuple(cases)
    return build


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False  # shared between calls: students only ever get copies
    return array


def _default_floor(config: ProbeConfig) -> bool:
    return config.stride is None and not config.ceil


TIE_PATTERNS = ("equal", "ties")


HIDDEN_CHECKS: dict[str, HiddenCheck] = {check.grade_id: check for check in [
    HiddenCheck("hidden_rectangular_leading_axes", "Rectangular windows and leading batch/channel axes", 2,
                "dx must be right for rectangular pools (ph != pw) and for x with 0, 1 or 2 leading axes.",
                rectangular_and_leading_axes_cases, same_as_reference,
                _probes(lambda c: c.rectangular_or_leading and _default_floor(c))),
    HiddenCheck("hidden_overlapping_windows", "Overlapping windows (stride smaller than the pool)", 2,
                "With stride < pool_size, an element that is the maximum of several windows must "
                "receive the sum of their gradients.",
                overlapping_cases, same_as_reference,
                _probes(lambda c: c.overlapping and not c.ceil)),
    HiddenCheck("hidden_ties_valid_subgradient", "Windows whose maximum is not unique", 2,
                "When several elements tie for a window's maximum, the window's gradient must go to "
                "those maxima only, and in total exactly once.",
                ties_cases, valid_subgradient, _probes(_default_floor, TIE_PATTERNS)),
    HiddenCheck("hidden_ties_first_maximum", "Ties: PyTorch's convention (the first maximum in row-major order)", 1,
                "On ties, the whole gradient goes to the first maximum in row-major order within the "
                "window (PyTorch's convention).",
                first_maximum_cases, same_as_reference,
                _probes(lambda c: True, TIE_PATTERNS)),
    HiddenCheck("hidden_gradient_check", "Numerical gradient check", 2,
                "dx must agree with central finite differences of sum(d_output * max_pool_forward(x)).",
                gradient_check_cases, finite_differences, _probes(lambda c: True)),
    HiddenCheck("hidden_forum_integer_input", "The forum example with integer x and fractional d_output", 1,
                "For the integer 3x3 input 1..9, pool 2 and a fractional d_output, dx must hold the "
                "fractions exactly.",
                forum_integer_cases, same_as_reference,
                _probes(_default_floor, dtype=np.int64, d_output="halves")),
    HiddenCheck("hidden_ceil_border_windows", "Border windows of a ceil-mode grid", 2,
                "When d_output's grid includes windows that run past x's border, those clipped windows "
                "must pass their gradient back too.",
                ceil_border_cases, same_as_reference, _probes(lambda c: c.ceil)),
    HiddenCheck("hidden_inputs_unmodified_float_result", "Inputs left unmodified, floating result", 1,
                "x and d_output must be unchanged after the call, and dx must be a floating-point array.",
                unmodified_and_float_cases, leaves_inputs_and_returns_float,
                _probes(lambda c: True, dtype=np.int64, d_output="int64")),
]}


def visible_2x2_cases() -> list[Case]:
    x = np.array([[1, 3, 2, 1], [4, 2, 0, 1], [5, 1, 7, 8], [2, 6, 3, 0]], dtype=float)
    return [_case(x, 2, d_output=np.array([[0.1, 0.2], [0.3, 0.4]]))]


def visible_forum_cases() -> list[Case]:
    return [_case(np.arange(1, 10).reshape(3, 3), 2, d_output=np.ones((2, 2), dtype=np.int64))]


# The visible test cells assert on their own inputs in the student's kernel, where a
# patched assert could pass them; these are the same tests for the out-of-process verdict.
VISIBLE_CHECKS: dict[str, HiddenCheck] = {check.grade_id: check for check in [
    HiddenCheck("visible_2x2_stride_2", "2x2 windows, stride 2 (Figure 1)", 1,
                "dx for the visible test's 4x4 input, pool 2, stride 2.",
                visible_2x2_cases, same_as_reference, _probes(_default_floor)),
    HiddenCheck("visible_forum_example", "The forum example", 1,
                "dx for the visible test's 3x3 input 1..9 with pool 2 and a 2x2 d_output.",
                visible_forum_cases, same_as_reference, _probes(lambda c: c.ceil)),
]}

GRADED_CHECKS: dict[str, HiddenCheck] = VISIBLE_CHECKS | HIDDEN_CHECKS


# ---------------------------------------------------------------- running a check
@dataclass(frozen=True)
class Attempt:
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


def attempt(check: HiddenCheck, function, case: Case, output: list[str]) -> Attempt:
    given = Given(case.d_output.copy(), case.x.copy())  # the student may modify these
    try:
        dx = call_student(function, given.d_output, given.x, case.pool_size, case.stride, output=output)
    except CheckFailed as failure:
        return Attempt(case, given, None, failure, str(failure))
    return Attempt(case, given, dx, None, check.verdict(case, dx, given))


def _failure_kind(attempt_: Attempt) -> str:
    if isinstance(attempt_.error, StudentError):
        return type(attempt_.error.exception).__name__
    return "error" if attempt_.error else "wrong result"


WITNESSES = 3  # further failing probes used to tell apart bugs that agree on the smallest one


def smallest_failure(check: HiddenCheck, function, failed: Attempt) -> tuple[Attempt, list[Attempt]]:
    """The smallest input that shows the failure the graded input showed, and a few
    more failing probes of the same kind (to tell apart the bugs that could explain it).

    The reproducer is the first probe that fails the same way (the same exception, or a
    wrong result); else the failed case cut down to its first batch/channel plane that
    still fails; else the failed case itself if it is small, else the first probe that
    failed in another way.
    """
    discarded: list[str] = []
    with_stride = accepts_stride(function)
    kind = _failure_kind(failed)
    found: list[Attempt] = []
    first_other = None
    for case in check.probes():
        if case.stride is not None and not with_stride:
            continue
        probe = attempt(check, function, case, discarded)
        if probe.problem:
            if _failure_kind(probe) == kind:
                found.append(probe)
                if len(found) > WITNESSES:
                    break
            first_other = first_other or probe
    if found:
        return found[0], found[1:]
    case = failed.case
    for lead in np.ndindex(case.x.shape[:-2]):
        plane = attempt(check, function, Case(case.d_output[lead], case.x[lead], case.pool_size,
                                              case.stride), discarded)
        if plane.problem and _failure_kind(plane) == kind:
            return plane, []
    return (failed if case.x.size <= SMALL or first_other is None else first_other), []


def _same_outcome(student: Attempt, dx, error: BaseException | None, given: Given) -> bool:
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
            and np.array_equal(dx.astype(np.float64), student.dx.astype(np.float64), equal_nan=True))


def matches(bug: Bug, student: Attempt) -> bool:
    """Whether ``bug`` gives exactly the student's outcome (dx or error, and changed
    inputs) on the student's input."""
    given = Given(student.case.d_output.copy(), student.case.x.copy())
    dx, error = None, None
    with quiet_student_code():
        try:
            dx = bug.function(given.d_output, given.x, student.case.pool_size, student.case.stride)
        except Exception as exc:  # a bug may well crash on this input, as the student's did
            error = exc
    return _same_outcome(student, dx, error, given)


def likely_mistakes(student: Attempt, graded: Attempt,
                    witnesses: list[Attempt]) -> tuple[list[Bug], bool]:
    """The catalogue's bugs that explain the student's outcomes.

    Returns (bugs, certain). Certain: the bugs that give exactly the student's outcome
    on the reproducer and on the graded input that cost the points. Otherwise (the
    student's code has a mistake the catalogue lacks, or two at once) the bugs that match
    the reproducer and as many of the other small failing inputs as any bug does.
    """
    first = [bug for bug in BUGS.values() if matches(bug, student)]
    if graded is student:
        return first, True
    every = [bug for bug in first if matches(bug, graded)]
    if every or not first:
        return every, True
    agreement = {bug.name: sum(matches(bug, other) for other in witnesses) for bug in first}
    best = max(agreement.values())
    return [bug for bug in first if agreement[bug.name] == best], False


def _indented(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line for line in text.split("\n"))


def describe_failure(student: Attempt, graded: Attempt, witnesses: list[Attempt],
                     named: list[str] | None = None, source: str = "") -> str:
    """The reproducer, expected and actual dx, and the likely mistake, for the student.

    ``student`` is the smallest attempt that went wrong, ``graded`` the graded one,
    ``witnesses`` further small inputs that went wrong the same way, ``source`` the
    student's code (it tells apart mistakes that give the same dx).
    """
    case = student.case
    if case.x.size <= SMALL:
        code = "\n".join([f"x = {literal(case.x, 4)}", f"d_output = {literal(case.d_output, 11)}",
                          call_text(case.pool_size, case.stride)])
        expected = max_pool_backward(case.d_output, case.x, case.pool_size, case.stride)
        parts = ["Smallest input where your function goes wrong (paste it into a new cell "
                 "to try it):", _indented(code), "Expected dx:", _indented(literal(expected))]
        if student.dx is not None:
            parts += ["Your dx:", _indented(literal(student.dx))]
            if student.inputs_changed[0]:
                parts += ["x after your call (it must not change):", _indented(literal(student.given.x))]
            if student.problem and not student.problem.startswith("dx differs"):
                parts.append(student.problem)
        else:
            parts.append(f"Your function: {student.problem}")
    else:
        parts = [f"Input: {case.describe()}", student.problem or ""]
    if isinstance(student.error, StudentError) and isinstance(student.error.exception, NotImplementedError):
        return "\n".join(parts)
    bugs, certain = likely_mistakes(student, graded, witnesses)
    if bugs:
        parts += mistakes_text(bugs, certain, source, named)
    elif student.error is None:
        parts.append(f"None of the {len(BUGS)} mistakes in our catalogue gives exactly your result on "
                     "this input, so this one is new to us: compare your dx with the expected one "
                     "entry by entry, and check which window each entry comes from.")
    return "\n".join(parts)


def mistakes_text(bugs: list[Bug], certain: bool, source: str = "",
                  named: list[str] | None = None) -> list[str]:
    """The lines that name the catalogue mistakes that give the student's dx.

    One mistake is "likely". Several that give the same dx (look-alikes) are all named:
    the student's code decides between them where it can (``Bug.in_source``), else each
    is a "possible" mistake. A mistake whose construct the code does not contain is named
    last, with a warning that another mistake may give the same dx. The names of the
    mistakes called likely go to ``named`` (the class report's fingerprints).
    """
    marks = {bug.name: bug.in_source(source) if source else None for bug in bugs}
    fitting = [bug for bug in bugs if marks[bug.name] is not False]
    unlike = [bug for bug in bugs if marks[bug.name] is False]
    decided = [bug for bug in fitting if marks[bug.name]]
    likely = decided if decided else fitting if len(fitting) == 1 else []
    lines = []
    if not certain:
        lines.append("Your dx on this small input is exactly what the following mistake"
                     f"{'s give' if len(bugs) > 1 else ' gives'}, though on the graded input your dx "
                     "differs from it too:")
    elif len(bugs) > 1:
        lines.append(f"{len(bugs)} different mistakes give exactly your dx"
                     + (", and your code tells which:" if likely else "; which one it is depends on your code:"))
    for bug in likely:
        lines += [f"{'Likely' if certain else 'Possible'} mistake: {bug.title}.", _indented(bug.explanation, 2)]
    for bug in fitting:
        if bug not in likely:
            if likely:
                lines.append(f"(The same dx also comes from: {bug.title}; your code does not look like that.)")
            else:
                lines += [f"Possible mistake: {bug.title}.", _indented(bug.explanation, 2)]
    for bug in unlike:
        lines.append(f"(The same dx also comes from: {bug.title}; your code does not do that.)" if likely else
                     f"(The same dx comes from this mistake: {bug.title}; but your code does not do that, so "
                     "yours is probably another mistake with the same effect.)")
    if not fitting:
        lines.append("Compare your dx with the expected one entry by entry, and check which window each "
                     "entry comes from.")
    if named is not None and certain:
        named += [bug.name for bug in (likely or fitting)]
    return lines


WIDTH = 92  # notebook outputs and nbgrader's feedback scroll sideways instead of wrapping


def _wrapped(text: str) -> str:
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


def _report(check: HiddenCheck, body: str) -> str:
    points = f"{check.points} point{'s' if check.points != 1 else ''}"
    kind = "Hidden test" if check.grade_id.startswith("hidden") else "Test"
    return _wrapped(f"{kind} failed: {check.title} (0 of {points}).\n"
                    f"What it checks: {check.checks}\n\n{body}")


def graded_failure(check: HiddenCheck, function, output: list[str]) -> Attempt | str | None:
    """Run ``check``'s graded cases: None when all pass, else the first failing attempt
    (or, for a function that cannot be called with a stride, the message saying so)."""
    with_stride = accepts_stride(function)
    for case in check.cases():
        if case.stride is not None and not with_stride:
            return missing_stride_message(function)
        graded = attempt(check, function, case, output)
        if graded.problem:
            return graded
    return None


def explain(check: HiddenCheck, function, failed: Attempt, named: list[str] | None = None,
            after: str = "", source: str = "") -> str:
    """The report for a failed graded attempt: reproducer, expected and actual dx, likely
    mistake (whose catalogue names are added to ``named``), then ``after``. ``function``
    None: no search for a smaller input (the graded one is shown). ``source``: the
    student's code, which tells apart mistakes that give the same dx."""
    after = f"\n\n{after}" if after else ""
    if isinstance(failed.error, StudentError) and isinstance(failed.error.exception, NotImplementedError):
        return _report(check, failed.problem + after)
    if function is None:
        return _report(check, describe_failure(failed, failed, [], named, source) + after)
    reproducer, witnesses = smallest_failure(check, function, failed)
    return _report(check, describe_failure(reproducer, failed, witnesses, named, source) + after)


def evaluate(grade_id: str, student_function, source: str = "") -> str | None:
    """Run one check; return None when it passes, else the message for the student
    (``source``: the student's code, see ``explain``)."""
    check = GRADED_CHECKS[grade_id]
    if not callable(student_function):
        return _report(check, f"max_pool_backward is not a function (it is "
                              f"{type(student_function).__name__}).")
    output: list[str] = []
    try:
        failed = graded_failure(check, student_function, output)
    finally:
        show_captured(output)
    if failed is None:
        return None
    if isinstance(failed, str):
        return _report(check, failed)
    return explain(check, student_function, failed, source=source)


def passed_message(check: HiddenCheck) -> str:
    return f"Passed: {check.title} ({check.points} point{'s' if check.points != 1 else ''})."


def run_check(grade_id: str, namespace) -> None:
    """Entry point of a hidden test cell: ``run_check('<grade id>', globals())``.

    Passes quietly or raises CheckFailed, whose message (and nothing else) the student
    sees. ``namespace`` is the notebook's globals (or the function itself).
    """
    if isinstance(namespace, dict):
        if "max_pool_backward" not in namespace:
            raise CheckFailed(_report(HIDDEN_CHECKS[grade_id], why_missing(namespace)))
        function = namespace["max_pool_backward"]
    else:
        function = namespace
    try:  # the function's own code (the notebook's other cells hold the provided helpers too)
        source = inspect.getsource(function)
    except (TypeError, OSError):
        source = ""
    problem = evaluate(grade_id, function, source)
    if problem:
        raise CheckFailed(problem)
    print(passed_message(HIDDEN_CHECKS[grade_id]))
