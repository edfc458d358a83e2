"""Costs nbgrader 0.9.6 pays again for every submission although nothing changed.

Grading one submission opens nbgrader's ``Gradebook`` about ten times (the converter, then
each preprocessor that records something), each time with a new database engine that
compiles every query again and with the database's tables listed and checked, and checks
the nbgrader metadata of every cell twice. ``nbgrader_config.py`` installs the remedies, so
plain ``nbgrader autograde`` and ``maxpool-grader grade`` get them alike; what is stored and
what is checked does not change.
"""

from __future__ import annotations

import json
import os
import threading

import jsonschema
from sqlalchemy import create_engine


def reuse_database_engines() -> None:
    """Each ``Gradebook`` made a new SQLAlchemy engine, and an engine keeps the compiled
    form of every query it ran: a new one compiles each of nbgrader's queries again. Here
    ``Gradebook`` gets one engine per database (``Gradebook.close`` still closes its
    connections: disposing of an engine's pool leaves the engine usable). A process forked
    from one that made it (a grading worker) keeps the engine and what it compiled, with a
    pool of its own (SQLAlchemy's recipe: ``dispose(close=False)``; ``close_pooled_connections``
    before forking leaves nothing to inherit). An in-memory SQLite database, which lives in
    its connection, is never shared."""
    # the patched module, imported as install() applies the patch: after the version check, so that
    # another nbgrader is refused by name (PatchVersionError), not by an ImportError
    from nbgrader import api
    if getattr(api.create_engine, "_reused", False):
        return

    def one_engine(url, **options):
        text = str(url)
        if text.startswith("sqlite") and (text.rstrip("/") in ("sqlite:", "sqlite+pysqlite:") or ":memory:" in text):
            return create_engine(url, **options)
        key = (text, json.dumps(options, sort_keys=True, default=repr))
        with _ENGINES_LOCK:
            found = _ENGINES.get(key)
            if found is None:
                found = _ENGINES[key] = [create_engine(url, **options), os.getpid()]
            elif found[1] != os.getpid():  # made by the process this one was forked from
                _INHERITED.append(found[0].pool)  # its connections are the parent's: never closed here
                found[0].dispose(close=False)
                found[1] = os.getpid()
            return found[0]

    one_engine._reused = True
    api.create_engine = one_engine


_ENGINES: dict[tuple, list] = {}  # (URL, options) -> [engine, the pid whose pool it holds]
_ENGINES_LOCK = threading.Lock()
_INHERITED: list = []  # pools a forked process took over with an engine: kept, never used or closed


def close_pooled_connections() -> None:
    """Close this process's pooled gradebook connections (the engines stay, with what they
    compiled), so that a process forked now inherits no open database connection."""
    with _ENGINES_LOCK:
        for engine, pid in _ENGINES.values():
            if pid == os.getpid():
                engine.dispose()


def open_gradebooks_quickly() -> None:
    """``Gradebook()`` lists the database's tables, creates the missing ones and checks the
    course row, about ten queries, each of the ten times grading one submission opens it.
    Once that was done for a database (and course) in this process, or in the process it
    was forked from, a ``Gradebook`` of the same database only connects: nothing else can
    remove a table or the course row while nbgrader runs. An SQLite file is known by its
    device and inode too, so a gradebook deleted and made again is set up again; an
    in-memory one always is."""
    # the patched module, imported as install() applies the patch: after the version check, so that
    # another nbgrader is refused by name (PatchVersionError), not by an ImportError
    from nbgrader import api
    if getattr(api.Gradebook.__init__, "_quick", False):
        return
    original = api.Gradebook.__init__
    ready: set[tuple] = set()

    def quick_init(self, db_url, course_id="default_course", authenticator=None):
        key = _database_key(str(db_url), course_id)
        if key is None or key not in ready:
            original(self, db_url, course_id, authenticator)
            key = _database_key(str(db_url), course_id)  # a new SQLite file exists now
            if key is not None:
                ready.add(key)
            return
        self.engine = api.create_engine(db_url, echo=False, future=True)
        self.db = api.scoped_session(api.sessionmaker(autoflush=True, bind=self.engine, future=True))
        self.course_id = course_id
        self.authenticator = authenticator

    quick_init._quick = True
    api.Gradebook.__init__ = quick_init


def _database_key(url: str, course_id: str) -> tuple | None:
    """What tells one database from another; None for one that must always be set up."""
    if not url.startswith("sqlite"):
        return (url, course_id)
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or ":memory:" in url or path.startswith("file:"):
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (url, course_id, found.st_dev, found.st_ino) if found.st_size else None  # empty: a new one


def check_metadata_quickly() -> None:
    """nbgrader checks each cell's nbgrader metadata with ``jsonschema.validate``, which
    first checks the schema itself against JSON Schema's meta-schema, every time. The
    schemas are nbgrader's own files: each is checked once here and its validator kept, so
    a cell's metadata is checked exactly as before (the same validator, the same error)."""
    # the patched module, imported as install() applies the patch: after the version check, so that
    # another nbgrader is refused by name (PatchVersionError), not by an ImportError
    from nbgrader.nbgraderformat import common
    if isinstance(common.jsonschema, _SchemaOnce):
        return
    common.jsonschema = _SchemaOnce()


class _SchemaOnce:
    """``jsonschema.validate`` with each schema checked, and its validator built, once."""

    def __init__(self) -> None:
        self._validators: dict[str, object] = {}

    def validate(self, instance, schema) -> None:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = self._validators[key] = kind(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error
