"""The hidden checks: each hidden test cell of the notebook is one ``run_check`` call.

A check is a named, pointed set of fixed inputs (no randomness at grading time: the
same notebook always gets the same grade) and a verdict on the student's dx for each.
``HIDDEN_CHECKS`` is the single source of truth for grade ids, titles and points; the
notebook's hidden cells and their nbgrader metadata are checked against it by tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .geometry import forward_geometry
from .reference import max_pool_backward, max_pool_forward
from .student_call import CheckFailed, call_student, show_captured


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
        if self.x.size <= 36:
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
    if dx.size <= 36:
        text += f"\nexpected dx =\n{_show(expected)}\nyour dx =\n{_show(dx)}"
    else:
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
                    f"window of x =\n{_show(window_x)}\nyour dx there =\n{_show(window_dx)}")
        weights = window_dx / upstream
        off_max = (window_x != maxima[index]) & ~np.isclose(window_dx, 0, atol=1e-12)
        if off_max.any() or (weights < -1e-9).any() or (weights > 1 + 1e-9).any():
            return (f"In the window at output position {index}, gradient must go only to the "
                    f"window's maxima (value {maxima[index]}), split with non-negative weights:\n"
                    f"window of x =\n{_show(window_x)}\nyour dx there =\n{_show(window_dx)}")
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
    ]


def unmodified_and_float_cases() -> list[Case]:
    return [
        _case(np.arange(16, dtype=np.int64).reshape(4, 4)[::-1].copy(), 2, seed=60,
              d_output=np.array([[1, 2], [3, 4]], dtype=np.int64)),
        _case(_distinct((2, 4, 4), 61).astype(np.float32), 2, 1, seed=61),
    ]


HIDDEN_CHECKS: dict[str, HiddenCheck] = {check.grade_id: check for check in [
    HiddenCheck("hidden_rectangular_leading_axes", "Rectangular windows and leading batch/channel axes", 2,
                "dx must be right for rectangular pools (ph != pw) and for x with 0, 1 or 2 leading axes.",
                rectangular_and_leading_axes_cases, same_as_reference),
    HiddenCheck("hidden_overlapping_windows", "Overlapping windows add up their gradients", 2,
                "With stride < pool_size, an element that is the maximum of several windows must "
                "receive the sum of their gradients.",
                overlapping_cases, same_as_reference),
    HiddenCheck("hidden_ties_valid_subgradient", "Ties: a valid subgradient", 2,
                "When several elements tie for a window's maximum, the window's gradient must go to "
                "those maxima only, and in total exactly once.",
                ties_cases, valid_subgradient),
    HiddenCheck("hidden_ties_first_maximum", "Ties: the first maximum in row-major order", 1,
                "On ties, the whole gradient goes to the first maximum in row-major order within the "
                "window (PyTorch's convention).",
                first_maximum_cases, same_as_reference),
    HiddenCheck("hidden_gradient_check", "Numerical gradient check", 2,
                "dx must agree with central finite differences of sum(d_output * max_pool_forward(x)).",
                gradient_check_cases, finite_differences),
    HiddenCheck("hidden_forum_integer_input", "The forum example with integer x and fractional d_output", 1,
                "For the integer 3x3 input 1..9, pool 2 and a fractional d_output, dx must hold the "
                "fractions exactly.",
                forum_integer_cases, same_as_reference),
    HiddenCheck("hidden_ceil_border_windows", "Border windows of a ceil-mode grid", 2,
                "When d_output's grid includes windows that run past x's border, those clipped windows "
                "must pass their gradient back too.",
                ceil_border_cases, same_as_reference),
    HiddenCheck("hidden_inputs_unmodified_float_result", "Inputs left unmodified, floating result", 1,
                "x and d_output must be unchanged after the call, and dx must be a floating-point array.",
                unmodified_and_float_cases, leaves_inputs_and_returns_float),
]}


def evaluate(grade_id: str, student_function) -> str | None:
    """Run one hidden check; return None when it passes, else the message for the student."""
    check = HIDDEN_CHECKS[grade_id]
    cases = check.cases()
    output: list[str] = []
    try:
        for number, case in enumerate(cases, start=1):
            given = Given(case.d_output.copy(), case.x.copy())  # the student may modify these
            try:
                dx = call_student(student_function, given.d_output, given.x, case.pool_size,
                                  case.stride, output=output)
            except CheckFailed as failure:
                problem = str(failure)
            else:
                problem = check.verdict(case, dx, given)
            if problem:
                return (f"{check.title}: failed.\nChecked: {check.checks}\n"
                        f"Input {number} of {len(cases)}: {case.describe()}\n{problem}")
        return None
    finally:
        show_captured(output)


def run_check(grade_id: str, student_function) -> None:
    """Entry point of a hidden test cell: passes quietly or raises CheckFailed."""
    problem = evaluate(grade_id, student_function)
    if problem:
        raise CheckFailed(problem)
    check = HIDDEN_CHECKS[grade_id]
    print(f"Passed: {check.title} ({check.points} point{'s' if check.points != 1 else ''}).")
