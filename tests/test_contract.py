"""The contract (exercise/contract.py) against corpora nobody here wrote for the grader.

* tests/corpora/blind/: 30 solutions (6 correct, 24 with one realistic mistake each) written by a
  session that read only the release notebook, never the grader, and checked against PyTorch's
  max_pool2d (its MANIFEST.json says which is which; ``_verify.py`` is its own check). They are
  kept as written: nobody edits them to fit the grader.
* tests/corpora/realworld/: 21 solutions (4 correct) adapted from public repositories (CS231n and
  CS7643 layers, im2col, "Deep Learning from Scratch", numpy-only libraries), each with the thin
  adapter a student writes around code they found; written by a session that read only the
  release notebook, and checked against PyTorch the same way (its MANIFEST.json names each
  source). Kept as written too.
* tests/corpora/contract_mutants.py: a correct solution and 48 mutants, each with exactly one rule
  of the contract broken on one kind of input, written the same way (``contract_mutants_verify.py``
  is the author's PyTorch check).

Each correct solution keeps full marks; each buggy solution and each mutant loses points, in the
hidden test of the rule it breaks, and every failed test names a mistake or says honestly that it
is not in the catalogue. No page names a mistake that another result on the same page
contradicts, and every rule the notebook's self-check fails, the hidden test of that rule fails.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import sys

import nbformat
import pytest
from helpers import ROOT

from maxpool_grader.exercise.catalogue import BUGS
from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from maxpool_grader.exercise.contract import RULES, RULES_BY_NAME, self_checked
from maxpool_grader.exercise.evidence import bug_passes, self_check_of, self_check_problems, self_check_results
from maxpool_grader.exercise.grading import evaluate
from maxpool_grader.exercise.student_call import quiet_student_code
from maxpool_grader.verdict.verdicts import verdicts

pytestmark = pytest.mark.unit
CORPORA = ROOT / "tests" / "corpora"
sys.path.insert(0, str(CORPORA))
import contract_mutants  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import LOOP_CORRECT  # noqa: E402

BLIND_FOLDERS = ("blind", "realworld")  # each entry's file is named by its folder too: "blind/s01_….py"
MANIFEST = [dict(entry, file=f"{folder}/{entry['file']}") for folder in BLIND_FOLDERS
            for entry in json.loads((CORPORA / folder / "MANIFEST.json").read_text())]
MOST = 2  # one mistake, at most 2 of the 15 points
# Mutants whose one mistake shows on inputs of more than one rule (their author says so:
# tests/corpora/contract_mutants.py), with the rules it also breaks. They may lose more.
SEVERAL_RULES = {
    "unchanged_shift_x_in_place": "x -= x.min() also turns -inf into NaN: the negative-values rule",
    "unchanged_d_output_consumed": "zeroing d_output also zeroes dx wherever windows are read again",
    "stride_none_or_1": "`stride or 1` is wrong on every plain input (stride None): every test",
    "forms_pair_stride_only": "an int stride raises: every test that passes an int stride",
    "windows_start_k_times_pool": "the stride is ignored: overlapping windows, and ceil grids that overlap",
    "ties_all_maxima": "every tied maximum gets it: the subgradient rule (Part A) and the tie convention",
}


@functools.lru_cache(maxsize=1)
def _cells() -> dict[str, str]:
    notebook = nbformat.read(ROOT / "release" / "max_pool_backward" / "max_pool_backward.ipynb", as_version=4)
    return {cell.metadata.get("nbgrader", {}).get("grade_id", ""): cell.source for cell in notebook.cells}


def _tools() -> str:
    """The notebook's provided code: the forward pass and the tools cell (check_rules)."""
    return _cells()["provided_helpers"] + "\n" + _cells()["provided_tools"]


def _blind(file: str):
    namespace: dict = {}
    exec(_cells()["provided_helpers"], namespace)  # noqa: S102  what the notebook runs before the solution
    exec((CORPORA / file).read_text(), namespace)  # noqa: S102
    return namespace["max_pool_backward"]


