"""The graded checks: each graded test cell of the notebook is one check.

A check is a named, pointed set of fixed inputs, then the inputs drawn with a seed from the
kinds its rules cover (contract.py: no randomness at grading time, the same notebook always
gets the same grade), a rule for the student's dx on each (rules.py), and small probe
inputs of the same kind for explaining a failure.
``HIDDEN_CHECKS`` is the single source of truth for grade ids, titles and points; the
notebook's hidden cells and their nbgrader metadata are checked against it by
``maxpool-grader check`` (authoring/check.py), whose ``--fix`` writes them from it.
``VISIBLE_CHECKS`` are the visible test cells' inputs, checked again outside the student's
process (and against the visible cells by ``maxpool-grader check``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .contract import with_drawn
from .geometry import forward_geometry
from .kinds import maximum_first
from .reproducer import ProbeConfig
from .reproducer import probes_where as _probes
from .rules import (
    Case,
    Given,
    finite_differences,
    has_x_dtype,
    leaves_inputs_unmodified,
    numerical_gradient,
    returns_float_for_integer_input,
    same_as_reference,
    valid_subgradient,
)


@dataclass(frozen=True)
class GradedCheck:
    """A graded test cell: its grade id, title, points and what it verifies."""

    grade_id: str
    title: str
    points: int
    what: str  # one sentence for the student: what was checked
    cases: Callable[[], list[Case]]
    verdict: Callable[[Case, np.ndarray, Given], str | None]  # None when dx is right
    probes: Callable[[], tuple[Case, ...]]  # small inputs of the same kind, smallest first
    hidden: bool = True  # a hidden test (its code is not in the release), or a visible one
    # The one property the check is about (docs/students.md#one-mistake-costs-its-own-points): its
    # inputs are plain in every other way. tests/test_fair_points.py finds the properties
    # each catalogue bug breaks on inputs of its own and bounds the points it loses.
    property: str = ""
    # For a check that accepts more than one dx: which, in words (the report shows the reference's
    # dx as one example instead of "Expected dx", and says which dx after the release only).
    accepts: str = ""
    # The property, where Part A asks the student to derive it: after the release only (reveal.py)
    rule: str = ""


def _distinct(shape, seed: int) -> np.ndarray:
    """Values 1, 2, ..., n in random order: no ties anywhere, arg-max well defined, and
    every window's maximum positive (negative values have a test of their own)."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64)).reshape(shape)


def _ties(shape, seed: int, values=(1, 2)) -> np.ndarray:
    """Float x with many ties: x is float so that a dtype slip does not fail a tie test."""
    return np.random.default_rng(seed).choice(np.array(values, dtype=np.float64), size=shape)


def _negative_with_first_maximum(shape, pool: int, seed: int) -> np.ndarray:
    """All-negative x whose every (stride = pool) window, clipped ones too, has its maximum
    first: a running maximum started at 0 still picks it, but zeros padded at the border
    beat it. It isolates the border windows from the negative-values test."""
    return maximum_first(_distinct(shape, seed) - (int(np.prod(shape)) + 1), (pool, pool))


def _case(x, pool_size, stride=None, seed=0, ceil_mode=False, d_output=None) -> Case:
    geometry = forward_geometry(x.shape, pool_size, stride, ceil_mode)
    if d_output is None:
        rng = np.random.default_rng(seed + 1000)
        d_output = rng.integers(1, 9, size=geometry.leading + geometry.out_shape) * 0.5
        d_output = d_output * rng.choice([-1.0, 1.0], size=d_output.shape)
    return Case(np.asarray(d_output), x, pool_size, stride)


# Each hidden check isolates one property (docs/students.md#one-mistake-costs-its-own-points):
# its inputs have that property and are plain in every other way, so that a mistake
# about something else does not fail it. Plain means float x with positive values
# 1 apart, square pools on square 2-D planes, stride None (or equal to the pool), the
# floor grid, and x and d_output that the function may not modify.

def rectangular_and_leading_axes_cases() -> list[Case]:
    return [
        _case(_distinct((4, 6), 1), (2, 3), seed=1),
        _case(_distinct((3, 6, 4), 2), (3, 2), (3, 2), seed=2),
        _case(_distinct((2, 3, 4, 6), 3), (2, 3), seed=3),
        _case(_distinct((2, 5, 4), 4), (1, 2), seed=4),
        _case(_distinct((4, 8), 5), 2, seed=5),  # a wide plane: 2 x 4 windows
    ]


def overlapping_cases() -> list[Case]:
    peak = np.zeros((4, 4))
    peak[1:3, 1:3] = [[1, 2], [3, 9]]
    return [
        _case(peak, 2, 1, seed=10),
        _case(_distinct((5, 5), 11), 3, 1, seed=11),
        _case(_distinct((6, 6), 12), 3, 2, seed=12),
    ]


