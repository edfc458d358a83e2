"""Grading past one machine: each submission graded by a worker of a Dask cluster.

``maxpool-grader grade --cluster tcp://HOST:8786`` sends each submission to a worker of
Dask's ``distributed`` scheduler instead of the local pool; everything else of the
command (incremental state, progress, feedback, CSV, report) stays on the machine that
runs it, the *coordinator*.

* **A worker needs no course folder.** The course's grading bundle (nbgrader_config.py,
  the source notebook folder, the grader's digest) goes to each worker once
  (``Client.scatter(broadcast=True)``); the worker makes a private course of it in its
  own local directory (``generate_assignment`` into its own SQLite gradebook), once per
  bundle. Each task carries one submission's regular files (links are never read) and
  its timestamp.
* **Each worker grades in its own sealed box**, with plain nbgrader's autograde and the
  course's configuration, exactly as the local pool does (sandbox.py, warm start).
  Only the graded notebook comes back.
* **The coordinator writes the gradebook**: it records each graded notebook with
  nbgrader's own preprocessors (``KeepHandGrades``, ``AssignLatePenalties``) into the
  gradebook it was given (SQLite, or the shared PostgreSQL server with ``--db``), and
  puts it in ``autograded/``. Workers never reach the gradebook.
* **Refused workers.** Before grading, every worker is asked for its grader digest (the
  package's code, nbgrader's version) and whether bubblewrap works there; a worker that
  differs or has no sandbox is named and gets no submission.
* **A lost worker** (machine gone, process killed): the scheduler gives its submissions
  to another worker (Dask's own rescheduling).

Start the scheduler and workers (each worker with one thread per process: nbgrader's
API is not thread-safe)::

    dask scheduler --port 8786
    dask worker tcp://HOST:8786 --nworkers <cores> --nthreads 1
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import shutil
import stat
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

ASSIGNMENT = "max_pool_backward"
PACKAGE_DIR = Path(__file__).resolve().parent


class WorkerRefused(RuntimeError):
    """A worker that must not grade: another grader version, or no sandbox."""


# ------------------------------------------------------------------ what workers must share
@functools.lru_cache(maxsize=1)
def grader_digest() -> str:
    """The grader's identity: every .py file of the package, and nbgrader's version. A worker
    grades only when its digest is the coordinator's. Taken once per process: a worker
    started before the grader was upgraded keeps the digest of the code it runs (restart
    the workers after an upgrade)."""
    import nbgrader
    digest = hashlib.sha256(f"nbgrader {nbgrader.__version__}\0".encode())
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Bundle:
    """What a worker needs of the course: its configuration and source folder."""

    assignment: str
    config: bytes  # nbgrader_config.py
    source: tuple[tuple[str, bytes], ...]  # (path inside source/<assignment>/, bytes)
    grader: str  # grader_digest() of the coordinator

    @property
    def digest(self) -> str:
        digest = hashlib.sha256(self.assignment.encode() + b"\0" + self.config + self.grader.encode())
        for name, data in self.source:
            digest.update(name.encode() + b"\0" + data)
        return digest.hexdigest()


def bundle(course: Path, assignment: str = ASSIGNMENT) -> Bundle:
    folder = course / "source" / assignment
    files = tuple((str(path.relative_to(folder)), path.read_bytes()) for path in sorted(folder.rglob("*"))
                  if path.is_file() and not path.is_symlink() and ".ipynb_checkpoints" not in path.parts)
    return Bundle(assignment, (course / "nbgrader_config.py").read_bytes(), files, grader_digest())


def submission_files(folder: Path) -> dict[str, bytes]:
    """The regular files of a submission folder (links are not followed nor sent)."""
    from .isolation.sandbox import submission_files as regular
    return {relative: Path(host).read_bytes() for relative, host in regular(folder)}


# ------------------------------------------------------------------ on a worker
_COURSES: dict[str, Path] = {}  # bundle digest -> this process's private course
_API = {}
_LOCK = threading.Lock()  # one submission at a time per process: nbgrader's API is not thread-safe


def worker_status(expected_grader: str) -> dict:
    """What a worker says of itself before it is given work (run on every worker)."""
    from .isolation import cgroups, sandbox
    mine = grader_digest()
    problems = []
    if mine != expected_grader:
        problems.append("it runs another version of the grader (install the coordinator's maxpool-grader "
                        "there, the same commit)")
    if not sandbox.bwrap_works():
        problems.append("bubblewrap does not work there (apt-get install bubblewrap): it would grade unsandboxed")
    return {"ok": not problems, "problems": problems, "cgroup": cgroups.available(), "python": sys.version.split()[0]}


def _course_for(package: Bundle) -> tuple[Path, object]:
    """This worker process's private course of the bundle, made once."""
    key = package.digest
    if key in _COURSES:
        return _COURSES[key], _API[key]
    from dask.distributed import get_worker
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader
    try:
        base = Path(get_worker().local_directory)
    except ValueError:  # not in a Dask worker (the tests call this directly)
        base = Path(os.environ.get("TMPDIR", "/tmp"))
    course = base / f"maxpool-course-{key[:16]}-{os.getpid()}"
    if course.exists():
        shutil.rmtree(course)
    (course / "source" / package.assignment).mkdir(parents=True)
    (course / "nbgrader_config.py").write_bytes(package.config)
    for name, data in package.source:
        target = course / "source" / package.assignment / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    config.SafeExecute.warm_start = config.OutOfProcessVerdicts.warm_start = True
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    os.chdir(course)  # nbgrader's converters work relative to the course root
    made = api.generate_assignment(package.assignment, force=True)
    if not made["success"]:
        raise RuntimeError(f"the worker could not make the course's release: {made.get('log', '')[-2000:]}")
    _COURSES[key], _API[key] = course, api
    return course, api


