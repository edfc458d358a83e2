"""The order in which `maxpool-grader grade`'s workers take their jobs (pool.run_batch):
a student's feedback right after their grading, on the same workers, before the next
student is graded; none for a submission whose grading failed; feedback for students
graded earlier who have none. Real worker processes, with jobs that only say who ran."""

from __future__ import annotations

import os

from maxpool_grader.backend import pool
from maxpool_grader.course.jobs import JobResult


def _no_nbgrader(course: str, db_url: str, parent: int) -> None:
    """The workers' initializer, without nbgrader: these jobs need none."""


def _grade(student: str, assignment: str) -> JobResult:
    return JobResult(student, not student.startswith("broken"), seconds=0.0, log=str(os.getpid()))


def _feedback(student: str, assignment: str) -> JobResult:
    return JobResult(student, True, log=str(os.getpid()))


def test_feedback_follows_each_graded_submission_on_the_same_worker(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(pool, "start_grading_worker", _no_nbgrader)
    recorded = []
    batch = pool.run_batch(tmp_path, "sqlite://", ["a", "broken", "c"], 1, _grade, "autograde",
                               lambda item: recorded.append(item.student), then=(_feedback, "feedback"),
                               then_also=["earlier"])
    assert [item.student for item in batch.finished] == recorded == ["a", "broken", "c"]
    assert [item.student for item in batch.then.finished] == ["a", "c", "earlier"]
    assert len({item.log for item in batch.finished + batch.then.finished}) == 1, "one pool, one worker"
    lines = [line.split(";")[0] for line in capsys.readouterr().out.splitlines()]
    # the feedback expected: one per submission graded, until one fails
    assert lines == ["[autograde 1/3] a in 0.0 s", "[feedback 1/4] a", "[autograde 2/3] broken in 0.0 s FAILED",
                     "[autograde 3/3] c in 0.0 s", "[feedback 2/3] c", "[feedback 3/3] earlier"]
    assert not batch.interrupted and batch.failed == [batch.finished[1]] and batch.then.failed == []


def _dies(student: str, assignment: str) -> JobResult:
    """Kills its worker: once for "once" (a marker file remembers), always for "always"."""
    marker = f"{os.environ['BATCH_TEST_DIR']}/{student}"
    if student == "always" or not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return _grade(student, assignment)


def test_a_dead_worker_breaks_the_pool_and_its_jobs_run_again_on_a_new_one(monkeypatch, tmp_path):
    monkeypatch.setattr(pool, "start_grading_worker", _no_nbgrader)
    monkeypatch.setenv("BATCH_TEST_DIR", str(tmp_path))
    batch = pool.run_batch(tmp_path, "sqlite://", ["once"], 1, _dies, "autograde", then=(_feedback, "feedback"))
    assert [(item.student, item.success) for item in batch.finished] == [("once", True)]
    assert [item.student for item in batch.then.finished] == ["once"]
    batch = pool.run_batch(tmp_path, "sqlite://", ["always"], 1, _dies, "autograde", then=(_feedback, "feedback"))
    assert [(item.student, item.log) for item in batch.finished] == [("always", "a grading worker died twice")]
    assert batch.then.finished == []
