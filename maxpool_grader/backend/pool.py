"""Grading a whole class on this machine: in parallel, with progress.

nbgrader grades submissions one after another (its issue 174). Here worker processes
each hold one ``NbGraderAPI`` (no per-submission start-up of nbgrader) and autograde
one submission at a time, each in a fresh kernel, through nbgrader's own ``autograde``
with the course's ``nbgrader_config.py``: the grades are the ones plain
``nbgrader autograde`` records (a test compares them cell for cell). What needs grading
is grading/state.py's.

A student's feedback is made by the same workers right after their submission is graded
(``run_batch``'s ``then``), not by a second pool once every submission is: a new pool
imported nbconvert, nbgrader and matplotlib again and warmed its caches again, and the
feedback's CPU time fills what grading leaves idle while a kernel starts. Feedback only
reads the gradebook, so the grades are the same.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..course.directory import nbgrader_api, quiet
from ..course.jobs import JobResult
from ..glue.nbgrader_costs import close_pooled_connections
from ..names import ASSIGNMENT, KERNEL_IMPORT_FAILED
from ..sandbox.zygote import die_with_parent
from .warm import adopt_zygotes

_API = None


def default_workers() -> int:
    """One worker per core, and one more: a submission's grading is a chain (its verdict, then
    its kernel's start, then its cells, each waiting on the one before), and the handovers of
    one chain leave its core idle for about a fifth of the time. A third chain on two cores
    fills that (measured: docs/benchmarks.md#grading)."""
    return (os.cpu_count() or 1) + 1


def start_grading_worker(course: str, db_url: str, parent: int) -> None:
    """Runs once in each worker process: one NbGraderAPI for all its submissions."""
    global _API
    die_with_parent(parent)  # a killed grade leaves no worker (nor its zygotes, sandboxes) behind
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while the parent forked it
    os.chdir(course)
    if _ZYGOTES[0]:  # what run_batch left for the workers it forks
        adopt_zygotes(*_ZYGOTES)
    # one worker grades many notebooks: fork kernels and verdict processes warm (zygote.py)
    _API = nbgrader_api(Path(course), db_url, warm_start=True)


def worker_api():
    """In a grading worker: the NbGraderAPI ``start_grading_worker`` made for it."""
    return _API


def autograde_job(student: str, assignment: str) -> JobResult:
    started, cpu = time.monotonic(), time.process_time()
    result = _API.autograde(assignment, student, force=True, create=True)
    if not result["success"] and "database is locked" in (result.get("log") or ""):
        result = _API.autograde(assignment, student, force=True, create=True)  # one retry
    return JobResult(student, bool(result["success"]), seconds=time.monotonic() - started,
                     cpu_seconds=time.process_time() - cpu,
                     import_failed=kernel_import_failed(result), log=failure_log(result, 4000))


def failure_log(result: dict, characters: int) -> str:
    """The end of an nbgrader API call's log, and its error, when it failed."""
    return "" if result["success"] else (result.get("log") or "")[-characters:] + str(result.get("error") or "")


def kernel_import_failed(result: dict) -> bool:
    """Whether a test cell of the submission could not import the grader in its kernel."""
    return KERNEL_IMPORT_FAILED in (result.get("log") or "")


def feedback_job(student: str, assignment: str) -> JobResult:
    cpu = time.process_time()
    result = _API.generate_feedback(assignment, student, force=True)
    return JobResult(student, bool(result["success"]), cpu_seconds=time.process_time() - cpu,
                     log=failure_log(result, 2000))


class Progress:
    """A live bar (done/total, failures, ETA) on a terminal, plain lines otherwise; ``add``
    puts a second counter (feedback beside autograde) on the same display."""

    def __init__(self, total: int, label: str, stream=None):
        self.label = label
        self.stream = stream or sys.stdout
        self.counters: dict[str, dict] = {}
        self.live = None
        self.add(total, label)

    def add(self, total: int, label: str) -> None:
        counter = {"total": total, "done": 0, "failures": 0, "started": time.monotonic(), "task": None}
        if self.live is None and total and self.stream.isatty() and not quiet():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar
            self.live = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failures]} failed"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn())
            self.live.start()
        if self.live is not None and total:
            counter["task"] = self.live.add_task(label, total=total, failures=0)
        self.counters[label] = counter

    def expect(self, label: str, change: int) -> None:
        """``change`` more (or fewer) jobs of ``label`` than it was made with."""
        counter = self.counters[label]
        counter["total"] += change
        if counter["task"] is not None:
            self.live.update(counter["task"], total=counter["total"])

    def advance(self, student: str, ok: bool, seconds: float | None = None, label: str | None = None) -> None:
        label = label or self.label
        counter = self.counters[label]
        counter["done"] += 1
        counter["failures"] += not ok
        if self.live is not None:
            if counter["task"] is not None:
                self.live.update(counter["task"], advance=1, failures=counter["failures"])
            return
        if quiet():
            return
        done, total, failures = counter["done"], counter["total"], counter["failures"]
        elapsed = time.monotonic() - counter["started"]
        eta = elapsed / done * max(0, total - done)
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        print(f"[{label} {done}/{total}] {student}{took}"
              f"{'' if ok else ' FAILED'}; {failures} failed, ETA {eta:.0f} s",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


@dataclass
class BatchResult:
    finished: list[JobResult] = field(default_factory=list)
    interrupted: bool = False
    then: BatchResult | None = None  # run_batch's follow-up jobs (feedback after autograde)
    last_seconds: float | None = None  # when the last of its jobs ended, from the batch's start

    @property
    def failed(self) -> list[JobResult]:
        return [item for item in self.finished if not item.success]


def run_batch(course: Path, db_url: str, students: list[str], workers: int, job, label: str,
              on_done=None, assignment: str = ASSIGNMENT, then=None, then_also=(), zygotes=(),
              before_fork=None) -> BatchResult:
    """Run ``job(student, assignment)`` for every student on ``workers`` processes, forked
    from this one (they inherit what it imported and warmed up).

    ``then``: a ``(job, label)`` run for each student whose ``job`` succeeded, on the same
    workers and before the next student's ``job`` (so the two overlap); ``then_also``:
    students it runs for anyway. Its results are the returned batch's ``then``.
    ``zygotes``: warm.start_zygotes's, for the workers of the first pool;
    ``before_fork``: called before each pool is made (this process must have no thread then).

    A worker that dies (killed, out of memory) breaks the pool: the jobs it had not
    finished are run again once on a new pool. Ctrl-C stops the workers at once and
    returns what finished (``interrupted``, for ``then`` too)."""
    jobs = _Jobs(students, job, label, on_done, then, then_also)
    close_pooled_connections()  # the workers are forked from this process: no connection to inherit
    try:
        for _ in range(2):  # a pool that breaks is made again once
            if not jobs.queue:
                break
            if before_fork is not None:
                before_fork()
            gc.freeze()  # what this process made so far: never collected (nor copied) by the workers' GC
            _ZYGOTES[:] = [zygotes, multiprocessing.Value("i", 0)]  # inherited by the workers forked now
            executor = ProcessPoolExecutor(max_workers=max(1, min(workers, len(jobs.queue))),
                                           mp_context=multiprocessing.get_context("fork"),
                                           initializer=start_grading_worker,
                                           initargs=(str(course), db_url, os.getpid()))
            pending: dict = {}
            try:
                with ctrl_c_held():  # the first submit forks the workers and starts the pool's threads
                    jobs.submit(executor, pending, workers, assignment)
                zygotes = let_go(zygotes)  # each worker holds its own pair now
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        jobs.take(future, *pending.pop(future))
                    jobs.submit(executor, pending, workers, assignment)
            except KeyboardInterrupt:
                jobs.result.interrupted = True
                if jobs.result.then is not None:
                    jobs.result.then.interrupted = True
                stop_pool(executor)
                return jobs.result
            finally:
                executor.shutdown(wait=not jobs.result.interrupted, cancel_futures=True)
        jobs.give_up()
    finally:
        let_go(zygotes)
        jobs.progress.close()
    return jobs.result


class _Jobs:
    """run_batch's jobs: those still to run, first to run first, and what came of the others."""

    def __init__(self, students: list[str], job, label: str, on_done, then, then_also):
        self.started, self.label, self.then = time.monotonic(), label, then
        self.result = BatchResult(then=BatchResult() if then else None)
        self.progress = Progress(len(students), label)
        self.batches = {label: (job, self.result, on_done)}  # what runs, where it is kept, what is told first
        self.queue = deque((label, student) for student in students)
        if then:
            self.progress.add(len(students) + len(then_also), then[1])
            self.batches[then[1]] = (then[0], self.result.then, None)
            self.queue.extend((then[1], student) for student in then_also)

    def submit(self, executor: ProcessPoolExecutor, pending: dict, workers: int, assignment: str) -> None:
        """Jobs from the front of the queue until each worker has one: a follow-up put first
        then runs before the next student's job (a pool takes its jobs first come, first run)."""
        while self.queue and len(pending) < max(1, workers):
            kind, student = self.queue.popleft()
            try:
                pending[executor.submit(self.batches[kind][0], student, assignment)] = (kind, student)
            except BrokenProcessPool:
                self.queue.appendleft((kind, student))
                return

    def take(self, future, kind: str, student: str) -> None:
        try:
            item = future.result()
        except BrokenProcessPool:
            self.queue.appendleft((kind, student))  # run again on the next pool
            return
        _, batch, on_done = self.batches[kind]
        batch.finished.append(item)
        batch.last_seconds = time.monotonic() - self.started
        if on_done is not None:  # recorded before it is shown as done
            on_done(item)
        self.progress.advance(student, item.success, item.seconds, kind)
        if self.then and kind == self.label:
            if item.success:  # its follow-up next, before the next student's job
                self.queue.appendleft((self.then[1], student))
            else:
                self.progress.expect(self.then[1], -1)

    def give_up(self) -> None:
        """The pool broke twice on what is left."""
        for kind, student in self.queue:
            self.batches[kind][1].finished.append(JobResult(student, False, log="a grading worker died twice"))
            self.progress.advance(student, False, label=kind)
            if self.then and kind == self.label:
                self.progress.expect(self.then[1], -1)


def let_go(zygotes) -> tuple:
    """This process's ends of the zygotes' sockets closed; a later pool starts its own."""
    for pair in zygotes:
        for zygote in pair:
            zygote.let_go()
    _ZYGOTES[:] = [(), None]
    return ()


_ZYGOTES: list = [(), None]  # run_batch's zygotes for the workers it forks, and a count of those taken


@contextmanager
def ctrl_c_held():
    """SIGINT blocked, then delivered on leaving: a Ctrl-C while the pool starts is not lost
    in a worker that has not ignored it yet, and the pool's threads, started meanwhile,
    keep it blocked for good, so it always reaches the main thread (Python's handler)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def stop_pool(executor: ProcessPoolExecutor) -> None:
    """Kill the workers now (their kernels and sandboxes die with them)."""
    for process in list(getattr(executor, "_processes", {}).values()):
        try:
            process.kill()
        except (OSError, ValueError):
            pass