@functools.lru_cache(maxsize=None)
def page(name: str) -> dict[str, str | None]:
    """Every hidden test's report for one corpus function (None: passed)."""
    function = _function(name)
    with contextlib.redirect_stdout(io.StringIO()):
        return {grade_id: evaluate(grade_id, function) for grade_id in HIDDEN_CHECKS}


def _function(name: str):
    if name.endswith(".py"):
        return _blind(name)
    if name == "correct":
        return contract_mutants.correct
    return next(mutant["function"] for mutant in contract_mutants.MUTANTS if mutant["name"] == name)


def lost(found: dict[str, str | None]) -> int:
    return sum(HIDDEN_CHECKS[grade_id].points for grade_id, message in found.items() if message)


def _honest(message: str) -> bool:
    """A failed test's report names a mistake, says it is not in the catalogue, or says what the
    function raised or returned (no mistake to name)."""
    return bool(re.search(r"(Likely|Possible) mistake: |None of the \d+ mistakes in our catalogue|"
                          r"Your function: |max_pool_backward raised|must return a NumPy array|is not implemented|"
                          r"it keeps something from one call to the next",
                          " ".join(message.split())))


@pytest.mark.parametrize("entry", MANIFEST, ids=[entry["file"] for entry in MANIFEST])
def test_the_blind_corpus_keeps_correct_code_whole_and_fails_every_mistake(entry):
    found = page(entry["file"])
    if entry["correct"]:
        assert lost(found) == 0, {g: m for g, m in found.items() if m}
        return
    assert lost(found) > 0, f"{entry['file']} ({entry['mistake']}) gets full marks"
    for grade_id, message in found.items():
        assert message is None or _honest(message), (grade_id, message)


# Mutants the contract does not count as mistakes, and why (the corpus stays as its author wrote it)
NOT_MISTAKES = {"integer_float64_cast": "its kind, integer x above 2**53, is no valid input of the contract: "
                "float64 cannot tell such integers apart, so which one is a window's first maximum is not defined "
                "by the notebook's float64 dx (kinds.py draws integers up to 2**53)"}
MUTANTS = [mutant["name"] for mutant in contract_mutants.MUTANTS if mutant["name"] not in NOT_MISTAKES]


def test_the_mutants_author_s_correct_solution_keeps_full_marks():
    assert lost(page("correct")) == 0


@pytest.mark.parametrize("name", MUTANTS)
def test_every_contract_mutant_loses_points_in_its_rule_s_test(name):
    mutant = next(m for m in contract_mutants.MUTANTS if m["name"] == name)
    found = page(name)
    failed = [grade_id for grade_id, message in found.items() if message]
    assert failed, f"{name} ({mutant['kind']}) loses nothing"
    # The test that fails is the one whose kinds of input show the mistake: the author's rule, or
    # (for a mistake that shows only where two rules meet, a ceil grid of integer x) the other's.
    rule = RULES_BY_NAME.get(mutant["rule"])
    tests = {r.test for r in RULES if rule is not None and r.name.split("_")[0] == rule.name.split("_")[0]}
    assert rule is None or tests & set(failed) or len(failed) == 1, (name, failed)
    if name not in SEVERAL_RULES and mutant["rule"] != "state":
        assert lost(found) <= MOST, (name, failed)
    for message in found.values():
        assert message is None or _honest(message), message


def test_a_mutant_the_contract_does_not_count_passes_for_its_stated_reason():
    assert lost(page("integer_float64_cast")) == 0


def test_every_rule_of_the_contract_has_its_mutants():
    broken = {mutant["rule"] for mutant in contract_mutants.MUTANTS}
    derived = {"subgradient", "clipped_overlap", "clipped_integer", "integer_range"}  # a rule's kinds, spread
    assert {rule.name for rule in RULES} - broken <= derived


CORPUS = [entry["file"] for entry in MANIFEST] + MUTANTS + ["correct"]


# What the self-check says when a rule fails, and the hidden test that then must fail: a rule's
# line in check_rules also fails when the function raises on that rule's input (a pair, a third
# axis), which is another rule's mistake; what the reason says is the rule that broke.
REASONS = {"was changed by the call": "hidden_inputs_unmodified_float_result",
           "d_output was changed": "hidden_inputs_unmodified_float_result",
           "dx has dtype": "hidden_dtype_of_x", "not x's": "hidden_dtype_of_x",
           "gives another dx than the same x with each window's first maximum": "hidden_ties_first_maximum"}


