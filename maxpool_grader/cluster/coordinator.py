"""Grading past one machine: each submission graded by a worker of a Dask cluster.

``maxpool-grader grade --cluster tls://HOST:8786`` sends each submission to a worker of
Dask's ``distributed`` scheduler instead of the local pool; everything else of the
command (incremental state, progress, feedback, CSV, report) stays on the machine that
runs it, the *coordinator*.

* **A worker needs no course folder.** The course's grading bundle (nbgrader_config.py,
  the source notebook folder, the grader's digest) goes with each task; the worker makes
  a private course of it in its own local directory (``generate_assignment`` into its own
  SQLite gradebook), once per bundle. Each task also carries one submission's regular
  files (links are never read) and its timestamp.
* **Each worker grades in its own sealed box**, with plain nbgrader's autograde and the
  course's configuration, exactly as the local pool does (sandbox/box.py, warm start).
  Only the graded notebook comes back.
* **The coordinator writes the gradebook**: it records each graded notebook with
  nbgrader's own preprocessors (``KeepHandGrades``, ``AssignLatePenalties``) into the
  gradebook it was given (SQLite, or the shared PostgreSQL server with ``--db``), and
  puts it in ``autograded/``. Workers never reach the gradebook.
* **Refused workers.** Before grading, every worker is asked for its grader digest (the
  package's code, nbgrader's version) and whether bubblewrap works there; a worker that
  differs or has no sandbox is named and gets no submission.
* **A lost worker** (machine gone, process killed): the scheduler gives its submissions
  to another worker (Dask's own rescheduling). Each task carries the course's bundle itself
  (about 70 KB), not a scattered copy: Dask's memory manager keeps one replica of scattered
  data, and losing the worker that held it cancelled every task that needed it ("already
  forgotten"); a task's own data is rescheduled with it (serve/grading_job.py's RemoteGrading too).

Start the scheduler and workers with the course's certificates (cluster/tls.py: only
the coordinator may reach them), each worker with one thread per process (nbgrader's API
is not thread-safe)::

    dask scheduler --port 8786 --dashboard-address 127.0.0.1:8787 \\
        --tls-ca-file ca.pem --tls-cert scheduler.pem --tls-key scheduler-key.pem
    dask worker tls://HOST:8786 --nworkers <cores> --nthreads 1 --no-dashboard \\
        --tls-ca-file ca.pem --tls-cert worker.pem --tls-key worker-key.pem

(a worker's own dashboard would listen on every address, whatever its log says).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import stat
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from ..course.directory import course_config, course_path, say
from ..course.jobs import JobResult
from ..names import ASSIGNMENT
from .worker import WorkerRefused, bundle, grade_submission, submission_files, worker_status


def record(course: Path, db_url: str, assignment: str, student: str, notebooks: dict[str, bytes]) -> None:
    """Save a worker's graded notebooks as nbgrader autograde would have: the submission and
    its grades in the gradebook (nbgrader's preprocessors, the course's configuration),
    the notebooks and the submission's other files in autograded/."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    from ..glue.keephandgrades import KeepHandGrades
    source = course_path(course, "submitted", student, assignment)
    config = course_config(course, db_url)
    from nbgrader.coursedir import CourseDirectory
    timestamp = CourseDirectory(config=config).get_existing_timestamp(str(source))
    with Gradebook(db_url) as book:
        book.update_or_create_student(student)
        if timestamp:
            book.update_or_create_submission(assignment, student, timestamp=timestamp)
        else:
            book.update_or_create_submission(assignment, student)
    target = course_path(course, "autograded", student, assignment)
    if target.exists():
        for path in target.rglob("*"):
            if path.is_file():
                path.chmod(stat.S_IWUSR | stat.S_IRUSR)
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for relative, data in submission_files(source).items():  # as nbgrader copies them
        if not relative.endswith(".ipynb"):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            (target / relative).write_bytes(data)
    for name, data in notebooks.items():
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        resources = {"nbgrader": {"notebook": Path(name).stem, "assignment": assignment, "student": student,
                                  "db_url": db_url}}
        for step in (KeepHandGrades, AssignLatePenalties):
            nb, resources = step(config=config).preprocess(nb, resources)
        path = target / name
        nbformat.write(nb, path)
        path.chmod(0o444)  # as nbgrader leaves autograded notebooks


def record_job(course: str, db_url: str, assignment: str, student: str, notebooks: dict[str, bytes]) -> float:
    """``record``, timed (the gradebook's share of a submission)."""
    started = time.monotonic()
    record(Path(course), db_url, assignment, student, notebooks)
    return time.monotonic() - started


