"""A course that carries its own copy of the grader package.

The repository root is the course, so a course folder copied from a clone (a copy for a
new term, a grader's scratch copy) holds ``maxpool_grader/`` too. nbgrader loads the
course's configuration from that folder and imports the package from there, while the
virtual environment may be another clone's, whose editable install points elsewhere.
The verdict must then be decided by the package the grader itself runs (no sandbox sees
either copy): a correct solution keeps full marks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from corpus import notebook_with
from helpers import RELEASE_NOTEBOOK, ROOT, all_grades, copy_course, flat, grade_command, nbgrader, sqlite
from make_sample_class import LOOP_CORRECT

from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from maxpool_grader.names import ASSIGNMENT

pytestmark = pytest.mark.integration

STUDENTS = ["loop_correct", "vectorized_correct"]


def _course_with_its_own_package(target: Path) -> Path:
    course = copy_course(target, students=STUDENTS)
    shutil.copytree(ROOT / "maxpool_grader", course / "maxpool_grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return course


def _autograded_points(course: Path) -> dict[str, float]:
    grades = all_grades(sqlite(course))
    return {student: sum(grades[student, check] for check in GRADED_CHECKS) for student in STUDENTS}


FULL_MARKS = sum(check.points for check in GRADED_CHECKS.values())


def test_plain_nbgrader_grades_with_the_course_s_own_package(tmp_path):
    # cold start, nbgrader's default (the class command below forks its kernels warm)
    course = _course_with_its_own_package(tmp_path / "course")
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    result = nbgrader(course, "autograde", ASSIGNMENT)
    assert _autograded_points(course) == {student: FULL_MARKS for student in STUDENTS}
    assert "Traceback" not in result.stdout


def test_the_class_command_grades_with_the_course_s_own_package(tmp_path):
    course = _course_with_its_own_package(tmp_path / "course")
    result = grade_command(course, cwd=course)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _autograded_points(course) == {student: FULL_MARKS for student in STUDENTS}
    assert "Not graded" not in result.stderr


def _blocking_student(course: Path, name: str = "blocks_the_grader") -> None:
    """A correct solution that prints as it runs and blocks the grader's package in its own
    kernel (as if a hidden test cell ran there and needed it)."""
    solution = LOOP_CORRECT.replace("    x = np.asarray(x)\n", '    print("computing dx")\n    x = np.asarray(x)\n', 1)
    blocked = 'import sys\nsys.modules["maxpool" + "_grader.checks"] = None\n' + solution
    folder = course / "submitted" / name / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(notebook_with(nbformat.read(RELEASE_NOTEBOOK, as_version=4), blocked),
                   folder / f"{ASSIGNMENT}.ipynb")


def test_no_hidden_test_runs_in_the_kernel_so_blocking_the_grader_there_changes_nothing(tmp_path):
    """A hidden test cell never runs in the student's kernel (the kernel holds nothing of the
    hidden tests, nor the package their cells import): its output is the grader's verdict. So
    a student who blocks the grader's import in their own kernel, with a function that prints
    as it runs, keeps full marks, under plain nbgrader and the class command alike."""
    course = copy_course(tmp_path / "course", with_submissions=False)
    _blocking_student(course)
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    nbgrader(course, "autograde", ASSIGNMENT)
    grades = all_grades(sqlite(course))
    assert {check: grades["blocks_the_grader", check] for check in HIDDEN_CHECKS} == {
        check: HIDDEN_CHECKS[check].points for check in HIDDEN_CHECKS}

    course = copy_course(tmp_path / "class", students=["loop_correct"])
    _blocking_student(course)
    result = grade_command(course)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "could not import" not in flat(result.stderr)
    grades = all_grades(sqlite(course))
    assert {check: grades["blocks_the_grader", check] for check in HIDDEN_CHECKS} == {
        check: HIDDEN_CHECKS[check].points for check in HIDDEN_CHECKS}