@pytest.mark.parametrize("name", CORPUS)
def test_a_rule_the_self_check_fails_fails_a_hidden_test(name):
    """check_rules in the notebook and the hidden tests come from one declaration: a function
    whose self-check prints FAIL loses points, and where the reason names the rule that broke
    (inputs changed, dx's dtype, the tie convention), the hidden test of that rule fails."""
    with quiet_student_code():
        problems = self_check_problems(_tools(), _function(name))
    found = page(name)
    failing = {rule: problem for rule, problem in problems.items() if problem}
    assert not failing or lost(found) > 0, (name, failing)
    for problem in failing.values():
        for words, grade_id in REASONS.items():
            if words in problem and "raised" not in problem:
                assert found[grade_id], f"{name}: check_rules says {problem!r} but {grade_id} passes"


@pytest.mark.parametrize("name", CORPUS + [f"bug:{bug}" for bug in BUGS])
def test_no_named_mistake_is_contradicted_by_another_result_on_the_page(name):
    """A "Likely" or "Possible" mistake passes every hidden test the student's function passed and
    every rule of the self-check it passed: else the page would contradict itself."""
    function = BUGS[name[4:]].function if name.startswith("bug:") else _function(name)
    with contextlib.redirect_stdout(io.StringIO()):
        found = {grade_id: evaluate(grade_id, function) for grade_id in HIDDEN_CHECKS}
        ok = self_check_results(_tools(), function)
    titles = {f"mistake: {bug.title}.": bug for bug in BUGS.values()}
    passed = [grade_id for grade_id, message in found.items() if message is None]
    for message in filter(None, found.values()):
        for line in message.split("\n"):
            bug = next((bug for title, bug in titles.items() if title in line), None)
            if bug is None or not re.search(r"(Likely|Possible) mistake: ", line):
                continue
            assert all(bug_passes(bug.name, grade_id) for grade_id in passed), (name, bug.name)
            assert ok <= self_check_of(bug.name, _tools()), (name, bug.name)


def test_the_notebook_states_every_rule_and_its_self_check_checks_exactly_the_contract_s():
    """Each rule is stated in the part it names (``Rule.part``): a hidden test's report tells the
    rules of Part B it grades before the deadline, and never one of Part A's derivation."""
    text = {part: " ".join(_cells()[cell].split()) for part, cell in (("A", "part_a_question"),
                                                                      ("B", "part_b_explanation"))}
    for rule in RULES:
        assert " ".join(rule.stated.split()) in text[rule.part], rule.name
    namespace: dict = {}
    exec(_cells()["provided_helpers"] + "\n" + _cells()["provided_tools"], namespace)  # noqa: S102
    assert list(namespace["_RULES"]) == self_checked()


def test_no_two_tests_say_the_same_sentence_of_what_they_check():
    """A page shows every failed test's "What it checks" line, and says each sentence once
    (tests/test_feedback_page.py): what the contract adds to each line is that test's own."""
    sentences = [sentence for check in HIDDEN_CHECKS.values() for sentence in re.split(r"(?<=[.:])\s+", check.what)
                 if len(sentence) >= 40]  # as the page test splits them (a colon ends one too)
    assert len(sentences) == len(set(sentences)), sorted(s for s in sentences if sentences.count(s) > 1)


NO_INPUT_TO_PASTE = {mutant["name"] for mutant in contract_mutants.MUTANTS if mutant["rule"] == "state"}


@pytest.mark.parametrize("name", [name for name in CORPUS if name not in NO_INPUT_TO_PASTE])
def test_every_failed_test_shows_an_input_to_paste_in_the_kinds_that_fail(name):
    """The smallest input is searched for in the failed case's kinds too (its memory layouts, its
    number of leading axes, a ceil grid's last windows): no report of a function that keeps no
    state between calls is left with a description of an input too large to print. (Each
    state mutant is told with the two calls that show it instead.)"""
    for grade_id, message in page(name).items():
        assert message is None or "Smallest input where your function goes wrong" in message, (grade_id, message)


