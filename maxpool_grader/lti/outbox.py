"""The scores waiting to go to the LMS's gradebook (LTI Assignment and Grade Services), in
SQLite under ``.maxpool-grader/serve/`` (``ags-outbox.sqlite``), as the attempt queue keeps its
attempts (serve/queue.py).

A score is written here, synced, before anything is sent; it is ``pending`` until the
platform has taken it (``posted``). A failed post stays pending, tried again after 2, 4, 8 ...
seconds (at most ``BACKOFF_MAX``), its last error kept for the live view; a service killed
while posting sends it again at its next start, with the timestamp it was made with (the
platform keeps the latest of a user's scores by its timestamp, so a score sent twice is the
same score; one that answers a repost with 409, as Moodle does for a timestamp it has, has it).
A score the platform refuses for good (a 4xx it will answer again, lti/passback.py) is
``refused``, its answer kept for the instructor, and never blocks the student's later scores.
A student's scores go in the order they were made, and the newest one supersedes the older
ones still pending (``superseded``): the gradebook shows the latest anyway. Each score has a
``source`` (``attempt:12``, ``final:<release time>``) and is recorded once per source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..course.files import SharedDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student TEXT NOT NULL,
    sub TEXT NOT NULL,              -- the LMS user (the launch's sub)
    source TEXT NOT NULL UNIQUE,    -- attempt:<id> or final:<release time>
    score REAL NOT NULL,
    maximum REAL NOT NULL,
    progress TEXT NOT NULL,         -- AGS gradingProgress: PendingManual, FullyGraded
    activity TEXT NOT NULL,         -- AGS activityProgress: Submitted, Completed
    comment TEXT NOT NULL DEFAULT '',
    timestamp TEXT NOT NULL,        -- ISO 8601, when the score was made (the platform keeps the latest)
    status TEXT NOT NULL DEFAULT 'pending',  -- pending, posted, refused, superseded
    tries INTEGER NOT NULL DEFAULT 0,
    next_try REAL NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    posted REAL
);
CREATE INDEX IF NOT EXISTS scores_status ON scores (status, id);
"""
BACKOFF_MAX = 300.0


@dataclass
class Score:
    id: int
    student: str
    sub: str
    source: str
    score: float
    maximum: float
    progress: str
    activity: str
    comment: str
    timestamp: str
    status: str
    tries: int
    next_try: float
    error: str
    posted: float | None


class Outbox:
    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = SharedDatabase(folder / "ags-outbox.sqlite", SCHEMA)  # a score written is a score kept

    def close(self) -> None:
        self._db.close()

    def add(self, student: str, sub: str, source: str, score: float, maximum: float, *, progress: str,
            activity: str, comment: str = "") -> bool:
        """Record a score to post (False: one of this source is recorded already)."""
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with self._db.transaction() as db:  # the score and what it supersedes, together
            cursor = db.execute(
                "INSERT OR IGNORE INTO scores (student, sub, source, score, maximum, progress, activity, "
                "comment, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (student, sub, source, score, maximum, progress, activity, comment, stamp))
            added = cursor.rowcount == 1
            if added:  # the newest: the student's older scores not sent yet need not go
                db.execute("UPDATE scores SET status='superseded' WHERE student=? AND status='pending' AND id<?",
                           (student, cursor.lastrowid))
        return added

    def has(self, source: str) -> bool:
        return bool(self._db.run("SELECT 1 FROM scores WHERE source=?", source))

    def due(self, now: float | None = None) -> list[Score]:
        """The scores to post now: each student's oldest pending one, if its time has come."""
        now = time.time() if now is None else now
        rows = self._db.run("SELECT * FROM scores WHERE status='pending' AND id IN "
                         "(SELECT MIN(id) FROM scores WHERE status='pending' GROUP BY student) AND next_try <= ? "
                         "ORDER BY id", now)
        return [Score(**dict(row)) for row in rows]

    def pending(self) -> list[Score]:
        return [Score(**dict(row)) for row in self._db.run("SELECT * FROM scores WHERE status='pending' ORDER BY id")]

    def all(self) -> list[Score]:
        return [Score(**dict(row)) for row in self._db.run("SELECT * FROM scores ORDER BY id")]

    def posted(self, score_id: int, note: str = "") -> None:
        self._db.run("UPDATE scores SET status='posted', posted=?, error=? WHERE id=?", time.time(), note, score_id)

    def refused(self, score_id: int, error: str) -> None:
        """A post the platform refused for good: kept with its answer, never tried again."""
        self._db.run("UPDATE scores SET status='refused', tries=tries+1, error=? WHERE id=?", error[:500], score_id)

    def refusals(self) -> list[Score]:
        return [Score(**dict(row)) for row in self._db.run("SELECT * FROM scores WHERE status='refused' ORDER BY id")]

    def failed(self, score_id: int, error: str) -> float:
        """A post that failed: tried again later (backoff); the delay."""
        tries = self._db.run("SELECT tries FROM scores WHERE id=?", score_id)[0][0] + 1
        delay = min(BACKOFF_MAX, 2.0 ** tries)
        self._db.run("UPDATE scores SET tries=?, next_try=?, error=? WHERE id=?", tries, time.time() + delay,
                  error[:500], score_id)
        return delay
