"""``maxpool-grader``: the instructor's one command for the course.

``maxpool-grader grade`` (run in the course directory) regenerates the release from
the source notebook, autogrades every submission in ``submitted/`` with nbgrader's
own commands, writes feedback and ``grades.csv``, and prints each student's score per
test cell. It exits non-zero only when grading itself broke, never because a
student's code failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .checks import HIDDEN_CHECKS

ASSIGNMENT = "max_pool_backward"
TITLES = {grade_id: check.title for grade_id, check in HIDDEN_CHECKS.items()} | {
    "visible_2x2_stride_2": "Visible: 2x2 windows, stride 2",
    "visible_forum_example": "Visible: the forum example",
}


def nbgrader_environment() -> dict[str, str]:
    """The environment for nbgrader: this interpreter's bin/ first on PATH.

    Creating a gradebook runs ``alembic`` as a subprocess, which fails when the
    virtual environment was not activated (see shared/NBGRADER_NOTES.md).
    """
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "nbgrader"), *args]
    print("$ nbgrader " + " ".join(args), flush=True)
    return subprocess.run(command, cwd=course, env=nbgrader_environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def graded_cells(gradebook: Gradebook, assignment: str) -> list[tuple[str, str, float]]:
    """(notebook, grade id, max points) of every graded cell, in notebook order."""
    cells = []
    for notebook in gradebook.find_assignment(assignment).notebooks:
        order = {cell.name: position for position, cell in enumerate(notebook.source_cells)}
        for cell in sorted(notebook.grade_cells, key=lambda c: order.get(c.name, len(order))):
            cells.append((notebook.name, cell.name, cell.max_score))
    return cells


def score_table(db_url: str, assignment: str = ASSIGNMENT) -> tuple[list, dict[str, dict]]:
    """Cells and, per student, {grade id: score or None (needs manual grade / ungraded)}."""
    with Gradebook(db_url) as gradebook:
        cells = graded_cells(gradebook, assignment)
        scores: dict[str, dict] = {}
        for student in sorted(s.id for s in gradebook.students):
            try:
                gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue
            row = {}
            for notebook, grade_id, _ in cells:
                grade = gradebook.find_grade(grade_id, notebook, assignment, student)
                row[grade_id] = None if grade.needs_manual_grade else grade.score
            scores[student] = row
        return cells, scores


def format_table(cells, scores) -> str:
    """A plain-text table: one row per student, one column per graded cell."""
    counters = {"hidden_": "H", "visible_": "V"}
    seen = {"H": 0, "V": 0}
    labels = []
    for _, grade_id, _ in cells:
        prefix = next((letter for start, letter in counters.items() if grade_id.startswith(start)), None)
        if prefix is None:
            labels.append("A")
        else:
            seen[prefix] += 1
            labels.append(f"{prefix}{seen[prefix]}")
    auto = [(label, grade_id, points) for label, (_, grade_id, points) in zip(labels, cells)
            if label != "A"]
    width = max([len("student")] + [len(s) for s in scores])
    header = f"{'student':<{width}}  " + " ".join(f"{label:>4}" for label in labels) + "   autograded"
    lines = [header, "-" * len(header)]
    for student, row in scores.items():
        shown = ["   ?" if row[g] is None else f"{row[g]:>4g}" for _, g, _ in cells]
        total = sum(row[g] or 0 for _, g, _ in auto)
        lines.append(f"{student:<{width}}  " + " ".join(shown) + f"   {total:g}/{sum(p for *_, p in auto):g}")
    lines.append("")
    lines.append("A = Part A, graded by hand (? = needs manual grade).")
    lines += [f"{label:>2} = {TITLES.get(grade_id, grade_id)} ({points:g} p)" for label, grade_id, points in auto]
    return "\n".join(lines)


def grade(course: Path, assignment: str = ASSIGNMENT) -> int:
    course = course.resolve()
    steps = [
        ("generate_assignment", [assignment, "--force"]),
        ("autograde", [assignment, "--force", "--create"]),
        ("generate_feedback", [assignment, "--force"]),
        ("export", ["--to", str(course / "grades.csv")]),
    ]
    broken = []
    for step, args in steps:
        result = run_nbgrader(course, step, *args)
        if result.returncode != 0:
            # autograde exits 1 when a submission could not be graded at all (kernel died);
            # that submission is reported below, the batch goes on.
            print(result.stdout[-4000:], file=sys.stderr)
            broken.append(step)
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    cells, scores = score_table(db_url, assignment)
    print()
    print(format_table(cells, scores))
    missing = sorted(p.name for p in (course / "submitted").iterdir()
                     if p.is_dir() and p.name not in scores) if (course / "submitted").is_dir() else []
    if missing:
        print(f"\nNot graded (see the log above): {', '.join(missing)}", file=sys.stderr)
    fatal = [step for step in broken if step != "autograde"]
    return 1 if fatal or (broken and not scores) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="maxpool-grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grade_parser = commands.add_parser(
        "grade", help="regenerate the release, autograde submitted/, write feedback and grades.csv, "
                      "print the score table")
    grade_parser.add_argument("--course-dir", type=Path, default=Path.cwd(),
                              help="the nbgrader course directory (default: the current directory)")
    args = parser.parse_args(argv)
    if not (args.course_dir / "nbgrader_config.py").is_file():
        parser.error(f"{args.course_dir.resolve()} has no nbgrader_config.py: "
                     "run this in the course directory or pass --course-dir")
    return grade(args.course_dir)


if __name__ == "__main__":
    sys.exit(main())
