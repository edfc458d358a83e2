"""The instructor's policy for ``maxpool-grader serve`` (``c.Serve`` in nbgrader_config.py),
and the checks every attempt passes before it is queued: the roster, the deadline, the
attempt limits (an attempt over a limit is refused at once, with the time the next one is
possible), the size, and whether it is this assignment's notebook at all. A refusal is
``Refused``: the message for the student and the HTTP status."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from traitlets import Enum, Float, Int, List, Unicode
from traitlets.config import Configurable

from ..course.directory import read_course_config
from ..course.roster import read_roster
from ..glue.deadline import deadline as course_deadline
from ..names import FORMAT_KEY, SOLUTION_CELL, STUDENT_ID
from .queue import Queue

FEEDBACK_LEVELS = ("scores", "mistakes", "reports")
# 'everything', its name until 2026-11, is read as 'reports': a page before the final feedback never
# showed everything (no Part A answer, no full explanations), and the name said it did
FORMER_LEVELS = {"everything": "reports"}
DEADLINE_FRESH = 5.0  # seconds a due date read from the gradebook is used before it is read again
NOT_ON_ROSTER = ("You are not on this course's roster (any more), so the service takes no submission from you. "
                 "If that is a mistake, ask your instructor.")


class Serve(Configurable):
    """The policy of ``maxpool-grader serve`` (feedback while the assignment is open)."""

    attempts_per_hour = Int(3, help=(
        "Graded attempts a student may make in any 60 minutes; one more is refused at once, with the time "
        "the next is possible.")).tag(config=True, unit="attempts")
    attempts_per_day = Int(10, help=(
        "Graded attempts a student may make in any 24 hours.")).tag(config=True, unit="attempts")
    before_deadline = Enum(FEEDBACK_LEVELS + tuple(FORMER_LEVELS), default_value="reports", help=(
        "What the feedback shows before the deadline: 'scores' (each test's points), 'mistakes' (the "
        "points and, for a failed test, the mistake found) or 'reports' (the feedback page: each failed "
        "test's report, with the smallest input the function gets wrong, the expected and the student's "
        "dx, and what their code does). None shows Part A's answer or the full explanations: the "
        "final feedback the instructor releases does. After the deadline it is 'reports' "
        "('everything' is read as 'reports').")).tag(config=True, unit="")
    counts = Enum(("best", "latest"), default_value="best", help=(
        "Which graded attempt counts at the deadline: 'best' (the best Part B score, the latest of equal "
        "ones: an attempt that scores less never takes the place of a better one) or 'latest' (the latest, "
        "whatever its score). The gradebook, submitted/ and autograded/ always hold the attempt that counts, "
        "so grade --force and the LMS agree with the pages (serve/standing.py).")).tag(config=True, unit="")
    deadline = Unicode("", help=(
        "The last moment a submission is taken, e.g. '2026-12-01 23:59' (UTC) or 2026-12-01T23:59+01:00; "
        "empty: the assignment's due date in the gradebook (none: no deadline).")).tag(config=True, unit="")
    max_upload = Int(2048, help="The largest notebook the service takes, upload or exchange.").tag(
        config=True, unit="KiB")
    max_cells = Int(300, help=(
        "The most cells a notebook the service takes may have (the assignment has about 20): one of "
        "thousands of cells would hold a grading worker for a minute. More is refused at once, with the "
        "reason.")).tag(config=True, unit="cells")
    forgeries_per_hour = Int(3, help=(
        "Submissions through the exchange made in another student's name that the service records per account "
        "in any 60 minutes (each is the forger's record, shown on the live view); more are not read, and the "
        "instructor is told once.")).tag(config=True, unit="submissions")
    poll_interval = Float(1.0, help="How often the exchange's inbound folder is looked at.").tag(config=True, unit="s")
    hub_instructors = List(Unicode(), default_value=[], help=(
        "With 'serve --hub-login': the JupyterHub users who, signed in, see the instructor's live view "
        "instead of the student's page.")).tag(config=True, unit="")


def load_settings(course: Path) -> Serve:
    return Serve(config=read_course_config(course))


class Refused(Exception):
    """An attempt the policy or the checks refuse: the message for the student, the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Policy:
    """The service's checks: ``settings`` (``c.Serve``), the roster of ``course`` and the
    gradebook at ``db_url``, the ``assignment`` taken, the ``queue`` the attempts so far are
    counted in and an accepted one goes to; ``on_queued`` is called after one is queued (it
    wakes the service's hand-out loop)."""

    def __init__(self, settings: Serve, *, course: Path, db_url: str, assignment: str, queue: Queue,
                 on_queued: Callable[[], None]):
        self.settings, self.course, self.db_url, self.assignment = settings, course, db_url, assignment
        self.queue, self.on_queued = queue, on_queued
        self._deadline_read: tuple[float, datetime | None] | None = None  # (when, what): deadline()
        self._roster_read: tuple[tuple, frozenset] | None = None  # (the file's stamp, its ids): _roster_file()

    def deadline(self) -> datetime | None:
        """The deadline, read from the gradebook at most every DEADLINE_FRESH seconds: every
        page and every attempt asks (a student's waiting page refreshes each second), and the
        instructor may move the due date while the service runs."""
        read = self._deadline_read
        if read is None or time.monotonic() - read[0] > DEADLINE_FRESH:
            read = self._deadline_read = (time.monotonic(),
                                          course_deadline(self.settings.deadline, self.db_url, self.assignment))
        return read[1]

    def open_now(self, now: float | None = None) -> bool:
        deadline = self.deadline()
        return deadline is None or (time.time() if now is None else now) <= deadline.timestamp()

    def is_student(self, name: str) -> bool:
        """Whether ``name`` is on the roster now: a student of the gradebook and, when the course
        has a roster.csv, of that file too (removing a row ends their access within a request).
        Asked at every sign-in, page, upload and exchange submission."""
        if not STUDENT_ID.fullmatch(name) or name not in self._roster_file():
            return False
        with Gradebook(self.db_url) as gradebook:
            try:
                gradebook.find_student(name)
            except MissingEntry:
                return False
        return True

    def _roster_file(self):
        """The ids of roster.csv, read again when it changes (everyone, when there is none)."""
        path = self.course / "roster.csv"
        try:
            found = path.stat()
        except OSError:
            return _EVERYONE
        stamp = found.st_mtime_ns, found.st_size, found.st_ino
        cached = self._roster_read
        if cached is None or cached[0] != stamp:
            cached = self._roster_read = (stamp, roster_ids(path))
        return cached[1]

    def level(self) -> str:
        """What the feedback shows before the deadline (``c.Serve.before_deadline``, by its name now)."""
        return FORMER_LEVELS.get(self.settings.before_deadline, self.settings.before_deadline)

    def feedback_level(self) -> str:
        """What the feedback shows now: the policy's level before the deadline, 'reports' after it."""
        return self.level() if self.open_now() else "reports"

    def admit(self, student: str, now: float | None = None, way: str = "web") -> None:
        """Refuse (``Refused``) an attempt the policy does not allow now; ``way`` is how it came
        (an upload of the web page, or a Submit through the exchange), which the refusal names."""
        now = time.time() if now is None else now
        deadline = self.deadline()
        if deadline is not None and now > deadline.timestamp():
            raise Refused(f"The deadline has passed ({when_text(deadline.timestamp())}): no more submissions are "
                          "taken. Your feedback pages say which of your attempts counts.", 403)
        for _made, limit, span, possible in self.usage(student, now):
            if possible is not None:
                minutes = max(1, int(-(-(possible - now) // 60)))
                raise Refused(f"You have used your {limit} graded attempts of the last {span}. Your next attempt is "
                              f"possible at {when_text(possible)} (in {minutes} minute{'s' if minutes != 1 else ''}). "
                              f"{NOT_TAKEN[way]}", 429)

    def usage(self, student: str, now: float):
        """Per limit: (attempts counted in it at ``now``, the limit, its span, when the next is possible or None)."""
        for limit, window, span in ((self.settings.attempts_per_hour, 3600, "hour"),
                                    (self.settings.attempts_per_day, 86400, "24 hours")):
            used = self.queue.counted_since(student, now - window)
            yield len(used), limit, span, (used[len(used) - limit] + window if len(used) >= limit else None)

    def too_large(self, size: int, way: str = "web") -> Refused:
        """The refusal of a file of ``size`` bytes (its real size: the web way's Content-Length,
        the exchange's file size), above ``max_upload``."""
        again = "upload it again" if way == "web" else "save it and Submit again"
        return Refused(f"The file is too large ({size_text(size)}; the limit is {self.settings.max_upload} KiB). "
                       f"Clear your outputs (Kernel > Restart Kernel and Clear Outputs of All Cells) and {again}.",
                       413)

    def refuse(self, student: str, refusal: Refused, way: str = "web") -> Refused:
        """Record a refusal for the instructor's view; returns it, to be raised."""
        self.queue.add(student, self.assignment, way, None, status="refused", message=str(refusal))
        return refusal

    def check_notebook(self, content: bytes, way: str = "web") -> bytes:
        """Refuse what is not this assignment's notebook, or too large; return the notebook to
        grade: as it came, or one of nbformat 3 converted to 4, as Jupyter converts it when it
        opens one (graded, and counted, like any other). A file that nbformat cannot read, or
        whose cells are not cells, is refused, and not counted, however it names its cells."""
        if len(content) > self.settings.max_upload * 1024:
            raise self.too_large(len(content), way)
        send = "upload" if way == "web" else "submit"
        not_a_notebook = Refused(f"This is not a Jupyter notebook (.ipynb): {send} the notebook file of the "
                                 f"assignment, {self.assignment}.ipynb.", 400)
        try:
            text = content.decode("utf-8")
            raw = json.loads(text)
            cells = raw["cells"] if raw.get("nbformat", 4) >= 4 else [
                cell for sheet in raw["worksheets"] for cell in sheet["cells"]]
            count = len(cells)
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            raise not_a_notebook from None
        if count > self.settings.max_cells:  # before the format is checked: counting is quick
            raise Refused(f"Your notebook has {count} cells; the service takes at most {self.settings.max_cells} "
                          "(the assignment has about 20). Delete the cells you added for trying things out, "
                          f"or merge them, and {send} it again.", 413)
        try:
            with warnings.catch_warnings():  # nbformat's warnings of a student's file: not the service's to print
                warnings.simplefilter("ignore")
                notebook = nbformat.reads(text, as_version=4)
            _check_cells(notebook.cells)
        except Exception as problem:  # noqa: BLE001  nbformat's readers raise many kinds on a hostile file
            raise Refused(f"{not_a_notebook} Its file does not follow the notebook format "
                          f"({_first_line(problem)}).", 400) from None
        ids = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in notebook.cells}
        if SOLUTION_CELL not in ids:
            raise Refused(f"This notebook is not the {self.assignment} assignment (its cell "
                          f"'{SOLUTION_CELL}' is missing): {send} {self.assignment}.ipynb as you fetched it, "
                          "with your answers.", 400)
        if raw.get("nbformat") == 4:
            return content
        notebook.metadata[FORMAT_KEY] = raw.get("nbformat")  # nbformat's writer drops orig_nbformat: the note's
        return nbformat.writes(notebook).encode()

    def submit(self, student: str, content: bytes, way: str = "web") -> int:
        """Check and queue an upload; a refused one is recorded (for the instructor) and raised."""
        try:
            if not self.is_student(student):
                raise Refused(NOT_ON_ROSTER, 403)
            content = self.check_notebook(content)
            self.admit(student)
        except Refused as refusal:
            raise self.refuse(student, refusal, way) from None
        attempt_id = self.queue.add(student, self.assignment, way, content)
        self.on_queued()
        return attempt_id


# The end of a refusal over the attempt limits, said of what the student did: an upload of the
# web page is dropped; a Submit stays in the exchange but is neither graded nor counted.
NOT_TAKEN = {"web": "This upload was not kept.",
             "exchange": "This submission was not graded and does not count as an attempt: Submit again at that time."}


class _Everyone:
    def __contains__(self, name) -> bool:
        return True


_EVERYONE = _Everyone()


def roster_ids(path: Path):
    """The ids of a roster.csv (everyone, when there is none; nobody while it cannot be read)."""
    if not path.exists():
        return _EVERYONE
    try:
        return frozenset(row["id"] for row in read_roster(path))
    except Exception:  # noqa: BLE001  a roster being written, or broken: nobody until it reads
        return frozenset()


def on_roster(course: Path, student: str) -> bool:
    """Whether ``student`` is a row of the course's roster.csv now (read at once, no cache): a
    grading worker asks it before an attempt's grade is kept."""
    return student in roster_ids(course / "roster.csv")


def when_text(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def size_text(size: int) -> str:
    """A size as a person reads it: 3.1 MiB, 5 GiB, 200 KiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{-(-size // 1024)} KiB"


def _check_cells(cells) -> None:
    """Raise ValueError unless every cell has what nbgrader reads of one: a known type, its
    source, its metadata (and a code cell its outputs). Other departures from nbformat's
    schema (a cell id of odd characters, say) are nbgrader's to grade, as it grades them."""
    for number, cell in enumerate(cells, start=1):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in ("code", "markdown", "raw"):
            raise ValueError(f"cell {number} has no cell_type of code, markdown or raw")
        if not isinstance(cell.get("source"), (str, list)) or not isinstance(cell.get("metadata", {}), dict):
            raise ValueError(f"cell {number} has no source, or metadata that is not a mapping")
        if kind == "code" and not isinstance(cell.get("outputs", []), list):
            raise ValueError(f"code cell {number} has outputs that are not a list")


def _first_line(problem: Exception) -> str:
    return (str(problem).strip().splitlines() or [type(problem).__name__])[0][:200]
