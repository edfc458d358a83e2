"""From the LMS and back: Canvas and Moodle "download all submissions" zips, graded with
the documented commands (collect-lms, grade, export-lms), and the CSVs checked against
the gradebook: every student's grade, the late penalty, resubmissions, files of nobody,
a student who uploaded no notebook."""

from __future__ import annotations

import csv
import datetime as dt
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from corpus import FULL, ZEROS, notebook_with
from helpers import ASSIGNMENT, BIN, copy_course, nbgrader
from make_sample_class import LOOP_CORRECT, TIES_ALL_MAXIMA, VECTORIZED_CORRECT
from nbgrader.api import Gradebook

from maxpool_grader.names import PART_A_CELL, grade_id

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

DUE = dt.datetime(2026, 11, 20, 23, 59)
ON_TIME = (2026, 11, 20, 18, 0, 0)
TWO_DAYS_LATE = (2026, 11, 22, 12, 0, 0)  # 36 hours late: two started days
ROSTER = """id,first_name,last_name,email,lms_id
s_lina,Lina,Haddad,lina@example.edu,101
s_farah,Farah,Okafor,farah@example.edu,
s_tara,Tara,Nguyen,tara@example.edu,103
s_vera,Vera,Kowalski,vera@example.edu,104
s_felix,Felix,Brandt,felix@example.edu,105
s_noah,Noah,Fischer,noah@example.edu,
s_tomas,Tomas,Alvarez,tomas@example.edu,
"""


def run(course: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "maxpool-grader"), *args, "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def notebook(release, code: str, part_a: str | None = None) -> bytes:
    filled = notebook_with(release, code)
    for cell in filled.cells:
        if part_a and grade_id(cell) == PART_A_CELL:
            cell.source = part_a
    return nbformat.writes(filled).encode()


def add(archive: zipfile.ZipFile, name: str, data: bytes, when=ON_TIME) -> None:
    archive.writestr(zipfile.ZipInfo(name, date_time=when), data)


