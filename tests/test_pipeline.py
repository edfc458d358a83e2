"""The real nbgrader pipeline on the sample class, through the main command.

`maxpool-grader grade` runs generate_assignment -> autograde -> generate_feedback ->
export with nbgrader's own commands; the scores asserted here are read back from the
gradebook with nbgrader's API, and from the CSV.
"""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
import subprocess

import nbformat
import pytest
from helpers import BIN, RELEASE_NOTEBOOK, ROOT, SOURCE_NOTEBOOK, copy_course, flat
from nbgrader.api import Gradebook
from nbgrader.utils import is_grade

from maxpool_grader.exercise.catalogue import BUGS
from maxpool_grader.exercise.checks import HIDDEN_CHECKS

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

V = ["visible_2x2_stride_2", "visible_forum_example"]
H = ["hidden_rectangular_leading_axes", "hidden_overlapping_windows", "hidden_ties_valid_subgradient",
     "hidden_ties_first_maximum", "hidden_gradient_check", "hidden_forum_integer_input",
     "hidden_ceil_border_windows", "hidden_inputs_unmodified_float_result", "hidden_dtype_of_x"]
FULL = dict(zip(V + H, [1, 1, 2, 2, 2, 1, 2, 1, 1, 1, 1]))
ZERO = dict.fromkeys(V + H, 0)

EXPECTED = {
    "loop_correct": FULL,
    "vectorized_correct": FULL,
    # prints to stderr and triggers a RuntimeWarning: must cost nothing
    "noisy_correct": FULL,
    # SyntaxError/IndentationError: the function is never defined
    "forum_verbatim": ZERO,
    # 2-D only and pool_size an int (shapes), no stride argument (overlap), np.zeros_like
    # (an integer dx for integer x: the dtype rule, and the fractions it truncates): each
    # mistake costs its own tests, and no other
    "forum_compiles": FULL | {"hidden_rectangular_leading_axes": 0, "hidden_overlapping_windows": 0,
                              "hidden_forum_integer_input": 0, "hidden_dtype_of_x": 0},
    "ties_all_maxima": FULL | {"hidden_ties_valid_subgradient": 0, "hidden_ties_first_maximum": 0},
    "ties_split": FULL | {"hidden_ties_first_maximum": 0},
    # the release notebook handed in untouched
    "release_unmodified": ZERO,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("pipeline") / "course")
    untouched = course / "submitted" / "release_unmodified" / "max_pool_backward"
    untouched.mkdir(parents=True)
    shutil.copy(RELEASE_NOTEBOOK, untouched)
    # no PATH change: the command must find alembic itself
    result = subprocess.run([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course)],
                            env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
                            text=True, capture_output=True, timeout=900)
    return course, result


def test_main_command_succeeds(graded):
    _, result = graded
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_student_gets_the_expected_score_in_every_cell(graded):
    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, expected in EXPECTED.items():
            actual = {cell: gradebook.find_grade(cell, "max_pool_backward", "max_pool_backward", student).score
                      for cell in expected}
            assert actual == expected, student
            part_a = gradebook.find_grade("part_a_derivation", "max_pool_backward", "max_pool_backward", student)
            if student == "release_unmodified":  # "YOUR ANSWER HERE" left as is: 0, nothing to read
                assert not part_a.needs_manual_grade and part_a.score == 0
            else:
                assert part_a.needs_manual_grade, "Part A is graded by hand"


def test_score_table_shows_each_students_autograded_total(graded):
    _, result = graded
    for student, expected in EXPECTED.items():
        row = next(line for line in result.stdout.splitlines() if line.startswith(student + " "))
        assert row.split()[-1] == f"{sum(expected.values())}/15"
        assert row.split()[1] == ("0" if student == "release_unmodified" else "?")


def test_grades_csv_has_every_student(graded):
    course, _ = graded
    with open(course / "grades.csv") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(EXPECTED)
    for student, expected in EXPECTED.items():
        assert float(rows[student]["raw_score"]) == sum(expected.values())
        assert float(rows[student]["max_score"]) == 20
        # Part A waits for a person: the score counts it as 0 until then, and the last column says so
        # (an answer left as released, in a course without a deadline, has nbgrader's 0 at once)
        assert rows[student]["part_a"] == ("graded" if student == "release_unmodified" else "not graded yet")


def test_feedback_is_generated_for_every_student(graded):
    course, _ = graded
    for student in EXPECTED:
        html = (course / "feedback" / student / "max_pool_backward" / "max_pool_backward.html").read_text()
        assert "Hidden test: Overlapping windows (stride smaller than the pool)" in html


