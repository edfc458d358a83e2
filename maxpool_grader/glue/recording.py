"""Whether a grade may be written now, and what a fault of the grader leaves in the gradebook.

A grading worker may hold the writing of grades until its control submission passed
(backend/control.py), and refuse it when the control failed: ``KeepHandGrades`` asks
``wait_to_record`` before it writes anything. Plain nbgrader sets no gate, and records as it
always did.

nbgrader makes a submission's row in the gradebook (its notebooks and empty grades) before
any step runs; nbgrader's own pages and ``export`` then show it a 0. When grading fails by a
fault of the grader, ``forget_new_submission`` removes that row again if nothing was ever
graded in it: a fault leaves the gradebook as it found it (a submission graded before keeps
its grades, and is graded again next time)."""

from __future__ import annotations

import contextlib
from typing import Callable

from nbgrader.api import Gradebook, MissingEntry

_gate: list[Callable[[], None]] = []


def set_gate(wait: Callable[[], None] | None) -> None:
    """``wait()`` returns when grades may be written, and raises (a GraderFault) when they may
    never be; None: no gate."""
    _gate[:] = [wait] if wait is not None else []


def wait_to_record() -> None:
    for wait in _gate:
        wait()


def forget_new_submission(resources: dict) -> None:
    """The submission being graded removed from the gradebook, if no grade of it was ever
    written (``resources``: nbgrader's, naming the gradebook, assignment and student)."""
    found = resources.get("nbgrader", {})
    if not {"db_url", "assignment", "student"} <= set(found):
        return
    with Gradebook(found["db_url"]) as gradebook, contextlib.suppress(MissingEntry):
        submission = gradebook.find_submission(found["assignment"], found["student"])
        grades = [grade for notebook in submission.notebooks for grade in notebook.grades]
        if all(grade.auto_score is None and grade.manual_score is None for grade in grades):
            gradebook.remove_submission(found["assignment"], found["student"])