@pytest.fixture
def course(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    (course / "roster.csv").write_text(ROSTER)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    return course


def release_of(course: Path):
    return nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def code_scores(course: Path) -> dict[str, tuple[float, float]]:
    """student -> (autograded score, late penalty)."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        return {student.id: (book.find_submission(ASSIGNMENT, student.id).code_score,
                             book.find_submission(ASSIGNMENT, student.id).late_submission_penalty or 0)
                for student in book.students if student.submissions}


def test_a_canvas_zip_graded_and_exported(course, tmp_path):
    release, zip_path = release_of(course), tmp_path / "submissions.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, f"haddadlina_101_9001_{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"okaforfarah_102_9002_{ASSIGNMENT}.ipynb",  # matched by name; Part A answered
            notebook(release, TIES_ALL_MAXIMA, "The gradient goes to the maximum of each window."))
        add(archive, f"nguyentara_LATE_103_9003_{ASSIGNMENT}.ipynb", notebook(release, VECTORIZED_CORRECT),
            TWO_DAYS_LATE)
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}.ipynb", notebook(release, ZEROS))
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}-1.ipynb", notebook(release, ZEROS))
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}-2.ipynb", notebook(release, LOOP_CORRECT))  # the last
        add(archive, "brandtfelix_105_9005_solution.py", LOOP_CORRECT.encode())
        add(archive, f"smithjohn_199_9099_{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
    collected = run(course, "collect-lms", str(zip_path), "--due", DUE.strftime("%Y-%m-%d %H:%M"))
    assert "5 students' submissions" in collected.stdout and "late: s_tara" in collected.stdout
    assert "smithjohn_199_9099" in collected.stdout and "no student in roster.csv is 'smithjohn'" in collected.stdout
    assert (course / "lms-unmatched" / "submissions" / f"smithjohn_199_9099_{ASSIGNMENT}.ipynb").exists()
    assert "s_felix: uploaded no notebook (solution.py)" in collected.stdout
    assert sorted(p.name for p in (course / "submitted" / "s_vera" / ASSIGNMENT).iterdir()) == \
        [f"{ASSIGNMENT}.ipynb", "timestamp.txt"]

    run(course, "grade")
    scores = code_scores(course)
    assert scores == {"s_lina": (FULL, 0), "s_farah": (12, 0), "s_tara": (FULL, pytest.approx(0.2 * FULL)),
                      "s_vera": (FULL, 0), "s_felix": (0, 0)}
    feedback = (course / "feedback" / "s_felix" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "No notebook named max_pool_backward.ipynb was submitted" in feedback

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:  # Part A graded for two students
        for student, points in (("s_lina", 5), ("s_tara", 4)):
            grade = book.find_grade("part_a_derivation", ASSIGNMENT, ASSIGNMENT, student)
            grade.manual_score, grade.needs_manual_grade = points, False
        book.db.commit()
    exported = run(course, "export-lms", "--canvas-column", "Max pooling (4242)")
    # Part A left as released is "no response" (0, graded); s_farah answered it: still to grade
    assert "Part A is not graded yet for 1 student(s): s_farah" in exported.stdout
    with open(course / "canvas_grades.csv") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Max pooling (4242)"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "20"]
    rows = {row[2]: row for row in canvas[2:]}
    assert rows["s_lina"] == ["Haddad, Lina", "101", "s_lina", "", "", "20"]
    assert rows["s_tara"][5] == f"{FULL + 4 - 0.2 * FULL:g}"  # the penalty applies to the autograded points
    assert rows["s_farah"][1] == "102" and rows["s_farah"][5] == ""  # id from the zip; Part A not graded: empty
    with open(course / "lms_grades.csv") as handle:
        generic = {row["student_id"]: row for row in csv.DictReader(handle)}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        for student, row in generic.items():
            submission = book.find_submission(ASSIGNMENT, student)
            penalty = submission.late_submission_penalty or 0
            assert float(row["total"]) == pytest.approx(submission.score - penalty)
            assert float(row["autograded"]) == submission.code_score and float(row["late_penalty"]) == penalty
            assert row["part_a_graded"] == ("no" if student == "s_farah" else "yes")


def test_a_moodle_zip_in_folders_or_flat(course, tmp_path):
    release, zip_path = release_of(course), tmp_path / "moodle.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, f"Noah Fischer_55501_assignsubmission_file/{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"Tomás Alvarez_55502_assignsubmission_file_{ASSIGNMENT}.ipynb",  # flat, with an accent
            notebook(release, TIES_ALL_MAXIMA), TWO_DAYS_LATE)
        add(archive, f"Lina Haddad_55503_assignsubmission_file_/{ASSIGNMENT}.ipynb", notebook(release, ZEROS))
        add(archive, "Lina Haddad_55503_assignsubmission_file_/notes.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"Ghost Person_55599_assignsubmission_file/{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
    collected = run(course, "collect-lms", str(zip_path), "--due", "2026-11-20T23:59+00:00")
    assert "3 students' submissions" in collected.stdout and "late: s_tomas" in collected.stdout
    assert "no student in roster.csv is 'Ghost Person'" in collected.stdout
    assert f"s_lina: uploaded 2 notebooks ({ASSIGNMENT}.ipynb, notes.ipynb); {ASSIGNMENT}.ipynb is graded" \
        in collected.stdout
    run(course, "grade")
    assert code_scores(course) == {"s_noah": (FULL, 0), "s_tomas": (12, pytest.approx(0.2 * 12)), "s_lina": (0, 0)}


def test_a_zip_that_is_not_one_and_a_missing_roster_are_refused(course, tmp_path):
    not_zip = tmp_path / "x.zip"
    not_zip.write_text("hello")
    result = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(not_zip), "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "is not a zip file that can be read" in result.stderr
    (course / "roster.csv").unlink()
    with zipfile.ZipFile(tmp_path / "empty.zip", "w"):
        pass
    result = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(tmp_path / "empty.zip"),
                             "--course-dir", str(course)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "roster.csv is missing" in result.stderr
