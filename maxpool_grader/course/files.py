"""A file of the course's state replaced whole, never left half written: the roster the
LMS gave, ``lti.json``, ``lms.json``, the revocation ledger, ``grade``'s state; a SQLite file
of the service's that every commit is synced to (``open_database``: the attempt queue, the LMS
outbox); and which of the files that grant access git would keep (``exposed_to_git``), for
``tokens`` and ``doctor``."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import threading
from pathlib import Path


def replace_file(path: Path, text: str, *, mode: int = 0o600, sync: bool = True) -> None:
    """``path`` replaced by ``text``: written beside it (a name of this process's own), synced,
    renamed into place and its folder synced, so a kill or a power cut leaves the old file or
    the new one, never half of one. ``sync=False`` skips both syncs, for a file that is only a
    cache of what can be worked out again (a kill still leaves a whole file)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    if sync:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def open_database(path: Path, schema: str) -> sqlite3.Connection:
    """One of the service's SQLite files (the attempt queue, the LMS outbox), shared by its
    threads under their own lock: autocommit, WAL, and every commit synced, so what was
    accepted survives a kill -9 or a power cut; ``schema`` made if missing."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(schema)
    return db


class SharedDatabase:
    """One of the service's SQLite files (open_database) shared by its threads: one connection
    under one lock. ``run`` one statement, ``locked`` the connection for several, or make
    several hold or fail together (``transaction``)."""

    def __init__(self, path: Path, schema: str):
        self.lock = threading.Lock()
        self.connection = open_database(path, schema)

    def run(self, sql: str, *args) -> list:
        with self.lock:
            return self.connection.execute(sql, args).fetchall()

    @contextlib.contextmanager
    def locked(self):
        with self.lock:
            yield self.connection

    @contextlib.contextmanager
    def transaction(self):
        with self.lock:
            self.connection.execute("BEGIN IMMEDIATE")
            try:
                yield self.connection
                self.connection.execute("COMMIT")
            except BaseException:
                if self.connection.in_transaction:
                    self.connection.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self.lock:
            self.connection.close()


def exposed_to_git(folder: Path, paths: list[str]) -> dict[str, str]:
    """Of ``paths`` (relative to ``folder``, git pathspecs), each that git tracks ("tracked") or
    that exists and no ignore rule covers, so ``git status`` offers it for the next commit
    ("not ignored"). Empty when ``folder`` is in no git work tree or git is missing."""
    def git(*args: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
    inside = git("rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != "true":
        return {}
    listed = git("ls-files", "-z", "--", *paths)
    found = {name: "tracked" for name in (listed.stdout.split("\0") if listed else []) if name}
    existing = [path for path in paths if (folder / path).exists() and path not in found]
    if existing:
        ignored = git("check-ignore", "--no-index", "--", *existing)
        covered = set(ignored.stdout.splitlines()) if ignored else set()
        found.update({path: "not ignored" for path in existing if path not in covered})
    return found
