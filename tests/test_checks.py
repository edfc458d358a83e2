"""The hidden checks, in process: what passes, what fails and what the student reads."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest
from helpers import ROOT, flat

from maxpool_grader import max_pool_backward
from maxpool_grader.exercise.catalogue import BUGS
from maxpool_grader.exercise.checks import HIDDEN_CHECKS
from maxpool_grader.exercise.grading import evaluate, run_check
from maxpool_grader.exercise.student_call import CheckFailed, call_student


@pytest.mark.parametrize("grade_id", HIDDEN_CHECKS)
def test_the_reference_passes_every_hidden_check(grade_id, capsys):
    run_check(grade_id, max_pool_backward)
    assert capsys.readouterr().out.startswith(f"Passed: {HIDDEN_CHECKS[grade_id].title}")


@pytest.mark.parametrize("grade_id", HIDDEN_CHECKS)
def test_the_unimplemented_stub_fails_every_check_saying_so(grade_id):
    def stub(d_output, x, pool_size, stride=None):
        raise NotImplementedError()
    message = evaluate(grade_id, stub)
    assert flat("not implemented yet") in flat(message) and HIDDEN_CHECKS[grade_id].title in message


def test_a_check_gives_the_same_verdict_every_time():
    def zeros(d_output, x, pool_size, stride=None):
        return np.zeros(np.shape(x))
    assert len({evaluate(grade_id, zeros) for grade_id in HIDDEN_CHECKS for _ in range(2)}) == len(HIDDEN_CHECKS)


def test_prints_warnings_and_raw_stderr_of_a_correct_solution_never_reach_stderr(capfd):
    def noisy(d_output, x, pool_size, stride=None):
        print("to stderr", file=sys.stderr)
        os.write(2, b"raw fd 2\n")
        np.log(np.array([-1.0]))
        warnings.warn("careful")
        return max_pool_backward(d_output, x, pool_size, stride)
    assert all(evaluate(grade_id, noisy) is None for grade_id in HIDDEN_CHECKS)
    captured = capfd.readouterr()
    assert captured.err == ""
    assert "to stderr" in captured.out and "raw fd 2" in captured.out
    assert "RuntimeWarning: invalid value encountered in log" in captured.out


def test_an_exception_in_student_code_becomes_a_readable_failure():
    def broken(d_output, x, pool_size, stride=None):
        return x[10, 10]
    message = evaluate("hidden_rectangular_leading_axes", broken)
    assert flat("max_pool_backward raised IndexError") in flat(message)


@pytest.mark.parametrize("returned, words", [
    ([[0.0]], "must return a NumPy array, but it returned list"),
    (None, "returned NoneType"),
    (np.array([["a"]]), "dtype <U1"),
])
def test_what_is_not_a_numeric_array_is_rejected(returned, words):
    with pytest.raises(CheckFailed, match=words):
        call_student(lambda *args: returned, np.ones((1, 1)), np.ones((2, 2)), 2)


def test_a_function_without_the_stride_argument_is_still_graded_on_its_results():
    def no_stride(d_output, x, pool_size):
        return max_pool_backward(d_output, x, pool_size)
    assert evaluate("hidden_forum_integer_input", no_stride) is None
    message = evaluate("hidden_overlapping_windows", no_stride)
    assert flat("max_pool_backward(d_output, x, pool_size): it has no stride parameter") in flat(message)
    assert flat("overlapping windows") in flat(message)


def test_integer_truncation_is_explained_and_costs_only_the_integer_input_and_dtype_tests():
    """The issue's case: ``np.zeros_like(x)`` in an otherwise correct solution. It breaks the dtype
    rule (an integer dx for integer x) and loses d_output's fractions: the integer-input test and
    the dtype test fail (the tie tests once had integer x and it cost 5 points), and the
    integer-input test's message says why."""
    def zeros_like(d_output, x, pool_size, stride=None):
        dx = np.zeros_like(x)
        dx[...] = max_pool_backward(d_output, x, pool_size, stride)
        return dx
    failed = {grade_id: message for grade_id in HIDDEN_CHECKS if (message := evaluate(grade_id, zeros_like))}
    assert list(failed) == ["hidden_forum_integer_input", DTYPE_CHECK]
    message = failed["hidden_forum_integer_input"]
    assert flat("dx has dtype int64 for integer x (int64): the fractions of d_output are cut off.") in flat(message)
    assert flat("`np.zeros_like(x)` copies x's dtype; with integer x, adding 0.5 to it stores 0") in flat(message)
    fact, named = message.split("Likely mistake:", 1)
    assert "np.zeros" not in fact.split("Your dx:", 1)[1] and "np.zeros(x.shape" in named, "one fix, the mistake's"


