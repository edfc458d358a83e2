"""The class report: ``report/index.html`` with PNG plots, and ``report/report.json``
with the same numbers.

Scores come from the gradebook (what nbgrader records); the reasons behind them come
from the autograded notebooks, where ``OutOfProcessVerdicts`` leaves each test's
verdict (kind of failure, the catalogue mistakes its report named) and the grader's
notes (unreadable, missing or renamed notebook, moved cells).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import jinja2
import nbformat
from nbgrader.api import (
    Assignment,
    Grade,
    Gradebook,
    GradeCell,
    Notebook,
    SubmittedAssignment,
    SubmittedNotebook,
)

from ..course.directory import notebook_path
from ..course.roster import display_names
from ..exercise.catalogue import BUGS
from ..exercise.checks import GRADED_CHECKS
from ..names import ASSIGNMENT, NOTES_KEY, REPORT_KEY
from ..names import grade_id as cell_grade_id
from ..verdict.verdicts import VerdictKind
from . import similarity

ATTENTION_KINDS = {VerdictKind.TIMEOUT: "timed out", VerdictKind.CRASH: "crashed the process",
                   VerdictKind.SHORTCUT: "used a shortcut (autograd library or the grader's code)",
                   VerdictKind.GRADER_ERROR: "the grader could not evaluate a result",
                   VerdictKind.NOT_DEFINED: "the solution cell does not compile or defines no max_pool_backward"}


def cell_labels(grade_ids) -> dict[str, str]:
    """The short label of each graded cell, as in the score table's legend: A for a cell
    graded by hand, V1, V2 ... for visible tests and H1, H2 ... for hidden ones."""
    counters, labels = {"V": 0, "H": 0}, {}
    for grade_id in grade_ids:
        check = GRADED_CHECKS.get(grade_id)
        kind = None if check is None else "H" if check.hidden else "V"
        if kind is None:
            labels[grade_id] = "A"
        else:
            counters[kind] += 1
            labels[grade_id] = f"{kind}{counters[kind]}"
    return labels


def legend(label: str, title: str, points: float) -> str:
    """One graded cell in the score table's legend and on the pass-rate chart."""
    kind = "hidden" if label.startswith("H") else "visible" if label.startswith("V") else "by hand"
    return f"{label} {title} ({points:g} p, {kind})"


def _verdicts(course: Path, student: str, assignment: str) -> tuple[dict, list[str]]:
    """{grade id: verdict metadata} and the grader's notes of one autograded notebook."""
    path = notebook_path(course, "autograded", student, assignment)
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return {}, ["no autograded notebook (grading failed)"]
    found = {}
    for cell in nb.cells:
        if (check_id := cell_grade_id(cell)) and REPORT_KEY in cell.metadata:
            found[check_id] = cell.metadata[REPORT_KEY]
    return found, list(nb.metadata.get(NOTES_KEY, []))


def gradebook_table(db_url: str, assignment: str = ASSIGNMENT) -> tuple[list[tuple], dict[str, dict]]:
    """The graded cells ((notebook, grade id, max points, cell type), in notebook order) and,
    per student with a submission, {grade id: {"score", "max", "manual"}}. Every grade of the
    class in one query (nbgrader's ``find_grade`` per student and cell made a class of 400
    read the gradebook 5,000 times, twice a run)."""
    with Gradebook(db_url) as gradebook:
        cells = []
        for notebook in gradebook.find_assignment(assignment).notebooks:
            order = {cell.name: i for i, cell in enumerate(notebook.source_cells)}
            cells += [(notebook.name, cell.name, cell.max_score, cell.cell_type)
                      for cell in sorted(notebook.grade_cells, key=lambda c: order.get(c.name, len(order)))]
        submitted = {student for (student,) in gradebook.db.query(SubmittedAssignment.student_id)
                     .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                     .filter(Assignment.name == assignment)}
        found = {(student, notebook, cell): (score, manual) for student, notebook, cell, score, manual in
                 gradebook.db.query(SubmittedAssignment.student_id, Notebook.name, GradeCell.name, Grade.score,
                                    Grade.needs_manual_grade)
                 .select_from(Grade)
                 .join(GradeCell, GradeCell.id == Grade.cell_id)
                 .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
                 .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
                 .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
                 .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                 .filter(Assignment.name == assignment)}
        students = {}
        for student in sorted(s.id for s in gradebook.students if s.id in submitted):
            row = {}
            for notebook, grade_id, points, _ in cells:
                if (student, notebook, grade_id) in found:
                    score, manual = found[student, notebook, grade_id]
                else:  # not in the gradebook: nbgrader's own lookup says why
                    grade = gradebook.find_grade(grade_id, notebook, assignment, student)
                    score, manual = grade.score, grade.needs_manual_grade
                row[grade_id] = {"score": score, "max": points, "manual": bool(manual)}
            students[student] = row
    return cells, students


