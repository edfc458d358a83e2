"""What LTI keeps between requests and restarts, on disk.

* ``LaunchStore``: the OIDC login's nonces and states, the launches pylti1p3 saves, and the
  course's service addresses the last launch named (Names and Roles, line items), in SQLite
  under ``.maxpool-grader/serve/`` (``lti.sqlite``), committed before the browser is sent on.
  A nonce or a state is taken once (deleted as it is checked): a launch sent again is
  refused, after a restart too. Entries expire (a state after 10 minutes).
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

    # the course's service addresses, from the launches

    def remember_services(self, claims: dict) -> None:
        """The Names and Roles and line items addresses a launch named (kept a year)."""
        nrps = claims.get("https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice") or {}
        ags = claims.get("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint") or {}
        if isinstance(nrps, dict) and nrps.get("context_memberships_url"):
            self.put("service:nrps", nrps, YEAR)
        if isinstance(ags, dict) and ags.get("lineitems"):
            self.put("service:ags", ags, YEAR)

    def services(self) -> tuple[dict | None, dict | None]:
        return self.get("service:nrps"), self.get("service:ags")


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
