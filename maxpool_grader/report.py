"""The class report: ``report/index.html`` with PNG plots, and ``report/report.json``
with the same numbers.

Scores come from the gradebook (what nbgrader records); the reasons behind them come
from the autograded notebooks, where ``OutOfProcessVerdicts`` leaves each test's
verdict (kind of failure, the catalogue mistakes its report named) and the grader's
notes (unreadable, missing or renamed notebook, moved cells).
"""

from __future__ import annotations

import html
import json
import statistics
from collections import Counter
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from .autograde import NOTES_KEY, REPORT_KEY
from .catalogue import BUGS
from . import similarity
from .roster import display_names
from .checks import GRADED_CHECKS

ASSIGNMENT = "max_pool_backward"
ATTENTION_KINDS = {"timeout": "timed out", "crash": "crashed the process",
                   "shortcut": "used a shortcut (autograd library or the grader's code)",
                   "grader error": "the grader could not evaluate a result",
                   "not defined": "the solution cell does not compile or defines no max_pool_backward"}


def cell_labels(grade_ids) -> dict[str, str]:
    """The short label of each graded cell, as in the score table's legend: A for a cell
    graded by hand, V1, V2 ... for visible tests and H1, H2 ... for hidden ones."""
    counters, labels = {"V": 0, "H": 0}, {}
    for grade_id in grade_ids:
        kind = "H" if grade_id.startswith("hidden_") else "V" if grade_id.startswith("visible_") else None
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
    path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return {}, ["no autograded notebook (grading failed)"]
    found = {}
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id and REPORT_KEY in cell.metadata:
            found[grade_id] = cell.metadata[REPORT_KEY]
    return found, list(nb.metadata.get(NOTES_KEY, []))


def gradebook_table(db_url: str, assignment: str = ASSIGNMENT) -> tuple[list[tuple], dict[str, dict]]:
    """The graded cells ((notebook, grade id, max points, cell type), in notebook order) and,
    per student with a submission, {grade id: {"score", "max", "manual"}}."""
    with Gradebook(db_url) as gradebook:
        cells = []
        for notebook in gradebook.find_assignment(assignment).notebooks:
            order = {cell.name: i for i, cell in enumerate(notebook.source_cells)}
            cells += [(notebook.name, cell.name, cell.max_score, cell.cell_type)
                      for cell in sorted(notebook.grade_cells, key=lambda c: order.get(c.name, len(order)))]
        students = {}
        for student in sorted(s.id for s in gradebook.students):
            try:
                gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue
            row = {}
            for notebook, grade_id, points, _ in cells:
                grade = gradebook.find_grade(grade_id, notebook, assignment, student)
                row[grade_id] = {"score": grade.score, "max": points, "manual": bool(grade.needs_manual_grade)}
            students[student] = row
    return cells, students


def collect(course: Path, db_url: str, assignment: str = ASSIGNMENT) -> dict:
    """Every number of the report, from the gradebook and the autograded notebooks."""
    cells, students = gradebook_table(db_url, assignment)
    auto = [(grade_id, points) for _, grade_id, points, cell_type in cells if cell_type == "code"]
    auto_max = sum(points for _, points in auto)
    totals, bug_students, attention = {}, {}, []
    passed = Counter()
    for student, row in students.items():
        totals[student] = sum(row[g]["score"] or 0 for g, _ in auto)
        passed.update(g for g, points in auto if (row[g]["score"] or 0) >= points)
        verdicts, notes = _verdicts(course, student, assignment)
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
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    e = html.escape
    mean = "–" if data["mean"] is None else f"{data['mean']:.1f}"
    median = "–" if data["median"] is None else f"{data['median']:g}"
    weakest = min(data["cells"], key=lambda c: c["pass_rate"] or 0) if data["cells"] else None
    bugs_ = data["bugs"]  # the most common mistake, when one stands out: two students or more, ahead of the rest
    top_bug = bugs_[0] if bugs_ and bugs_[0]["students"] >= 2 and (
        len(bugs_) == 1 or bugs_[0]["students"] > bugs_[1]["students"]) else None
    summary = [f"<b>{data['students']}</b> submissions graded; autograded score mean <b>{mean}</b>, "
               f"median <b>{median}</b> of {data['autograded_max']:g}."]
    if weakest:
        summary.append(f"Hardest test: <b>{e(weakest['label'])} {e(weakest['title'])}</b> "
                       f"({100 * (weakest['pass_rate'] or 0):.0f}% passed).")
    if top_bug:
        summary.append(f"Most common mistake: <b>{e(top_bug['title'])}</b> "
                       f"({top_bug['students']} student{'s' if top_bug['students'] != 1 else ''}).")
    summary.append(f"<b>{len(data['needs_attention'])}</b> need a look (below); "
                   f"{data['manual']['pending']} still have parts to grade by hand.")
    name = lambda student: data.get("names", {}).get(student, student)  # noqa: E731
    bugs = "".join(f"<tr><td>{e(b['title'])}</td><td class=n>{b['students']}</td>"
                   f"<td class=who>{e(', '.join(map(name, b['who'])))}</td></tr>" for b in data["bugs"]) \
        or "<tr><td colspan=3>No catalogue mistake was recognised.</td></tr>"
    attention = "".join(f"<tr><td>{e(name(a['student']))}</td><td>{'<br>'.join(e(r) for r in a['reasons'])}</td></tr>"
                        for a in data["needs_attention"]) \
        or "<tr><td colspan=2>Nobody: no crash, timeout, shortcut or unreadable notebook.</td></tr>"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Class report: {e(data['assignment'])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }}
