"""One mistake costs its own points: what each catalogue bug loses, against what it breaks.

Each hidden check is about one property (``GradedCheck.property``). Which properties a
bug breaks is found here on inputs of our own, never the hidden checks' inputs: for each
property, small probe configurations that have that property and are plain in every
other way (float x with distinct positive values, square pools on square 2-D planes,
stride None, the floor grid), and a judge that compares the bug with the reference. A
bug breaks a property when it is wrong on any of them. Then every hidden check a bug
fails must be about a property it breaks, and a bug that breaks exactly one property
loses at most 2 points. The table (bug, points lost, properties broken) is printed at
the end of the pytest run, after the kill matrix.
"""

from __future__ import annotations

import functools
import re
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from helpers import FAIR_POINTS, ROOT, hidden_messages, keep_summary_table

from maxpool_grader import max_pool_backward
from maxpool_grader.exercise.catalogue import BUGS, CONTROLS
from maxpool_grader.exercise.checks import HIDDEN_CHECKS
from maxpool_grader.exercise.contract import RULES, case_of
from maxpool_grader.exercise.judges import JUDGES, JUDGES_OF_THE_RESULT_ALONE
from maxpool_grader.exercise.kinds import draw, maximum_first
from maxpool_grader.exercise.part_a import PART_A_POINTS, RUBRIC
from maxpool_grader.exercise.reproducer import ProbeConfig, all_configs, upstream, values
from maxpool_grader.exercise.rules import Case, Given, valid_subgradient
from maxpool_grader.exercise.student_call import quiet_student_code

MOST_FOR_ONE_PROPERTY = 2  # the issue's bound: one mistake, at most 2 of the 15 points


def _square(config: ProbeConfig) -> bool:
    return (not config.lead and config.pool[0] == config.pool[1]
            and config.in_shape[0] == config.in_shape[1] and config.out_shape[0] == config.out_shape[1])


def plain(config: ProbeConfig) -> bool:
    return _square(config) and config.stride is None and not config.ceil


def _negative_maximum_first(config: ProbeConfig) -> np.ndarray:
    """All-negative x whose every window (stride None: windows do not overlap) has its
    maximum first: it tells clipped border windows apart from negative values."""
    return maximum_first(values(config, "negative"), config.pool)


def _right(case: Case, dx: np.ndarray, x_after: np.ndarray, d_after: np.ndarray) -> bool:
    expected = max_pool_backward(case.d_output, case.x, case.pool_size, case.stride)
    return dx.shape == expected.shape and bool(np.allclose(dx, expected, rtol=1e-9, atol=1e-12))


def _valid_subgradient(case, dx, x_after, d_after) -> bool:
    return dx.shape == case.x.shape and valid_subgradient(case, dx) is None


def _floating_and_right(case, dx, x_after, d_after) -> bool:
    return dx.dtype.kind == "f" and _right(case, dx, x_after, d_after)


def _in_x_dtype_and_right(case, dx, x_after, d_after) -> bool:
    """Floating x: dx in x's dtype; integer x: a floating dx is float64 (an integer dx is the
    integer-input property's)."""
    if case.x.dtype.kind == "f":
        return dx.dtype == case.x.dtype and _right(case, dx, x_after, d_after)
    return (dx.dtype.kind != "f" or dx.dtype == np.float64) and _right(case, dx, x_after, d_after)


def _inputs_unchanged_and_right(case, dx, x_after, d_after) -> bool:
    """As every hidden check does, this one also wants the right dx on its inputs."""
    unchanged = np.array_equal(x_after, case.x) and np.array_equal(d_after, case.d_output)
    return unchanged and _right(case, dx, x_after, d_after)


@dataclass(frozen=True)
class Property:
    what: str
    where: Callable[[ProbeConfig], bool]
    inputs: tuple[Callable[[ProbeConfig], tuple[np.ndarray, np.ndarray]], ...]
    right: Callable[..., bool] = _right

    @functools.cached_property
    def cases(self) -> list[Case]:
        configs = [config for config in all_configs() if self.where(config)]
        assert configs, self.what
        return [Case(d_output, x, config.pool_size, config.stride_argument)
                for config in configs for d_output, x in (make(config) for make in self.inputs)]


def _pattern(name: str, dtype=np.float64, d_output: str = "whole"):
    return lambda config: (upstream(config, d_output), values(config, name, dtype))


DISTINCT, NEGATIVE = _pattern("distinct"), _pattern("negative")
# float64 x with gradients float32 cannot hold, float32 x with a float32 d_output, and integer x
FLOATING = (_pattern("distinct", d_output="tenths"),
            lambda config: tuple(array.astype(np.float32) for array in _pattern("distinct", d_output="tenths")(config)),
            _pattern("distinct", np.int64))