def ties_cases() -> list[Case]:
    return [
        _case(np.array([[1.0, 7.0], [7.0, 7.0]]), 2, seed=20),
        _case(_ties((6, 6), 21), 2, seed=21),
        _case(_ties((6, 6), 22, (1, 2, 3)), 3, seed=22),
        _case(np.full((4, 4), 3.0), 2, seed=23),
    ]


def first_maximum_cases() -> list[Case]:
    return ties_cases() + [
        _case(_ties((8, 8), 30), 4, seed=30),
        _case(_ties((6, 6), 31, (1, 2, 3)), 2, seed=31),
    ]


def gradient_check_cases() -> list[Case]:
    """Negative values (the test says so), checked against finite differences."""
    return [
        _case(_distinct((4, 4), 40) - 17, 2, seed=40),  # -16 .. -1
        _case(_distinct((6, 6), 41) - 37, 3, seed=41),
        _case(_distinct((6, 6), 42) - 20, 2, seed=42),  # negative and positive windows
        _case(_distinct((4, 4), 43) - 100.5, 4, seed=43),
    ]


def integer_input_cases() -> list[Case]:
    """Integer x, fractional d_output, on floor grids: the forum example's 3x3 grid of
    1..9 needs ceil-mode border windows, which have a test of their own."""
    return [
        _case(np.arange(1, 17, dtype=np.int64).reshape(4, 4), 2, d_output=np.array([[0.5, -1.25], [2.5, 0.75]])),
        _case(np.arange(1, 10, dtype=np.int64).reshape(3, 3)[::-1].copy(), 3, d_output=np.array([[0.5]])),
    ]


def ceil_border_cases() -> list[Case]:
    border_heavy = _distinct((5, 5), 50)
    border_heavy[-1, :] += 100  # the clipped last row holds the maxima
    border_heavy[:, -1] += 100
    return [
        _case(border_heavy, 2, seed=50, ceil_mode=True),
        _case(_distinct((7, 7), 51), 3, seed=51, ceil_mode=True),
        _case(_distinct((5, 5), 52), 4, seed=52, ceil_mode=True),
        # all negative, each window's maximum first: zero padding fails, a scan from 0 does not
        _case(_negative_with_first_maximum((5, 5), 2, 53), 2, seed=53, ceil_mode=True),
    ]


def unmodified_cases() -> list[Case]:
    return [
        _case(np.arange(16.0).reshape(4, 4)[::-1].copy(), 2, seed=60,
              d_output=np.array([[1.0, 2.0], [3.0, 4.0]])),
        _case(_distinct((4, 4), 61).astype(np.float32), 2, seed=61),
    ]


def dtype_cases() -> list[Case]:
    """Float64 x with gradients float32 cannot hold (0.1), float32 x with a float32 d_output: dx in
    x's dtype; integer x with a whole d_output: a floating dx is float64 (an integer dx is the
    integer-input test's, whose fractions it loses: one dtype mistake, one point)."""
    return [
        _case(_distinct((4, 4), 70), 2, d_output=np.array([[0.1, -0.3], [0.7, 1.9]])),
        _case(_distinct((4, 4), 71).astype(np.float32), 2, d_output=np.array([[1.5, -0.5], [2.0, 0.25]], np.float32)),
        _case(_distinct((4, 4), 72).astype(np.int64), 2, d_output=np.array([[16777217.0, -3.0], [5.0, 2.0]])),
    ]


def _default_floor(config: ProbeConfig) -> bool:
    return config.stride is None and not config.ceil


TIE_PATTERNS = ("equal", "ties")

