"""Grading a whole class on this machine: in parallel, with progress.

nbgrader grades submissions one after another (its issue 174). Here worker processes
each hold one ``NbGraderAPI`` (no per-submission start-up of nbgrader) and autograde
one submission at a time, each in a fresh kernel, through nbgrader's own ``autograde``
with the course's ``nbgrader_config.py``: the grades are the ones plain
``nbgrader autograde`` records (a test compares them cell for cell). What needs grading
is state.py's.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..isolation.zygote import die_with_parent
from ..names import ASSIGNMENT, KERNEL_IMPORT_FAILED
from .course import quiet
from .jobs import JobResult

_API = None


def _start_worker(course: str, db_url: str, parent: int) -> None:
    """Runs once in each worker process: one NbGraderAPI for all its submissions."""
    global _API
    die_with_parent(parent)  # a killed grade leaves no worker (nor its zygotes, sandboxes) behind
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while the parent forked it
    os.chdir(course)
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs alembic from PATH
    os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    config = PyFileConfigLoader("nbgrader_config.py", path=course).load_config()
    config.CourseDirectory.root = course
    config.CourseDirectory.db_url = db_url
    # one worker grades many notebooks: fork kernels and verdict processes warm (zygote.py)
    config.SealedBox.warm_start = True
    _API = NbGraderAPI(CourseDirectory(config=config), config=config)


def autograde_job(student: str, assignment: str) -> JobResult:
    started = time.monotonic()
    result = _API.autograde(assignment, student, force=True, create=True)
    if not result["success"] and "database is locked" in (result.get("log") or ""):
        result = _API.autograde(assignment, student, force=True, create=True)  # one retry
    return JobResult(student, bool(result["success"]), seconds=time.monotonic() - started,
                     import_failed=kernel_import_failed(result), log=failure_log(result, 4000))


def failure_log(result: dict, characters: int) -> str:
    """The end of an nbgrader API call's log, and its error, when it failed."""
    return "" if result["success"] else (result.get("log") or "")[-characters:] + str(result.get("error") or "")


def kernel_import_failed(result: dict) -> bool:
    """Whether a test cell of the submission could not import the grader in its kernel."""
    return KERNEL_IMPORT_FAILED in (result.get("log") or "")


def feedback_job(student: str, assignment: str) -> JobResult:
    result = _API.generate_feedback(assignment, student, force=True)
    return JobResult(student, bool(result["success"]), log=failure_log(result, 2000))


class Progress:
    """A live bar (done/total, failures, ETA) on a terminal, plain lines otherwise."""

    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done, self.failures = total, label, 0, 0
        self.stream = stream or sys.stdout
        self.started = time.monotonic()
        self.live = None
        if self.stream.isatty() and total and not quiet():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar
            self.live = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failures]} failed"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn())
            self.live.start()
            self.task = self.live.add_task(label, total=total, failures=0)

    def advance(self, student: str, ok: bool, seconds: float | None = None) -> None:
        self.done += 1
        self.failures += not ok
        if self.live is not None:
            self.live.update(self.task, advance=1, failures=self.failures)
            return
        if quiet():
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        print(f"[{self.label} {self.done}/{self.total}] {student}{took}"
              f"{'' if ok else ' FAILED'}; {self.failures} failed, ETA {eta:.0f} s",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


@dataclass
class BatchResult:
    finished: list[JobResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> list[JobResult]:
        return [item for item in self.finished if not item.success]


def run_batch(course: Path, db_url: str, students: list[str], workers: int, job, label: str,
              on_done=None, assignment: str = ASSIGNMENT) -> BatchResult:
    """Run ``job(student, assignment)`` for every student on ``workers`` processes.

    A worker that dies (killed, out of memory) breaks the pool: the students it had not
    finished are run again once on a new pool. Ctrl-C stops the workers at once and
    returns what finished (``interrupted``)."""
    result = BatchResult()
    progress = Progress(len(students), label)
    remaining = list(students)
    try:
        for _ in range(2):  # a pool that breaks is made again once
            if not remaining:
                break
            executor = ProcessPoolExecutor(max_workers=max(1, min(workers, len(remaining))),
                                           initializer=_start_worker, initargs=(str(course), db_url, os.getpid()))
            try:
                with _ctrl_c_held():  # the first submit forks the workers and starts the pool's threads
                    pending = {executor.submit(job, student, assignment): student for student in remaining}
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        student = pending.pop(future)
                        try:
                            item = future.result()
                        except BrokenProcessPool:
                            continue  # run again on the next pool
                        remaining.remove(student)
                        result.finished.append(item)
                        if on_done is not None:  # recorded before it is shown as done
                            on_done(item)
                        progress.advance(student, item.success, item.seconds)
            except KeyboardInterrupt:
                result.interrupted = True
                _stop(executor)
                return result
            finally:
                executor.shutdown(wait=not result.interrupted, cancel_futures=True)
        for student in remaining:  # the pool broke twice on these
            item = JobResult(student, False, log="a grading worker died twice")
            result.finished.append(item)
            progress.advance(student, False)
    finally:
        progress.close()
    return result


@contextmanager
def _ctrl_c_held():
    """SIGINT blocked, then delivered on leaving: a Ctrl-C while the pool starts is not lost
    in a worker that has not ignored it yet, and the pool's threads, started meanwhile,
    keep it blocked for good, so it always reaches the main thread (Python's handler)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _stop(executor: ProcessPoolExecutor) -> None:
    """Kill the workers now (their kernels and sandboxes die with them)."""
    for process in list(getattr(executor, "_processes", {}).values()):
        try:
            process.kill()
        except (OSError, ValueError):
            pass