class Reading:
    """What the report reads of each student's notebooks (the verdicts kept in the autograded
    one; their own code in the submitted one, and its fingerprints), read in a thread of its
    own as each student is graded (``add``): at the end of a run only the gradebook is left
    to read, and the pairs to compare. All similarity fingerprints are made in that thread,
    which is started on the first ``add`` and ended by ``drain`` (before a process forks)."""

    def __init__(self, course: Path, assignment: str = ASSIGNMENT):
        self.course, self.assignment = course, assignment
        self._thread: ThreadPoolExecutor | None = None
        self._release: Future | None = None
        self._students: dict[str, Future] = {}

    def add(self, student: str) -> None:
        """Read ``student``'s notebooks now (again, if they were read before this grading)."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maxpool-report")
            self._release = self._release or self._thread.submit(self._read_release)
        self._students[student] = self._thread.submit(self._read, student)

    @property
    def asked(self) -> bool:
        return bool(self._students)

    def student(self, student: str) -> tuple[tuple[dict, list[str]], str | None, object]:
        """(verdicts and notes, their own code or None, its fingerprints or None)."""
        if student not in self._students:
            self.add(student)
        return self._students[student].result()

    def drain(self, cancel: bool = False) -> None:
        """Wait for what was asked (or, with ``cancel``, drop what has not started), end the thread."""
        if self._thread is not None:
            self._thread.shutdown(wait=not cancel, cancel_futures=cancel)
            self._thread = None

    def _read_release(self):
        code = similarity.class_release_code(self.course, self.assignment)
        return code, similarity.boilerplate_hashes(code)

    def _read(self, student: str):
        release, boilerplate = self._release.result()
        own = similarity.submitted_code(self.course, student, self.assignment, set(release))
        return (_verdicts(self.course, student, self.assignment), own,
                None if own is None else similarity.fingerprint(own, boilerplate))


def report_data(course: Path, db_url: str, assignment: str = ASSIGNMENT, reading: Reading | None = None) -> dict:
    """Every number of the report, from the gradebook and the autograded notebooks (as
    ``reading`` read them, when given)."""
    cells, students = gradebook_table(db_url, assignment)
    auto = [(grade_id, points) for _, grade_id, points, cell_type in cells if cell_type == "code"]
    auto_max = sum(points for _, points in auto)
    totals, bug_students, attention = {}, {}, []
    passed = Counter()
    for student, row in students.items():
        totals[student] = sum(row[g]["score"] or 0 for g, _ in auto)
        passed.update(g for g, points in auto if (row[g]["score"] or 0) >= points)
        verdicts, notes = reading.student(student)[0] if reading else _verdicts(course, student, assignment)
        for verdict in verdicts.values():
            for bug in verdict.get("bugs", []):
                bug_students.setdefault(bug, set()).add(student)
        reasons = sorted({ATTENTION_KINDS[v["kind"]] for v in verdicts.values() if v.get("kind") in ATTENTION_KINDS})
        reasons += notes
        manual = [g for g, cell in row.items() if cell["manual"]]
        if reasons:
            attention.append({"student": student, "reasons": reasons, "manual": manual})
    count = len(students)
    histogram = Counter(totals.values())
    labels = cell_labels(grade_id for _, grade_id, _, _ in cells)
    return {
        "assignment": assignment,
        "students": count,
        "autograded_max": auto_max,
        "mean": statistics.fmean(totals.values()) if totals else None,
        "median": statistics.median(totals.values()) if totals else None,
        "totals": totals,
        "histogram": {f"{score:g}": histogram[score] for score in sorted(histogram)},
        "cells": [{"grade_id": g, "label": labels[g], "hidden": labels[g].startswith("H"),
                   "title": GRADED_CHECKS[g].title if g in GRADED_CHECKS else g,
                   "points": points, "passed": passed[g],
                   "pass_rate": passed[g] / count if count else None} for g, points in auto],
        "bugs": sorted(({"name": name, "title": BUGS[name].title if name in BUGS else name,
                         "students": len(who), "who": sorted(who)} for name, who in bug_students.items()),
                       key=lambda bug: (-bug["students"], bug["name"])),
        "manual": {"cells": [g for _, g, _, cell_type in cells if cell_type != "code"],
                   "pending": sum(any(c["manual"] for c in row.values()) for row in students.values())},
        "needs_attention": attention,
        "names": display_names(db_url),  # from the roster: "First Last (id)"
    }


def _plots(data: dict, folder: Path) -> dict[str, str]:
    # matplotlib: 0.3 s to import, only for the report's figures (copydetect happens to import it today)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # drawn with Agg: no window, whatever the environment says
    names = {}
    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=110)
    scores = list(range(int(data["autograded_max"]) + 1))
    counts = [data["histogram"].get(f"{s:g}", 0) for s in scores]
    axes.bar(scores, counts, color="#4c72b0")
    axes.set_xlabel(f"autograded score (of {data['autograded_max']:g})")
    axes.set_ylabel("students")
    axes.set_xticks(scores)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_title("Score histogram")
    figure.tight_layout()
    figure.savefig(folder / "scores.png")
    names["scores"] = "scores.png"
    plt.close(figure)

    cells = data["cells"]
    figure, axes = plt.subplots(figsize=(10, 0.42 * len(cells) + 1.1), dpi=110)  # room for the labels
    rates = [100 * (cell["pass_rate"] or 0) for cell in cells]
    labels = [legend(cell["label"], cell["title"], cell["points"]) for cell in cells]
    bars = axes.barh(range(len(cells)), rates, color=["#55a868" if r >= 80 else "#dd8452" if r >= 50
                                                         else "#c44e52" for r in rates])
    axes.set_yticks(range(len(cells)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("% of students who passed")
    axes.bar_label(bars, [f"{r:.0f}%" for r in rates], fontsize=8, padding=2)
    axes.set_title("Pass rate of each test")
    figure.tight_layout()
    figure.savefig(folder / "pass_rates.png")
    names["pass_rates"] = "pass_rates.png"
    plt.close(figure)
    return names


def _html(data: dict, plots: dict[str, str], pairs: list = ()) -> str:
    """The page, from templates/report.html.j2 (autoescaped; only the marked code of a
    similar pair is HTML of ours)."""
    environment = jinja2.Environment(loader=jinja2.PackageLoader("maxpool_grader.grading", "templates"),
                                     autoescape=True, trim_blocks=True)
    names = data.get("names", {})
    environment.filters["name"] = lambda student: names.get(student, student)
    bugs = data["bugs"]  # the most common mistake, when one stands out: two students or more, ahead of the rest
    top_bug = bugs[0] if bugs and bugs[0]["students"] >= 2 and (
        len(bugs) == 1 or bugs[0]["students"] > bugs[1]["students"]) else None
    shown = [{"first": pair.first, "second": pair.second, "score": pair.score, "shares": pair.shares,
              "sides": similarity.sides(pair)} for pair in pairs]
    return environment.get_template("report.html.j2").render(
        data=data, plots=plots, pairs=shown, shown_pairs=SHOWN_PAIRS, top_bug=top_bug,
        mean="–" if data["mean"] is None else f"{data['mean']:.1f}",
        median="–" if data["median"] is None else f"{data['median']:g}",
        weakest=min(data["cells"], key=lambda cell: cell["pass_rate"] or 0) if data["cells"] else None)


SHOWN_PAIRS = 50  # side by side in the page; report.json lists them all


def write_report(course: Path, db_url: str, assignment: str = ASSIGNMENT,
                 similarity_threshold: float = similarity.THRESHOLD, reading: Reading | None = None,
                 folder: Path | None = None) -> dict[str, Path]:
    """The class report, in ``folder`` (the course's report/); ``reading``: the students'
    notebooks read while they were graded."""
    folder = folder or course / "report"
    folder.mkdir(exist_ok=True)
    ours = reading is None
    reading = reading or Reading(course, assignment)
    try:
        data = report_data(course, db_url, assignment, reading)
        found = {student: reading.student(student) for student in sorted(data["totals"])}
    finally:
        if ours:
            reading.drain()
    compared = sum(own is not None for _, own, _ in found.values())
    pairs = similarity.pairs_of({student: prints for student, (_, _, prints) in found.items() if prints is not None},
                                similarity_threshold)
    data["similarity"] = {"threshold": similarity_threshold, "compared": compared,
                          "pairs": [pair.summary() for pair in pairs]}
    (folder / "report.json").write_text(json.dumps(data, indent=1))
    plots = _plots(data, folder)
    (folder / "index.html").write_text(_html(data, plots, pairs))
    return {"html": folder / "index.html", "json": folder / "report.json"}