def test_modifying_x_is_reported():
    def in_place(d_output, x, pool_size, stride=None):
        dx = max_pool_backward(d_output, x, pool_size, stride)
        x[...] = 0
        return dx
    assert "changed its input x" in evaluate("hidden_inputs_unmodified_float_result", in_place)


def test_splitting_ties_is_a_valid_subgradient_but_not_the_first_maximum():
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_sample_class import TIES_SPLIT
    namespace = {"np": np}
    exec(TIES_SPLIT, namespace)
    split = namespace["max_pool_backward"]
    assert evaluate("hidden_ties_valid_subgradient", split) is None
    message = evaluate("hidden_ties_first_maximum", split)
    assert flat("Expected dx:\n    np.array([[1.0, 0.0]])") in flat(message)
    assert flat("Your dx:\n    np.array([[0.5, 0.5]])") in flat(message)
    assert flat(f"Likely mistake: {BUGS['ties_shared'].title}.") in flat(message)


def _central_differences(case, step=1e-4):
    from maxpool_grader.exercise.geometry import forward_geometry
    from maxpool_grader.exercise.reference import max_pool_forward
    ceil_mode = case.d_output.shape[-2:] != forward_geometry(case.x.shape, case.pool_size, case.stride).out_shape
    numeric = np.zeros(case.x.shape)
    for index in np.ndindex(case.x.shape):
        for sign in (1, -1):
            shifted = case.x.astype(float)
            shifted[index] += sign * step
            numeric[index] += sign * np.sum(case.d_output * max_pool_forward(shifted, case.pool_size, case.stride,
                                                                             ceil_mode)) / (2 * step)
    return numeric


def test_the_numerical_gradient_is_computed_once_per_case_and_cannot_be_changed():
    """The gradient check's numerical gradient depends on the case alone: every submission
    is checked against the same one, computed once (the kernel zygote computes them before
    it forks: warm_up_checks), and no caller can change it for the next submission."""
    from maxpool_grader.exercise import rules
    from maxpool_grader.exercise.checks import gradient_check_cases, warm_up_checks
    rules._NUMERICAL.clear()
    warm_up_checks()
    for case in gradient_check_cases():  # cases are made anew each time: equal, not identical
        numeric = rules.numerical_gradient(case)
        assert numeric is rules.numerical_gradient(case)
        assert np.allclose(numeric, _central_differences(case), atol=1e-9)
        assert not numeric.flags.writeable
        with pytest.raises(ValueError):
            numeric[(0,) * numeric.ndim] = 1.0
    assert len(rules._NUMERICAL) == len(gradient_check_cases())
    other = gradient_check_cases()[0]
    other = rules.Case(other.d_output * 2, other.x, other.pool_size, other.stride)
    assert np.allclose(rules.numerical_gradient(other), 2 * rules.numerical_gradient(gradient_check_cases()[0]))


SQUARE_PLANE = """
def max_pool_backward(d_output, x, pool_size, stride=None):
    # written for square images, as a quarter of public implementations are
    ph, pw = (pool_size, pool_size) if isinstance(pool_size, int) else pool_size
    sh, sw = (ph, pw) if stride is None else (stride, stride) if isinstance(stride, int) else stride
    dx = np.zeros(x.shape)
    size = d_output.shape[-2]
    for index in np.ndindex(x.shape[:-2]):
        for i in range(size):
            for j in range(size):
                window = x[index][i * sh:i * sh + ph, j * sw:j * sw + pw]
                r, c = np.unravel_index(np.argmax(window), window.shape)
                dx[index][i * sh + r, j * sw + c] += d_output[index][i, j]
    return dx
"""


def test_code_that_assumes_a_square_plane_is_named():
    namespace = {"np": np}
    exec(SQUARE_PLANE, namespace)
    message = evaluate("hidden_rectangular_leading_axes", namespace["max_pool_backward"])
    assert flat("the plane is assumed square: the output width is taken from its height") in flat(message), message


DTYPE_CHECK = "hidden_dtype_of_x"


def test_a_float32_accumulator_loses_only_the_dtype_test_and_is_named():
    """dx made as float32 holds float64 gradients rounded (0.1 becomes 0.10000000149011612);
    PyTorch returns the gradient in x's dtype. Only the dtype test sees it, and names it."""
    def float32_dx(d_output, x, pool_size, stride=None):
        dx = np.zeros(x.shape, dtype=np.float32)
        dx[...] = max_pool_backward(d_output, x, pool_size, stride)
        return dx
    failed = {grade_id: message for grade_id in HIDDEN_CHECKS if (message := evaluate(grade_id, float32_dx))}
    assert list(failed) == [DTYPE_CHECK]
    assert HIDDEN_CHECKS[DTYPE_CHECK].points == 1
    message = failed[DTYPE_CHECK]
    assert flat(f"Likely mistake: {BUGS['float32_accumulator'].title}.") in flat(message), message
    assert "dtype=np.float32)" in message.split("Your dx:", 1)[1]  # the student's dx, printed with its dtype
    assert flat("dx has dtype float32; x has dtype float64.") in flat(message)


