"""The service's persistent queue (``maxpool-grader serve``): every attempt a student makes,
in SQLite under ``.maxpool-grader/serve/``, with the notebook it brought.

An attempt is ``queued`` when it is accepted, ``grading`` while a worker has it, then
``graded``, ``failed`` (grading broke twice: the student and the instructor are told) or
``superseded`` (a newer upload of the same student came before it was graded: only the
latest counts). A refused attempt is kept too (``refused``, with its reason), so the
instructor sees every refusal. An exchange submission made in another student's name is
``forged``: it is the forger's record (``student`` is the account that made it, ``claimed``
whom it named), never the named student's. Every change is
committed before it is acted on, so a restart resumes the queue: what was ``grading``
is queued again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..course.files import SharedDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student TEXT NOT NULL,
    assignment TEXT NOT NULL,
    way TEXT NOT NULL,              -- 'web' or 'exchange'
    source TEXT NOT NULL DEFAULT '', -- the exchange folder's name (each is taken once)
    received REAL NOT NULL,         -- time.time() when the service received it
    status TEXT NOT NULL,
    tries INTEGER NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT '',
    result TEXT NOT NULL DEFAULT '',  -- JSON: scores per test, named mistakes (serve/service.py)
    finished REAL,
    claimed TEXT NOT NULL DEFAULT ''  -- a forged submission: the student it named
);
CREATE INDEX IF NOT EXISTS attempts_student ON attempts (student, received);
CREATE INDEX IF NOT EXISTS attempts_status ON attempts (status, id);
CREATE UNIQUE INDEX IF NOT EXISTS attempts_source ON attempts (source) WHERE source != '';
"""
COUNTED = ("queued", "grading", "graded")  # what uses up an attempt (refused and superseded do not)
OPEN = ("queued", "grading")


@dataclass
class Attempt:
    id: int
    student: str
    assignment: str
    way: str
    source: str
    received: float
    status: str
    tries: int
    message: str
    result: dict
    finished: float | None
    claimed: str = ""

    @classmethod
    def of(cls, row) -> Attempt:
        values = dict(row)
        values["result"] = json.loads(values["result"]) if values["result"] else {}
        return cls(**values)


