"""The notebook's self-check and visible tests: what a student can check before grading.

``check_rules`` (in the release's collapsed tools cell) must catch every catalogue mistake
that breaks a rule Part B states, each with a one-line reason, and pass every correct
control; the mistakes it leaves to the hidden tests are exactly those of the table in docs/students.md.
It and the visible tests never show a hidden input or a written-out dx, and the release's
prose stays short.
"""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import numpy as np
import pytest
from helpers import RELEASE_NOTEBOOK, ROOT, flat

from maxpool_grader.exercise.catalogue import BUGS, CONTROLS
from maxpool_grader.exercise.checks import HIDDEN_CHECKS, VISIBLE_CHECKS
from maxpool_grader.names import PROVIDED_CELL, PROVIDED_TOOLS_CELL, grade_id

# The catalogue mistakes check_rules does not catch, and why they are the hidden tests' to
# find: each gets which element of a window receives the gradient, or how much, wrong, which
# is what Part A derives. (The table under "What the self-check checks" in docs/students.md lists them.)
LEFT_FOR_HIDDEN = {
    "overwrite_overlaps": "overlapping windows must add up: Part A's result",
    "fancy_index_accumulate": "overlapping windows must add up: Part A's result",
    "argmax_unravelled_with_pool_height": "the gradient stays in its window but lands on the wrong element",
}

# The mistakes the issue found passing every visible test and gradient_check: each breaks a
# stated rule, and must be caught by that rule.
DTYPE_RULE = "dx has x's dtype when x is floating, float64 for integer x"
CAUGHT_BY = {
    "integer_truncation": DTYPE_RULE,
    "float32_accumulator": DTYPE_RULE,
    "dx_always_float64": DTYPE_RULE,
    "max_initialised_to_zero": "x may be negative",
    "ties_all_maxima": "ties: the first maximum in row-major order",
    "ties_shared": "ties: the first maximum in row-major order",
    "ties_last_maximum": "ties: the first maximum in row-major order",
    "zero_padding": "x may be negative",
}


VARIANTS = {**{n: b.function for n, b in BUGS.items()}, **{n: c.function for n, c in CONTROLS.items()}}


def release_cells() -> dict[str, nbformat.NotebookNode]:
    notebook = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    return {grade_id(cell): cell for cell in notebook.cells if grade_id(cell)}


@pytest.fixture(scope="module")
def tools() -> dict:
    """The namespace a student's kernel has after the release's two provided cells."""
    cells = release_cells()
    namespace: dict = {}
    exec(cells[PROVIDED_CELL].source, namespace)
    exec(cells[PROVIDED_TOOLS_CELL].source, namespace)
    return namespace


@pytest.fixture(scope="module")
def verdicts(tools) -> dict[str, dict[str, str | None]]:
    found = {}
    for name, function in {**{n: b.function for n, b in BUGS.items()},
                           **{n: c.function for n, c in CONTROLS.items()}}.items():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            found[name] = tools["rule_problems"](function)
    return found


def test_every_catalogue_mistake_that_breaks_a_stated_rule_is_caught_with_a_one_line_reason(verdicts):
    for name in BUGS:
        problems = {rule: reason for rule, reason in verdicts[name].items() if reason is not None}
        if name in LEFT_FOR_HIDDEN:
            assert not problems, (f"{name} is caught now ({problems}): take it out of LEFT_FOR_HIDDEN "
                                  "and docs/students.md")
            continue
        assert problems, f"{name} breaks a stated rule but passes check_rules"
        for rule, reason in problems.items():
            assert reason.strip() and "\n" not in reason and len(reason) <= 240, (name, rule, reason)


def test_the_mistakes_visible_checks_missed_are_caught_by_their_rule(verdicts):
    for name, rule in CAUGHT_BY.items():
        assert verdicts[name][rule] is not None, f"{name} must fail the rule '{rule}'"


def test_correct_controls_pass_every_rule(verdicts):
    for name in CONTROLS:
        assert all(reason is None for reason in verdicts[name].values()), (name, verdicts[name])


def _printed(tools, function) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        tools["check_rules"](function)
    return buffer.getvalue()


def test_check_rules_prints_one_line_per_rule(tools):
    heading, *lines = [line for line in _printed(tools, BUGS["ties_shared"].function).splitlines()
                       if not line.startswith(" ")]  # a failed rule's input is indented under it
    assert heading.startswith("check_rules(ties_shared): ")  # the function it was given, by name
    assert len(lines) == len(tools["_RULES"]) == 10
    assert sum(line.startswith("FAIL") for line in lines) == 1
    assert all(line.startswith(("ok  ", "FAIL")) for line in lines)


