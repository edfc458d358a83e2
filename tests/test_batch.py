"""A batch on a grading backend (backend/batch.py), on this machine's pool (backend/pool.py):
a student's feedback right after their grading, on the same worker, before the worker takes
the next student; none for a submission whose grading failed; feedback for students graded
earlier who have none; a worker that dies replaced, its submission graded once more. Real
worker processes, with jobs that only say who ran them."""

from __future__ import annotations

import os

from maxpool_grader.backend import pool
from maxpool_grader.backend.batch import run_batch
from maxpool_grader.backend.control import ControlResult
from maxpool_grader.backend.interface import GradingBackend
from maxpool_grader.backend.progress import reason
from maxpool_grader.course.jobs import JobResult


def _no_nbgrader(course: str, db_url: str, parent: int, setup=None) -> None:
    """The workers' initializer, without nbgrader: these jobs need none."""


def _grade(student: str, assignment: str, create: bool = True) -> JobResult:
    return JobResult(student, not student.startswith("broken"), seconds=0.0, log=str(os.getpid()))


def _feedback(student: str, assignment: str, graded: JobResult) -> JobResult:
    return JobResult(student, True, log=str(os.getpid()))


def _pool(monkeypatch, tmp_path, workers: int = 1) -> pool.LocalPool:
    monkeypatch.setattr(pool, "start_grading_worker", _no_nbgrader)
    monkeypatch.setattr(pool, "autograde_job", _grade)  # the workers are forked: they see these
    monkeypatch.setattr(pool, "control_job", lambda assignment: ControlResult())  # a control that passes
    return pool.LocalPool(tmp_path, "sqlite://", workers)


def test_feedback_follows_each_graded_submission_on_the_same_worker(monkeypatch, tmp_path, capsys):
    recorded = []
    backend = _pool(monkeypatch, tmp_path)
    assert isinstance(backend, GradingBackend)
    with backend:
        batch = run_batch(backend, ["a", "broken", "c"], lambda item: recorded.append(item.student),
                          then=(_feedback, "feedback"), then_also=["earlier"])
    assert [item.student for item in batch.finished] == recorded == ["a", "broken", "c"]
    assert [item.student for item in batch.then.finished] == ["a", "c", "earlier"]
    assert len({item.log for item in batch.finished + batch.then.finished}) == 1, "one pool, one worker"
    lines = [line.split(";")[0] for line in capsys.readouterr().out.splitlines()]
    # the feedback expected: one per submission graded, until one fails
    # a failed job shows its reason: the last line of its log (here, the worker's pid)
    assert lines == ["[autograde 1/3] a in 0.0 s", "[feedback 1/4] a",
                     f"[autograde 2/3] broken in 0.0 s FAILED ({batch.finished[1].log})",
                     "[autograde 3/3] c in 0.0 s", "[feedback 2/3] c", "[feedback 3/3] earlier"]
    assert not batch.interrupted and batch.failed == [batch.finished[1]] and batch.then.failed == []


def test_each_worker_makes_the_feedback_of_what_it_graded(monkeypatch, tmp_path):
    backend = _pool(monkeypatch, tmp_path, workers=2)
    with backend:
        batch = run_batch(backend, [f"s{number}" for number in range(8)], then=(_feedback, "feedback"))
    graded_by = {item.student: item.log for item in batch.finished}
    assert {item.student: item.log for item in batch.then.finished} == graded_by
    assert len(graded_by) == 8


def _dies(student: str, assignment: str, create: bool = True) -> JobResult:
    """Kills its worker: once for "once" (a marker file remembers), always for "always"."""
    marker = f"{os.environ['BATCH_TEST_DIR']}/{student}"
    if student == "always" or not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return _grade(student, assignment)


def test_a_dead_worker_is_replaced_and_its_submission_graded_again(monkeypatch, tmp_path):
    backend = _pool(monkeypatch, tmp_path)
    monkeypatch.setattr(pool, "autograde_job", _dies)
    monkeypatch.setenv("BATCH_TEST_DIR", str(tmp_path))
    with backend:
        batch = run_batch(backend, ["once"], then=(_feedback, "feedback"))
    assert [(item.student, item.success) for item in batch.finished] == [("once", True)]
    assert [item.student for item in batch.then.finished] == ["once"]
    with backend:
        batch = run_batch(backend, ["always"], then=(_feedback, "feedback"))
    assert [(item.student, item.log) for item in batch.finished] == [("always", "a grading worker died twice")]
    assert batch.then.finished == []


def test_a_failed_jobs_reason_is_its_fault_else_the_last_line_its_log_ends_with():
    assert reason("The control submission failed: x\nmore", "log") == "The control submission failed: x"
    log = "Traceback (most recent call last):\n  File 'x'\n    ^^^^\njinja2.TemplateNotFound: lab/index.html.j2\n"
    assert reason("", log) == "jinja2.TemplateNotFound: lab/index.html.j2"
    assert reason("", "") == "" and len(reason("", "x" * 1000)) == 300
