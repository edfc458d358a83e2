"""The out-of-process verdict on its own: the solution runs in a separate process, the
grader decides. (tests/test_untrusted.py runs the same through nbgrader autograde.)"""

from __future__ import annotations

import io
import os
import re

import numpy as np
import pytest
from corpus import AGREEABLE_ARRAY, ZEROS
from helpers import flat
from make_sample_class import LOOP_CORRECT, NOISY_CORRECT

from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.exercise.grading import evaluate
from maxpool_grader.verdict import process as solution_process
from maxpool_grader.verdict import untrusted
from maxpool_grader.verdict.process import Limits
from maxpool_grader.verdict.remote import Cell
from maxpool_grader.verdict.shortcuts import find_shortcuts
from maxpool_grader.verdict.verdicts import verdicts

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

QUICK = Limits(check_seconds=1.5, search_seconds=1.5, load_seconds=3, total_seconds=6)
SIGNATURE = "def max_pool_backward(d_output, x, pool_size, stride=None):\n"


def _failed(found):
    return {grade_id: verdict.message for grade_id, verdict in found.items() if not verdict.passed}


def test_correct_solutions_pass_every_graded_test():
    for solution in (LOOP_CORRECT, NOISY_CORRECT):
        found = verdicts("import numpy as np\n" + solution)
        assert set(found) == set(GRADED_CHECKS) and _failed(found) == {}


def test_a_wrong_solution_reads_the_same_report_as_in_the_notebook():
    namespace = {"np": np}
    exec(ZEROS, namespace)
    found = verdicts("import numpy as np\n" + ZEROS)
    for grade_id, verdict in found.items():
        assert not verdict.passed
        # the same report, except for the line numbers of the extra import line
        assert verdict.message == evaluate(grade_id, namespace["max_pool_backward"])


def test_an_array_subclass_that_agrees_with_everything_is_not_an_array():
    message = verdicts("import numpy as np\n" + AGREEABLE_ARRAY, grade_ids=["hidden_overlapping_windows"])
    assert "must return a NumPy array, but it returned Agreeable" in message["hidden_overlapping_windows"].message


def test_magics_in_the_solution_cell_do_not_matter():
    found = verdicts("%load_ext autoreload\nimport numpy as np\n!echo hi\n" + LOOP_CORRECT)
    assert _failed(found) == {}


def test_an_endless_loop_costs_the_per_test_limit_and_says_so():
    found = verdicts("import numpy as np\n" + SIGNATURE + "    while True:\n        pass\n",
                     grade_ids=["hidden_overlapping_windows", "hidden_gradient_check"], limits=QUICK)
    said = flat(f"did not return within {QUICK.check_seconds:g} s")
    assert all(said in flat(message) for message in _failed(found).values())
    assert len(_failed(found)) == 2


def test_a_test_cut_short_by_the_notebook_budget_says_so_without_a_measured_time():
    found = verdicts("import numpy as np\n" + SIGNATURE + "    while True:\n        pass\n",
                     grade_ids=["hidden_overlapping_windows", "hidden_gradient_check", "hidden_ties_first_maximum"],
                     limits=Limits(check_seconds=2, search_seconds=1, load_seconds=3, total_seconds=3))
    messages = [flat(message) for message in _failed(found).values()]
    assert len(messages) == 3 and "did not return within 2 s" in messages[0]
    assert "did not return before the 3 s for all tests of one notebook ran out" in messages[1]
    assert not any(re.search(r"within \d+\.\d+ s", message) for message in messages)


def test_the_notebook_budget_stops_further_tests():
    found = verdicts("import numpy as np\n" + SIGNATURE + "    while True:\n        pass\n",
                     limits=Limits(check_seconds=1, search_seconds=1, load_seconds=3, total_seconds=2.5))
    assert sum("Not run: your function used up" in message for message in _failed(found).values()) >= 7


def test_a_solution_cell_that_never_finishes():
    found = verdicts("while True:\n    pass\n", grade_ids=["hidden_gradient_check"], limits=QUICK)
    assert "did not finish running within 3 s" in flat(found["hidden_gradient_check"].message)