HIDDEN_CHECKS: dict[str, GradedCheck] = {check.grade_id: check for check in [
    GradedCheck("hidden_rectangular_leading_axes", "Rectangular windows and planes, leading batch/channel axes", 2,
                "dx for rectangular pools (ph != pw), planes wider than tall, and x with leading batch/channel axes.",
                rectangular_and_leading_axes_cases, same_as_reference,
                _probes(lambda c: c.rectangular_or_leading and _default_floor(c)), property="shapes"),
    GradedCheck("hidden_overlapping_windows", "Overlapping windows (stride smaller than the pool)", 2,
                "dx for strides other than the pool size: windows that overlap (stride < pool_size), where one "
                "element can be the maximum of two, and windows with gaps between them (stride > pool_size).",
                overlapping_cases, same_as_reference,
                _probes(lambda c: c.overlapping and not c.ceil), property="overlap",
                rule="With stride < pool_size, an element that is the maximum of several windows must "
                     "receive the sum of their gradients."),
    GradedCheck("hidden_ties_valid_subgradient", "Windows whose maximum is not unique", 2,
                "dx for windows where more than one element holds the maximum.",
                ties_cases, valid_subgradient, _probes(_default_floor, TIE_PATTERNS), property="tie_subgradient",
                accepts="any dx that gives each window's gradient to its tied maxima only, in total exactly once",
                rule="When several elements tie for a window's maximum, its gradient must go to those maxima only, "
                     "in total exactly once: any split among them with weights summing to 1 is a valid subgradient."),
    GradedCheck("hidden_ties_first_maximum", "Ties: PyTorch's convention (the first maximum in row-major order)", 1,
                "dx on tied maxima follows Part B's convention: the forward pass selected the first maximum "
                "in row-major order within the window (PyTorch's).",
                first_maximum_cases, same_as_reference,
                _probes(lambda c: True, TIE_PATTERNS), property="tie_first"),
    GradedCheck("hidden_gradient_check", "Numerical gradient check on negative values", 2,
                "For x with negative values (windows whose every element is below 0), dx must agree with "
                "central finite differences of sum(d_output * max_pool_forward(x)).",
                gradient_check_cases, finite_differences, _probes(_default_floor, ("negative",)),
                property="negative"),
    GradedCheck("hidden_forum_integer_input", "Integer x and fractional d_output: dx keeps the fractions", 1,
                "dx for integer x and a d_output with fractions (0.5, -1.25, ...), which dx must hold exactly.",
                integer_input_cases, returns_float_for_integer_input,
                _probes(_default_floor, dtype=np.int64, d_output="halves"), property="integer_input"),
    GradedCheck("hidden_ceil_border_windows", "Border windows of a ceil-mode grid", 1,
                "dx for a d_output grid with windows that run past x's border (ceil mode), clipped there.",
                ceil_border_cases, same_as_reference, _probes(lambda c: c.ceil), property="ceil_border"),
    GradedCheck("hidden_inputs_unmodified_float_result", "Inputs left unmodified", 1,
                "x and d_output must be unchanged after the call.",
                unmodified_cases, leaves_inputs_unmodified,
                _probes(lambda c: True), property="inputs_unmodified"),
    GradedCheck("hidden_dtype_of_x", "dx in x's dtype for floating x, float64 for integer x", 1,
                "dx's dtype for float64 x (with values of d_output float32 cannot hold), float32 x, integer x.",
                dtype_cases, has_x_dtype,
                _probes(_default_floor, ("distinct",), dtypes=((np.float64, "tenths"), (np.float32, "whole"),
                                                                 (np.int64, "whole"))),
                property="dtype"),
]}


HIDDEN_CHECKS = {grade_id: with_drawn(check) for grade_id, check in HIDDEN_CHECKS.items()}


def warm_up_checks() -> None:
    """Compute what every submission's checks need and nothing of theirs changes: every check's
    cases (the drawn ones too) and the numerical gradients of the gradient check's cases
    (``maxpool-grader grade`` calls this before it forks)."""
    for check in GRADED_CHECKS.values():
        check.cases()
    for case in gradient_check_cases():
        numerical_gradient(case)


def visible_2x2_cases() -> list[Case]:
    x = np.array([[2, 9, 4, 1], [6, 3, 8, 5], [1, 7, 0, 2], [4, 5, 3, 6]], dtype=float)
    return [_case(x, 2, d_output=np.array([[0.5, -1.0], [2.0, 0.25]]))]


def visible_forum_cases() -> list[Case]:
    x = np.array([[2, -3, 5], [-1, 4, -6], [7, 0, -2]], dtype=np.int64)
    return [_case(x, 2, d_output=np.array([[1, -2], [3, 4]], dtype=np.int64))]


# The visible test cells assert on their own inputs in the student's kernel, where a patched assert
# could pass them; these are the same tests for the out-of-process verdict (tests/test_self_check.py
# checks the cells' inputs are these). Their cells compare with finite differences, never with a
# written-out dx: a literal dx would show where each window's gradient lands, which Part A asks for.
VISIBLE_CHECKS: dict[str, GradedCheck] = {check.grade_id: check for check in [
    GradedCheck("visible_2x2_stride_2", "2x2 windows, stride 2", 1,
                "dx for the visible test's 4x4 input, pool 2, stride 2.",
                visible_2x2_cases, same_as_reference, _probes(_default_floor), hidden=False),
    GradedCheck("visible_forum_example",
                "The forum example: a 3x3 integer input with pool 2, clipped border windows", 1,
                "dx for the visible test's 3x3 integer input with pool 2 and a 2x2 d_output (a ceil-mode grid).",
                visible_forum_cases, same_as_reference, _probes(lambda c: c.ceil), hidden=False),
]}


GRADED_CHECKS: dict[str, GradedCheck] = VISIBLE_CHECKS | HIDDEN_CHECKS
