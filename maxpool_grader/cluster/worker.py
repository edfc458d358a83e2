"""The worker's side of ``grade --cluster`` (cluster/coordinator.py): what a Dask worker is sent (the
course's ``Bundle``, a submission's files), what it checks of itself before grading
(``worker_status``), and the grading of one submission in a private course of its own
(``grade_submission``)."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import nbgrader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from ..backend.control import run_control
from ..backend.pool import FULL_LOG, failure_log, fault_in
from ..course.directory import course_config, use_nbgrader_environment
from ..course.jobs import JobResult
from ..names import ASSIGNMENT, PACKAGE_DIR, package_files
from ..sandbox import box, cgroups
from ..sandbox.filesystem import regular_files


class WorkerRefused(RuntimeError):
    """A worker that must not grade: another grader version, or no sandbox."""


@functools.lru_cache(maxsize=1)
def package_digest() -> str:
    """The grader's identity: every file of the package, and nbgrader's version. A worker
    grades only when its digest is the coordinator's. Taken once per process: a worker
    started before the grader was upgraded keeps the digest of the code it runs (restart
    the workers after an upgrade)."""
    digest = hashlib.sha256(f"nbgrader {nbgrader.__version__}\0".encode())
    for path in package_files():
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Bundle:
    """What a worker needs of the course: its configuration and source folder."""

    assignment: str
    config: bytes  # nbgrader_config.py
    source: tuple[tuple[str, bytes], ...]  # (path inside source/<assignment>/, bytes)
    grader: str  # package_digest() of the coordinator

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
    return Bundle(assignment, (course / "nbgrader_config.py").read_bytes(), files, package_digest())


def submission_files(folder: Path) -> dict[str, bytes]:
    """The regular files of a submission folder (links are not followed nor sent)."""
    return {relative: Path(host).read_bytes() for relative, host in regular_files(folder)}


_COURSES: dict[str, Path] = {}  # bundle digest -> this process's private course
_API = {}
_CONTROLS: dict = {}  # private course -> its control submission (backend/control.py), run once
_LOCK = threading.Lock()  # one submission at a time per process: nbgrader's API is not thread-safe


def worker_status(expected_grader: str) -> dict:
    """What a worker says of itself before it is given work (run on every worker)."""
    mine = package_digest()
    problems = []
    if mine != expected_grader:
        problems.append("it runs another version of the grader (install the coordinator's maxpool-grader "
                        "there, the same commit)")
    if not box.bwrap_works():
        problems.append("bubblewrap does not work there (apt-get install bubblewrap): it would grade unsandboxed")
    return {"ok": not problems, "problems": problems, "cgroup": cgroups.available(), "python": sys.version.split()[0]}


def _course_for(package: Bundle) -> tuple[Path, object]:
    """This worker process's private course of the bundle, made once."""
    key = package.digest
    if key in _COURSES:
        return _COURSES[key], _API[key]
    # distributed: 0.3 s to import, and the coordinator imports this module too (a worker has it already)
    from dask.distributed import get_worker
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
    use_nbgrader_environment()  # alembic for the new gradebook: in a --target install, DIR/bin
    config = course_config(course, f"sqlite:///{course / 'gradebook.db'}")
    config.SealedBox.warm_start = True
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    os.chdir(course)  # nbgrader's converters work relative to the course root
    made = api.generate_assignment(package.assignment, force=True)
    if not made["success"]:
        raise RuntimeError(f"the worker could not make the course's release: {made.get('log', '')[-2000:]}")
    _COURSES[key], _API[key] = course, api
    return course, api


def grade_submission(package: Bundle, student: str, files: dict[str, bytes]) -> JobResult:
    """Grade one submission on this worker; return its graded notebooks (name -> bytes)."""
    status = worker_status(package.grader)
    if not status["ok"]:
        raise WorkerRefused("; ".join(status["problems"]))
    with _LOCK:
        course, api = _course_for(package)
        os.chdir(course)
        if course not in _CONTROLS:  # this worker's control submission, before its first grading
            _CONTROLS[course] = run_control(course, api.config, assignment=package.assignment)
        if not _CONTROLS[course].passed:
            return JobResult(student, False, fault=_CONTROLS[course].sentence(),
                             worker=os.uname().nodename + f":{os.getpid()}")
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
    return JobResult(student, bool(result["success"]) and bool(notebooks), seconds=time.monotonic() - started,
                     notebooks=notebooks, log=failure_log(result, FULL_LOG), fault=fault_in(result),
                     worker=os.uname().nodename + f":{os.getpid()}")