def test_check_fails_when_the_notebook_and_the_contract_disagree():
    """``maxpool-grader check`` names a rule the notebook's text no longer states, and a tools cell
    whose check_rules checks other rules than the contract's (as a new wording would)."""
    from maxpool_grader.authoring.answer import contract_findings
    notebook = nbformat.read(ROOT / "source" / "max_pool_backward" / "max_pool_backward.ipynb", as_version=4)
    assert contract_findings(notebook) == []
    for cell in notebook.cells:
        cell_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell_id == "part_b_explanation":
            cell.source = cell.source.replace("`x` may be negative", "x can be below zero")
        if cell_id == "provided_tools":
            cell.source = cell.source.replace('    "x may be negative": _rule_negative,\n', "")
    said = [str(finding) for finding in contract_findings(notebook)]
    assert len(said) == 2 and "'negative'" in said[0] and "`x` may be negative" in said[0]
    assert "checks other rules than the contract's" in said[1] and "x may be negative" in said[1]


def test_not_implemented_for_one_kind_of_input_is_told_as_what_it_is():
    """An adapter that raises NotImplementedError for inputs it does not support (here: more than
    one leading axis) is shown that input and what it raised, never "not implemented yet"; the
    stub is still told it is not implemented."""
    from maxpool_grader import max_pool_backward

    def partial(d_output, x, pool_size, stride=None):
        if x.ndim > 3:
            raise NotImplementedError("only one leading axis is supported")
        return max_pool_backward(d_output, x, pool_size, stride)

    def stub(d_output, x, pool_size, stride=None):
        raise NotImplementedError()

    message = evaluate("hidden_rectangular_leading_axes", partial)
    flat_message = " ".join(message.split())
    assert "not implemented yet" not in flat_message
    assert "raised NotImplementedError: only one leading axis is supported" in flat_message
    assert "x = np.array([[[[" in message or "x of shape (" in flat_message  # the input it raised on
    assert "is not implemented yet (it raises NotImplementedError)" in " ".join(
        evaluate("hidden_rectangular_leading_axes", stub).split())


# Right on a first call only, then not implemented in one way or another (state kept between calls)
FIRST_CALL_ONLY = {"zeros": "return np.zeros(x.shape)", "NotImplementedError": "raise NotImplementedError",
                   "None": "return None"}


@pytest.mark.parametrize("then", FIRST_CALL_ONLY)
def test_a_function_that_passed_a_test_of_the_page_is_never_called_not_implemented(then):
    """The class: a claim about the whole function ("not implemented yet", "whatever the input")
    that another test of the same page contradicts. Graded as the course grades (the verdict
    process: the first call is the first visible test's) and as the kernel's cells run."""
    source = first_call_only_source(FIRST_CALL_ONLY[then])
    found = {grade_id: verdict for grade_id, verdict in verdicts(source).items()}
    assert [grade_id for grade_id, verdict in found.items() if verdict.passed] == ["visible_2x2_stride_2"]
    assert not [grade_id for grade_id, verdict in found.items() if "not implemented" in verdict.message], then
    namespace: dict = {}
    exec(_cells()["provided_helpers"] + "\n" + source, namespace)  # noqa: S102
    with contextlib.redirect_stdout(io.StringIO()):
        messages = [evaluate(grade_id, namespace["max_pool_backward"]) for grade_id in GRADED_CHECKS]
    assert messages[0] is None
    assert not [message for message in messages if message and "not implemented" in message], then


def first_call_only_source(then: str) -> str:
    """The sample class's loop solution, kept, and a function that calls it once only."""
    right = LOOP_CORRECT.replace("def max_pool_backward(", "def _right(", 1)
    return ("import numpy as np\n\n" + right + "\n\n_calls = []\n\n\n"
            "def max_pool_backward(d_output, x, pool_size, stride=None):\n"
            "    _calls.append(1)\n"
            "    if len(_calls) > 1:\n"
            f"        {then}\n"
            "    return _right(d_output, x, pool_size, stride)\n")
