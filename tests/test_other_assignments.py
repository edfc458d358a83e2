"""One exercise in a course of many (issue 47).

The exercise's plugins act on the exercise's notebook alone, decided from the instructor's
side (``c.ThisExercise``, else the source notebook in ``source/``) and nbgrader's own
``resources["nbgrader"]``: a student who strips every marker is still graded by the
exercise's tests, out of process, in the box. Every other assignment of the course is graded
as nbgrader grades it: a course with this exercise, renamed ``hw3``, beside nbgrader's own
example assignment (autograded tests, a manually graded answer, a late submission under the
instructor's own late policy, two students) gives that assignment the scores, feedback text
and CSV rows of a course with stock settings, and ``maxpool-grader grade --assignment hw3``
gives the exercise the README's table.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nbformat
import nbgrader
import pytest
from bs4 import BeautifulSoup
from corpus import COURSE_FROM_KERNEL, PATCH_ASSERTS, notebook_with
from helpers import ROOT, copy_course, grade_command, sqlite
from helpers import nbgrader as run_nbgrader
from make_sample_class import LOOP_CORRECT
from nbgrader.api import Gradebook
from test_faults import printed_table, readme_table

from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from maxpool_grader.names import ASSIGNMENT, NOTES_TAG, REPORT_KEY, SUMMARY_TAG, grade_id
from maxpool_grader.sandbox import box as sealed_box

pytestmark = pytest.mark.integration  # real nbgrader commands, kernels and sandboxes

FILES = Path(nbgrader.__file__).resolve().parent / "tests" / "apps" / "files"  # nbgrader's own test notebooks
FULL = sum(check.points for check in GRADED_CHECKS.values())  # Part B: every test
DUE = "2026-01-10 12:00:00 UTC"
# nbgrader's example assignment: a changed (mostly right) and an unchanged submission; the first is late
PS1 = {"bitdiddle": ("submitted-changed.ipynb", "2026-01-12 09:00:00.000000 UTC"),
       "hacker": ("submitted-unchanged.ipynb", "2026-01-09 09:00:00.000000 UTC")}
INSTRUCTOR_LATE_POLICY = '\nc.LateSubmissionPlugin.penalty_method = "zero"  # the instructor\'s own\n'
EXERCISE_STUDENTS = ["forum_verbatim", "loop_correct", "ties_split"]


# ------------------------------------------------------------------ the attack first
def _stripped(nb: nbformat.NotebookNode) -> dict:
    """The notebook with everything the grader might key on taken out: the notebook's
    metadata, every cell's metadata (nbgrader's grade ids, tags) and id, as nbformat 4.4."""
    plain = json.loads(json.dumps(nb))
    plain["metadata"], plain["nbformat_minor"] = {}, 4
    for cell in plain["cells"]:
        cell["metadata"] = {}
        cell.pop("id", None)
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return plain


WRITE_OUT = f"""
import os
for place in ({COURSE_FROM_KERNEL!r}, "/tmp"):
    try:
        with open(os.path.join(place, "stripped-was-here.txt"), "w") as handle:
            handle.write("written by a student")
    except OSError:
        pass