def _pasted(printed: str, rules) -> dict[str, str]:
    """Each failed rule's code to paste, as check_rules printed it under the rule."""
    found, rule = {}, None
    for line in printed.splitlines():
        if line.startswith("FAIL"):
            (rule,) = [name for name in rules if line[6:].startswith(name + ": ")]
            found[rule] = ""
        elif line.startswith("        ") and rule is not None:
            found[rule] += line[8:] + "\n"
        elif not line.startswith(" "):
            rule = None
    return found


def test_a_failed_rule_prints_its_input_as_code_that_reproduces_it(tools):
    """The input a failed rule used, as code a student pastes into a new cell (x = np.array(...),
    d_output = ..., the calls): it reproduces what the rule saw, without reading the tools."""
    for name in BUGS:
        for rule, code in _pasted(_printed(tools, BUGS[name].function), tools["_RULES"]).items():
            assert "x = np.array(" in code and "d_output = np.array(" in code, (name, rule, code)
            # the call is of the function check_rules was given, by its name: never another one
            assert f"{name}(d_output" in code and "max_pool_backward" not in code, (name, rule, code)
            assert "tools" not in code, (name, rule, code)
            namespace = {"np": np, name: BUGS[name].function}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    np.errstate(all="ignore"):
                try:
                    exec(code, namespace)
                except Exception:  # noqa: BLE001  the rule said the function raised: so does the paste
                    assert "raised" in _printed(tools, BUGS[name].function).split(rule, 1)[1].splitlines()[0]
    # what the rule compares shows in the pasted calls
    def pasted(name, rule):
        namespace = {"np": np, name: VARIANTS[name]}
        return _pasted(_printed(tools, VARIANTS[name]), tools["_RULES"])[rule], namespace

    code, namespace = pasted("ties_shared", "ties: the first maximum in row-major order")
    exec(code, namespace)
    assert not np.allclose(namespace["dx"], namespace["dx_2"])
    for name in ("float32_accumulator", "dx_always_float64", "integer_truncation"):
        code, namespace = pasted(name, DTYPE_RULE)
        exec(code, namespace)  # one call: the one whose dx has the wrong dtype
        x = namespace["x"]
        assert "dx_2" not in namespace and namespace["dx"].dtype != (x.dtype if x.dtype.kind == "f" else np.float64)
    code, namespace = pasted("modifies_x_in_place", "x and d_output are left unchanged")
    before, call = code.rstrip("\n").rsplit("\n", 1)
    exec(before, namespace)
    x_before = namespace["x"].copy()
    exec(call, namespace)
    assert not np.array_equal(namespace["x"], x_before)
    assert _pasted(_printed(tools, VARIANTS["loop_with_argmax"]), tools["_RULES"]) == {}


def test_a_reproducer_tests_the_function_given_not_the_notebooks_max_pool_backward(tools):
    """A student checks a variant beside their function (issue 49: ``check_rules(backward_trunc)``
    printed a call of ``max_pool_backward``, so pasting it tested the wrong function). Pasted into a
    kernel where max_pool_backward is correct, the printed code shows the variant's failure."""
    def backward_trunc(d_output, x, pool_size, stride=None):
        return BUGS["integer_truncation"].function(d_output, x, pool_size, stride)

    printed = _printed(tools, backward_trunc)
    assert printed.splitlines()[0].startswith("check_rules(backward_trunc): ")
    code = _pasted(printed, tools["_RULES"])[DTYPE_RULE]
    assert code.rstrip().endswith("dx = backward_trunc(d_output, x, 2, 1)"), code
    namespace = {"np": np, "backward_trunc": backward_trunc,
                 "max_pool_backward": CONTROLS["loop_with_argmax"].function}
    exec(code, namespace)
    assert namespace["x"].dtype.kind == "i" and namespace["dx"].dtype != np.float64
    # a function without a usable name: the code says which function "backward" stands for
    lines = _printed(tools, lambda d_output, x, pool_size, stride=None: backward_trunc(d_output, x, pool_size, stride))
    code = _pasted(lines, tools["_RULES"])[DTYPE_RULE]
    assert code.startswith("backward = ...  # the function you gave: <lambda>\n"), code
    assert code.rstrip().endswith("dx = backward(d_output, x, 2, 1)") and "max_pool_backward" not in code


