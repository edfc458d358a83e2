"""The grading side of ``maxpool-grader serve``: how its grading workers are set up
(``serve_worker_setup``) and what one does right after an attempt is autograded on the
grading backend (``serve_followup``: the feedback, its release through the exchange, and
the scores and named mistakes the pages show)."""

from __future__ import annotations

import json
import time
from pathlib import Path

# what grading and feedback import, imported with this module: by the service before it forks
# its grading workers (serve_worker_setup), so that the first student does not wait for them
import nbconvert.exporters.html  # noqa: F401
import nbgrader.converters  # noqa: F401
import nbgrader.preprocessors  # noqa: F401
from nbgrader.api import Gradebook

from ..backend.pool import failure_log, worker_api
from ..course.directory import notebook_path
from ..course.jobs import JobResult
from ..exercise.catalogue import BUGS
from ..exercise.checks import GRADED_CHECKS
from ..names import PART_A_CELL, REPORT_KEY
from ..sandbox import box
from ..sandbox.kernels import kernel_zygote
from ..verdict.process import verdict_zygote


def serve_worker_setup() -> None:
    """A grading worker of the service, ready before the first attempt: the pool's worker,
    with its kernel and verdict zygotes started (they import ipykernel and NumPy meanwhile)
    and what grading and feedback import imported (with this module, before the fork), so that
    the first student of a lab session does not wait for the start-up."""
    # every page the service makes is read while Part A can still change: never Part A's answer
    # (glue/modelanswer.py; the converters nbgrader makes for each call read this config)
    worker_api().config.ModelAnswer.release = "never"
    if box.bwrap_works():  # warm start is for sandboxed kernels only
        kernel_zygote()
        verdict_zygote()


def serve_followup(student: str, assignment: str, graded: JobResult, release: bool) -> dict:
    """In a grading worker, right after the attempt in submitted/ was autograded (as ``grade``
    grades it, here or on a Dask worker): write its feedback, release it through the
    exchange when it came that way, and return its scores per test and the mistakes named."""
    api = worker_api()
    started = time.monotonic()
    course = Path(api.coursedir.root)
    feedback = api.generate_feedback(assignment, student, force=True)
    if not feedback["success"]:
        return {"success": False, "log": failure_log(feedback, 4000)}
    if release:
        released = api.release_feedback(assignment, student)
        if not released["success"]:
            return {"success": False, "log": failure_log(released, 4000)}
    return {"success": True, "released": release, **scores_of(api.coursedir.db_url, course, student, assignment),
            "seconds": time.monotonic() - started + (graded.seconds or 0) + (graded.record_seconds or 0)}


def scores_of(db_url: str, course: Path, student: str, assignment: str) -> dict:
    """Each graded cell's points from the gradebook, and the mistakes the verdicts named."""
    named: dict[str, list[str]] = {}
    try:
        graded = json.loads(notebook_path(course, "autograded", student, assignment).read_text())
        for cell in graded.get("cells", []):
            grade = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            verdict = cell.get("metadata", {}).get(REPORT_KEY) or {}
            if grade:
                named[grade] = [BUGS[name].title for name in verdict.get("bugs", []) if name in BUGS]
    except (OSError, ValueError):
        pass
    tests = []
    with Gradebook(db_url) as gradebook:
        submission = gradebook.find_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                check = GRADED_CHECKS.get(grade.name)
                title = check.title if check else ("Part A: your derivation" if grade.name == PART_A_CELL
                                                   else grade.name)
                # Part A waits for a person until one grades it: nbgrader's automatic 0 for an
                # answer left as released is not a grade before the deadline ("not answered yet")
                person = grade.name == PART_A_CELL and grade.manual_score is None
                tests.append({"id": grade.name, "title": title, "points": float(grade.max_score or 0),
                              "score": float(grade.score or 0), "manual": person or bool(grade.needs_manual_grade),
                              "answered": not person or bool(grade.needs_manual_grade),
                              "mistakes": named.get(grade.name, [])})
        return {"tests": tests, "score": float(submission.score or 0), "max_score": float(submission.max_score or 0),
                "late_penalty": float(submission.late_submission_penalty or 0)}
