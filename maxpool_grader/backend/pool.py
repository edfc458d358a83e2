"""Grading on this machine: ``LocalPool``, the grading backend of worker processes forked
from the command.

nbgrader grades submissions one after another (its issue 174). Here worker processes
each hold one ``NbGraderAPI`` (no per-submission start-up of nbgrader) and autograde
one submission at a time, each in a fresh kernel, through nbgrader's own ``autograde``
with the course's ``nbgrader_config.py``: the grades are the ones plain
``nbgrader autograde`` records (a test compares them cell for cell).

Before a pool records any grade, one of its workers grades the control submission
(control.py): the others grade meanwhile, and their grades wait to be written until it
passed (glue/recording.py); when it fails nothing is written, and every submission comes
back with the control's sentence as its ``fault``. The workers are forks of one process,
so one control stands for them all.

A submission's ``then`` (its feedback, say) runs in the same worker right after its
grading, not in a second pool once every submission is graded: a new pool imported
nbconvert, nbgrader and matplotlib again and warmed its caches again, and the feedback's
CPU time fills what grading leaves idle while another worker's kernel starts. Feedback
only reads the gradebook, so the grades are the same.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from ..course.directory import nbgrader_api
from ..course.jobs import JobResult
from ..glue.nbgrader_costs import close_pooled_connections
from ..glue.recording import set_gate
from ..names import ASSIGNMENT
from ..sandbox.box import GraderFault
from ..sandbox.zygote import die_with_parent, end_orphaned_sandboxes
from .control import ControlResult, run_control
from .interface import GradingBackend, WorkerDied
from .warm import adopt_zygotes

_API = None
_ZYGOTES: list = [(), None]  # the zygotes for the workers forked next, and a count of those taken
# the pool's control: its state (NOT_RUN, RUNNING, PASSED or FAILED) and its sentence, shared
_CONTROL: list = [None, None]
NOT_RUN, RUNNING, PASSED, FAILED = range(4)
CONTROL_WAIT_SECONDS = 600  # how long a grade waits for the control (a correct one takes seconds)


def default_workers() -> int:
    """One worker per core, and one more: a submission's grading is a chain (its verdict, then
    its kernel's start, then its cells, each waiting on the one before), and the handovers of
    one chain leave its core idle for about a fifth of the time. A third chain on two cores
    fills that (measured: docs/benchmarks.md#grading)."""
    return (os.cpu_count() or 1) + 1


class LocalPool(GradingBackend):
    """Worker processes forked from this one (they inherit what it imported and warmed up).

    ``create_students``: whether autograde may add a student the gradebook does not know
    (``grade``: yes; ``serve``: no, the roster decides); ``setup``: a module-level function
    each worker runs once after its ``NbGraderAPI`` is made; ``zygotes``:
    warm.start_zygotes's, for the workers forked first; ``before_fork``: called before the
    workers are forked (this process must have no thread then). A pool whose worker died is
    replaced by a new one at the next submission."""

    def __init__(self, course: Path, db_url: str, workers: int, assignment: str = ASSIGNMENT, *,
                 create_students: bool = True, setup: Callable | None = None, zygotes=(), before_fork=None):
        self.course, self.db_url, self.workers, self.assignment = course, db_url, max(1, workers), assignment
        self.create_students, self.setup, self.zygotes, self.before_fork = create_students, setup, zygotes, before_fork
        self.executor: ProcessPoolExecutor | None = None

    @property
    def capacity(self) -> int:
        return self.workers

    def start(self, warm: bool = False) -> None:
        """``warm``: the workers forked now (a job for each, long enough that each gets its own);
        otherwise at the first submission."""
        if warm:
            for future in [self.submit_call(ready) for _ in range(self.workers)]:
                future.add_done_callback(lambda done: done.exception())

    def submit(self, student: str, *, autograde: bool = True, then: Callable | None = None,
               args: tuple = ()) -> Future:
        return self.submit_call(pool_job, student, self.assignment, autograde, self.create_students, then, args)

    def submit_call(self, function: Callable, *args) -> Future:
        """``function(*args)`` in a worker; a future that fails with WorkerDied if the worker dies."""
        outer: Future = Future()
        try:
            with ctrl_c_held():  # the first submission forks the workers and starts the pool's threads
                inner = self._pool().submit(function, *args)
        except BrokenProcessPool:
            self.stop(now=True)
            outer.set_exception(WorkerDied("a grading worker died"))
            return outer
        self.zygotes = let_go(self.zygotes)  # the workers are forked: each holds its own pair now
        inner.add_done_callback(lambda done, executor=self.executor: self._settle(done, outer, executor))
        return outer

    def _settle(self, inner: Future, outer: Future, executor: ProcessPoolExecutor) -> None:
        if inner.cancelled():
            outer.cancel()  # never running: it always can be
            return
        problem = inner.exception()
        if isinstance(problem, BrokenProcessPool):
            first = self.executor is executor  # the first of its futures to fail
            if first:  # the next submission makes a new pool
                self.executor = None
            _kill(executor)  # what is left of the broken one
            if first:
                end_orphaned_sandboxes(0.5)  # and the sandboxes its dead worker was starting
            outer.set_exception(WorkerDied("a grading worker died"))
        elif problem is not None:
            outer.set_exception(problem)
        else:
            outer.set_result(inner.result())

    def _pool(self) -> ProcessPoolExecutor:
        if self.executor is None:
            close_pooled_connections()  # the workers are forked from this process: no connection to inherit
            if self.before_fork is not None:
                self.before_fork()
            gc.freeze()  # what this process made so far: never collected (nor copied) by the workers' GC
            _ZYGOTES[:] = [self.zygotes, multiprocessing.Value("i", 0)]  # inherited by the workers forked now
            _CONTROL[:] = [multiprocessing.Value("i", NOT_RUN), multiprocessing.Array("c", 1 << 14)]
            self.executor = ProcessPoolExecutor(max_workers=self.workers,
                                                mp_context=multiprocessing.get_context("fork"),
                                                initializer=start_grading_worker,
                                                initargs=(str(self.course), self.db_url, os.getpid(), self.setup))
        return self.executor

    def stop(self, now: bool = False) -> None:
        executor, self.executor = self.executor, None
        if executor is not None and now:
            _kill(executor)
        elif executor is not None:
            executor.shutdown(wait=True)
        self.zygotes = let_go(self.zygotes)


def _kill(executor: ProcessPoolExecutor) -> None:
    """The pool's workers killed now (their kernels and sandboxes die with them), and the
    pool's manager thread waited for (a few seconds at most): left running, it closes its
    wake-up pipe while Python's exit writes to it, a race of Python 3.11 (CPython gh-125451)
    that ends a stopped service with a traceback of EBADF."""
    manager = getattr(executor, "_executor_manager_thread", None)
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        try:
            process.kill()
        except (OSError, ValueError):
            pass
    executor.shutdown(wait=False, cancel_futures=True)
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout=10)