class Queue:
    """The attempts table, safe to use from the service's threads (one connection, a lock)."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        (folder / "uploads").mkdir(exist_ok=True, mode=0o700)
        (folder / "feedback").mkdir(exist_ok=True, mode=0o700)
        self._db = SharedDatabase(folder / "queue.sqlite", SCHEMA)
        if "claimed" not in {row["name"] for row in self._db.run("PRAGMA table_info(attempts)")}:
            self._db.run("ALTER TABLE attempts ADD COLUMN claimed TEXT NOT NULL DEFAULT ''")  # a queue of before

    def close(self) -> None:
        self._db.close()

    def upload_path(self, attempt_id: int) -> Path:
        return self.folder / "uploads" / f"{attempt_id}.ipynb"

    def secret_path(self, attempt_id: int) -> Path:
        """An exchange attempt's submission secret (``add``'s ``files``), when it had one."""
        return self.upload_path(attempt_id).with_suffix(".secret")

    def feedback_path(self, attempt_id: int) -> Path:
        return self.folder / "feedback" / f"{attempt_id}.html"

    def resume(self) -> int:
        """After a restart (or a crash): what was being graded is queued again."""
        with self._db.locked() as db:
            return db.execute("UPDATE attempts SET status='queued' WHERE status='grading'").rowcount

    def add(self, student: str, assignment: str, way: str, content: bytes | None, *, status: str = "queued",
            message: str = "", source: str = "", received: float | None = None,
            files: dict[str, bytes] | None = None, claimed: str = "") -> int:
        """Record an attempt (and, when accepted, its notebook and ``files`` beside it, by suffix,
        on disk before it is queued)."""
        received = time.time() if received is None else received
        with self._db.transaction() as db:
            cursor = db.execute(
                "INSERT INTO attempts (student, assignment, way, source, received, status, message, claimed) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (student, assignment, way, source, received, "writing" if content is not None else status, message,
                 claimed))
            attempt_id = cursor.lastrowid
            if content is not None:
                for suffix, data in {".ipynb": content, **(files or {})}.items():
                    with open(self.upload_path(attempt_id).with_suffix(suffix), "wb") as handle:
                        handle.write(data)
                        os.fsync(handle.fileno())
                db.execute("UPDATE attempts SET status=? WHERE id=?", (status, attempt_id))
        return attempt_id

    def seen_source(self, source: str) -> bool:
        return bool(self._db.run("SELECT 1 FROM attempts WHERE source=?", source))

    def get(self, attempt_id: int) -> Attempt | None:
        rows = self._db.run("SELECT * FROM attempts WHERE id=?", attempt_id)
        return Attempt.of(rows[0]) if rows else None

    def of_student(self, student: str) -> list[Attempt]:
        return [Attempt.of(row) for row in self._db.run(
            "SELECT * FROM attempts WHERE student=? ORDER BY id DESC", student)]

    def all(self, limit: int = 100000) -> list[Attempt]:
        return [Attempt.of(row) for row in self._db.run("SELECT * FROM attempts ORDER BY id DESC LIMIT ?", limit)]

    def counted_since(self, student: str, since: float) -> list[float]:
        """The times of the student's attempts since ``since`` that use up an attempt."""
        return [row[0] for row in self._db.run(
            f"SELECT received FROM attempts WHERE student=? AND received>=? AND status IN {COUNTED} "
            "ORDER BY received", student, since)]

    def forged_since(self, forger: str, since: float) -> int:
        """How many forged submissions of the account ``forger`` were recorded since ``since``."""
        return self._db.run("SELECT COUNT(*) FROM attempts WHERE student=? AND status='forged' AND received>=?",
                         forger, since)[0][0]

    def position(self, attempt_id: int) -> int:
        """How many queued attempts are ahead of this one (0: next)."""
        return self._db.run("SELECT COUNT(*) FROM attempts WHERE status='queued' AND id<?", attempt_id)[0][0]

    def open_count(self) -> int:
        return self._db.run(f"SELECT COUNT(*) FROM attempts WHERE status IN {OPEN}")[0][0]

    def next_ready(self, busy: set[str]) -> list[Attempt]:
        """The queued attempts to grade next, oldest first, one per student and none of a
        student already being graded; an older queued attempt of a student who has a newer
        one is superseded (only the latest counts)."""
        chosen, seen = [], set()
        with self._db.locked() as db:
            rows = db.execute("SELECT * FROM attempts WHERE status='queued' ORDER BY id DESC").fetchall()
            for row in rows:  # newest first: the first one of each student is the one that counts
                attempt = Attempt.of(row)
                if attempt.student in seen:
                    db.execute("UPDATE attempts SET status='superseded', finished=?, message=? WHERE id=?",
                               (time.time(), "a newer upload replaced it before it was graded", attempt.id))
                    continue
                seen.add(attempt.student)
                if attempt.student not in busy:
                    chosen.append(attempt)
        return sorted(chosen, key=lambda attempt: attempt.id)

    def start(self, attempt_id: int) -> None:
        self._db.run("UPDATE attempts SET status='grading', tries=tries+1 WHERE id=?", attempt_id)

    def requeue(self, attempt_id: int) -> None:
        self._db.run("UPDATE attempts SET status='queued' WHERE id=?", attempt_id)

    def finish(self, attempt_id: int, status: str, message: str = "", result: dict | None = None) -> None:
        self._db.run("UPDATE attempts SET status=?, message=?, result=?, finished=? WHERE id=?",
                  status, message, json.dumps(result) if result else "", time.time(), attempt_id)