def _gradient_check(tools, function, **configuration) -> tuple[float, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        error = tools["gradient_check"](function, **configuration)
    return error, buffer.getvalue()


def test_gradient_check_names_the_function_and_the_configuration_that_failed(tools):
    """What it checked, on its first line (the function by name and every setting of the
    configuration); where the difference is large, the element where it is largest and code that
    calls that function on the same inputs, which gives the same dx."""
    overwrite = BUGS["overwrite_overlaps"].function
    error, printed = _gradient_check(tools, overwrite, shape=(6, 7), pool_size=(3, 2), stride=1)
    lines = printed.splitlines()
    assert lines[0] == ("gradient_check(overwrite_overlaps, shape=(6, 7), pool_size=(3, 2), stride=1, "
                        "ceil_mode=False, seed=0):")
    assert error > 1e-6 and "(something is wrong)" in lines[1]
    assert re.fullmatch(r"  largest at dx\[\d, \d\]: yours \S+, finite differences \S+", lines[2]), lines[2]
    assert lines[3] == "  To see it yourself, paste this into a new cell:"
    code = "\n".join(line[4:] for line in lines[4:])
    assert "dx = overwrite_overlaps(d_output, x, (3, 2), 1)" in code and "max_pool_backward" not in code
    namespace = {"np": np, "overwrite_overlaps": overwrite, **{name: tools[name] for name in
                                                               ("max_pool_forward", "numerical_gradient")}}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, namespace)
    assert np.max(np.abs(namespace["dx"] - namespace["expected"])) == pytest.approx(error)
    # the printed call is the check itself: pasted, it prints the same
    again = io.StringIO()
    with contextlib.redirect_stdout(again):
        exec(lines[0].rstrip(":"), {"gradient_check": tools["gradient_check"], "overwrite_overlaps": overwrite})
    assert again.getvalue() == printed
    # a right function: one line of what was checked, one of the result, no code to paste
    error, printed = _gradient_check(tools, CONTROLS["loop_with_argmax"].function, pool_size=2, ceil_mode=True)
    assert printed.splitlines()[0].startswith("gradient_check(loop_with_argmax, shape=(2, 5, 6), pool_size=2, ")
    assert "ceil_mode=True" in printed.splitlines()[0] and error < 1e-6
    assert len(printed.splitlines()) == 2 and printed.rstrip().endswith("(looks right)")


def test_gradient_check_says_when_dx_has_the_wrong_shape(tools):
    error, printed = _gradient_check(tools, lambda d_output, x, pool_size, stride=None: d_output)
    assert error == float("inf") and "dx has shape (2, 2, 3), x has shape (2, 5, 6)" in printed
    assert "backward = ...  # the function you gave: <lambda>" in printed


def test_numerical_gradient_warns_on_a_tied_window(tools):
    """Finite differences are not a gradient where a window's maximum is tied: a window of three
    equal values gets 0.5 at each, 1.5 in total, neither the convention nor a valid split."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        tied = np.array([[5.0, 1.0, 1.0, 3.0, 3.0, 3.0]])
        numeric = tools["numerical_gradient"](np.array([[1.0, 1.0]]), tied, (1, 3))
    assert numeric.sum() == pytest.approx(2.5)  # 1 for the first window, 1.5 for the tied one
    said = " ".join(buffer.getvalue().split())
    assert "window (k, l) = (0, 1) of x has a tied maximum" in said and "not a gradient" in said, said
    assert "(0, 0)" not in said
    for check in VISIBLE_CHECKS.values():  # the visible tests' inputs have no tie: no warning there
        (case,) = check.cases()
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            tools["numerical_gradient"](case.d_output, case.x, case.pool_size)
        assert buffer.getvalue() == ""


def test_docs_table_lists_exactly_the_mistakes_left_for_the_hidden_tests():
    readme = (ROOT / "docs" / "students.md").read_text()
    section = readme.split("## What the self-check checks", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert listed == set(LEFT_FOR_HIDDEN)


def test_the_self_check_never_uses_a_hidden_input(tools):
    """Every input check_rules hands the student's function differs from every graded input."""
    seen = []

    def recording(d_output, x, pool_size, stride=None):
        seen.append((np.array(x), np.array(d_output)))
        return CONTROLS["loop_with_argmax"].function(d_output, x, pool_size, stride)

    tools["rule_problems"](recording)
    hidden = [(case.x, case.d_output) for check in HIDDEN_CHECKS.values() for case in check.cases()]
    assert len(seen) > 100
    for x, d_output in seen:
        for hidden_x, hidden_d in hidden:
            same_x = x.shape == hidden_x.shape and np.array_equal(x, hidden_x)
            assert not (same_x and d_output.shape == hidden_d.shape and np.array_equal(d_output, hidden_d))
            assert not (same_x and x.size > 4), f"check_rules uses a hidden x:\n{x}"