def check_workers(client, grader: str) -> tuple[list[str], dict[str, list[str]]]:
    """(addresses of the workers that may grade, {address: why not} of the others)."""
    try:
        statuses = client.run(worker_status, grader, on_error="return")
    except TypeError:  # an older distributed without on_error
        statuses = client.run(worker_status, grader)
    good, refused = [], {}
    for address, status in statuses.items():
        if isinstance(status, BaseException):
            refused[address] = [f"it cannot run the grader ({type(status).__name__}: {status})"]
        elif status["ok"]:
            good.append(address)
        else:
            refused[address] = status["problems"]
    return sorted(good), refused


def run_batch(course: Path, db_url: str, students: list[str], address: str, on_done=None,
              assignment: str = ASSIGNMENT, security=None):
    """Grade ``students`` on the cluster at ``address`` (see the module doc), connecting with
    ``security`` (tls.coordinator_security); returns what ``pool.run_batch``
    returns, so the rest of ``grade`` is the same."""
    from dask.distributed import Client, as_completed

    from ..backend.pool import BatchResult
    if not students:  # nothing changed: no need for the cluster
        return BatchResult()
    try:
        client = Client(address, timeout=30, security=security)
    except OSError as problem:  # with TLS also: a certificate either side refuses
        raise WorkerRefused(f"no Dask scheduler answers at {address} ({problem}); start one with "
                            "'dask scheduler' and workers with 'dask worker ADDRESS --nthreads 1' "
                            "(docs/operations.md#cluster; with tls:// both need the course's certificates)") from None
    with client:
        futures = _submit(client, course, students, address, assignment)
        collector = _Collector(course, db_url, assignment, len(futures), on_done)
        try:
            for future in as_completed(futures):
                collector.take(futures[future], future)
            collector.drain()
        except KeyboardInterrupt:
            collector.result.interrupted = True
            client.cancel(list(futures))
        finally:
            collector.close()
    return collector.result


def _submit(client, course: Path, students: list[str], address: str, assignment: str) -> dict:
    """One task per submission, carrying the bundle, for the workers that may grade (the
    others are named)."""
    import uuid
    package = bundle(course, assignment)
    good, refused = check_workers(client, package.grader)
    for worker, problems in sorted(refused.items()):
        print(f"worker {worker} refused: {'; '.join(problems)}", file=sys.stderr, flush=True)
    if not good:
        raise WorkerRefused(f"no worker of {address} may grade ({len(refused)} refused): see above")
    say(f"cluster {address}: {len(good)} worker(s) grade")
    run = uuid.uuid4().hex[:8]
    return {client.submit(grade_submission, package, student,
                          submission_files(course_path(course, "submitted", student, assignment)),
                          key=f"maxpool-grade-{run}-{student}", workers=good, allow_other_workers=False,
                          pure=False): student for student in students}


class _Collector:
    """Takes the workers' results as they come: records them in the gradebook (on
    PostgreSQL with one recording process per core: a record is ~0.15 s of ORM work;
    SQLite has one writer), then reports each one done."""

    def __init__(self, course: Path, db_url: str, assignment: str, total: int, on_done):
        from ..backend.pool import BatchResult, Progress
        self.course, self.db_url, self.assignment, self.on_done = course, db_url, assignment, on_done
        self.result, self.progress = BatchResult(), Progress(total, "autograde")
        self.recorders = ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=multiprocessing.get_context(
            "spawn")) if db_url.startswith("postgres") else None  # spawn: Dask's threads run here
        self.recording: dict = {}

    def take(self, student: str, future) -> None:
        try:
            item = future.result()
            notebooks, item.notebooks = item.notebooks, None  # recorded here, not kept
            if item.success and self.recorders is not None:
                self.recording[self.recorders.submit(record_job, str(self.course), self.db_url, self.assignment,
                                                     student, notebooks)] = item
                self.drain(block=False)
                return
            if item.success:
                item.record_seconds = record_job(str(self.course), self.db_url, self.assignment, student, notebooks)
        except Exception as problem:  # noqa: BLE001  one submission's trouble, not the batch's
            item = JobResult(student, False, log=f"graded on the cluster: {type(problem).__name__}: {problem}")
        self._finish(item)
        self.drain(block=False)

    def drain(self, block: bool = True) -> None:
        for done in list(self.recording) if block else [future for future in self.recording if future.done()]:
            item = self.recording.pop(done)
            try:
                item.record_seconds = done.result()
            except Exception as problem:  # noqa: BLE001
                item.failing(f"recording the grades failed: {type(problem).__name__}: {problem}")
            self._finish(item)

    def _finish(self, item: JobResult) -> None:
        self.result.finished.append(item)
        if self.on_done is not None:
            self.on_done(item)
        self.progress.advance(item.student, item.success, item.seconds)

    def close(self) -> None:
        if self.recorders is not None:
            self.recorders.shutdown(wait=not self.result.interrupted, cancel_futures=True)
        self.progress.close()