def test_a_float64_dx_for_float32_x_loses_only_the_dtype_test_and_is_named():
    def always_float64(d_output, x, pool_size, stride=None):
        return max_pool_backward(d_output, x, pool_size, stride).astype(np.float64)
    failed = {grade_id: message for grade_id in HIDDEN_CHECKS if (message := evaluate(grade_id, always_float64))}
    assert list(failed) == [DTYPE_CHECK]
    message = failed[DTYPE_CHECK]
    assert flat("dx has dtype float64; x has dtype float32.") in flat(message)
    assert flat(f"Likely mistake: {BUGS['dx_always_float64'].title}.") in flat(message), message
    assert "dtype=np.float32)" in message.split("Expected dx:", 1)[1].split("Your dx:", 1)[0]


def test_the_dtype_test_keeps_every_other_input_plain():
    """Its inputs are plain but for the dtype: positive values 1 apart, a square 2-D plane,
    a square pool, stride None, the floor grid; float64 x, float32 x and integer x (with a
    whole d_output, which an integer dx holds: the integer-input test is the one about it)."""
    cases = [case for case in HIDDEN_CHECKS[DTYPE_CHECK].cases() if not case.judged]  # the drawn: test_contract
    assert [case.x.dtype for case in cases] == [np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)]
    for case in cases:
        assert case.x.ndim == 2 and case.x.shape[0] == case.x.shape[1] and case.stride is None
        assert np.isscalar(case.pool_size) and case.x.shape[0] % case.pool_size == 0
        assert case.d_output.dtype == (case.x.dtype if case.x.dtype.kind == "f" else np.float64)
        assert case.x.min() >= 1
        assert np.array_equal(case.d_output, np.round(case.d_output)) or case.x.dtype.kind == "f"
        assert len(np.unique(case.x)) == case.x.size
    # float64 x has gradients float32 cannot hold: a float32 dx is wrong in its values too
    wide = next(case for case in cases if case.x.dtype == np.float64)
    assert not np.array_equal(wide.d_output.astype(np.float32).astype(np.float64), wide.d_output)


def _student(code: str):
    namespace = {"np": np}
    exec(code, namespace)
    return namespace["max_pool_backward"]


def test_the_tie_test_says_that_it_accepts_more_than_one_dx_and_after_the_release_which():
    """It accepts any valid split ([[0.5, 0.5]] passes), so it shows no single expected dx;
    which dx it accepts is Part A's (b), said after the release only."""
    from maxpool_grader.exercise.reveal import after_release
    check = HIDDEN_CHECKS["hidden_ties_valid_subgradient"]
    message = evaluate(check.grade_id, BUGS["ties_all_maxima"].function)
    assert "Expected dx:" not in message
    assert flat("Accepted dx: this test accepts more than one dx; for example:\n    np.array([[1.0, 0.0]])") in flat(
        message), message
    assert "tied maxima only" not in message and "subgradient" not in message
    final = after_release(message, check)
    assert flat("Accepted dx: any dx that gives each window's gradient to its tied maxima only, in total "
                "exactly once; for example:\n    np.array([[1.0, 0.0]])") in flat(final), final
    assert flat(check.rule) in flat(final)
    assert "Expected dx:" in evaluate("hidden_ties_first_maximum", BUGS["ties_all_maxima"].function)


def test_a_mistake_the_student_s_code_rules_out_is_not_named():
    """One explanation per mistake: where the code shows which of the mistakes that give the
    same dx was made, only that one is named (no "also comes from" line for the others)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from corpus import FANCY_INDEX
    from make_sample_class import TIES_ALL_MAXIMA
    for grade_id in ("hidden_ties_valid_subgradient", "hidden_ties_first_maximum"):
        message = evaluate(grade_id, _student(TIES_ALL_MAXIMA), TIES_ALL_MAXIMA)
        assert flat(f"Likely mistake: {BUGS['ties_all_maxima'].title}.") in flat(message), message
        assert "also comes from" not in message and BUGS["upsampling_mask"].title not in flat(message)
        assert "known mistakes give" not in message
    message = evaluate("hidden_overlapping_windows", _student(FANCY_INDEX), FANCY_INDEX)
    assert flat(f"Likely mistake: {BUGS['fancy_index_accumulate'].title}.") in flat(message), message
    assert BUGS["overwrite_overlaps"].title not in flat(message) and "also comes from" not in message
    # without the code, both look-alikes are named
    message = evaluate("hidden_overlapping_windows", _student(FANCY_INDEX))
    assert flat("2 known mistakes give exactly this dx") in flat(message)
