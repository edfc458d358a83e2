"""What needs grading: the incremental state of ``maxpool-grader grade``.

``.maxpool-grader/state.json`` in the course directory records, for each graded
submission, a digest of its files, and a digest of everything that decides a grade (the
source notebook, the config, the grader package, the gradebook URL, the due date). A
submission is graded again only when one of them changed (``force`` regrades all). The
state is written after each submission, so after Ctrl-C or a killed worker a re-run
grades exactly what is left; nbgrader's own ``--force`` semantics replace a half-graded
submission's rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..course.directory import course_path
from ..course.files import replace_file
from ..names import ASSIGNMENT, PACKAGE_DIR, package_files

STATE = Path(".maxpool-grader") / "state.json"


def _digest_files(root: Path, files) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def grader_digest(course: Path, db_url: str, assignment: str = ASSIGNMENT) -> str:
    """What decides a grade besides the submission: change any of it and all are regraded."""
    decisive = [course / "nbgrader_config.py", *sorted((course / "source" / assignment).rglob("*"))]
    digest = hashlib.sha256(db_url.encode())
    digest.update(str(_due_date(db_url, assignment)).encode())  # a new due date changes late penalties
    for path in decisive:
        if path.is_file():
            digest.update(str(path.relative_to(course)).encode() + b"\0" + path.read_bytes())
    for path in package_files():
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _due_date(db_url: str, assignment: str):
    try:
        with Gradebook(db_url) as gradebook:
            return gradebook.find_assignment(assignment).duedate
    except MissingEntry:
        return None


def folder_digest(folder: Path) -> str:
    return _digest_files(folder, [p for p in folder.rglob("*") if p.is_file()])


def submission_digest(course: Path, student: str, assignment: str = ASSIGNMENT) -> str:
    return folder_digest(course_path(course, "submitted", student, assignment))


def load_state(course: Path) -> dict:
    try:
        return json.loads((course / STATE).read_text())
    except (OSError, ValueError):
        return {}


def save_state(course: Path, state: dict) -> None:
    path = course / STATE
    path.parent.mkdir(exist_ok=True)
    # whole or not at all; not synced: a state lost to a power cut only grades some again
    replace_file(path, json.dumps(state, indent=1, sort_keys=True), sync=False)


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
                and (course_path(course, "autograded", student, assignment)).is_dir())
        (current if done else todo).append(student)
    return todo, current