h1 {{ font-size: 1.5em; margin-bottom: 4px; }} h2 {{ font-size: 1.15em; margin-top: 28px; }}
.summary {{ background: #f3f6fa; border-left: 4px solid #4c72b0; padding: 10px 16px; line-height: 1.6; }}
.plots {{ display: flex; gap: 16px; flex-wrap: wrap; align-items: flex-start; margin-top: 16px; }}
.plots img {{ max-width: 100%; height: auto; border: 1px solid #ddd; }}
.plots img.scores {{ width: 540px; }}
table {{ border-collapse: collapse; width: 100%; font-size: 0.92em; }}
td, th {{ border-bottom: 1px solid #e4e4e4; padding: 5px 8px; text-align: left; vertical-align: top; }}
td.n {{ text-align: right; width: 5em; }} td.who {{ color: #555; font-size: 0.9em; }}
.note {{ color: #444; }} details {{ margin: 8px 0; }} summary {{ cursor: pointer; }}
.pair {{ display: flex; gap: 12px; }} .side {{ flex: 1; min-width: 0; }}
.side pre {{ background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 0.8em; }}
mark {{ background: #ffe08a; }}
</style></head><body>
<h1>Class report: {e(data['assignment'])}</h1>
<div class="summary">{'<br>'.join(summary)}</div>
<div class="plots"><img class="scores" src="{plots['scores']}" alt="score histogram">
<img src="{plots['pass_rates']}" alt="pass rate of each test"></div>
<h2>Mistakes recognised from the bug catalogue</h2>
<table><tr><th>mistake</th><th class=n>students</th><th>who</th></tr>{bugs}</table>
<h2>Similar submissions</h2>
{_similarity_html(data, list(pairs))}
<h2>Submissions that need a person</h2>
<table><tr><th>student</th><th>reason</th></tr>{attention}</table>
<p style="color:#666;font-size:0.85em">Part A ({', '.join(e(c) for c in data['manual']['cells'])}) is graded by
hand in formgrader. The numbers of this page are in report.json.</p>
</body></html>
"""


def write_report(course: Path, db_url: str, assignment: str = ASSIGNMENT,
                 similarity_threshold: float = similarity.THRESHOLD) -> dict[str, Path]:
    folder = course / "report"
    folder.mkdir(exist_ok=True)
    data = collect(course, db_url, assignment)
    codes, release = similarity.class_codes(course, sorted(data["totals"]), assignment)
    pairs = similarity.similar_pairs(codes, release, similarity_threshold)
    data["similarity"] = {"threshold": similarity_threshold, "compared": len(codes),
                          "pairs": [pair.summary() for pair in pairs]}
    (folder / "report.json").write_text(json.dumps(data, indent=1))
    plots = _plots(data, folder)
    (folder / "index.html").write_text(_html(data, plots, pairs))
    return {"html": folder / "index.html", "json": folder / "report.json"}


SHOWN_PAIRS = 50  # side by side in the page; report.json lists them all


def _similarity_html(data: dict, pairs: list) -> str:
    e = html.escape
    names = data.get("names", {})
    found = data["similarity"]
    note = (f"<p class=note>Pairs whose own code (the release's code left out) is near-identical: at least "
            f"{100 * found['threshold']:.0f}% of one side's code is also in the other, after renaming variables, "
            "reordering functions and changing comments and whitespace are undone. <b>This is a reason to look, "
            "not a verdict:</b> students may share a lecture example, and a short exercise leaves little room to "
            f"differ. Threshold: <code>--similarity-threshold</code>. {found['compared']} submissions compared.</p>")
    if not pairs:
        return note + "<p>No pair reaches the threshold.</p>"
    rows = "".join(f"<tr><td>{e(names.get(p.first, p.first))}</td><td>{e(names.get(p.second, p.second))}</td>"
                   f"<td class=n>{100 * p.score:.0f}%</td><td class=n>{100 * p.shares[0]:.0f}% / "
                   f"{100 * p.shares[1]:.0f}%</td></tr>" for p in pairs)
    views = "".join(f"<details><summary>{e(names.get(p.first, p.first))} and {e(names.get(p.second, p.second))}: "
                    f"{100 * p.score:.0f}%</summary>{similarity.side_by_side(p, names)}</details>"
                    for p in pairs[:SHOWN_PAIRS])
    more = f"<p>{len(pairs) - SHOWN_PAIRS} more pairs in report.json.</p>" if len(pairs) > SHOWN_PAIRS else ""
    return (note + "<table><tr><th>student</th><th>student</th><th class=n>similarity</th>"
            f"<th class=n>share of each</th></tr>{rows}</table>{views}{more}")