# ------------------------------------------------------------------ in a worker

def start_grading_worker(course: str, db_url: str, parent: int, setup: Callable | None = None) -> None:
    """Runs once in each worker process: one NbGraderAPI for all its submissions."""
    global _API
    die_with_parent(parent)  # a killed grade leaves no worker (nor its zygotes, sandboxes) behind
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while the parent forked it
    os.chdir(course)
    if _ZYGOTES[0]:  # what the pool left for the workers it forks
        adopt_zygotes(*_ZYGOTES)
    # one worker grades many notebooks: fork kernels and verdict processes warm (zygote.py)
    _API = nbgrader_api(Path(course), db_url, warm_start=True)
    if setup is not None:
        setup()


def worker_api():
    """In a grading worker: the NbGraderAPI ``start_grading_worker`` made for it."""
    return _API


def pool_job(student: str, assignment: str, autograde: bool, create: bool, then: Callable | None,
             args: tuple) -> JobResult:
    """One submission in a worker: its autograde (the pool's control first, if no worker ran
    it yet; nothing when it failed), then ``then`` when that worked."""
    if autograde:
        failed = _control_first(assignment)
        graded = JobResult(student, False, fault=failed) if failed else autograde_job(student, assignment, create)
    else:
        graded = JobResult(student, True)
    if then is not None and graded.success:
        graded.then = then(student, assignment, graded, *args)
    return graded


