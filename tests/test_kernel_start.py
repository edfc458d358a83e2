"""A kernel that cannot start is the grader's fault, never a student's grade, and nothing the
out-of-process verdict started can keep the notebook's kernel from starting.

The bug these tests pin down: a fork bomb at the top of the solution cell, whose children
sleep, filled the submission's processes cap (256) from the verdict's process while the
kernel started in the same box. The kernel could not make its threads and died before it
was ready ("Kernel died before replying to kernel_info") in 4 of 5 runs: nbgrader removed
the autograded notebook, the gradebook waited for a person and there was no feedback. The
kernel now starts once the verdict is decided and every process it left is gone
(glue/safeexecute.py), so the same submission gets the same grade on every run.

Real ``nbgrader autograde`` and ``generate_feedback`` in a copy of the course, sandboxed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import nbformat
import pytest
from corpus import LOOP_CORRECT, notebook_with
from helpers import ASSIGNMENT, all_grades, copy_course, digests, flat, nbgrader, sqlite
from nbgrader.api import Gradebook

from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.sandbox import cgroups
from maxpool_grader.sandbox.box import Box, Caps

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

# Forks until the box's cap stops it (at most 2,000 children, each gone within 30 s even
# without a sandbox); the children sleep, so they hold the cap until they are killed. The
# cell raises BlockingIOError before max_pool_backward is defined: Part B scores 0.
SLEEPING_FORK_BOMB = """import os
import time

for _ in range(2000):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)

""" + LOOP_CORRECT
# Graded one after another by one `nbgrader autograde`. The bug failed 4 runs in 5, so 8 in a
# row pass with it back with a chance of 0.2**8 (3 in a million); 20 copies cost 50 s more.
COPIES = 8


def _graded_class(course: Path, code: str, students: list[str], *options: str):
    """``students`` who all submitted ``code``, graded by plain nbgrader, with feedback."""
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for student in students:
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
    before = digests(course)
    graded = nbgrader(course, "autograde", ASSIGNMENT, *options, check=False)
    feedback = nbgrader(course, "generate_feedback", ASSIGNMENT, check=False)
    return graded, feedback, before


def _assert_part_b_scored_zero(course: Path, students: list[str]) -> None:
    """Every test cell of Part B has a recorded 0 (not None, not waiting for a person), and
    every student has an autograded notebook and a feedback page."""
    grades = all_grades(sqlite(course))
    with Gradebook(sqlite(course)) as gradebook:
        for student in students:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            assert submission.code_score == 0, student
            assert not any(grade.needs_manual_grade for notebook in submission.notebooks
                           for grade in notebook.grades if grade.cell_type == "code"), student
    for student in students:
        assert {cell: grades.get((student, cell)) for cell in GRADED_CHECKS} == dict.fromkeys(GRADED_CHECKS, 0), student
        assert (course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), student
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file(), student


def _feedback(course: Path, student: str) -> str:
    return flat((course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text())


def test_a_fork_bomb_with_sleeping_children_gets_a_0_and_feedback_every_time(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    students = [f"fork_bomb_{number:02d}" for number in range(COPIES)]
    graded, feedback, before = _graded_class(course, SLEEPING_FORK_BOMB, students)

    assert graded.returncode == 0, graded.stdout[-5000:]
    assert "There was an error processing" not in graded.stdout
    assert "did not start" not in graded.stdout  # the kernel started at the first try, every time
    assert feedback.returncode == 0, feedback.stdout[-3000:]
    _assert_part_b_scored_zero(course, students)
    caps = Caps()
    for student in students:
        page = _feedback(course, student)
        assert "Your solution cell raised BlockingIOError" in page, student
        if cgroups.available():  # the cap of the submission's cgroup: named in its notes
            assert f"tried to start more than {caps.processes} processes" in page, student
    after = digests(course)  # every file of the course but what grading writes
    assert sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path)) == []


def test_a_kernel_that_never_starts_is_a_fault_of_the_grader_never_a_grade(tmp_path):
    """A kernel that dies before it is ready, twice (here: 16 MiB of address space, too little
    for Python: the instructor's setting, nothing the student did), is a fault of the grader:
    the submission fails with the reason in nbgrader's log and nothing is recorded for it, no
    grade, no graded notebook, no feedback. Once the kernel starts, the next run grades it."""
    course = copy_course(tmp_path / "course", with_submissions=False)
    graded, feedback, before = _graded_class(course, LOOP_CORRECT, ["correct_but_no_kernel"],
                                             "--SealedBox.kernel_memory_mib=16")

    assert graded.returncode != 0
    log = flat(graded.stdout)
    assert "The kernel did not start (attempt 2 of 2)" in log  # it was tried again
    assert "GraderFault: the Python kernel did not start, 2 times" in log
    assert set(all_grades(sqlite(course)).values()) <= {None}
    assert not (course / "autograded" / "correct_but_no_kernel" / ASSIGNMENT).exists()
    assert not (course / "feedback" / "correct_but_no_kernel" / ASSIGNMENT).exists()

    regraded = nbgrader(course, "autograde", ASSIGNMENT)
    assert regraded.returncode == 0
    grades = all_grades(sqlite(course))
    assert {cell: grades[("correct_but_no_kernel", cell)] for cell in GRADED_CHECKS} == {
        cell: check.points for cell, check in GRADED_CHECKS.items()}


def test_an_emptied_box_counts_no_process():
    """Box.empty kills every process of the box, orphans included, and returns only once the
    cgroup counts none (an orphan counts until the machine's PID 1 has reaped it)."""
    assert cgroups.available(), f"the box needs a cgroup here: {cgroups.why_unavailable()}"
    box = Box(Caps())
    try:
        # the shell ends at once; its five sleeping children are orphans in the box's cgroup
        subprocess.run(box.cgroup.enter_argv() + ["/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 60 & done"],
                       check=True, timeout=30)
        assert box.cgroup.processes() >= 5
        box.empty()
        assert box.cgroup.processes() == 0
    finally:
        box.close()