TIES = (_pattern("ties"), _pattern("equal"))

PROPERTIES: dict[str, Property] = {
    "basic": Property("each window's gradient at its maximum, on plain inputs (the visible tests)",
                      plain, (DISTINCT,)),
    "shapes": Property("rectangular pools, non-square planes, leading axes",
                       lambda c: (c.rectangular_or_leading or c.in_shape[0] != c.in_shape[1])
                       and c.stride is None and not c.ceil, (DISTINCT,)),
    "overlap": Property("stride < pool: overlapping windows add up",
                        lambda c: c.overlapping and _square(c) and c.stride[0] == c.stride[1] and not c.ceil,
                        (DISTINCT,)),
    "tie_subgradient": Property("ties: each window's gradient on its maxima, exactly once", plain, TIES,
                                _valid_subgradient),
    "tie_first": Property("ties: all of it to the first maximum", plain, TIES),
    "negative": Property("negative values", plain, (NEGATIVE,)),
    "integer_input": Property("integer x: a floating dx that keeps fractions", plain,
                              (_pattern("distinct", np.int64, "halves"),), _floating_and_right),
    "ceil_border": Property("clipped border windows of a ceil grid",
                            lambda c: _square(c) and c.stride is None and c.ceil,
                            (DISTINCT, lambda c: (upstream(c), _negative_maximum_first(c)))),
    "inputs_unmodified": Property("x and d_output left unmodified", plain, (DISTINCT,), _inputs_unchanged_and_right),
    "dtype": Property("floating x: dx in x's dtype (float64, float32); integer x: float64", plain, FLOATING,
                      _in_x_dtype_and_right),
}


def _is_right(function, case: Case, right) -> bool:
    given = case.given()
    try:
        dx = np.asarray(function(given.d_output, given.x, case.pool_size, case.stride))
    except Exception:  # noqa: BLE001  a bug may crash on an input
        return case.judged in JUDGES_OF_THE_RESULT_ALONE and right(case, None, given.x, given.d_output)
    return bool(right(case, dx, given.x, given.d_output))


def _judged(case: Case, dx, x_after, d_after) -> bool:
    """A case drawn from the kinds of input (exercise/contract.py), judged on its rule alone."""
    return JUDGES[case.judged](case, dx, Given(d_after, x_after)) is None


@functools.lru_cache(maxsize=None)
def drawn_of_our_own(property_name: str) -> tuple[Case, ...]:
    """Inputs of every kind the contract's rules of this property cover, drawn with seeds of our
    own (never the hidden tests' cases), three times as many."""
    tests = [grade_id for grade_id, check in HIDDEN_CHECKS.items() if check.property == property_name]
    return tuple(case_of(kind, zlib.crc32(f"fair:{rule.name}:{number}".encode()), rule.judge)
                 for rule in RULES if rule.test in tests
                 for number, kind in enumerate(draw(rule.over, 3 * rule.count, zlib.crc32(f"fair:{rule.name}".encode()),
                                                    rule.where, rule.base)))


def broken(function) -> list[str]:
    with quiet_student_code():  # once for all the calls: a context per call was most of the time
        return [name for name, prop in PROPERTIES.items()
                if not all(_is_right(function, case, prop.right) for case in prop.cases)
                or not all(_is_right(function, case, _judged) for case in drawn_of_our_own(name))]


@pytest.fixture(scope="module")
def outcomes(request) -> dict[str, tuple[list[str], list[str]]]:
    """Each variant: the properties it breaks (our probes), the hidden checks it fails."""
    found = {}
    said = hidden_messages()
    for name, function in [*((n, b.function) for n, b in BUGS.items()),
                           *((n, c.function) for n, c in CONTROLS.items())]:
        found[name] = broken(function), [grade_id for grade_id in HIDDEN_CHECKS if said[name, grade_id]]
    keep_summary_table(request.config, FAIR_POINTS, table(found))
    return found


def lost(failed: list[str]) -> int:
    return sum(HIDDEN_CHECKS[grade_id].points for grade_id in failed)


def table(found) -> str:
    width = max(map(len, found)) + 2
    lines = [f"{'bug':<{width}}{'lost':>5}  {'#':>2}  properties broken (on probes of their own)"]
    for name, (properties, failed) in found.items():
        lines.append(f"{name:<{width}}{lost(failed):>5}  {len(properties):>2}  {', '.join(properties) or '-'}")
    lines += ["", "properties (hidden check, points):"]
    for name, prop in PROPERTIES.items():
        checks = [f"{g} ({c.points} p)" for g, c in HIDDEN_CHECKS.items() if c.property == name]
        lines.append(f"  {name}: {prop.what}; {', '.join(checks) or 'the visible tests'}")
    return "\n".join(lines)


