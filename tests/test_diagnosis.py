"""Why a solution cannot be tested: every syntax problem, a renamed function, no stride."""

from __future__ import annotations

import sys

import pytest
from helpers import ROOT, flat

from maxpool_grader.exercise.diagnosis import accepts_stride, compile_problems, why_missing
from maxpool_grader.exercise.grading import evaluate, run_check
from maxpool_grader.exercise.student_call import CheckFailed

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import FORUM_VERBATIM, LOOP_CORRECT, forum_made_to_compile  # noqa: E402


def test_forum_answer_verbatim_reports_the_indentation_slip_and_the_split_line():
    problems = compile_problems(FORUM_VERBATIM)
    assert [(p.line, p.error) for p in problems] == [
        (15, "IndentationError: unexpected indent"), (27, "SyntaxError: invalid syntax")]
    assert "line before it in the same block (line 4) by 3" in problems[0].hint
    assert "align the indentation" in problems[0].hint
    assert FORUM_VERBATIM.split("\n")[26].endswith("=") and "join the two lines" in problems[1].hint


def test_following_both_hints_makes_the_forum_answer_compile():
    assert compile_problems(forum_made_to_compile(FORUM_VERBATIM)) == []


@pytest.mark.parametrize("source, line, words", [
    ("def f(x):\nreturn x\n", 2, "must be indented further"),
    ("def f(x):\n    a = 1\n   b = 2\n", 3, "matches no enclosing block"),
    ("def f(x:\n    return x\n", 1, "unclosed bracket"),
    ("total = 1 +\n    2\n", 1, "split over two lines"),
])
def test_each_syntax_problem_has_its_line_and_a_hint(source, line, words):
    problems = compile_problems(source)
    assert problems[0].line == line and words in problems[0].hint


def test_problems_after_an_unrepairable_one_are_not_guessed():
    problems = compile_problems("def f(x:\n    return x\n  y = (\n")
    assert len(problems) == 1


def test_a_compiling_solution_has_no_problems():
    assert compile_problems(LOOP_CORRECT) == []


def test_missing_function_is_explained_from_the_cells_that_ran():
    history = ["import numpy as np", FORUM_VERBATIM, "run_check('hidden_gradient_check', globals())"]
    message = why_missing({"In": history})
    assert all(flat(part) in flat(message) for part in ("does not compile", "line 15", "line 27"))


def test_a_renamed_function_is_named():
    history = ["def maxpool_backward(d_output, x, pool_size, stride=None):\n    return x\n"]
    assert "your code defines maxpool_backward" in why_missing({"In": history})


def test_an_empty_solution_cell_is_said_to_be_empty():
    assert "seems to be empty" in why_missing({"In": ["# YOUR CODE HERE\n"]})


def test_run_check_on_a_namespace_without_the_function_fails_with_the_explanation():
    with pytest.raises(CheckFailed) as failure:
        run_check("hidden_gradient_check", {"In": [FORUM_VERBATIM]})
    assert "Hidden test failed: Numerical gradient check on negative values (0 of 2 points)." in str(failure.value)
    assert failure.value._render_traceback_() == str(failure.value).split("\n")


def test_a_function_without_stride_is_told_its_signature():
    def forum(d_output, input, pool_size):
        return input
    assert not accepts_stride(forum) and accepts_stride(lambda d, x, p, stride=None: x)
    message = evaluate("hidden_overlapping_windows", forum)
    assert flat("max_pool_backward(d_output, input, pool_size): it has no stride parameter") in flat(message)
    assert flat("start window (k, l) at row k * stride_h and column l * stride_w") in flat(message)


def test_every_message_calls_a_window_by_its_output_position_k_l_as_part_a_does():
    """Part A: (i, j) is an input position, (k, l) an output one. No message a student reads
    calls a window (i, j) or slices it with i*sh."""
    import re

    from maxpool_grader.exercise.catalogue import BUGS
    from maxpool_grader.exercise.checks import GRADED_CHECKS
    from maxpool_grader.exercise.diagnosis import missing_stride_message
    texts = ([bug.title + " " + bug.explanation for bug in BUGS.values()]
             + [check.title + " " + check.what + " " + check.accepts for check in GRADED_CHECKS.values()]
             + [missing_stride_message(lambda d_output, x, pool_size: x)])
    for text in texts:
        assert not re.search(r"\(i, j\)|\bi ?\* ?s|\bj ?\* ?s|, i, j\]", text), text
