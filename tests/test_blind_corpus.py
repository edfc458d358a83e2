"""The blind corpora (tests/corpora/blind/: 30 solutions written from the release notebook alone,
never from the grader; tests/corpora/realworld/: 21 adapted from public code the same way)
graded as one class through the real pipeline: ``maxpool-grader grade``,
its sandboxed kernels and out-of-process verdicts, the gradebook and the feedback pages.

Correct code keeps full marks, every mistake loses points, the out-of-process verdict gives
each notebook the score the in-process checks give its function (tests/test_contract.py), and
the solution that keeps state between calls reads that it does (a fresh verdict process of the
provided cells and the solution gets the input right).
"""

from __future__ import annotations

import html
import json
import re
import shutil

import nbformat
import pytest
from corpus import notebook_with
from helpers import ASSIGNMENT, RELEASE_NOTEBOOK, ROOT, copy_course, flat, grade_command, nbgrader
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import box as sealed_box

pytestmark = pytest.mark.integration
CORPORA = ROOT / "tests" / "corpora"
MANIFEST = {f"{folder}/{entry['file'][:-3]}": entry for folder in ("blind", "realworld")
            for entry in json.loads((CORPORA / folder / "MANIFEST.json").read_text())}


def _student(name: str) -> str:
    """blind/s01_loops_unravel: blind_s01."""
    folder, file = name.split("/")
    return f"{folder}_{file.split('_', 1)[0]}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    assert sealed_box.bwrap_works(), "these tests need the sandbox: apt-get install bubblewrap"
    course = copy_course(tmp_path_factory.mktemp("blind") / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    for name in MANIFEST:
        folder = course / "submitted" / _student(name) / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook_with(release, (CORPORA / f"{name}.py").read_text()), folder / f"{ASSIGNMENT}.ipynb")
    shutil.rmtree(course / "autograded", ignore_errors=True)
    run = grade_command(course, "--workers", "2")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {student.id: gradebook.find_submission(ASSIGNMENT, student.id).code_score
                  for student in gradebook.students}
        hidden = {student.id: sum(grade.score for notebook in gradebook.find_submission(ASSIGNMENT, student.id)
                                  .notebooks for grade in notebook.grades if grade.name.startswith("hidden_"))
                  for student in gradebook.students}
    return course, run, scores, hidden


def _page(course, name: str) -> str:
    page = course / "feedback" / _student(name) / ASSIGNMENT / f"{ASSIGNMENT}.html"
    return flat(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


@pytest.mark.parametrize("name", MANIFEST)
def test_each_blind_solution_gets_its_merit_through_the_pipeline(graded, name):
    course, run, scores, _ = graded
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    score = scores[_student(name)]
    if MANIFEST[name]["correct"]:
        assert score == 15, (name, score)
    else:
        assert score < 15, (name, MANIFEST[name]["mistake"], score)


def test_the_out_of_process_verdict_agrees_with_the_in_process_checks(graded):
    """The box hands the function its inputs in their memory layouts (views, Fortran order) and
    judges what comes back: the same points as the checks called in this process."""
    from test_contract import lost, page
    course, run, scores, hidden = graded
    for name in MANIFEST:  # (a visible cell also asserts in the kernel, on the x the function may change)
        assert hidden[_student(name)] == 13 - lost(page(f"{name}.py")), name


def test_state_kept_between_calls_is_told_with_the_calls_that_show_it(graded):
    course, run, scores, _ = graded
    text = _page(course, "blind/s19_cached_routes")
    assert flat("it keeps something from one call to the next") in text
    assert flat("Your function gets this input right when it is the first call in a fresh kernel") in text
