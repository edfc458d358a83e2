"""Two costs nbgrader 0.9.6 pays again for every submission although nothing changed.

Grading one submission opens nbgrader's ``Gradebook`` about ten times (the converter, then
each preprocessor that records something), and checks the nbgrader metadata of every
cell twice. Together they were about a fifth of a grading worker's CPU time per
submission. ``nbgrader_config.py`` installs both remedies, so plain ``nbgrader autograde``
and ``maxpool-grader grade`` get them alike; what is stored and what is checked does not
change.
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
    ``Gradebook`` gets one engine per database and process (``Gradebook.close`` still
    closes its connections: disposing of an engine's pool leaves the engine usable). A
    forked process makes its own; an in-memory SQLite database, which lives in its
    connection, is never shared."""
    from nbgrader import api
    if getattr(api.create_engine, "_reused", False):
        return
    engines: dict[tuple, object] = {}
    lock = threading.Lock()

    def one_engine(url, **options):
        text = str(url)
        if text.startswith("sqlite") and (text.rstrip("/") in ("sqlite:", "sqlite+pysqlite:") or ":memory:" in text):
            return create_engine(url, **options)
        key = (os.getpid(), text, json.dumps(options, sort_keys=True, default=repr))
        with lock:
            if key not in engines:
                engines[key] = create_engine(url, **options)
            return engines[key]

    one_engine._reused = True
    api.create_engine = one_engine


def check_metadata_quickly() -> None:
    """nbgrader checks each cell's nbgrader metadata with ``jsonschema.validate``, which
    first checks the schema itself against JSON Schema's meta-schema, every time. The
    schemas are nbgrader's own files: each is checked once here and its validator kept, so
    a cell's metadata is checked exactly as before (the same validator, the same error)."""
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