def test_every_hidden_check_is_about_one_known_property_and_each_property_has_one_check():
    properties = [check.property for check in HIDDEN_CHECKS.values()]
    assert sorted(properties) == sorted(set(PROPERTIES) - {"basic"})


def test_a_correct_solution_breaks_no_property():
    assert broken(max_pool_backward) == []
    for name, control in CONTROLS.items():
        assert broken(control.function) == [], name


@pytest.mark.parametrize("name", BUGS)
def test_the_probes_see_every_bug(outcomes, name):
    assert outcomes[name][0], f"{name} breaks no property: the probes miss it"


@pytest.mark.parametrize("name", BUGS)
def test_a_bug_loses_only_the_points_of_the_properties_it_breaks(outcomes, name):
    properties, failed = outcomes[name]
    unrelated = [grade_id for grade_id in failed if HIDDEN_CHECKS[grade_id].property not in properties]
    assert not unrelated, (f"{name} breaks {properties} but fails {unrelated}, which are about "
                           f"{[HIDDEN_CHECKS[g].property for g in unrelated]}")
    if len(properties) == 1 or properties == ["integer_input", "dtype"]:  # an integer dx is one dtype mistake
        assert lost(failed) <= MOST_FOR_ONE_PROPERTY, (name, properties, failed)


@pytest.mark.parametrize("name", CONTROLS)
def test_a_correct_control_loses_nothing(outcomes, name):
    assert outcomes[name] == ([], [])


def test_the_dtype_slip_from_the_issue_costs_the_dtype_rule_and_the_fractions(outcomes):
    """``dx = np.zeros_like(x)`` in an otherwise correct solution: an integer dx for integer x
    breaks the dtype rule and loses d_output's fractions, so the dtype test and the
    integer-input test fail, 2 points (it cost 5 when the tie tests had integer x)."""
    properties, failed = outcomes["integer_truncation"]
    assert properties == ["integer_input", "dtype"]
    assert failed == ["hidden_forum_integer_input", "hidden_dtype_of_x"] and lost(failed) == 2


def test_a_float32_accumulator_costs_the_dtype_test_s_point_alone(outcomes):
    """dx made as float32 rounds float64 gradients: only the dtype test fails (1 point)."""
    properties, failed = outcomes["float32_accumulator"]
    assert properties == ["dtype"] and failed == ["hidden_dtype_of_x"] and lost(failed) == 1


def test_a_float32_dx_for_integer_x_costs_the_dtype_test_s_point_alone(outcomes):
    """Part B says float64 for integer x: a float32 dx for integer x (right for floating x)
    loses the dtype test's point, and no other (one dtype mistake, at most 1 point)."""
    properties, failed = outcomes["float32_for_integer_input"]
    assert properties == ["dtype"] and failed == ["hidden_dtype_of_x"] and lost(failed) == 1
    dtype_mistakes = ["float32_accumulator", "dx_always_float64", "float32_for_integer_input"]
    assert all(lost(outcomes[name][1]) == 1 for name in dtype_mistakes)


def test_the_point_of_the_dtype_test_came_from_the_ceil_border_test():
    """Part B stays at 15: the ceil grid is the one property a visible test grades too (the
    forum example's clipped border windows), so its hidden test gave the point."""
    assert HIDDEN_CHECKS["hidden_dtype_of_x"].points == 1 and HIDDEN_CHECKS["hidden_ceil_border_windows"].points == 1
    assert sum(check.points for check in HIDDEN_CHECKS.values()) == 13


def test_docs_state_the_rule():
    readme = " ".join((ROOT / "docs" / "students.md").read_text().split())
    assert "One mistake costs its own points" in readme
    assert "tests/test_fair_points.py" in readme


def test_part_a_rubric_puts_its_points_on_the_derivation_not_the_picture():
    """The result ("each window's gradient at its maximum, 0 elsewhere") stated without its reason
    earns nothing: Part A's points rest on the derivation, item by item as the question asks."""
    items = re.findall(r"^- \((\w)\) (\d+) p: (.*?)(?=^- |\Z)", RUBRIC, flags=re.M | re.S)
    points = {" ".join(text.split()[:3]).rstrip(":"): int(p) for _, p, text in items}
    assert points == {"justification of $\\partial": 2, "ties: max is": 1, "the chain rule": 2}
    assert "for any stride" in items[2][2] and "overlapping" in items[2][2]
    assert sum(points.values()) == PART_A_POINTS
    assert "earns nothing on its own" in " ".join(RUBRIC.split())
