"""The rules one at a time, for the cases drawn from every kind of input (exercise/contract.py):
each judge reads a dx on its own rule alone (``JUDGES``, by the name a rule of the contract gives).
A dtype test never fails a wrong value, and a value test reads dx as x's shape (when it has x's
size) and as exactly as dx's own dtype can hold the expected gradient, so that one mistake fails
the test of its own rule only."""

from __future__ import annotations

import numpy as np

from .geometry import gradient_dtype
from .reference import max_pool_backward
from .rules import Case, Given, fractions_cut_off, inputs_changed, same_as_reference, shape_problem, valid_subgradient


def _as_x_shape(case: Case, dx: np.ndarray) -> np.ndarray | str:
    if dx.size != case.x.size:
        return f"dx has shape {dx.shape} ({dx.size} values), but it must have x's shape {case.x.shape}."
    return dx.reshape(case.x.shape)


def _matches_as_held(case: Case, shaped: np.ndarray, rtol: float, keep=...) -> bool:
    """dx (of x's shape) equals the expected gradient as exactly as dx's dtype holds it (at ``keep``)."""
    with np.errstate(all="ignore"):
        held = case.expected.astype(shaped.dtype).astype(np.float64)
        return np.allclose(shaped.astype(np.float64)[keep], held[keep], rtol=rtol, atol=1e-12, equal_nan=True)


def values_as_held(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """dx's values are the expected gradient's, as exactly as dx's dtype holds them."""
    shaped = _as_x_shape(case, dx)
    if isinstance(shaped, str):
        return shaped
    rtol = max(1e-9, 8 * float(np.finfo(shaped.dtype).eps)) if shaped.dtype.kind == "f" else 0.0
    if _matches_as_held(case, shaped, rtol):
        return None
    return same_as_reference(case, shaped.astype(np.float64)) or "dx differs from the expected gradient."


def single_window_values(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """dx's values where at most one window puts its gradient (where several add up is the
    overlapping windows' test), as exactly as dx's dtype holds them."""
    shaped = _as_x_shape(case, dx)
    if isinstance(shaped, str):
        return shaped
    keep = max_pool_backward(np.ones(case.d_output.shape), case.x, case.pool_size, case.stride) <= 1
    if _matches_as_held(case, shaped, 1e-6, keep):
        return None
    return values_as_held(case, dx) or "dx differs from the expected gradient."


def accepted(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """The input is accepted: the call returns a dx of x's shape (its values are judged where
    the other rules of the input are: overlapping windows, the plain border windows)."""
    return shape_problem(case, dx)


def shape_and_values(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """dx has x's shape exactly, and the expected values (as exactly as its dtype holds them)."""
    return shape_problem(case, dx) or values_as_held(case, dx)


def floating_values(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """Integer x: a floating dx, with the expected values (the fractions of d_output kept)."""
    return fractions_cut_off(case, dx) or values_as_held(case, dx)


def subgradient_as_held(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    shaped = _as_x_shape(case, dx)
    return shaped if isinstance(shaped, str) else valid_subgradient(case, shaped.astype(np.float64))


def dtype_alone(case: Case, dx: np.ndarray, given: Given | None = None) -> str | None:
    """dx's dtype: x's when x is floating, float64 for integer x, whatever d_output's is (a call
    that raised or returned no array has no dtype to judge: another rule's test fails it)."""
    wanted = gradient_dtype(case.x.dtype)
    if dx is None or dx.dtype == wanted:
        return None
    return (f"dx has dtype {dx.dtype}; for x of dtype {case.x.dtype} and d_output of dtype "
            f"{case.d_output.dtype} it must be {wanted}.")


def unchanged_alone(case: Case, dx: np.ndarray | None, given: Given) -> str | None:
    """x and d_output as they were before the call (whatever the call returned or raised)."""
    return inputs_changed(case, given)


JUDGES = {"shape_and_values": shape_and_values, "values": values_as_held, "values_single": single_window_values,
          "accepted": accepted, "floating_values": floating_values,
          "subgradient": subgradient_as_held, "dtype": dtype_alone, "unchanged": unchanged_alone}
# Judges that see past an error: a call that raised does not break their rule (another test's does)
JUDGES_OF_THE_RESULT_ALONE = ("dtype", "unchanged")


def judged_despite_error(case: Case) -> bool:
    """Whether a call that raised on ``case`` is judged on what it did (its rule is about the
    result alone: x's dtype, the inputs left unchanged) rather than failed for raising."""
    return case.judged in JUDGES_OF_THE_RESULT_ALONE
