"""The instructor's policy for ``maxpool-grader serve`` (``c.Serve`` in nbgrader_config.py),
the personal tokens of the web way, and the checks every attempt passes before it is
queued: the deadline, the attempt limits (an attempt over a limit is refused at once, with
the time the next one is possible), the size, and whether it is this assignment's notebook
at all. A refusal is ``Refused``: the message for the student and the HTTP status."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path

from traitlets import Enum, Float, Int, List, Unicode
from traitlets.config import Configurable

from ..glue.deadline import deadline as course_deadline
from ..names import SOLUTION_CELL

FEEDBACK_LEVELS = ("scores", "mistakes", "everything")
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # what the service accepts as a student id
SERVE_DIR = Path(".maxpool-grader") / "serve"
DEADLINE_FRESH = 5.0  # seconds a due date read from the gradebook is used before it is read again


class Serve(Configurable):
    """The policy of ``maxpool-grader serve`` (feedback while the assignment is open)."""

    attempts_per_hour = Int(3, help=(
        "Graded attempts a student may make in any 60 minutes; one more is refused at once, with the time "
        "the next is possible.")).tag(config=True, unit="attempts")
    attempts_per_day = Int(10, help=(
        "Graded attempts a student may make in any 24 hours.")).tag(config=True, unit="attempts")
    before_deadline = Enum(FEEDBACK_LEVELS, default_value="everything", help=(
        "What the feedback shows before the deadline: 'scores' (each test's points), 'mistakes' (the "
        "points and the named mistakes) or 'everything' (the whole feedback page, with the smallest "
        "failing input). After the deadline it is always everything.")).tag(config=True, unit="")
    deadline = Unicode("", help=(
        "The last moment a submission is taken, e.g. '2026-12-01 23:59' (UTC) or 2026-12-01T23:59+01:00; "
        "empty: the assignment's due date in the gradebook (none: no deadline).")).tag(config=True, unit="")
    max_upload = Int(2048, help="The largest notebook the service takes, upload or exchange.").tag(
        config=True, unit="KiB")
    poll_interval = Float(1.0, help="How often the exchange's inbound folder is looked at.").tag(config=True, unit="s")
    hub_instructors = List(Unicode(), default_value=[], help=(
        "With 'serve --hub-login': the JupyterHub users who, signed in, see the instructor's live view "
        "instead of the student's page.")).tag(config=True, unit="")


def load_settings(course: Path) -> Serve:
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return Serve(config=config)


# ------------------------------------------------------------------------------ tokens

def service_secret(course: Path) -> bytes:
    """The key the students' links and the cookies are signed with (made once, owner-only):
    delete the file to make every link given out so far invalid."""
    folder = course / SERVE_DIR
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "secret"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def token_for(secret: bytes, who: str) -> str:
    """A personal token: the id it is for, and a signature only the service can make."""
    signature = hmac.new(secret, b"maxpool-serve\0" + who.encode(), hashlib.sha256).hexdigest()[:40]
    return base64.urlsafe_b64encode(who.encode()).decode().rstrip("=") + "." + signature


def who_has(secret: bytes, token: str) -> str | None:
    """The id a token was made for, or None when it is not one of ours."""
    encoded, _, signature = token.partition(".")
    try:
        who = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return who if hmac.compare_digest(token_for(secret, who), token) else None


INSTRUCTOR = "\0instructor"  # the instructor's token is made for this id (no student can have it)



class Refused(Exception):
    """An attempt the policy or the checks refuse: the message for the student, the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status



class Policy:
    """The checks of the ``Service`` (serve.py), which holds ``settings``, ``queue``,
    ``assignment`` and ``db_url``."""

    def deadline(self) -> datetime | None:
        """The deadline, read from the gradebook at most every DEADLINE_FRESH seconds: every
        page and every attempt asks (a student's waiting page refreshes each second), and the
        instructor may move the due date while the service runs."""
        read = getattr(self, "_deadline_read", None)
        if read is None or time.monotonic() - read[0] > DEADLINE_FRESH:
            read = self._deadline_read = (time.monotonic(),
                                          course_deadline(self.settings.deadline, self.db_url, self.assignment))
        return read[1]

    def open_now(self, now: float | None = None) -> bool:
        deadline = self.deadline()
        return deadline is None or (time.time() if now is None else now) <= deadline.timestamp()

    def is_student(self, name: str) -> bool:
        """Whether ``name`` is a student of the gradebook (the roster): a JupyterHub user who
        is not gets no page of the service."""
        from nbgrader.api import Gradebook, MissingEntry
        if not STUDENT_ID.fullmatch(name):
            return False
        with Gradebook(self.db_url) as gradebook:
            try:
                gradebook.find_student(name)
            except MissingEntry:
                return False
        return True

    def feedback_level(self) -> str:
        return self.settings.before_deadline if self.open_now() else "everything"

    def admit(self, student: str, now: float | None = None) -> None:
        """Refuse (``Refused``) an attempt the policy does not allow now."""
        now = time.time() if now is None else now
        deadline = self.deadline()
        if deadline is not None and now > deadline.timestamp():
            raise Refused(f"The deadline has passed ({_when(deadline.timestamp())}): no more submissions are "
                          "taken. Your last on-time submission is the one that counts.", 403)
        for limit, window, span in ((self.settings.attempts_per_hour, 3600, "hour"),
                                    (self.settings.attempts_per_day, 86400, "24 hours")):
            used = self.queue.counted_since(student, now - window)
            if len(used) >= limit:
                possible = used[len(used) - limit] + window
                raise Refused(f"You have used your {limit} graded attempts of the last {span}. Your next attempt is "
                              f"possible at {_when(possible)} (in {_minutes(possible - now)}). This upload was not "
                              "kept.", 429)

    def check_notebook(self, content: bytes) -> None:
        """Refuse what is not this assignment's notebook, or too large."""
        if len(content) > self.settings.max_upload * 1024:
            raise Refused(f"The file is too large ({len(content) // 1024} KiB; the limit is "
                          f"{self.settings.max_upload} KiB). Clear your outputs (Kernel > Restart Kernel and "
                          "Clear Outputs of All Cells) and upload it again.", 413)
        try:
            notebook = json.loads(content.decode("utf-8"))
            cells = notebook["cells"]
            ids = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in cells
                   if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict)
                   and isinstance(cell["metadata"].get("nbgrader", {}), dict)}
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            raise Refused("This is not a Jupyter notebook (.ipynb): upload the notebook file of the assignment, "
                          f"{self.assignment}.ipynb.", 400) from None
        if SOLUTION_CELL not in ids:
            raise Refused(f"This notebook is not the {self.assignment} assignment (its cell "
                          f"'{SOLUTION_CELL}' is missing): upload {self.assignment}.ipynb as you fetched it, "
                          "with your answers.", 400)

    def submit(self, student: str, content: bytes, way: str = "web") -> int:
        """Check and queue an upload; a refused one is recorded (for the instructor) and raised."""
        try:
            self.check_notebook(content)
            self.admit(student)
        except Refused as refusal:
            self.queue.add(student, self.assignment, way, None, status="refused", message=str(refusal))
            raise
        attempt_id = self.queue.add(student, self.assignment, way, content)
        self.poke()
        return attempt_id


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _minutes(seconds: float) -> str:
    minutes = max(1, int(-(-seconds // 60)))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"

