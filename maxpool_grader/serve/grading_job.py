"""The grading side of ``maxpool-grader serve``: how its grading workers are set up
(``serve_worker_setup``) and what one does right after an attempt is autograded on the
grading backend (``serve_followup``: the feedback, its release through the exchange, and
the scores and named mistakes the pages show).

An attempt whose student is taken off the roster while it is graded is not kept: before it
is staged, the service keeps what grading changes (``keep_before``: the student's submission
in the gradebook, their ``submitted/`` and ``autograded/`` folders); the worker asks the
roster again once it is graded and, when the student is gone, puts all of it back
(``put_back``) and makes no feedback: the gradebook is as it was, and the attempt is refused."""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime
from pathlib import Path

# what grading and feedback import, imported with this module: by the service before it forks
# its grading workers (serve_worker_setup), so that the first student does not wait for them
import nbconvert.exporters.html  # noqa: F401
import nbgrader.converters  # noqa: F401
import nbgrader.preprocessors  # noqa: F401
from nbgrader.api import Gradebook, MissingEntry

from ..backend.pool import failure_log, worker_api
from ..course.directory import course_path, notebook_path
from ..course.jobs import JobResult
from ..exercise.catalogue import BUGS
from ..exercise.checks import GRADED_CHECKS
from ..names import PART_A_CELL, REPORT_KEY
from ..sandbox import box
from ..sandbox.kernels import kernel_zygote
from ..verdict.process import verdict_zygote
from .policy import on_roster
from .standing import attempt_lines, counts, part_b

ATTEMPTS_LINK = "../../"  # from <prefix>attempt/<n>/feedback, the student's page: <prefix>


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


def serve_followup(student: str, assignment: str, graded: JobResult, release: bool, before: str = "",
                   attempt: int = 0, web: bool = False, standing: dict | None = None) -> dict:
    """In a grading worker, right after the attempt in submitted/ was autograded (as ``grade``
    grades it, here or on a Dask worker): unless its student left the roster meanwhile (then
    what ``before`` kept is put back: module doc), write its feedback, release it through the
    exchange when it came that way, and return its scores per test and the mistakes named.
    The page is titled with the attempt's number, says whether it counts (``standing``: the
    rule, the attempt it is measured against, the policy's lines; serve/standing.py), and the
    web way's links back to the student's attempts (relative: from ``attempt/<n>/feedback`` to
    the page's prefix). An attempt that does not count is put back once its page is made."""
    api = worker_api()
    started = time.monotonic()
    course = Path(api.coursedir.root)
    if before and not on_roster(course, student):
        put_back(course, api.coursedir.db_url, student, assignment, Path(before))
        return {"success": False, "off_roster": True, "log": f"{student} left the roster while it was graded"}
    scores = scores_of(api.coursedir.db_url, course, student, assignment)
    counted, lines = True, []
    if standing is not None:
        score, most = part_b(scores)
        counted = counts(standing["rule"], score, standing["before"])
        lines = attempt_lines(standing["rule"], attempt, standing["received"], score, most, standing["before"],
                              standing["policy"])
    api.config.FeedbackSummary.attempt = attempt  # read by the converter generate_feedback makes
    api.config.FeedbackSummary.attempts_link = ATTEMPTS_LINK if web else ""
    api.config.FeedbackSummary.standing = lines
    feedback = api.generate_feedback(assignment, student, force=True)
    if not feedback["success"]:
        return {"success": False, "log": failure_log(feedback, 4000)}
    if release:
        released = api.release_feedback(assignment, student)
        if not released["success"]:
            return {"success": False, "log": failure_log(released, 4000)}
    if not counted:  # graded and told; the course keeps the attempt that counts
        put_back(course, api.coursedir.db_url, student, assignment, Path(before))
    return {"success": True, "released": release, **scores, "counts": counted, "standing": lines,
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


# ------------------------------------------------------------------ an attempt not kept

GRADE_FIELDS = ("auto_score", "manual_score", "extra_credit", "needs_manual_grade")
COMMENT_FIELDS = ("auto_comment", "manual_comment")
STEPS = ("submitted", "autograded")


def keep_before(course: Path, db_url: str, student: str, assignment: str, folder: Path) -> None:
    """Keep in ``folder`` what grading an attempt changes: the student's submission in the
    gradebook (as JSON) and their submitted/ and autograded/ folders. Kept once: after a
    restart the attempt graded again keeps what was there before its first try."""
    if (folder / "gradebook.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for step in STEPS:
        here = course_path(course, step, student, assignment)
        if here.is_dir() and not here.is_symlink():
            shutil.copytree(here, folder / step, symlinks=True)
    saved = {"exists": False}
    with Gradebook(db_url) as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry:
            pass
        else:
            saved = {"exists": True, "timestamp": submission.timestamp.isoformat() if submission.timestamp else None,
                     "notebooks": {notebook.name: _notebook_state(notebook) for notebook in submission.notebooks}}
    partial = folder / "gradebook.json.partial"
    partial.write_text(json.dumps(saved))
    partial.replace(folder / "gradebook.json")  # written last: its presence says the copies are whole


def _notebook_state(notebook) -> dict:
    return {"late_submission_penalty": notebook.late_submission_penalty,
            "grades": {grade.name: [getattr(grade, key) for key in GRADE_FIELDS] for grade in notebook.grades},
            "comments": {comment.name: [getattr(comment, key) for key in COMMENT_FIELDS]
                         for comment in notebook.comments}}


def put_back(course: Path, db_url: str, student: str, assignment: str, folder: Path) -> None:
    """Undo what grading changed, from what ``keep_before`` kept in ``folder``."""
    saved = json.loads((folder / "gradebook.json").read_text())
    with Gradebook(db_url) as gradebook:
        if not saved["exists"]:
            try:
                gradebook.remove_submission(assignment, student)
            except MissingEntry:
                pass
        else:
            submission = gradebook.find_submission(assignment, student)
            submission.timestamp = datetime.fromisoformat(saved["timestamp"]) if saved["timestamp"] else None
            for notebook in submission.notebooks:
                kept = saved["notebooks"].get(notebook.name, {})
                notebook.late_submission_penalty = kept.get("late_submission_penalty")
                for rows, fields, key in ((notebook.grades, GRADE_FIELDS, "grades"),
                                          (notebook.comments, COMMENT_FIELDS, "comments")):
                    for row in rows:
                        for field, value in zip(fields, kept.get(key, {}).get(row.name, ()), strict=False):
                            setattr(row, field, value)
            gradebook.db.commit()
    for step in STEPS:
        here = course_path(course, step, student, assignment)
        if here.is_dir() and not here.is_symlink():
            shutil.rmtree(here)
        if (folder / step).is_dir():
            shutil.copytree(folder / step, here, symlinks=True)
