"""Hand grades survive regrading: a Part A score entered by hand stays, with its graded
state, through `maxpool-grader grade --force`, plain `nbgrader autograde --force`, a change
of the source notebook that leaves Part A alone, and a moved gradebook. Only a student's
answer that really changed goes back to "needs manual grade", and the report says why.
(tests/test_formgrader.py enters the grade through formgrader's own HTTP API.)"""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from helpers import ASSIGNMENT, copy_course, grade_command, nbgrader, sqlite
from nbgrader.api import Gradebook

from maxpool_grader.names import grade_id

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

PART_A = "part_a_derivation"


def enter_hand_grade(db_url: str, student: str, score: float) -> None:
    """What formgrader does when a grader saves a score (PUT /formgrader/api/grade/<id>)."""
    with Gradebook(db_url) as gradebook:
        grade = gradebook.find_grade(PART_A, ASSIGNMENT, ASSIGNMENT, student)
        grade.manual_score, grade.needs_manual_grade = score, False
        gradebook.db.commit()


def part_a(db_url: str, student: str) -> tuple[float | None, bool]:
    with Gradebook(db_url) as gradebook:
        grade = gradebook.find_grade(PART_A, ASSIGNMENT, ASSIGNMENT, student)
        return grade.score, grade.needs_manual_grade


def report(course) -> dict:
    return json.loads((course / "report" / "report.json").read_text())


SMALL = ["loop_correct", "ties_split", "vectorized_correct"]  # a class that grades in seconds


def test_a_hand_grade_survives_every_kind_of_regrade(tmp_path):
    course = copy_course(tmp_path / "course", students=SMALL)
    assert grade_command(course).returncode == 0
    url = sqlite(course)
    enter_hand_grade(url, "loop_correct", 4)
    enter_hand_grade(url, "ties_split", 3)
    assert part_a(url, "loop_correct") == (4, False)

    assert grade_command(course, "--force").returncode == 0  # 1. everything regraded
    assert part_a(url, "loop_correct") == (4, False) and part_a(url, "ties_split") == (3, False)
    assert report(course)["manual"]["pending"] == 1  # vectorized_correct only

    nbgrader(course, "autograde", ASSIGNMENT, "--force")  # 2. plain nbgrader, serially
    assert part_a(url, "loop_correct") == (4, False)

    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"  # 3. the tests' text changes
    notebook = nbformat.read(source, as_version=4)
    notebook.cells[-1].source = notebook.cells[-1].source.replace("# Hidden test:", "# Hidden test (edited):")
    nbformat.write(notebook, source)
    result = grade_command(course)
    assert result.returncode == 0 and "3 submission(s) to grade" in result.stdout
    assert part_a(url, "loop_correct") == (4, False)

    moved = tmp_path / "moved.db"  # 4. the gradebook moves
    shutil.copy(course / "gradebook.db", moved)
    assert grade_command(course, "--force", "--db", f"sqlite:///{moved}").returncode == 0
    assert part_a(f"sqlite:///{moved}", "loop_correct") == (4, False)


def test_a_changed_answer_goes_back_to_the_grader_with_the_reason(tmp_path):
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    assert grade_command(course).returncode == 0
    url = sqlite(course)
    enter_hand_grade(url, "loop_correct", 4)
    submitted = course / "submitted" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    notebook = nbformat.read(submitted, as_version=4)
    answer = next(cell for cell in notebook.cells if grade_id(cell) == PART_A)
    answer.source += "\n\nA second thought, added after the deadline."
    nbformat.write(notebook, submitted)
    assert grade_command(course).returncode == 0
    assert part_a(url, "loop_correct")[1] is True  # needs a manual grade again
    reasons = {entry["student"]: entry["reasons"] for entry in report(course)["needs_attention"]}
    assert any("changed since it was graded by hand" in reason for reason in reasons["loop_correct"])
