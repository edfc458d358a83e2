"""Grading a whole class: in parallel, incrementally, with progress.

nbgrader grades submissions one after another (its issue 174). Here worker processes
each hold one ``NbGraderAPI`` (no per-submission start-up of nbgrader) and autograde
one submission at a time, each in a fresh kernel, through nbgrader's own ``autograde``
with the course's ``nbgrader_config.py``: the grades are the ones plain
``nbgrader autograde`` records (a test compares them cell for cell).

Incremental: ``.maxpool-grader/state.json`` in the course directory records, for each
graded submission, a digest of its files and of everything that decides a grade (the
source notebook, the config, the grader package, the gradebook URL). A submission is
graded again only when that digest changed (``force`` regrades all). The state is
written after each submission, so after Ctrl-C or a killed worker a re-run grades
exactly what is left; nbgrader's own ``--force`` semantics replace a half-graded
submission's rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

ASSIGNMENT = "max_pool_backward"
STATE = Path(".maxpool-grader") / "state.json"
PACKAGE_DIR = Path(__file__).resolve().parent


# ------------------------------------------------------------------ what needs grading
def _digest_files(root: Path, files) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def grader_digest(course: Path, db_url: str, assignment: str = ASSIGNMENT) -> str:
    """What decides a grade besides the submission: change any of it and all are regraded."""
    decisive = [course / "nbgrader_config.py", *sorted((course / "source" / assignment).rglob("*")),
                *sorted(PACKAGE_DIR.rglob("*.py"))]
    digest = hashlib.sha256(db_url.encode())
    digest.update(str(_due_date(db_url, assignment)).encode())  # a new due date changes late penalties
    for path in decisive:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _due_date(db_url: str, assignment: str):
    from nbgrader.api import Gradebook, MissingEntry
    try:
        with Gradebook(db_url) as gradebook:
            return gradebook.find_assignment(assignment).duedate
    except MissingEntry:
        return None


def folder_digest(folder: Path) -> str:
    return _digest_files(folder, [p for p in folder.rglob("*") if p.is_file()])


def submission_digest(course: Path, student: str, assignment: str = ASSIGNMENT) -> str:
    return folder_digest(course / "submitted" / student / assignment)


def load_state(course: Path) -> dict:
    try:
        return json.loads((course / STATE).read_text())
    except (OSError, ValueError):
        return {}


def save_state(course: Path, state: dict) -> None:
    path = course / STATE
    path.parent.mkdir(exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(temporary, path)  # atomic: an interrupted run never leaves half a state


def save_timings(course: Path, timings: dict) -> None:
    """Seconds of the last run's phases (the benchmark reads them)."""
    path = course / STATE.parent / "last_run.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(timings, indent=1))


def students_to_grade(course: Path, state: dict, grader: str, force: bool,
                      assignment: str = ASSIGNMENT) -> tuple[list[str], list[str]]:
    """(to grade, up to date) among the folders of ``submitted/``."""
    submitted = course / "submitted"
    students = sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir()) \
        if submitted.is_dir() else []
    graded = state.get("submissions", {}) if state.get("grader") == grader else {}
    todo, current = [], []
    for student in students:
        done = (not force and graded.get(student) == submission_digest(course, student, assignment)
                and (course / "autograded" / student / assignment).is_dir())
        (current if done else todo).append(student)
    return todo, current


# ------------------------------------------------------------------ the workers
_API = None


def _start_worker(course: str, db_url: str) -> None:
    """Runs once in each worker process: one NbGraderAPI for all its submissions."""
    global _API
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
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
    config.SafeExecute.warm_start = config.OutOfProcessVerdicts.warm_start = True
    _API = NbGraderAPI(CourseDirectory(config=config), config=config)


def autograde_job(student: str, assignment: str) -> dict:
    started = time.monotonic()
    result = _API.autograde(assignment, student, force=True, create=True)
    if not result["success"] and "database is locked" in (result.get("log") or ""):
        result = _API.autograde(assignment, student, force=True, create=True)  # one retry
    return {"student": student, "success": bool(result["success"]),
            "seconds": time.monotonic() - started,
            "log": "" if result["success"] else (result.get("log") or "")[-4000:] + str(result.get("error") or "")}


def feedback_job(student: str, assignment: str) -> dict:
    result = _API.generate_feedback(assignment, student, force=True)
    return {"student": student, "success": bool(result["success"]),
            "log": "" if result["success"] else (result.get("log") or "")[-2000:]}


# ------------------------------------------------------------------ progress
class Progress:
    """A live bar (done/total, failures, ETA) on a terminal, plain lines otherwise."""

    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done, self.failures = total, label, 0, 0
        self.stream = stream or sys.stdout
        self.started = time.monotonic()
        self.live = None
        if self.stream.isatty() and total:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
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
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        print(f"[{self.label} {self.done}/{self.total}] {student}{took}"
              f"{'' if ok else ' FAILED'}; {self.failures} failed, ETA {eta:.0f} s",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


# ------------------------------------------------------------------ running the batch
@dataclass
class BatchResult:
    finished: list[dict] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> list[dict]:
        return [item for item in self.finished if not item["success"]]


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
        for attempt in range(2):
            if not remaining:
                break
            executor = ProcessPoolExecutor(max_workers=max(1, min(workers, len(remaining))),
                                           initializer=_start_worker, initargs=(str(course), db_url))
            try:
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
                        progress.advance(student, item["success"], item.get("seconds"))
            except KeyboardInterrupt:
                result.interrupted = True
                _stop(executor)
                return result
            finally:
                executor.shutdown(wait=not result.interrupted, cancel_futures=True)
        for student in remaining:  # the pool broke twice on these
            item = {"student": student, "success": False, "log": "a grading worker died twice"}
            result.finished.append(item)
            progress.advance(student, False)
    finally:
        progress.close()
    return result


def _stop(executor: ProcessPoolExecutor) -> None:
    """Kill the workers now (their kernels and sandboxes die with them)."""
    for process in list(getattr(executor, "_processes", {}).values()):
        try:
            process.kill()
        except (OSError, ValueError):
            pass