@pytest.mark.parametrize("body, reason", [
    ("    import os\n    os._exit(7)\n", "exit status 7"),
    ("    import ctypes\n    ctypes.string_at(0)\n", "segmentation fault"),
    ("    hoard = []\n    while True:\n        hoard.append(np.ones(10**7))\n", "MemoryError"),
])
def test_a_crashing_function_fails_with_a_reason(body, reason):
    # 768 MiB of address space to fill, not the course's 2 GiB: on a busy machine 2 GiB took longer
    # than the test's time, and the point is what a full memory is called, not how large it is
    found = verdicts("import numpy as np\n" + SIGNATURE + body, grade_ids=["hidden_ties_first_maximum"],
                     limits=Limits(check_seconds=8, search_seconds=3, total_seconds=12, memory_bytes=768 << 20))
    assert reason in flat(found["hidden_ties_first_maximum"].message)


def test_a_huge_result_is_refused_before_it_is_sent():
    huge = SIGNATURE + "    return np.zeros((10**4, 10**4))\n"
    found = verdicts("import numpy as np\n" + huge, grade_ids=["hidden_gradient_check"])
    assert "dx has shape (10000, 10000), but it must have x's shape" in flat(found["hidden_gradient_check"].message)


def test_changes_to_the_inputs_are_seen_across_processes():
    in_place = SIGNATURE + "    x[...] = 0\n    return np.zeros(x.shape)\n"
    found = verdicts("import numpy as np\n" + in_place, grade_ids=["hidden_inputs_unmodified_float_result"])
    assert "changed its input x" in found["hidden_inputs_unmodified_float_result"].message


# What a function can do to its caller's arrays besides their values: in the notebook the change
# is the caller's; out of process it is made to a view in the box, which the grader is told of.
LEFT_CHANGED = {
    "values": "x[0, 0] += 1",
    "x's shape": "x.shape = (1,) + x.shape",
    "d_output's shape": "d_output.shape = d_output.shape + (1,)",
    "x's dtype": "x.dtype = {8: np.int64, 4: np.int32, 2: np.int16, 1: np.int8}[x.dtype.itemsize]",
    "a shape put back": "x.shape = (1,) + x.shape\n    x.shape = x.shape[1:]",
    "nothing": "x[...] = x",
}


@pytest.mark.parametrize("change", LEFT_CHANGED)
def test_what_a_call_leaves_of_its_inputs_is_judged_alike_in_and_out_of_process(change):
    """``x.shape = ...`` changes the caller's array and never its memory: the grader reading the
    memory back saw nothing (a real-world solution passed "Inputs left unmodified" only out of
    process). Now the box reports each input's shape and dtype after the call, a report that
    can only cost its student, and both verdicts agree."""
    source = ("import numpy as np\n" + LOOP_CORRECT.replace("def max_pool_backward(", "def _right(") + "\n"
              + SIGNATURE + "    dx = _right(d_output, x, pool_size, stride)\n    " + LEFT_CHANGED[change]
              + "\n    return dx\n")
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102  the same code in this process
    grade_id = "hidden_inputs_unmodified_float_result"
    here = evaluate(grade_id, namespace["max_pool_backward"])
    there = verdicts(source, grade_ids=[grade_id])[grade_id]
    assert (here is None) == there.passed == (change in ("a shape put back", "nothing")), (here, there.message)
    if here is not None:
        assert "Your function changed its input" in flat(there.message) and "changed its input" in flat(here)


def test_a_function_without_stride_is_named_as_such():
    no_stride = LOOP_CORRECT.replace("stride=None", "").replace("(d_output, x, pool_size, )",
                                                                "(d_output, x, pool_size)")
    found = verdicts("import numpy as np\n" + no_stride, grade_ids=["hidden_overlapping_windows"])
    assert "it has no stride parameter" in flat(found["hidden_overlapping_windows"].message)


def test_importing_the_grader_is_refused_even_when_hidden_from_reading():
    sneaky = ("import importlib\nreference = importlib.import_module('maxpool' + '_grader.exercise.reference')\n"
              + SIGNATURE + "    return reference.max_pool_backward(d_output, x, pool_size, stride)\n")
    assert find_shortcuts(sneaky) == []
    found = verdicts("import numpy as np\n" + sneaky, grade_ids=["hidden_gradient_check"])
    message = flat(found["hidden_gradient_check"].message)
    assert "raised ImportError: importing maxpool_grader is not allowed" in message


