"""What ``maxpool-grader grade`` does when grading fails for a reason that is not the
student's (issue 37.3 and 37.6): nothing is recorded for the submission (no gradebook row,
or the old one untouched; no graded notebook, no feedback, no grades.csv row), the exit status
is 1, the instructor reads the real error in one line and the whole log in a file, and the
next run, once the cause is gone, grades it.

- A submission nbgrader itself fails on (here: the instructor's ``autograded/<student>`` is a
  file, so nbgrader's ``makedirs`` raises): "Not graded: <student> (nothing was recorded):
  <exception> (at <file:line> in <function>)", and the log in
  ``.maxpool-grader/logs/<assignment>/<student>.log`` holds nbgrader's whole traceback.
- A kernel that cannot start, set in ``nbgrader_config.py`` (16 MiB of address space: the
  instructor's setting): the control submission fails, so the run records nothing, leaves the
  class's earlier grades, feedback and grades.csv as they were, and says so; the next run,
  with the setting gone, grades everything to be graded.
- The other side: a student's code that kills the kernel (``os._exit``) or does not compile is
  a grade with a reason, not a fault (here, and for the whole corpus in tests/test_runner.py
  and tests/test_pipeline.py).

Plain nbgrader with a kernel that never starts: tests/test_kernel_start.py; NumPy hidden from
the box: tests/test_faults.py; serve: tests/test_serve_term.py and tests/test_faults.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from corpus import CORPUS, ZEROS, notebook_with
from helpers import ASSIGNMENT, RELEASE_NOTEBOOK, all_grades, copy_course, flat, grade_command, sqlite
from nbgrader.api import Gradebook, MissingEntry

from maxpool_grader.exercise.checks import GRADED_CHECKS

pytestmark = pytest.mark.integration  # real maxpool-grader grade, nbgrader, kernels and sandboxes

FULL = sum(check.points for check in GRADED_CHECKS.values())


def _feedback(course: Path, student: str) -> Path:
    return course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"


def _submission(course: Path, student: str):
    """(timestamp, score) of the student's submission in the gradebook, None when it has none."""
    with Gradebook(sqlite(course)) as gradebook:
        try:
            found = gradebook.find_submission(ASSIGNMENT, student)
        except MissingEntry:
            return None
        return found.timestamp, found.score


def _part_b(course: Path, student: str) -> float:
    grades = all_grades(sqlite(course))
    return sum(grades.get((student, cell)) or 0 for cell in GRADED_CHECKS)


def test_a_submission_nbgrader_fails_on_is_not_graded_and_the_instructor_reads_why(tmp_path):
    course = copy_course(tmp_path / "course", students=["loop_correct", "forum_verbatim"])
    (course / "autograded").mkdir()
    in_the_way = course / "autograded" / "forum_verbatim"
    in_the_way.write_text("a file where nbgrader makes a folder")

    failed = grade_command(course)
    said = failed.stderr
    assert failed.returncode == 1, failed.stdout[-2000:] + said[-2000:]
    log = course / ".maxpool-grader" / "logs" / ASSIGNMENT / "forum_verbatim.log"
    summary = re.search(r"Not graded: forum_verbatim \(nothing was recorded\): (.+)\n  full log: (.+)\n", said)
    assert summary, said[-3000:]
    # the exception, its message and the last frame, not nbgrader's "see the above traceback"
    assert re.fullmatch(rf"NotADirectoryError: \[Errno 20\] Not a directory: '{re.escape(str(in_the_way))}/"
                        rf"{ASSIGNMENT}' \(at <frozen os>:\d+ in makedirs\)", summary[1]), summary[1]
    assert summary[2] == str(log)
    whole = log.read_text()  # nbgrader's whole log, its traceback with every frame
    assert "Traceback (most recent call last)" in whole and "nbgrader/converters/base.py" in whole
    assert "NotADirectoryError: [Errno 20] Not a directory" in whole and "in init_assignment" in whole
    assert "grades.csv was not updated: 1 submission(s) were not graded (forum_verbatim)" in said
    assert _submission(course, "forum_verbatim") is None and not _feedback(course, "forum_verbatim").exists()
    assert not (course / "grades.csv").exists()
    assert _part_b(course, "loop_correct") == FULL and _feedback(course, "loop_correct").exists()

    in_the_way.unlink()  # the cause gone: the next ordinary run grades it (and only it)
    again = grade_command(course)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "1 submission(s) to grade" in again.stdout and "1 up to date" in again.stdout
    assert _submission(course, "forum_verbatim") is not None and _feedback(course, "forum_verbatim").exists()
    assert "forum_verbatim" in (course / "grades.csv").read_text()


CAP = "\nc.SealedBox.kernel_memory_mib = 16  # too little for Python: no kernel starts\n"


def test_a_kernel_that_cannot_start_under_grade_records_nothing_and_the_next_run_grades_it(tmp_path):
    course = copy_course(tmp_path / "course", students=["loop_correct", "forum_verbatim"])
    first = grade_command(course)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    kept = {"grades": all_grades(sqlite(course)), "csv": (course / "grades.csv").read_bytes(),
            "submissions": {student: _submission(course, student) for student in ("loop_correct", "forum_verbatim")},
            "feedback": {student: _feedback(course, student).read_bytes() for student in ("loop_correct",
                                                                                         "forum_verbatim")}}
    # a new student whose code kills the kernel (a grade, below), and a resubmission of loop_correct
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    (course / "submitted" / "fault_os_exit" / ASSIGNMENT).mkdir(parents=True)
    CORPUS["fault_os_exit"].build(course / "submitted" / "fault_os_exit" / ASSIGNMENT, release)
    resubmitted = course / "submitted" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nbformat.write(notebook_with(release, ZEROS), resubmitted)
    config = course / "nbgrader_config.py"
    plain = config.read_text()
    config.write_text(plain + CAP)

    faulty = grade_command(course)
    said = flat(faulty.stderr)
    assert faulty.returncode == 1, faulty.stdout[-2000:] + said[-2000:]
    assert "The control submission failed, so nothing was graded or recorded" in said, said[-3000:]
    assert "the Python kernel did not start" in said and "run maxpool-grader doctor" in said
    assert "Nothing was recorded; run the command again once the cause is fixed" in said
    assert all_grades(sqlite(course)) == kept["grades"]  # every earlier grade, as it was
    assert {student: _submission(course, student) for student in kept["submissions"]} == kept["submissions"]
    assert _submission(course, "fault_os_exit") is None
    assert not (course / "autograded" / "fault_os_exit").exists() and not _feedback(course, "fault_os_exit").exists()
    assert {student: _feedback(course, student).read_bytes() for student in kept["feedback"]} == kept["feedback"]
    assert (course / "grades.csv").read_bytes() == kept["csv"]

    config.write_text(plain)  # the setting gone: the next run grades what is to be graded
    fixed = grade_command(course)
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]
    assert "Not graded" not in fixed.stderr
    # a student's code that kills the kernel is the student's: Part B 0, recorded, with the reason
    assert _submission(course, "fault_os_exit") is not None and _part_b(course, "fault_os_exit") == 0
    assert CORPUS["fault_os_exit"].reason in flat(_feedback(course, "fault_os_exit").read_text())
    assert _part_b(course, "loop_correct") < FULL  # the resubmission (zeros) graded
    assert kept["grades"][("forum_verbatim", "visible_2x2_stride_2")] == \
        all_grades(sqlite(course))[("forum_verbatim", "visible_2x2_stride_2")]
    rows = (course / "grades.csv").read_text()
    assert "fault_os_exit" in rows and "loop_correct" in rows
