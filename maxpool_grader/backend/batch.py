"""A batch of submissions on a grading backend, with progress: what ``grade`` runs, on
this machine's pool or a Dask cluster alike (interface.py)."""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Callable

from ..course.jobs import JobResult
from .interface import GradingBackend, WorkerDied
from .progress import Progress, reason

CTRL_C = threading.Event()  # set by grade's SIGINT handler: seen here even where Python could not raise it


@dataclass
class BatchResult:
    finished: list[JobResult] = field(default_factory=list)
    interrupted: bool = False
    then: BatchResult | None = None  # the follow-up's results (feedback after autograde)
    last_seconds: float | None = None  # when the last of its jobs ended, from the batch's start

    @property
    def failed(self) -> list[JobResult]:
        return [item for item in self.finished if not item.success]


def run_batch(backend: GradingBackend, students: list[str], on_done: Callable | None = None, *,
              label: str = "autograde", then: tuple[Callable, str] | None = None, then_also=()) -> BatchResult:
    """Grade every student on ``backend``, at most its capacity at a time.

    ``on_done(result)`` is told of each grading first, before it is shown as done. ``then``:
    a ``(function, label)`` run right after each grading that worked, in the same worker
    (its results are the returned batch's ``then``); ``then_also``: students it runs for
    without a grading. A submission whose worker died is submitted once more; Ctrl-C stops
    the backend at once and returns what finished (``interrupted``)."""
    batch = _Batch(students, label, on_done, then, then_also)
    pending: dict[Future, tuple[str, bool]] = {}
    try:
        while batch.queue or pending:
            while batch.queue and len(pending) < max(1, backend.capacity):
                student, autograde = batch.queue.popleft()
                pending[backend.submit(student, autograde=autograde, then=then[0] if then else None)] = (
                    student, autograde)
            done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if CTRL_C.is_set():
                raise KeyboardInterrupt
            for future in done:
                batch.take(future, *pending.pop(future))
    except KeyboardInterrupt:
        batch.result.interrupted = True
        if batch.result.then is not None:
            batch.result.then.interrupted = True
        backend.stop(now=True)
    finally:
        batch.progress.close()
    return batch.result


class _Batch:
    """run_batch's submissions: those still to run, first to run first, and what came of the others."""

    def __init__(self, students: list[str], label: str, on_done, then, then_also):
        self.started, self.label, self.on_done, self.then = time.monotonic(), label, on_done, then
        self.result = BatchResult(then=BatchResult() if then else None)
        self.progress = Progress(len(students), label)
        self.queue = deque((student, True) for student in students)
        self.died: set[tuple[str, bool]] = set()
        if then:
            self.progress.add(len(students) + len(then_also), then[1])
            self.queue.extend((student, False) for student in then_also)

    def take(self, future: Future, student: str, autograde: bool) -> None:
        try:
            item = future.result()
        except WorkerDied:
            if (student, autograde) not in self.died:  # once more, on what replaced the dead worker
                self.died.add((student, autograde))
                self.queue.appendleft((student, autograde))
                return
            item = JobResult(student, False, log="a grading worker died twice")
        except Exception as problem:  # noqa: BLE001  one submission's trouble, not the batch's
            item = JobResult(student, False, log=f"{type(problem).__name__}: {problem}")
        if autograde:
            self._graded(item)
        if self.then and item.success:
            self._followed(item.then if item.then is not None else JobResult(student, False, log="no result"))
        elif self.then and not autograde:
            self._followed(item)

    def _graded(self, item: JobResult) -> None:
        self.result.finished.append(item)
        self.result.last_seconds = time.monotonic() - self.started
        if self.on_done is not None:  # recorded before it is shown as done
            self.on_done(item)
        self.progress.advance(item.student, item.success, item.seconds, self.label, reason(item.fault, item.log))
        if self.then and not item.success:
            self.progress.expect(self.then[1], -1)

    def _followed(self, item: JobResult) -> None:
        self.result.then.finished.append(item)
        self.result.then.last_seconds = time.monotonic() - self.started
        self.progress.advance(item.student, item.success, item.seconds, self.then[1], reason(item.fault, item.log))
