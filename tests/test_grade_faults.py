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
  a grade with a reason, not a fault (here; the whole fault corpus, a recorded grade and a
  reason for each, through plain nbgrader and ``grade`` alike: tests/test_untrusted.py).

The control itself (backend/control.py:run_control): a source solution that fails its own
tests, and a release notebook that gives points for no work, each a fault with a sentence.

Plain nbgrader with a kernel that never starts: tests/test_kernel_start.py; NumPy hidden from
the box: tests/test_faults.py; serve: tests/test_serve_term.py and tests/test_faults.py.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import nbformat
import pytest
from corpus import CORPUS, LOOP_CORRECT, ZEROS, notebook_with
from helpers import ASSIGNMENT, RELEASE_NOTEBOOK, all_grades, copy_course, flat, grade_command, nbgrader, sqlite
from nbgrader.api import Gradebook, MissingEntry

from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.names import SOLUTION_CELL

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
    # a student's code that does not compile is the student's: Part B 0, recorded, with the reason
    assert _part_b(course, "forum_verbatim") == 0 and "does not compile" in flat(_feedback(course, "forum_verbatim")
                                                                                  .read_text())
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


# ------------------------------------------------------------------ the control submission itself
def _control_on(course: Path, folder: str, cell_id: str, change) -> object:
    """The control, run as every backend runs it, after the cell ``cell_id`` of the course's
    notebook in ``folder`` (source: then released again by nbgrader; or release) was changed
    by ``change`` (its source -> the new source)."""
    from maxpool_grader.backend.control import run_control
    from maxpool_grader.course.directory import course_config
    from maxpool_grader.names import grade_id
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    path = course / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(cell for cell in nb.cells if grade_id(cell) == cell_id)
    changed = change(cell.source)
    assert changed != cell.source
    cell.source = changed
    nbformat.write(nb, path)
    if folder == "source":
        nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    return run_control(course, course_config(course, sqlite(course)))


def test_a_reference_solution_that_fails_its_own_tests_is_a_fault_with_a_sentence(course):
    """The instructor's solution overwrites where overlapping windows must add up: the blank
    still gets nothing, the reference loses points, and the control fails with a sentence that
    names the test, the points and the fix."""
    from maxpool_grader.backend.control import CONTROL_FAILED
    added = "grad_plane[k * sh + r, l * sw + c] +="
    found = _control_on(course, "source", SOLUTION_CELL, lambda text: text.replace(added, added[:-2] + "="))
    assert not found.passed
    assert found.problems and all(problem.startswith("The reference solution scored ") for problem in found.problems)
    overlapping = GRADED_CHECKS["hidden_overlapping_windows"]
    assert any(problem.startswith(f"The reference solution scored 0 of {overlapping.points:g} where "
                                  f"{overlapping.points:g} is due, in '{overlapping.title}'")
               for problem in found.problems), found.problems
    sentence = flat(found.sentence())
    assert sentence.startswith(f"{CONTROL_FAILED}, so nothing was graded or recorded: The reference solution scored")
    assert "The source notebook's own solution does not pass its tests in the sandbox" in sentence


def test_a_blank_release_notebook_that_gets_points_is_a_fault_with_a_sentence(course):
    """The instructor tried the release notebook in place (filled in its answer cell and saved
    it): the blank a student would get scores every test where nothing is due, the reference
    still passes, and the control fails with a sentence for each test and the fix."""
    found = _control_on(course, "release", SOLUTION_CELL, lambda text: LOOP_CORRECT)
    assert not found.passed
    assert len(found.problems) == len(GRADED_CHECKS), found.problems  # the reference: no problem
    for problem, check in zip(found.problems, GRADED_CHECKS.values()):
        assert problem.startswith(f"The blank release notebook scored {check.points:g} of {check.points:g} where "
                                  f"0 is due, in '{check.title}'"), problem
    assert "The release notebook gives points for no work" in flat(found.sentence())


def test_a_timestamp_the_student_side_wrote_badly_is_a_grade_not_a_fault(tmp_path):
    """timestamp.txt comes from the student's side of the exchange: nbgrader fails a submission
    whose text does not parse (AttributeError: no ``fail``), and on a FIFO there (or anywhere in
    the submission: shutil.SpecialFileError as it copies the files).
    Each is graded, counted as a submission without a timestamp, and the class's grades.csv is
    written (tried first without glue/submission.py's read_timestamps_safely: Not graded)."""
    course = copy_course(tmp_path / "course", students=["loop_correct", "vectorized_correct", "forum_verbatim"])
    (course / "submitted" / "loop_correct" / ASSIGNMENT / "timestamp.txt").write_text("not a time\x1b[2J")
    fifo = course / "submitted" / "vectorized_correct" / ASSIGNMENT / "timestamp.txt"
    fifo.unlink()
    os.mkfifo(fifo)
    graded = grade_command(course)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    assert "Not graded" not in graded.stderr
    for student in ("loop_correct", "vectorized_correct"):
        assert _part_b(course, student) == FULL and _feedback(course, student).exists()
        assert _submission(course, student)[0] is None
    rows = {row["student_id"]: row for row in csv.DictReader(open(course / "grades.csv"))}
    assert rows["loop_correct"]["timestamp"] == "" and rows["vectorized_correct"]["timestamp"] == ""
    assert rows["forum_verbatim"]["timestamp"].startswith("2026-11-20 09:00:00")  # a readable one is kept


def test_plugins_in_the_wrong_order_grade_nobody_under_plain_nbgrader_and_say_the_order(tmp_path):
    """SafeExecute needs the verdicts OutOfProcessVerdicts decides before it: with the two swapped
    in nbgrader_config.py, plain ``nbgrader autograde`` fails the submission loudly, naming the
    order, and records no grade (never a 0 for a correct solution)."""
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    config = course / "nbgrader_config.py"
    verdicts = '    "maxpool_grader.glue.outofprocessverdicts.OutOfProcessVerdicts",\n'
    execute = '    "maxpool_grader.glue.safeexecute.SafeExecute",  # nbgrader\'s Execute, made safe\n'
    text = config.read_text()
    assert verdicts + execute in text  # the course's own order
    config.write_text(text.replace(verdicts + execute, execute + verdicts))
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    graded = nbgrader(course, "autograde", ASSIGNMENT, check=False)
    assert graded.returncode != 0, graded.stdout[-3000:]
    assert "must list maxpool_grader.glue.outofprocessverdicts.OutOfProcessVerdicts before" in flat(graded.stdout)
    assert _submission(course, "loop_correct") is None  # nothing recorded, no 0