def _control_first(assignment: str) -> str:
    """Run the pool's control here if no worker has; its sentence when it failed, else ""."""
    state, sentence = _CONTROL
    if state is None:  # not a pool's worker
        return ""
    with state.get_lock():
        mine = state.value == NOT_RUN
        if mine:
            state.value = RUNNING
    if mine:
        result = control_job(assignment)
        if not result.passed:
            sentence.value = result.sentence().encode()[:(1 << 14) - 1]
        state.value = PASSED if result.passed else FAILED
    return sentence.value.decode(errors="replace") if state.value == FAILED else ""


def control_job(assignment: str) -> ControlResult:
    """The control submission, graded in this worker with its NbGraderAPI's configuration."""
    return run_control(Path(_API.coursedir.root), _API.config, assignment=assignment)


def _wait_for_control() -> None:
    """The gate before a grade is written (glue/recording.py): the pool's control passed."""
    state, sentence = _CONTROL
    deadline = time.monotonic() + CONTROL_WAIT_SECONDS
    while state is not None and state.value in (NOT_RUN, RUNNING):
        if time.monotonic() > deadline:
            raise GraderFault(f"the control submission did not finish within {CONTROL_WAIT_SECONDS} s")
        time.sleep(0.02)
    if state is not None and state.value == FAILED:
        raise GraderFault(sentence.value.decode(errors="replace"))


def autograde_job(student: str, assignment: str, create: bool = True) -> JobResult:
    started, cpu = time.monotonic(), time.process_time()
    set_gate(_wait_for_control)  # its grades are written once the pool's control passed
    try:
        result = _API.autograde(assignment, student, force=True, create=create)
        if not result["success"] and "database is locked" in (result.get("log") or ""):
            result = _API.autograde(assignment, student, force=True, create=create)  # one retry
    finally:
        set_gate(None)
    return JobResult(student, bool(result["success"]), seconds=time.monotonic() - started,
                     cpu_seconds=time.process_time() - cpu, log=failure_log(result, FULL_LOG),
                     fault=fault_in(result))


def feedback_job(student: str, assignment: str, graded: JobResult | None = None) -> JobResult:
    """The student's feedback page (a ``then``)."""
    cpu = time.process_time()
    result = _API.generate_feedback(assignment, student, force=True)
    return JobResult(student, bool(result["success"]), cpu_seconds=time.process_time() - cpu,
                     log=failure_log(result, 2000))


def ready() -> int:
    """A job that only makes the pool start a worker (``LocalPool.start(warm=True)``)."""
    time.sleep(0.5)  # long enough that each of the jobs sent at once gets a worker of its own
    return os.getpid()


FULL_LOG = 1 << 20  # characters of a failed job's log kept: the whole of it, in practice


def fault_in(result: dict) -> str:
    """A fault of the grader that failed the job (a GraderFault's message), or ""."""
    if result["success"]:
        return ""
    found = re.findall(r"GraderFault: (.+)", (result.get("log") or "") + str(result.get("error") or ""))
    return found[-1].strip() if found else ""


def failure_log(result: dict, characters: int) -> str:
    """The end of an nbgrader API call's log, and its error, when it failed."""
    return "" if result["success"] else (result.get("log") or "")[-characters:] + str(result.get("error") or "")


def let_go(zygotes) -> tuple:
    """This process's ends of the zygotes' sockets closed; a later pool starts its own."""
    for pair in zygotes:
        for zygote in pair:
            zygote.let_go()
    _ZYGOTES[:] = [(), None]
    return ()


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
