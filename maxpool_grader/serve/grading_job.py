"""The grading side of ``maxpool-grader serve``: what a grading worker does with one attempt
(``serve_job``: nbgrader's autograde as ``grade`` runs it, the feedback, its release
through the exchange, and the scores and named mistakes the pages show), and, with
``--cluster``, the Dask cluster that autogrades instead (``RemoteGrading``)."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path

from ..backend import pool
from ..course.directory import course_path, notebook_path, say
from ..names import REPORT_KEY
from .queue import Attempt

# ------------------------------------------------------------------ the grading worker side

def start_worker(course: str, db_url: str, parent: int) -> None:
    """A grading worker of the service, ready before the first attempt: pool.py's worker,
    with its kernel and verdict zygotes started (they import ipykernel and NumPy meanwhile)
    and what grading and feedback import imported, so that the first student of a lab
    session does not wait for the start-up."""
    pool.start_grading_worker(course, db_url, parent)
    # every page the service makes is read while Part A can still change: never Part A's answer
    # (glue/model_answer.py; the converters nbgrader makes for each call read this config)
    pool.worker_api().config.ModelAnswer.release = "never"
    from ..sandbox import box
    if box.bwrap_works():  # warm start is for sandboxed kernels only
        from ..sandbox.kernels import kernel_zygote
        from ..verdict.process import verdict_zygote
        kernel_zygote()
        verdict_zygote()
    import nbconvert.exporters.html  # noqa: F401
    import nbgrader.converters  # noqa: F401
    import nbgrader.preprocessors  # noqa: F401


def ready() -> int:
    """A job that only makes the pool start a worker (see ``Service.warm_up``)."""
    time.sleep(0.5)  # long enough that each of the jobs sent at once gets a worker of its own
    return os.getpid()


def serve_job(student: str, assignment: str, release: bool, remote: dict | None = None) -> dict:
    """In a grading worker (pool.py's, one NbGraderAPI each): autograde the submission
    in submitted/ as ``grade`` does (or, with ``remote``, record the notebooks a Dask worker
    graded, as ``grade --cluster`` records them), write its feedback, release it through the
    exchange when it came that way, and return its scores per test and the mistakes named."""
    api = pool.worker_api()
    started = time.monotonic()
    course = Path(api.coursedir.root)
    if remote is None:
        result = api.autograde(assignment, student, force=True, create=False)  # the roster decides, never us
        if not result["success"] and "database is locked" in (result.get("log") or ""):
            result = api.autograde(assignment, student, force=True, create=False)
        if not result["success"]:
            return {"success": False, "log": pool.failure_log(result, 4000)}
        import_failed = pool.kernel_import_failed(result)
    else:
        from ..cluster.coordinator import record
        record(course, api.coursedir.db_url, assignment, student, remote["notebooks"])
        import_failed = remote["import_failed"]
        started -= remote["seconds"] or 0
    feedback = api.generate_feedback(assignment, student, force=True)
    if not feedback["success"]:
        return {"success": False, "log": pool.failure_log(feedback, 4000)}
    if release:
        released = api.release_feedback(assignment, student)
        if not released["success"]:
            return {"success": False, "log": pool.failure_log(released, 4000)}
    return {"success": True, "released": release, **scores_of(api.coursedir.db_url, course, student, assignment),
            "import_failed": import_failed, "seconds": time.monotonic() - started}


def scores_of(db_url: str, course: Path, student: str, assignment: str) -> dict:
    """Each graded cell's points from the gradebook, and the mistakes the verdicts named."""
    from nbgrader.api import Gradebook

    from ..exercise.catalogue import BUGS
    from ..exercise.checks import GRADED_CHECKS
    from ..names import PART_A_CELL
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



class RemoteGrading:
    """``--cluster``: each attempt autograded by a worker of a Dask cluster, exactly as
    ``grade --cluster`` grades (cluster/coordinator.py: a worker makes its private course of the
    course's bundle once, a task carries one submission's files, only the graded notebook
    comes back); recording
    it, its feedback and its release stay on this machine, in the local workers. The
    workers are checked once, at the start (the grader's version, a working sandbox):
    a worker that joins later gets nothing until the service is restarted."""

    def __init__(self, course: Path, assignment: str, address: str, security=None):
        from dask.distributed import Client

        from ..cluster.coordinator import WorkerRefused, check_workers
        from ..cluster.worker import bundle
        self.course, self.assignment, self.address = course, assignment, address
        try:
            with pool.ctrl_c_held():  # the client's threads never take a Ctrl-C
                self.client = Client(address, timeout=30, security=security)
        except OSError as problem:
            raise WorkerRefused(f"no Dask scheduler answers at {address} ({problem}); start one with 'dask "
                                "scheduler' and workers with 'dask worker ADDRESS --nthreads 1' "
                                "(docs/operations.md#cluster)") from None
        package = bundle(course, assignment)
        self.good, refused = check_workers(self.client, package.grader)
        for worker, problems in sorted(refused.items()):
            print(f"worker {worker} refused: {'; '.join(problems)}", file=sys.stderr, flush=True)
        if not self.good:
            self.client.close()
            raise WorkerRefused(f"no worker of {address} may grade ({len(refused)} refused): see above")
        # each task carries the bundle itself (70 KB), not a scattered copy: Dask's memory manager
        # keeps one replica of scattered data when few tasks wait for it, and losing the worker
        # that holds it would cancel every attempt after ("lost dependencies"); a task's own
        # data is rescheduled with it when its worker is lost
        self.package = package
        say(f"serve: cluster {address}: {len(self.good)} worker(s) grade")

    def submit(self, attempt: Attempt):
        from ..cluster.worker import grade_submission, submission_files
        files = submission_files(course_path(self.course, "submitted", attempt.student, attempt.assignment))
        return self.client.submit(grade_submission, self.package, attempt.student, files,
                                  key=f"maxpool-serve-{attempt.id}-{secrets.token_hex(4)}",
                                  workers=self.good, allow_other_workers=False, pure=False)

    def close(self) -> None:
        self.client.close()