@pytest.mark.parametrize("line, named", [
    ("import torch", "imports torch (PyTorch)"),
    ("from jax import grad", "imports jax (JAX)"),
    ("import tensorflow as tf", "imports tensorflow (TensorFlow)"),
    ("from maxpool_grader import reference", "imports maxpool_grader"),
    ("m = __import__('torch')", "loads torch"),
    ("text = open('/x/maxpool_grader/reference.py').read()", "refers to maxpool_grader"),
])
def test_shortcuts_are_found_by_reading_the_code(line, named):
    shortcuts = find_shortcuts(line + "\n" + ZEROS)
    assert [shortcut.line for shortcut in shortcuts] == [1] and named in shortcuts[0].what


def test_nothing_is_unpickled_from_the_untrusted_side():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        untrusted.array_from_bytes(buffer.getvalue())
    assert untrusted.array_from_bytes(untrusted.array_bytes(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]


def test_a_malformed_reply_ends_the_process_not_the_grader():
    process = solution_process.SolutionProcess(QUICK)
    try:
        os.write(process._request, b"\xff\xff\xff\xff")  # the child reads a huge header length
        with pytest.raises((solution_process.ProcessEnded, solution_process.Timeout)):
            process.request({"op": "load", "solution": ""})
    finally:
        process.close()


# ------------------------------------------------------------------ the student's own cells
HELPER = "def to_pair(value):\n    return (value, value) if isinstance(value, int) else tuple(value)\n"
USES_HELPER = LOOP_CORRECT.replace(
    "    ph, pw = (pool_size, pool_size) if isinstance(pool_size, int) else pool_size\n",
    "    ph, pw = to_pair(pool_size)\n")


def _cells(*student: str, solution: str = USES_HELPER, at: int = 0) -> list[Cell]:
    """The provided cell, then the student's cells with the solution cell at position ``at``."""
    cells = [Cell(source, "student") for source in student]
    cells.insert(at, Cell(solution, "solution"))
    return [Cell("import numpy as np", "provided"), *cells]


def test_a_helper_in_a_cell_of_the_student_counts_above_or_below():
    assert USES_HELPER != LOOP_CORRECT
    for at in (0, 1):
        assert _failed(verdicts(_cells(HELPER, at=at))) == {}
    assert _failed(verdicts(_cells(solution=USES_HELPER + "\n" + HELPER))) == {}


def test_a_scratch_cell_that_hangs_or_ends_the_process_is_left_out():
    for scratch in ("while True:\n    pass\n", "import os\nos._exit(3)\n"):
        found = verdicts(_cells(scratch, HELPER), limits=QUICK)
        assert _failed(found) == {}, scratch


def test_a_cell_that_stopped_before_defining_a_helper_is_told_with_the_missing_name():
    stops_early = "import numpy as np\nprint(undefined_thing)\n" + HELPER
    found = verdicts(_cells(stops_early), grade_ids=["hidden_gradient_check"])
    message = flat(found["hidden_gradient_check"].message)
    assert flat("raised NameError: name 'to_pair' is not defined") in message
    assert flat("When the grader ran your notebook's cells from the top") in message
    assert flat("Your cell that starts with `import numpy as np` raised NameError: name 'undefined_thing' is "
                "not defined (at line 2: print(undefined_thing))") in message
    # a plain wrong result does not repeat it: the notebook's own outputs show the cell's error
    found = verdicts(_cells(stops_early, solution=ZEROS), grade_ids=["hidden_gradient_check"])
    assert "When the grader ran" not in found["hidden_gradient_check"].message


def test_a_helper_from_a_deleted_cell_fails_and_names_what_is_missing():
    found = verdicts(_cells(), grade_ids=["hidden_gradient_check"])
    message = flat(found["hidden_gradient_check"].message)
    assert flat("raised NameError: name 'to_pair' is not defined") in message
    assert flat("a name defined only in a cell you deleted") in message


def test_a_shortcut_in_a_helper_cell_is_found_and_its_cell_named():
    found = verdicts(_cells("import torch\n" + HELPER), grade_ids=["hidden_gradient_check"])
    verdict = found["hidden_gradient_check"]
    assert verdict.kind == "shortcut"
    assert flat("line 1 of your cell that starts with `import torch`: your solution imports torch") \
        in flat(verdict.message)
