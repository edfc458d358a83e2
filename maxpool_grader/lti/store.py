"""What LTI keeps between requests and restarts, on disk.

* ``LaunchStore``: the OIDC login's nonces and states, the course the service is bound to, and
  the course's service addresses the last accepted launch of that course named (Names and
  Roles, line items), in SQLite under ``.maxpool-grader/serve/`` (``lti.sqlite``), committed
  before the browser is sent on. A nonce or a state is taken once (deleted as it is
  checked): a launch sent again is refused, after a restart too. Entries expire (a state
  after 10 minutes); the binding never does.
* The binding (``course_of``, ``other_course``): one service serves one course. The first
  accepted instructor launch binds the issuer, client id, deployment and course (the
  ``context`` claim's id) for good; a launch that differs in any of them is refused, with a
  sentence, before anything of it is kept.
* ``.maxpool-grader/lti.json``: which LMS user (the launch's ``sub``) is which student of the
  roster, as ``collect-lms`` records LMS ids in ``lms.json``: written whole, synced and renamed
  into place. Only Names and Roles (``roster --from-lti``) or the roster's own ids record a
  user; a display name never decides.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
import time
from pathlib import Path

from ..course.files import replace_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL NOT NULL);
"""
RECORDS = Path(".maxpool-grader") / "lti.json"
YEAR = 365 * 86400
FOREVER = 100 * YEAR
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
BOUND = ("issuer", "client_id", "deployment_id", "context_id")  # what a launch must share with the binding


class LaunchStore:
    """Key, JSON value and expiry, safe to use from the service's threads."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(folder / "lti.sqlite", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)

    def put(self, key: str, value, seconds: float) -> None:
        with self._lock:
            self._db.execute("DELETE FROM entries WHERE expires < ?", (time.time(),))
            self._db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)",
                             (key, json.dumps(value), time.time() + seconds))

    def get(self, key: str):
        with self._lock:
            rows = self._db.execute("SELECT value FROM entries WHERE key=? AND expires >= ?",
                                    (key, time.time())).fetchall()
        return json.loads(rows[0][0]) if rows else None

    def take(self, key: str) -> bool:
        """Whether ``key`` was there (and not expired); it is gone either way: used once."""
        with self._lock:
            rows = self._db.execute("DELETE FROM entries WHERE key=? RETURNING expires", (key,)).fetchall()
        return bool(rows) and rows[0][0] >= time.time()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # the course this service serves, bound by its first instructor launch

    def binding(self) -> dict | None:
        return self.get("course")

    def bind(self, course: dict) -> dict:
        """Bind the service to ``course`` unless it is bound already; the binding that holds."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO entries VALUES ('course', ?, ?)",
                             (json.dumps(course), time.time() + FOREVER))
        return self.binding()

    # the course's service addresses, from the accepted launches of its course

    def remember_services(self, claims: dict) -> None:
        """The Names and Roles and line items addresses an accepted launch of the bound course
        named (kept a year); never call it for any other launch. The assignment's own column
        (``lineitem``) is the one the first launch that named one named: a launch from another
        link of the course (another column) never moves the scores."""
        nrps = claims.get("https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice") or {}
        ags = claims.get("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint") or {}
        if isinstance(nrps, dict) and nrps.get("context_memberships_url"):
            self.put("service:nrps", nrps, YEAR)
        if isinstance(ags, dict) and ags.get("lineitems"):
            first = (self.get("service:ags") or {}).get("lineitem")
            if first:  # the column is the one the first launch named, whatever a later launch names
                ags = dict(ags, lineitem=first)
            self.put("service:ags", ags, YEAR)

    def services(self) -> tuple[dict | None, dict | None]:
        return self.get("service:nrps"), self.get("service:ags")


def course_of(claims: dict, client_id: str) -> dict:
    """The course a checked launch comes from: its issuer, the tool's client id, the deployment,
    the context's id and title, as a binding records them."""
    context = claims.get(CONTEXT) if isinstance(claims.get(CONTEXT), dict) else {}
    return {"issuer": str(claims.get("iss", "")), "client_id": client_id,
            "deployment_id": str(claims.get(DEPLOYMENT, "")), "context_id": str(context.get("id") or ""),
            "title": str(context.get("title") or context.get("label") or "")[:200],
            "bound": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def described(course: dict) -> str:
    title = f"\u201c{course['title']}\u201d, " if course.get("title") else ""
    return f"{title}context id {course['context_id']!r} of {course['issuer']}, deployment {course['deployment_id']!r}"


def other_course(bound: dict | None, course: dict) -> str | None:
    """Why a launch of ``course`` is not taken by a service bound to ``bound`` (None: it is
    taken, or nothing is bound yet and the launch names its course)."""
    if not course["context_id"]:
        return ("This launch names no course (its context claim has no id): this service takes launches from "
                "the one course it serves only.")
    if bound is None or all(bound.get(key) == course[key] for key in BOUND):
        return None
    return (f"This launch comes from another course ({described(course)}) than the one this service serves "
            f"({described(bound)}, bound by its instructor's first launch on {bound.get('bound', '?')}): one service "
            "serves one course. Nothing of this launch was kept; another course needs a service of its own.")


# ------------------------------------------------------------------ who each LMS user is

def records(course: Path) -> dict[str, dict]:
    """lti.json: student id -> {sub, name, email, matched_by, recorded}."""
    try:
        found = json.loads((course / RECORDS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, dict) and isinstance(v.get("sub"), str)}


def student_of(course: Path, sub: str) -> str | None:
    """The roster student the LMS user ``sub`` was recorded as, or None."""
    return next((student for student, info in records(course).items() if info["sub"] == sub), None)


def write_records(course: Path, saved: dict[str, dict]) -> None:
    """lti.json replaced whole: written beside it, synced, renamed, the folder synced."""
    path = course / RECORDS
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    replace_file(path, json.dumps(saved, indent=1, sort_keys=True))


def record(course: Path, student: str, info: dict) -> None:
    saved = records(course)
    saved[student] = {**saved.get(student, {}), **info,
                      "recorded": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}
    write_records(course, saved)
