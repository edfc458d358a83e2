"""What a right dx is: the inputs of a test (``Case``), the arrays the student's function
was given (``Given``), and the rules a dx must satisfy (the reference's gradient, a valid
subgradient at ties, finite differences, inputs left alone, a floating result for integer x,
x's dtype for floating x and float64 for integer x). Each rule returns None for a right dx,
else a sentence for the student that says what their dx is, never why the right one is right
(exercise/reveal.py: a report says that after the release only)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .geometry import forward_geometry, gradient_dtype
from .kinds import arranged
from .reference import max_pool_backward, max_pool_forward

LAYOUT_WORDS = {"F": "in Fortran order", "transposed": "a transposed view", "stepped": "a view of every second column",
                "reversed": "a view with negative strides"}


@dataclass(frozen=True)
class Case:
    """One input to the student's function: the arrays' values (C order, the grader's own), the
    memory layouts the function is given them in (exercise/kinds.py), and, for a case drawn from
    the kinds of input, the one rule it is judged on (``JUDGES``; empty: the check's verdict)."""

    d_output: np.ndarray
    x: np.ndarray
    pool_size: object
    stride: object = None
    judged: str = ""
    x_layout: str = "C"
    d_layout: str = "C"

    @functools.cached_property
    def expected(self) -> np.ndarray:
        """The reference's dx (computed once: a case's arrays are never changed)."""
        return max_pool_backward(self.d_output, self.x, self.pool_size, self.stride)

    def given(self) -> "Given":
        """Fresh copies of the inputs, laid out as the student's function is given them."""
        return Given(arranged(self.d_output, self.d_layout), arranged(self.x, self.x_layout))

    def describe(self) -> str:
        layouts = "".join(f", {name} {LAYOUT_WORDS[layout]}" for name, layout in
                          (("x", self.x_layout), ("d_output", self.d_layout)) if layout != "C")
        lines = [f"pool_size={self.pool_size!r}, stride={self.stride!r}, "
                 f"x of shape {self.x.shape} ({self.x.dtype}), d_output of shape {self.d_output.shape} "
                 f"({self.d_output.dtype}){layouts}"]
        if self.x.size <= SMALL:
            lines += [f"x =\n{_show(self.x)}", f"d_output =\n{_show(self.d_output)}"]
        return "\n".join(lines)


@dataclass(frozen=True)
class Given:
    """The arrays actually handed to the student's function (copies of the case's)."""

    d_output: np.ndarray
    x: np.ndarray


SMALL = 48  # inputs up to this size are printed in full, as a paste-able reproducer


def indented(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line for line in text.split("\n"))


def _show(array: np.ndarray) -> str:
    # the print options are given, never taken from the process (a student's notebook may set them)
    return np.array2string(np.asarray(array), precision=4, suppress_small=True, separator=", ", threshold=SMALL,
                           edgeitems=3, max_line_width=88)


def shape_problem(case: Case, dx: np.ndarray) -> str | None:
    if dx.shape != case.x.shape:
        return f"dx has shape {dx.shape}, but it must have x's shape {case.x.shape}."
    return None


def same_as_reference(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    if problem := shape_problem(case, dx):
        return problem
    expected = case.expected
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
    if problem := shape_problem(case, dx):
        return problem
    geometry = forward_geometry(case.x.shape, case.pool_size, case.stride)
    maxima = max_pool_forward(case.x, case.pool_size, case.stride)
    (ph, pw), (sh, sw) = geometry.pool, geometry.stride
    covered = np.zeros(case.x.shape, dtype=bool)
    for index in np.ndindex(case.d_output.shape):
        *lead, k, l = index  # noqa: E741  Part A's (k, l): an output position
        rows, cols = slice(k * sh, k * sh + ph), slice(l * sw, l * sw + pw)
        window_x, window_dx = case.x[(*lead, rows, cols)], dx[(*lead, rows, cols)]
        covered[(*lead, rows, cols)] = True
        upstream = case.d_output[index]
        def shown(window_x=window_x, window_dx=window_dx) -> str:  # only for the message: formatting is slow
            return f"window of x:\n{indented(_show(window_x))}\nyour dx there:\n{indented(_show(window_dx))}"
        if not np.isclose(window_dx.sum(), upstream, rtol=1e-9, atol=1e-12):
            return (f"Window {_window(index)}: its value of d_output is {upstream:g}, and your dx in that "
                    f"window sums to {window_dx.sum():g}:\n{shown()}")
        weights = window_dx / upstream
        off_max = (window_x != maxima[index]) & ~np.isclose(window_dx, 0, atol=1e-12)
        if off_max.any():
            return (f"Window {_window(index)}: your dx is not 0 at an element of the window that is below its "
                    f"maximum ({maxima[index]:g}):\n{shown()}")
        if (weights < -1e-9).any() or (weights > 1 + 1e-9).any():
            return (f"Window {_window(index)}: at the window's maxima ({maxima[index]:g}) your dx is not between "
                    f"0 and the window's value of d_output ({upstream:g}):\n{shown()}")
    if not np.allclose(dx[~covered], 0):
        return "dx is non-zero at positions that no pooling window covers."
    return None


def _window(index: tuple) -> str:
    """An output position as Part B names it: (k, l), and its plane when x has leading axes."""
    where = f"(k, l) = {tuple(int(i) for i in index[-2:])}"
    return where + (f" of plane {tuple(int(i) for i in index[:-2])}" if len(index) > 2 else "")


def finite_differences(case: Case, dx: np.ndarray, given: Given | None = None,
                       step: float = 1e-4) -> str | None:
    """Central differences of sum(d_output * forward(x)); x's values are 1 apart, so a
    step of 1e-4 never changes which element of a window is the maximum."""
    if problem := shape_problem(case, dx):
        return problem
    numeric = numerical_gradient(case, step)
    if np.allclose(dx, numeric, atol=1e-6):
        return None
    worst = np.unravel_index(np.argmax(np.abs(dx - numeric)), dx.shape)
    return (f"The numerical gradient (central differences, step {step}) disagrees with your dx: "
            f"at index {tuple(int(i) for i in worst)} it is {numeric[worst]:g}, yours is {dx[worst]:g}.")


_NUMERICAL: dict[tuple, np.ndarray] = {}  # numerical_gradient's results, by the whole case


def numerical_gradient(case: Case, step: float = 1e-4) -> np.ndarray:
    """The central differences of sum(d_output * forward(x)) (read-only). It depends on the
    case alone, and each x element costs two forward passes, so it is computed once per
    process for each case: the graded cases are the same for every submission (``grade``
    computes theirs before it forks its workers, ``warm_up_checks``)."""
    key = (case.x.dtype.str, case.x.shape, case.x.tobytes(), case.d_output.dtype.str, case.d_output.shape,
           case.d_output.tobytes(), repr(case.pool_size), repr(case.stride), step)
    numeric = _NUMERICAL.get(key)
    if numeric is not None:
        return numeric
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
    numeric.setflags(write=False)
    if len(_NUMERICAL) >= 256:  # the reproducer search tries many small cases
        _NUMERICAL.clear()
    _NUMERICAL[key] = numeric
    return numeric


def inputs_changed(case: Case, given: Given) -> str | None:
    """x and d_output as they were before the call, or what changed."""
    if not np.array_equal(given.x, case.x, equal_nan=True):
        return "Your function changed its input x. Work on a new array (dx, or a copy of x) instead."
    if not np.array_equal(given.d_output, case.d_output, equal_nan=True):
        return "Your function changed its input d_output. Leave the inputs as they are."
    return None


def leaves_inputs_unmodified(case: Case, dx: np.ndarray, given: Given) -> str | None:
    return inputs_changed(case, given) or same_as_reference(case, dx)


def returns_float_for_integer_input(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """What is wrong, in one sentence: the named mistake (catalogue.py) states the rule and
    its fix, once per page."""
    return fractions_cut_off(case, dx) or same_as_reference(case, dx)


def fractions_cut_off(case: Case, dx: np.ndarray) -> str | None:
    if dx.dtype.kind != "f":
        return f"dx has dtype {dx.dtype} for integer x ({case.x.dtype}): the fractions of d_output are cut off."
    return None


def has_x_dtype(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """dx in x's dtype when x is floating, float64 for integer x, as PyTorch returns the gradient
    (an integer dx for integer x breaks it too: the integer-input test also sees its lost
    fractions). The named mistake states the rule and its fix."""
    if case.x.dtype.kind == "f" and dx.dtype != case.x.dtype:
        return f"dx has dtype {dx.dtype}; x has dtype {case.x.dtype}."
    if case.x.dtype.kind != "f" and dx.dtype != gradient_dtype(case.x.dtype):
        return f"dx has dtype {dx.dtype} for integer x ({case.x.dtype})."
    return same_as_reference(case, dx)
