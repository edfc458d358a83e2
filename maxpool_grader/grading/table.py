"""The score table ``maxpool-grader grade`` prints: one row per student, one column per
graded cell, with a legend that names the columns as the report's chart does."""

from __future__ import annotations

from ..exercise.checks import GRADED_CHECKS
from ..names import ASSIGNMENT
from .report import cell_labels, gradebook_table, legend


def score_table(db_url: str, assignment: str = ASSIGNMENT) -> tuple[list, dict[str, dict]]:
    """Cells (notebook, grade id, max points) and, per student, {grade id: score or None
    (needs manual grade)}."""
    cells, students = gradebook_table(db_url, assignment)
    scores = {student: {grade_id: None if cell["manual"] else cell["score"] for grade_id, cell in row.items()}
              for student, row in students.items()}
    return [(notebook, grade_id, points) for notebook, grade_id, points, _ in cells], scores


def format_table(cells, scores) -> str:
    """A plain-text table of ``score_table``'s cells and scores, with its legend."""
    named = cell_labels(grade_id for _, grade_id, _ in cells)
    labels = [named[grade_id] for _, grade_id, _ in cells]
    auto = [(label, grade_id, points) for label, (_, grade_id, points) in zip(labels, cells, strict=True)
            if label != "A"]
    width = max([len("student")] + [len(s) for s in scores])
    header = f"{'student':<{width}}  " + " ".join(f"{label:>4}" for label in labels) + "   autograded"
    lines = [header, "-" * len(header)]
    for student, row in scores.items():
        shown = ["   ?" if row[g] is None else f"{row[g]:>4g}" for _, g, _ in cells]
        total = sum(row[g] or 0 for _, g, _ in auto)
        lines.append(f"{student:<{width}}  " + " ".join(shown) + f"   {total:g}/{sum(p for *_, p in auto):g}")
    lines.append("")
    lines += [legend("A", "Part A, the derivation", points) + "; ? = still to grade"
              for label, (_, _, points) in zip(labels, cells, strict=True) if label == "A"]
    lines += [legend(label, GRADED_CHECKS[grade_id].title if grade_id in GRADED_CHECKS else grade_id, points)
              for label, grade_id, points in auto]
    return "\n".join(lines)