"""


@pytest.fixture(scope="module")
def stripped_course(tmp_path_factory):
    assert sealed_box.bwrap_works(), "these tests need the sandbox: apt-get install bubblewrap"
    course = copy_course(tmp_path_factory.mktemp("stripped") / "course", with_submissions=False)
    run_nbgrader(course, "generate_assignment", ASSIGNMENT)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for student, code in {"stripped_correct": LOOP_CORRECT, "stripped_attack": WRITE_OUT + PATCH_ASSERTS}.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(_stripped(notebook_with(release, code)), indent=1))
    graded = run_nbgrader(course, "autograde", ASSIGNMENT, check=False)
    return course, graded


def test_a_student_who_strips_every_marker_is_still_graded_by_the_exercise_s_tests_out_of_process(stripped_course):
    course, graded = stripped_course
    with Gradebook(sqlite(course)) as gradebook:
        scores = {student: gradebook.find_submission(ASSIGNMENT, student).code_score
                  for student in ("stripped_correct", "stripped_attack")}
    # the correct solution keeps full marks; patching the asserts gains nothing: the tests were not in its kernel
    assert scores == {"stripped_correct": FULL, "stripped_attack": 0}, graded.stdout[-3000:]
    assert graded.stdout.count("Out-of-process verdict:") == 2 and "[UNSANDBOXED]" not in graded.stdout
    for student in ("stripped_correct", "stripped_attack"):
        nb = nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        decided = {grade_id(cell) for cell in nb.cells if REPORT_KEY in cell.metadata}
        assert set(HIDDEN_CHECKS) <= decided, student  # every hidden test decided by the grader
    # in the box: what the student's code wrote stayed in the sandbox's scratch
    assert not (course / "stripped-was-here.txt").exists() and not Path("/tmp/stripped-was-here.txt").exists()


# ------------------------------------------------------------------ two courses, one ordinary assignment
def _ordinary_assignment(course: Path) -> None:
    (course / "source" / "ps1").mkdir(parents=True)
    # as nbgrader's own tests make it: the unchanged submission is the source (nbformat 4.0)
    shutil.copy(FILES / "submitted-unchanged.ipynb", course / "source" / "ps1" / "p1.ipynb")
    run_nbgrader(course, "db", "assignment", "add", "ps1", f"--duedate={DUE}")
    for student, (notebook, timestamp) in PS1.items():
        run_nbgrader(course, "db", "student", "add", student)
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        shutil.copy(FILES / notebook, folder / "p1.ipynb")
        (folder / "timestamp.txt").write_text(timestamp)


def _this_course(root: Path) -> Path:
    """This course, its exercise renamed hw3 (folder and notebook), beside nbgrader's ps1."""
    course = copy_course(root / "course", with_submissions=False)
    (course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").rename(course / "source" / ASSIGNMENT / "hw3.ipynb")
    (course / "source" / ASSIGNMENT).rename(course / "source" / "hw3")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(INSTRUCTOR_LATE_POLICY)
    for student in EXERCISE_STUDENTS:
        folder = course / "submitted" / student / "hw3"
        shutil.copytree(ROOT / "submitted" / student / ASSIGNMENT, folder)
        (folder / f"{ASSIGNMENT}.ipynb").rename(folder / "hw3.ipynb")
    _ordinary_assignment(course)
    return course


def _stock_course(root: Path) -> Path:
    course = root / "stock"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()\n" + INSTRUCTOR_LATE_POLICY)
    _ordinary_assignment(course)
    return course


def _grade_ps1(course: Path) -> dict:
    """ps1 graded with plain nbgrader, as the instructor grades any assignment."""
    for command in (("generate_assignment", "ps1"), ("autograde", "ps1"), ("generate_feedback", "ps1"),
                    ("export", "--to", "grades.csv")):
        run_nbgrader(course, *command)
    with Gradebook(sqlite(course)) as gradebook:
        scores = {}
        for student in PS1:
            submission = gradebook.find_submission("ps1", student)
            scores[student] = (submission.score, submission.code_score, submission.written_score,
                               submission.late_submission_penalty, submission.needs_manual_grade,
                               {grade.name: grade.score for notebook in submission.notebooks
                                for grade in notebook.grades})
    with open(course / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {"scores": scores, "rows": rows,
            "pages": {student: (course / "feedback" / student / "ps1" / "p1.html").read_text() for student in PS1}}


def page_text(page: str) -> str:
    """What a feedback page says: its text, each formula read as its LaTeX (the course shows
    formulas as MathML, stock nbgrader leaves them to MathJax), whitespace made one space."""
    soup = BeautifulSoup(page, "html.parser")
    for tag in soup(["script", "style", "head"]):
        tag.decompose()
    for math in soup("math"):
        latex = math.get("alttext", "")
        math.replace_with(f"$${latex}$$" if math.get("display") == "block" else f"${latex}$")
    return " ".join(soup.get_text(" ").replace("\u00b6", " ").split())


@pytest.fixture(scope="module")
def two_courses(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-courses")
    ours, stock = _this_course(root), _stock_course(root)
    return {"ours": ours, "stock": stock, "graded": {"ours": _grade_ps1(ours), "stock": _grade_ps1(stock)}}


def test_the_ordinary_assignment_gets_stock_nbgrader_s_scores_late_policy_included(two_courses):
    ours, stock = two_courses["graded"]["ours"]["scores"], two_courses["graded"]["stock"]["scores"]
    assert ours == stock
    assert ours["bitdiddle"][3] == ours["bitdiddle"][1] + ours["bitdiddle"][2] > 0  # late: "zero", as set


def test_the_ordinary_assignment_s_feedback_says_what_stock_nbgrader_s_says(two_courses):
    for student in PS1:
        ours, stock = (two_courses["graded"][which]["pages"][student] for which in ("ours", "stock"))
        assert page_text(ours) == page_text(stock), student
        assert SUMMARY_TAG not in ours and "Part A: your derivation" not in ours and "Notes from the grader" not in ours
        assert "cdn.jsdelivr" not in ours and "Content-Security-Policy" in ours  # what protects every page


def test_the_ordinary_assignment_s_csv_rows_are_stock_nbgrader_s_with_no_part_a(two_courses):
    ours, stock = two_courses["graded"]["ours"]["rows"], two_courses["graded"]["stock"]["rows"]
    assert [row["part_a"] for row in ours if row["assignment"] == "ps1"] == ["", ""]
    assert [{key: row[key] for key in stock[0]} for row in ours if row["assignment"] == "ps1"] == stock


def test_the_ordinary_assignment_s_graded_notebook_keeps_its_nbformat_and_gets_no_notes(two_courses):
    for student in PS1:
        graded = json.loads((two_courses["ours"] / "autograded" / student / "ps1" / "p1.ipynb").read_text())
        assert (graded["nbformat"], graded["nbformat_minor"]) == (4, 0)
        assert not any("id" in cell for cell in graded["cells"])
        assert not any(NOTES_TAG in cell["metadata"].get("tags", []) for cell in graded["cells"])


def test_grade_grades_the_exercise_under_another_name_to_the_readme_s_table(two_courses):
    course = two_courses["ours"]
    done = grade_command(course, "--assignment", "hw3")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert [row.split() for row in printed_table(done.stdout)] == [
        row.split() for row in readme_table() if row.split()[0] in EXERCISE_STUDENTS]
    page = (course / "feedback" / "loop_correct" / "hw3" / "hw3.html").read_text()
    assert "Part A: your derivation" in page  # the exercise's own feedback page
    again = grade_command(course, "-q")  # no --assignment: the exercise found in source/ (hw3), graded already
    assert again.returncode == 0, again.stderr[-3000:]
    assert printed_table(again.stdout) == printed_table(done.stdout)
