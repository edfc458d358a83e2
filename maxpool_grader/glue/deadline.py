"""The assignment's deadline, read once for every page and attempt that depends on it, and what
it means for Part A's grade.

The deadline is ``c.Serve.deadline`` when the course sets it, else the assignment's due date
in the gradebook (none: no deadline). ``maxpool-grader serve`` takes submissions until it, and
the feedback keeps Part A's model answer, figure and rubric for after it
(``modelanswer.ModelAnswer``): both ask here, so the two can never disagree.

Part A is graded by a person: until one has, it is "not graded yet" on every page and in every
export (``part_a_state``), never a 0. An answer left as released is "not answered yet" until
the deadline; after it, nbgrader's 0 for it stands (there is nothing to grade).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from nbgrader.api import Gradebook, MissingEntry


def parse_time(text: str) -> datetime:
    """'2026-12-01 23:59' (UTC) or an ISO time with its offset, as an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not a time: {text!r} (write e.g. '2026-12-01 23:59' or 2026-12-01T23:59+01:00)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def gradebook_due_date(db_url: str, assignment: str) -> datetime | None:
    """The assignment's due date in the gradebook (nbgrader stores UTC without a zone), or None."""
    try:
        with Gradebook(db_url) as gradebook:
            due = gradebook.find_assignment(assignment).duedate
    except MissingEntry:
        return None
    return due.replace(tzinfo=timezone.utc) if due is not None and due.tzinfo is None else due


def deadline(configured: str, db_url: str, assignment: str) -> datetime | None:
    """``configured`` (``c.Serve.deadline``) when set, else the gradebook's due date."""
    return parse_time(configured) if configured else gradebook_due_date(db_url, assignment)


def deadline_passed(configured: str, db_url: str, assignment: str) -> bool:
    """Whether the deadline has passed (True for an assignment without one: nothing is to come)."""
    due = deadline(configured, db_url, assignment)
    return due is None or time.time() > due.timestamp()


NOT_GRADED = "not graded yet"  # an answer waiting for a person
NOT_ANSWERED = "not answered yet"  # before the deadline, an answer left as released


def part_a_state(grades, passed: bool) -> str | None:
    """What Part A's hand-graded cells (nbgrader ``Grade`` rows of markdown cells) say instead of a
    score: ``NOT_GRADED`` while one waits for a person, ``NOT_ANSWERED`` before the deadline for
    an answer left as released (nbgrader scores it 0 at once), else None (a grade stands)."""
    grades = list(grades)
    if any(grade.needs_manual_grade for grade in grades):
        return NOT_GRADED
    if not passed and any(grade.manual_score is None and not grade.auto_score for grade in grades):
        return NOT_ANSWERED
    return None