def test_noisy_correct_solution_leaves_no_stderr_in_test_cells(graded):
    """A visible test runs in the kernel and shows what the function printed (never as stderr,
    which nbgrader would score 0); a hidden test shows the grader's verdict alone: it never
    runs in the kernel."""
    course, _ = graded
    notebook = nbformat.read(course / "autograded" / "noisy_correct" / "max_pool_backward" /
                             "max_pool_backward.ipynb", as_version=4)
    test_cells = [c for c in notebook.cells if is_grade(c) and c.cell_type == "code"]
    assert len(test_cells) == len(V + H)
    for cell in test_cells:
        assert all(out.get("name") != "stderr" for out in cell.outputs), cell.source.splitlines()[0]
        printed = any("debug: entering max_pool_backward" in out.get("text", "") for out in cell.outputs)
        assert printed == (cell.metadata.nbgrader.grade_id in V), cell.source.splitlines()[0]


def test_committed_autograded_class_matches_a_fresh_grading(graded):
    course, _ = graded
    for student in EXPECTED:
        if student == "release_unmodified":
            continue
        committed = nbformat.read(ROOT / "autograded" / student / "max_pool_backward" / "max_pool_backward.ipynb", 4)
        fresh = nbformat.read(course / "autograded" / student / "max_pool_backward" / "max_pool_backward.ipynb", 4)
        assert [c.source for c in committed.cells] == [c.source for c in fresh.cells]


def feedback_html(course, student: str) -> str:
    return (course / "feedback" / student / "max_pool_backward" / "max_pool_backward.html").read_text()


def feedback_text(course, student: str) -> str:
    """What a student reads on the feedback page: the HTML without tags, whitespace runs made
    one space (the feedback wraps its prose lines)."""
    return flat(html.unescape(re.sub(r"<[^>]+>", "", feedback_html(course, student))))


def hidden_regions() -> list[str]:
    """The code inside BEGIN/END HIDDEN TESTS of every hidden cell of the source notebook."""
    source = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    regions = [re.search(r"BEGIN HIDDEN TESTS\n(.*)\n### END HIDDEN TESTS", cell.source, re.S)
               for cell in source.cells if cell.cell_type == "code"]
    return [region[1] for region in regions if region]


def test_feedback_shows_hidden_titles_and_points_but_never_their_code_or_a_traceback(graded):
    course, _ = graded
    regions = hidden_regions()
    assert len(regions) == len(H)
    for student in EXPECTED:
        page, text = feedback_html(course, student), feedback_text(course, student)
        for region in regions:
            for line in region.splitlines():
                assert flat(line) not in text and html.escape(line) not in page, (student, line)
        for marker in ("HIDDEN TESTS", "run_check", "maxpool_grader", "checks.py", "site-packages"):
            assert marker not in text, (student, marker)
        for grade_id in H:
            check = HIDDEN_CHECKS[grade_id]
            plural = "s" if check.points != 1 else ""
            assert f"Hidden test: {check.title} ({check.points} point{plural})" in text


def test_forum_made_to_compile_feedback_names_overlapping_windows(graded):
    course, _ = graded
    text = feedback_text(course, "forum_compiles")
    assert "Hidden test failed: Overlapping windows (stride smaller than the pool) (0 of 2 points)." in text
    assert "it has no stride parameter" in text
    assert "Without a stride it cannot pool overlapping windows (stride < pool_size)" in text
    # where its results are graded, the reproducer and the named mistake are shown
    assert "Likely mistake: dx has x's integer dtype, so fractions are truncated." in text
    assert "paste it into a new cell to try it" in text


def test_forum_verbatim_feedback_points_at_both_syntax_problems(graded):
    course, _ = graded
    text = feedback_text(course, "forum_verbatim")
    assert "Your solution cell does not compile, so max_pool_backward was never defined. It has 2 problems" in text
    assert "line 15: IndentationError: unexpected indent" in text
    assert "align the indentation" in text
    assert "line 27: SyntaxError: invalid syntax" in text
    assert "join the two lines into one" in text


def test_ties_all_maxima_feedback_shows_the_smallest_reproducer_and_the_mistake(graded):
    course, _ = graded
    text = feedback_text(course, "ties_all_maxima")
    assert "x = np.array([[1.0, 1.0]])" in text
    assert flat(f"Likely mistake: {BUGS['ties_all_maxima'].title}.") in flat(text)
