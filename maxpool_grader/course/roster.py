"""The class roster: students' names and emails in nbgrader's student table.

Without it formgrader lists every student as "None, None" and grades.csv and the class
report show ids only. ``maxpool-grader roster FILE.csv`` imports a CSV with a header
row and the columns id, first name, last name and email (``first_name`` or ``first
name``, any case; email may be missing), and optionally lms_id (the Canvas user id or Moodle
participant id, for ``collect-lms`` and ``export-lms``); ``maxpool-grader grade`` imports the course's
``roster.csv`` by itself when there is one. Importing again updates the names.

A cell's control characters (a NUL, a line feed, a carriage return, a tab) never reach the
gradebook: a NUL is dropped and the others become spaces, before the cell is trimmed, so a
name such as ``"\n=HYPERLINK(...)"`` is read as ``=HYPERLINK(...)``, which every CSV of ours
then writes with a leading ``'`` (glue/safecsvexport.py).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from nbgrader.api import Gradebook

HEADINGS = {"id": ("id", "student_id", "student id", "student"),
           "first_name": ("first_name", "first name", "firstname", "given name"),
           "last_name": ("last_name", "last name", "lastname", "surname", "family name"),
           "email": ("email", "e-mail", "mail"),
           # the student's id in the LMS (Canvas user id, Moodle participant id): optional
           "lms_id": ("lms_id", "lms id", "canvas id", "canvas user id", "moodle id", "participant id")}
OPTIONAL = ("email", "lms_id")
CONTROL = re.compile(r"[\x01-\x1f\x7f]")  # C0 controls and DEL: spaces in a name (NUL: dropped)


class RosterError(ValueError):
    """A roster that cannot be read, in words for the instructor."""


def read_roster(path: Path) -> list[dict[str, str | None]]:
    """The roster's students: {id, first_name, last_name, email}; RosterError names what
    is wrong (a missing column, an empty or repeated id) with its line."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as problem:
        raise RosterError(f"{path}: cannot be read as a CSV file ({problem})") from None
    if not rows:
        raise RosterError(f"{path} is empty: it needs a header row (id, first name, last name, email)")
    header = [cell.strip().lower() for cell in rows[0]]
    where = {}
    for field, names in HEADINGS.items():
        found = [index for index, cell in enumerate(header) if cell in names]
        if found:
            where[field] = found[0]
        elif field not in OPTIONAL:
            raise RosterError(f"{path}: no '{names[0]}' column in the header row {rows[0]} "
                              "(expected: id, first name, last name, email)")
    students, seen = [], {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        value = {field: (clean_cell(row[index]) if index < len(row) else "") or None for field, index in where.items()}
        if not value["id"]:
            raise RosterError(f"{path}, line {number}: the student id is empty")
        if value["id"] in seen:
            raise RosterError(f"{path}, line {number}: student id {value['id']!r} is already on line "
                              f"{seen[value['id']]}")
        seen[value["id"]] = number
        students.append({"email": None, "lms_id": None, **value})
    return students


def clean_name(text: str) -> str:
    """A name that came from elsewhere (the LMS's member list) as the roster keeps it: every
    control and invisible character (C0 and C1 controls, bidirectional overrides) a space,
    runs of spaces one, trimmed."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def clean_cell(text: str) -> str:
    """A roster cell without its control characters (module doc), trimmed."""
    return CONTROL.sub(" ", text.replace("\0", "")).strip()


def import_roster(path: Path, db_url: str) -> int:
    """Put the roster's students into the gradebook (new ones added, names updated);
    returns how many."""
    students = read_roster(path)
    with Gradebook(db_url) as gradebook:
        for student in students:
            gradebook.update_or_create_student(student["id"], first_name=student["first_name"],
                                               last_name=student["last_name"], email=student["email"])
    return len(students)


def display_names(db_url: str) -> dict[str, str]:
    """Student id -> "First Last (id)" for the students the gradebook has names for."""
    with Gradebook(db_url) as gradebook:
        return {student.id: f"{student.first_name or ''} {student.last_name or ''}".strip() + f" ({student.id})"
                for student in gradebook.students if student.first_name or student.last_name}
