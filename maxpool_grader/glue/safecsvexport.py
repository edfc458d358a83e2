"""``SafeCsvExport`` (``ExportApp.plugin_class``): ``nbgrader export``'s grades.csv, safe to open.

nbgrader's own CSV plugin writes names and ids exactly as the gradebook holds them, joined
by commas without quoting: a roster name such as ``=HYPERLINK(...)`` or ``+cmd|' /C calc'!A0``
is a formula in every spreadsheet, and a name with a comma moves every column after it.
This plugin writes the same columns and rows with Python's ``csv`` module, and every text
cell that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``, a
tab, a carriage return, a line feed or a NUL: OWASP's CSV injection list, as ASVS names it)
gets a leading ``'``. Numbers are written as nbgrader writes them and stay numbers.
``maxpool-grader export-lms`` uses the same rule. A last column, ``part_a``, says whether Part A
has a grade: "graded", "not graded yet" (it waits for a person: the score counts it as 0 until
then) or "not answered yet" (before the deadline, an answer left as released); empty for a
student who submitted nothing, and on every other assignment's rows (whose manual grades
are in their scores, as nbgrader writes them). A course without this exercise
(thisexercise.py) gets nbgrader's columns alone.

``shown`` is the same care for a terminal: text a student chose, printed so that it cannot
forge a line or send the terminal an escape."""

from __future__ import annotations

import csv
import time
from datetime import timezone

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins.export import CsvExportPlugin

from .deadline import deadline_passed, part_a_state
from .everyassignment import protects
from .thisexercise import exercise_notebooks

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")


EXPORT_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                  "raw_score", "late_submission_penalty", "score", "max_score", "part_a")


def shown(text: str) -> str:
    """Text as it is safe to print (a name, a student's folder): control and invisible
    characters (a newline, an ANSI escape, a right-to-left override) written as escapes, so
    it cannot forge a line or drive the instructor's terminal."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def safe_text(value) -> str:
    """Text that no spreadsheet runs: a ``'`` before what could start a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_cell(value) -> str | int | float:
    """A CSV cell: a number as a number (``-0.5`` stays ``-0.5``), text that could start a
    formula with a ``'`` in front (``=HYPERLINK(...)`` becomes ``'=HYPERLINK(...)``)."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return value
    return safe_text(value)


class SafeCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, quoted, its text neutralised (module doc)."""

    def export(self, gradebook: Gradebook) -> None:
        destination = self.to or "grades.csv"
        students, assignments = {str(s) for s in self.student}, {str(a) for a in self.assignment}
        self.log.info("Exporting grades to %s", destination)
        exercise = dict(exercise_notebooks(self.config))  # assignment -> its notebook
        with open(destination, "w", newline="") as handle:
            rows = csv.writer(handle)  # RFC 4180: CRLF, so a CR or LF inside a name is quoted too
            rows.writerow(EXPORT_COLUMNS if exercise else EXPORT_COLUMNS[:-1])
            configured = self.config.Serve.get("deadline", "") if "Serve" in self.config else ""
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                passed = _passed(configured, assignment)
                for student in gradebook.students:
                    if not students or student.id in students:
                        row = _row(gradebook, assignment, student, passed, exercise.get(assignment.name),
                                   safe=assignment.name in exercise or protects(self, "safe_csv"))
                        rows.writerow(row if exercise else row[:-1])


def _passed(configured: str, assignment) -> bool:
    """Whether ``assignment``'s deadline (``c.Serve.deadline``, else its due date) has passed."""
    if configured:
        return deadline_passed(configured, "", assignment.name)
    due = assignment.duedate  # nbgrader keeps UTC without a zone
    return due is None or time.time() > due.replace(tzinfo=due.tzinfo or timezone.utc).timestamp()


def _row(gradebook: Gradebook, assignment, student, passed: bool = True, notebook: str | None = None,
         safe: bool = True) -> list:
    """A student's row; ``notebook``: the exercise's, when ``assignment`` is the exercise (else
    no ``part_a`` value); ``safe``: its texts formula-safe (c.EveryAssignment.safe_csv)."""
    try:
        submission = gradebook.find_submission(assignment.name, student.id)
    except MissingEntry:  # nothing submitted: 0, as nbgrader's plugin writes it
        timestamp, raw, penalty, part_a = "", 0.0, 0.0, ""
    else:
        timestamp, raw, penalty = submission.timestamp, submission.score, submission.late_submission_penalty
        hand = [grade for graded in submission.notebooks if graded.name == notebook for grade in graded.grades
                if grade.cell_type == "markdown"]
        part_a = (part_a_state(hand, passed) or "graded") if notebook else ""
    numbers = [raw, penalty, max(0.0, raw - penalty), assignment.max_score]
    texts = [assignment.name, assignment.duedate, timestamp, student.id, student.last_name, student.first_name,
             student.email]
    plain = lambda value: "" if value is None else str(value)  # noqa: E731
    return ([safe_text(value) if safe else plain(value) for value in texts] + [plain(value) for value in numbers]
            + [part_a])
