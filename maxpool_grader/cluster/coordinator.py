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
* **The coordinator writes the gradebook**: its own pool of local workers (the one the
  local backend is) records each graded notebook with nbgrader's own preprocessors
  (``KeepHandGrades``, ``AssignLatePenalties``) into the gradebook it was given (SQLite,
  or the shared PostgreSQL server with ``--db``), puts it in ``autograded/``, and makes
  the student's feedback right after. Dask workers never reach the gradebook.
* **Refused workers.** Before grading, every worker is asked for its grader digest (the
  package's code, nbgrader's version) and whether bubblewrap works there; a worker that
  differs or has no sandbox is named and gets no submission.
* **A lost worker** (machine gone, process killed): the scheduler gives its submissions
  to another worker (Dask's own rescheduling). Each task carries the course's bundle itself
  (about 70 KB), not a scattered copy: Dask's memory manager keeps one replica of scattered
  data, and losing the worker that held it cancelled every task that needed it ("already
  forgotten"); a task's own data is rescheduled with it.

Start the scheduler and workers with the course's certificates (cluster/tls.py: only
the coordinator may reach them), each worker with one thread per process (nbgrader's API
is not thread-safe)::

    dask scheduler --port 8786 --dashboard-address 127.0.0.1:8787 \\
        --tls-ca-file ca.pem --tls-cert scheduler.pem --tls-key scheduler-key.pem
    dask worker tls://HOST:8786 --nworkers <cores> --nthreads 1 --no-dashboard \\
        --dashboard-address 127.0.0.1:0 \\
        --tls-ca-file ca.pem --tls-cert worker.pem --tls-key worker-key.pem

(``--no-dashboard`` turns off the dashboard's pages only: each worker still serves plain
HTTP, ``/health`` and ``/metrics``, on every address unless ``--dashboard-address`` puts
it on loopback, whatever its log says; docs/operations.md, tests/test_cluster.py).
"""

from __future__ import annotations

import shutil
import stat
import sys
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.preprocessors import AssignLatePenalties

from ..backend.interface import GradingBackend, WorkerDied
from ..backend.pool import ctrl_c_held, worker_api
from ..course.directory import course_path, say
from ..course.jobs import JobResult
from ..glue.keephandgrades import KeepHandGrades
from ..names import ASSIGNMENT
from .worker import WorkerRefused, bundle, grade_submission, submission_files, worker_status


def record(api, assignment: str, student: str, notebooks: dict[str, bytes]) -> None:
    """Save a worker's graded notebooks as nbgrader autograde would have: the submission and
    its grades in the gradebook (nbgrader's preprocessors, with the configuration ``api``, a
    local worker's NbGraderAPI, loaded once), the notebooks and the submission's other files
    in autograded/."""
    course, db_url, config = Path(api.coursedir.root), api.coursedir.db_url, api.config
    source = course_path(course, "submitted", student, assignment)
    timestamp = api.coursedir.get_existing_timestamp(str(source))
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


class DaskCluster(GradingBackend):
    """The grading backend on the Dask cluster at ``address`` (see the module doc), reached
    with ``security`` (tls.coordinator_security). Each graded notebook is recorded, and its
    ``then`` run, by ``local`` (this machine's pool): the gradebook never leaves this machine."""

    def __init__(self, course: Path, address: str, local: GradingBackend, assignment: str = ASSIGNMENT,
                 security=None):
        self.course, self.address, self.local, self.assignment = course, address, local, assignment
        self.security, self.client, self.good, self.package = security, None, [], None
        self.futures: set = set()  # the Dask futures not done yet (stop cancels them)

    @property
    def capacity(self) -> int:
        """The Dask workers' submissions and those the local pool is recording: while it records
        a worker's last one (and makes its feedback), that worker grades the next."""
        return max(1, len(self.good)) + self.local.capacity

    def start(self, warm: bool = False) -> None:
        """Connect, and ask every worker whether it may grade (WorkerRefused when none may)."""
        if self.client is not None:
            return
        from dask.distributed import Client  # distributed: 0.3 s to import, and only for --cluster
        try:
            with ctrl_c_held():  # the client's threads never take a Ctrl-C
                self.client = Client(self.address, timeout=30, security=self.security)
        except OSError as problem:  # with TLS also: a certificate either side refuses
            raise WorkerRefused(f"no Dask scheduler answers at {self.address} ({problem}); start one with "
                                "'dask scheduler' and workers with 'dask worker ADDRESS --nthreads 1' "
                                "(docs/operations.md#cluster; with tls:// both need the course's certificates)"
                                ) from None
        # each task carries the bundle itself (70 KB), not a scattered copy: Dask's memory manager
        # keeps one replica of scattered data, and losing the worker that holds it would cancel
        # every task that needs it ("already forgotten"); a task's own data is rescheduled with it
        self.package = bundle(self.course, self.assignment)
        self._wait_for_a_worker()
        self.good, refused = check_workers(self.client, self.package.grader)
        for worker, problems in sorted(refused.items()):
            print(f"worker {worker} refused: {'; '.join(problems)}", file=sys.stderr, flush=True)
        if not self.good:
            self.stop()
            raise WorkerRefused(f"no worker of {self.address} may grade ({len(refused)} refused): see above")
        say(f"cluster {self.address}: {len(self.good)} worker(s) grade")
        # the local workers forked now, from this thread: not later from Dask's, whose results they take
        self.local.start(warm=True)

    def _wait_for_a_worker(self, seconds: float = 15) -> None:
        """A worker started just before the run may not have reached the scheduler yet: wait for
        one a little, then say plainly that none is connected (not "none may grade")."""
        try:
            self.client.wait_for_workers(1, timeout=seconds)
        except (TimeoutError, OSError):
            self.stop()
            raise WorkerRefused(f"no worker is connected to the Dask scheduler at {self.address} (waited "
                                f"{seconds:.0f} s); start workers with 'dask worker {self.address} --nthreads 1' "
                                "(docs/operations.md#cluster)") from None

    def submit(self, student: str, *, autograde: bool = True, then=None, args: tuple = ()) -> Future:
        if not autograde:
            return self.local.submit(student, autograde=False, then=then, args=args)
        self.start()
        files = submission_files(course_path(self.course, "submitted", student, self.assignment))
        remote = self.client.submit(grade_submission, self.package, student, files, workers=self.good, pure=False,
                                    key=f"maxpool-grade-{student}-{uuid.uuid4().hex[:8]}", allow_other_workers=False)
        self.futures.add(remote)
        outer: Future = Future()
        remote.add_done_callback(lambda done: self._graded(done, student, then, args, outer))
        return outer

    def _graded(self, remote, student: str, then, args: tuple, outer: Future) -> None:
        """A worker's graded notebooks: recorded, and ``then`` run, by the local pool."""
        self.futures.discard(remote)
        try:
            item = remote.result()
        except Exception as problem:  # noqa: BLE001  a lost worker, a cancelled task: this submission's
            item = JobResult(student, False, log=f"graded on the cluster: {type(problem).__name__}: {problem}")
        if not item.success or outer.cancelled():
            outer.cancelled() or outer.set_result(item)
            return
        notebooks, item.notebooks = item.notebooks, None  # recorded there, not kept
        try:
            recorded = self.local.submit(student, autograde=False, then=record_then, args=(item, notebooks, then, args))
        except RuntimeError as problem:  # the local pool is stopping
            outer.set_exception(WorkerDied(str(problem)))
            return
        recorded.add_done_callback(lambda done: _pass_on(done, outer))

    def stop(self, now: bool = False) -> None:
        if self.client is not None:
            if now:
                self.client.cancel(list(self.futures))
            self.futures.clear()
            self.client.close()
            self.client = None
        self.local.stop(now)


def record_then(student: str, assignment: str, placeholder: JobResult, graded: JobResult, notebooks: dict,
                then, args: tuple) -> JobResult:
    """In a local worker: the notebooks a Dask worker graded recorded, then ``then`` run."""
    started = time.monotonic()
    try:
        record(worker_api(), assignment, student, notebooks)
    except Exception as problem:  # noqa: BLE001  one submission's trouble
        return graded.failing(f"recording the grades failed: {type(problem).__name__}: {problem}")
    graded.record_seconds = time.monotonic() - started
    if then is not None:
        graded.then = then(student, assignment, graded, *args)
    return graded


def _pass_on(done: Future, outer: Future) -> None:
    """The local pool's answer (a placeholder holding the graded result) handed on."""
    if outer.cancelled():
        return
    if done.cancelled():
        outer.set_exception(WorkerDied("stopped"))
    elif done.exception() is not None:
        outer.set_exception(done.exception())
    else:
        outer.set_result(done.result().then)
