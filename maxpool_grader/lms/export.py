"""Back to the LMS: the grades of the gradebook as ``canvas_grades.csv`` (Canvas's
gradebook import) and ``lms_grades.csv`` (every number, for any LMS).

Names, ids and emails come from students (an LMS profile, a roster exported from it), so
every text cell that a spreadsheet would read as a formula (starting with ``=``, ``+``,
``-``, ``@``, a tab, a carriage return, a line feed or a NUL: OWASP's CSV injection) gets a
leading ``'``.
Numbers are written by us as numbers and stay numbers.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from ..course.directory import exercise_assignments, read_course_config
from ..course.roster import read_roster
from ..glue.deadline import deadline_passed, part_a_state
from ..glue.safecsvexport import csv_cell as cell
from ..names import ASSIGNMENT

LMS_STATE = Path(".maxpool-grader") / "lms.json"  # written by collect-lms (lms/intake.py)


def export(course: Path, db_url: str, out_dir: Path, *, canvas_column: str | None = None,
           assignment: str = ASSIGNMENT) -> dict:
    """Write ``canvas_grades.csv`` (Canvas's gradebook import) and ``lms_grades.csv`` (every
    number, for any LMS). A student whose Part A is not graded yet gets no grade in the
    Canvas file (an upload changes nothing for them) and ``part_a_graded = no`` in the other.
    Another assignment of the course (not this exercise) has no Part A: its rows carry its
    score as nbgrader has it, with no ``part_a`` columns, and every one goes to Canvas.
    Returns {"ungraded": [...], "rows": n, "missing_lms_id": [...]}."""
    rows, maximum = _rows(course, db_url, assignment)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "lms_grades.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([cell(name) for name in (list(rows[0]) if rows else ["student_id"])])
        writer.writerows([cell(value) for value in row.values()] for row in rows)
    with open(out_dir / "canvas_grades.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([cell(name) for name in ("Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                                                 canvas_column or assignment)])
        writer.writerow(["Points Possible", "", "", "", "", cell(float(maximum))])
        for row in rows:
            name = ", ".join(part for part in (row["last_name"], row["first_name"]) if part) or row["student_id"]
            grade = float(row["total"]) if row.get("part_a_graded", "yes") == "yes" else ""
            writer.writerow([cell(value) for value in (name, row["lms_id"], row["student_id"], "", "", grade)])
    return {"rows": len(rows), "ungraded": [row["student_id"] for row in rows if row.get("part_a_graded") == "no"],
            "missing_lms_id": [row["student_id"] for row in rows if not row["lms_id"]]}


def _rows(course: Path, db_url: str, assignment: str) -> tuple[list[dict], float]:
    """One row per student with a submission, and the assignment's maximum score."""
    state = course / LMS_STATE
    lms = json.loads(state.read_text()) if state.exists() else {}
    roster = {row["id"]: row for row in read_roster(course / "roster.csv")} \
        if (course / "roster.csv").is_file() else {}
    rows = []
    notebook = exercise_assignments(course).get(assignment)  # None: another assignment, no Part A
    # Part A is graded once a person has graded it; an answer left as released, once the deadline passed
    passed = deadline_passed(read_course_config(course).Serve.get("deadline", ""), db_url, assignment)
    with Gradebook(db_url) as book:
        maximum = book.find_assignment(assignment).max_score
        for student in sorted(book.students, key=lambda s: s.id):
            try:
                submission = book.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            manual = [grade for graded in submission.notebooks if graded.name == notebook for grade in graded.grades
                      if grade.cell_type == "markdown"]
            penalty = float(submission.late_submission_penalty or 0)
            lms_id = (roster.get(student.id) or {}).get("lms_id") or lms.get(student.id, {}).get("lms_id") or ""
            row = {"student_id": student.id, "first_name": student.first_name or "",
                   "last_name": student.last_name or "", "email": student.email or "", "lms_id": lms_id,
                   "autograded": float(submission.code_score)}
            if notebook is not None:
                row.update(part_a=float(sum(g.score or 0 for g in manual)),
                           part_a_graded="yes" if part_a_state(manual, passed) is None else "no")
            rows.append(dict(row, late_penalty=penalty, total=max(0.0, submission.score - penalty),
                             max=float(maximum)))
    return rows, maximum