def grade_submission(package: Bundle, student: str, files: dict[str, bytes]) -> dict:
    """Grade one submission on this worker; return its graded notebooks (name -> bytes)."""
    status = worker_status(package.grader)
    if not status["ok"]:
        raise WorkerRefused("; ".join(status["problems"]))
    with _LOCK:
        course, api = _course_for(package)
        os.chdir(course)
        folder = course / "submitted" / student / package.assignment
        for step in ("submitted", "autograded"):
            shutil.rmtree(course / step / student, ignore_errors=True)
        folder.mkdir(parents=True)
        for relative, data in files.items():
            target = folder / relative
            if not target.resolve().is_relative_to(folder.resolve()):
                continue  # a name that would leave the folder
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        started = time.monotonic()
        result = api.autograde(package.assignment, student, force=True, create=True)
        graded = course / "autograded" / student / package.assignment
        notebooks = {path.name: path.read_bytes() for path in sorted(graded.glob("*.ipynb"))} \
            if graded.is_dir() else {}
        for step in ("submitted", "autograded"):
            shutil.rmtree(course / step / student, ignore_errors=True)
    return {"student": student, "success": bool(result["success"]) and bool(notebooks),
            "seconds": time.monotonic() - started, "notebooks": notebooks,
            "log": "" if result["success"] else (result.get("log") or "")[-4000:] + str(result.get("error") or ""),
            "worker": os.uname().nodename + f":{os.getpid()}"}


# ------------------------------------------------------------------ on the coordinator
def record(course: Path, db_url: str, assignment: str, student: str, notebooks: dict[str, bytes]) -> None:
    """Save a worker's graded notebooks as nbgrader autograde would have: the submission and
    its grades in the gradebook (nbgrader's preprocessors, the course's configuration),
    the notebooks and the submission's other files in autograded/."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties
    from traitlets.config.loader import PyFileConfigLoader
    from .autograde import KeepHandGrades
    source = course / "submitted" / student / assignment
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url
    from nbgrader.coursedir import CourseDirectory
    timestamp = CourseDirectory(config=config).get_existing_timestamp(str(source))
    with Gradebook(db_url) as book:
        book.update_or_create_student(student)
        if timestamp:
            book.update_or_create_submission(assignment, student, timestamp=timestamp)
        else:
            book.update_or_create_submission(assignment, student)
    target = course / "autograded" / student / assignment
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
              assignment: str = ASSIGNMENT):
    """Grade ``students`` on the cluster at ``address`` (see the module doc); returns what
    ``parallel.run_batch`` returns, so the rest of ``grade`` is the same."""
    import uuid
    from dask.distributed import Client, as_completed
    from .parallel import BatchResult, Progress
    result = BatchResult()
    if not students:  # nothing changed: no need for the cluster
        return result
    try:
        client = Client(address, timeout=30)
    except OSError as problem:
        raise WorkerRefused(f"no Dask scheduler answers at {address} ({problem}); start one with "
                            "'dask scheduler' and workers with 'dask worker ADDRESS --nthreads 1'") from None
    with client:
        package = bundle(course, assignment)
        good, refused = check_workers(client, package.grader)
        for address_, problems in sorted(refused.items()):
            print(f"worker {address_} refused: {'; '.join(problems)}", file=sys.stderr, flush=True)
        if not good:
            raise WorkerRefused(f"no worker of {address} may grade ({len(refused)} refused): see above")
        print(f"cluster {address}: {len(good)} worker(s) grade", flush=True)
        shared = client.scatter(package, broadcast=True, workers=good)
        run = uuid.uuid4().hex[:8]
        futures = {client.submit(grade_submission, shared, student,
                                 submission_files(course / "submitted" / student / assignment),
                                 key=f"maxpool-grade-{run}-{student}", workers=good, allow_other_workers=False,
                                 pure=False): student for student in students}
        progress = Progress(len(futures), "autograde")
        # PostgreSQL takes writes from many processes: the coordinator records with one process
        # per core (a record is ~0.15 s of ORM work); SQLite has one writer
        recorders = ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=multiprocessing.get_context(
            "spawn")) if db_url.startswith("postgres") else None  # spawn: Dask's threads run here
        recording: dict = {}

        def finish(item: dict) -> None:
            result.finished.append(item)
            if on_done is not None:
                on_done(item)
            progress.advance(item["student"], item["success"], item.get("seconds"))

        def finish_recorded(block: bool = False) -> None:
            for done in list(recording) if block else [future for future in recording if future.done()]:
                item = recording.pop(done)
                try:
                    item["record_seconds"] = done.result()
                except Exception as problem:  # noqa: BLE001
                    item.update(success=False, log=f"recording the grades failed: {type(problem).__name__}: {problem}")
                finish(item)

        try:
            for future in as_completed(futures):
                student = futures[future]
                try:
                    item = future.result()
                    notebooks = item.pop("notebooks", None)
                    if item["success"] and recorders is not None:
                        recording[recorders.submit(record_job, str(course), db_url, assignment, student,
                                                   notebooks)] = item
                        finish_recorded()
                        continue
                    if item["success"]:
                        item["record_seconds"] = record_job(str(course), db_url, assignment, student, notebooks)
                except Exception as problem:  # noqa: BLE001  one submission's trouble, not the batch's
                    item = {"student": student, "success": False,
                            "log": f"graded on the cluster: {type(problem).__name__}: {problem}"}
                finish(item)
                finish_recorded()
            finish_recorded(block=True)
        except KeyboardInterrupt:
            result.interrupted = True
            client.cancel(list(futures))
        finally:
            if recorders is not None:
                recorders.shutdown(wait=not result.interrupted, cancel_futures=True)
            progress.close()
    return result
