"""The assignment's deadline, read once for every page and attempt that depends on it.

The deadline is ``c.Serve.deadline`` when the course sets it, else the assignment's due date
in the gradebook (none: no deadline). ``maxpool-grader serve`` takes submissions until it, and
the feedback keeps Part A's model answer, figure and rubric for after it
(``model_answer.ModelAnswer``): both ask here, so the two can never disagree.
"""

from __future__ import annotations

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