def test_the_provided_code_holds_no_backward_pass():
    cells = release_cells()
    provided = cells[PROVIDED_CELL].source + cells[PROVIDED_TOOLS_CELL].source
    assert "argmax" not in provided and "def max_pool_backward" not in provided
    assert "maxpool_grader" not in provided


def test_helpers_are_out_of_the_reading_path():
    cells = release_cells()
    assert len(cells[PROVIDED_CELL].source.splitlines()) <= 40, "the visible provided cell is the forward pass"
    assert cells[PROVIDED_TOOLS_CELL].metadata["jupyter"]["source_hidden"] is True
    assert "call_quietly" not in cells[PROVIDED_CELL].source


def test_the_prose_states_negative_x_the_forum_example_and_part_b_points():
    text = "\n".join(cell.source for cell in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells
                     if cell.cell_type == "markdown")
    assert "`x` may be negative" in text
    assert "forum example" in text and "course forum" in text
    # the forum example is named where it is tested, and no test title leaves it unexplained
    assert VISIBLE_CHECKS["visible_forum_example"].title.lower().startswith("the forum example")
    assert not any("forum" in check.title.lower() for check in HIDDEN_CHECKS.values())
    part_b = text.split("## Part B", 1)[1]
    assert "`dx` has `x`'s shape, and `x`'s dtype when `x` is floating (float64 for integer `x`)" in flat(part_b)
    # as in Part A, (i, j) is an input position and (k, l) an output one: windows are (k, l)
    assert "window $(k, l)$ covers rows `k*sh … k*sh+ph-1`" in part_b and "(i, j)" not in part_b
    assert "Restart & Run All" not in part_b
    points = sum(c.points for c in HIDDEN_CHECKS.values()) + sum(c.points for c in VISIBLE_CHECKS.values())
    assert f"## Part B: implement `max_pool_backward` ({points} points)" in text


@pytest.mark.parametrize("check_id", sorted(VISIBLE_CHECKS))
def test_visible_cells_use_the_visible_checks_inputs_and_write_out_no_dx(check_id, tools):
    source = release_cells()[check_id].source
    assert "numerical_gradient(d_output, x" in source
    assert "expected = np.array" not in source, "a written-out dx shows Part A's answer"
    namespace = {"np": np}
    exec(source.split("dx = ", 1)[0], namespace)
    (case,) = VISIBLE_CHECKS[check_id].cases()
    for name in ("x", "d_output"):
        given, graded = np.asarray(namespace[name]), getattr(case, name)
        assert given.dtype == graded.dtype and np.array_equal(given, graded), name
    assert f", d_output, x, {case.pool_size!r})" in source and case.stride is None
    title = VISIBLE_CHECKS[check_id].title
    assert source.splitlines()[0] == f"# Visible test: {title} (1 point)"
    assert f'print("Passed: {title}.")' in source, "the feedback shows the title when the test passes"


@pytest.mark.integration
def test_a_student_who_edits_the_tools_cannot_pass_the_visible_tests():
    """The visible cells compare with the tools' numerical_gradient, which the student's kernel
    can redefine; the out-of-process verdict compares with the reference instead (and autograde
    puts the locked tools cell back). An edited tools cell that makes the comparison agree with
    anything still fails both visible tests with a zeros solution."""
    from maxpool_grader.verdict.remote import Cell
    from maxpool_grader.verdict.verdicts import verdicts

    cells = release_cells()
    cheat = cells[PROVIDED_TOOLS_CELL].source + (
        "\n\ndef numerical_gradient(d_output, x, pool_size, stride=None, step=1e-6):\n"
        "    return max_pool_backward(d_output, x, pool_size, stride)\n")
    zeros = "def max_pool_backward(d_output, x, pool_size, stride=None):\n    return np.zeros(np.shape(x))\n"
    found = verdicts([Cell(cells[PROVIDED_CELL].source, "provided"), Cell(cheat, "student"),
                      Cell(zeros, "solution")], grade_ids=sorted(VISIBLE_CHECKS))
    assert set(found) == set(VISIBLE_CHECKS) and not any(verdict.passed for verdict in found.values())
