"""``maxpool-grader check``: the instructor notebook in source/ against the grader.

The notebook is the source: an instructor edits it in JupyterLab with nbgrader's Create
Assignment toolbar. ``check`` says, cell by cell, where it disagrees with the grader
package and how to fix it:

* every hidden test cell is the two-line call of its check in ``HIDDEN_CHECKS`` (id, title,
  points), and every check has its cell;
* every visible test cell has the id, points, title and inputs of ``VISIBLE_CHECKS``;
* the notebook's text states every rule of the contract (exercise/contract.py), and its tools
  cell's ``check_rules`` checks exactly the contract's self-checked rules;
* the solution cell passes every graded check (run here, in this process: it is the
  instructor's own code), and the visible test cells pass with it;
* the Part A cell holds part_a.py's model answer and rubric in a solution region, and Figure 1
  is attached to the question;
* the prose states the points the grader gives, and the Tests heading what ``nbgrader validate``
  checks and that its "Success!" is not a grade;
* nothing of the answer is in the text students get (what generate_assignment keeps);
* outputs and execution counts are cleared, and the file is laid out as JupyterLab saves it.

Where the grader and the notebook must agree, the grader is the source of truth: the hidden
cells, Figure 1, Part A's answer and the points of hidden cells are written from it by
``check --fix``. A visible test's points, title or inputs are only named, never changed: the
student reads that cell, so whoever changed it decides which side is right.

``check --fix`` writes the fixable findings into the notebook, and when nothing is left
refreshes what is made from it: ``nbgrader generate_assignment`` (when the source changed, as
``grade`` does), the sample class (scripts/make_sample_class.py) and its graded copies
(``grade --force``). The findings are made in authoring/cells.py (form, test cells) and
authoring/answer.py (the solution, Part A, the prose, leaks).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from ..course.directory import configured_db_url, notebook_path
from ..grading.grade import Broke, GradingRun, grade
from .answer import contract_findings, leak_findings, part_a_findings, prose_findings, solution_findings
from .cells import Finding, format_findings, graded_cell_findings, hidden_cell_findings, layout, visible_cell_findings

__all__ = ["Finding", "check", "notebook_findings", "fix", "layout", "refresh_class"]


def notebook_findings(notebook: nbformat.NotebookNode, text: str | None = None) -> list[Finding]:
    """Every problem of the instructor notebook (``text``: its file's text, for the layout)."""
    return (format_findings(notebook, text) + graded_cell_findings(notebook) + hidden_cell_findings(notebook)
            + visible_cell_findings(notebook) + part_a_findings(notebook) + prose_findings(notebook)
            + leak_findings(notebook) + solution_findings(notebook) + contract_findings(notebook))


def fix(notebook: nbformat.NotebookNode) -> list[Finding]:
    """Apply every fixable finding (to ``notebook``); return the findings that are left."""
    for _ in range(3):  # a fix can reveal another (a hidden cell added, then its outputs)
        fixable = [finding for finding in notebook_findings(notebook) if finding.apply]
        if not fixable:
            break
        for finding in fixable:
            finding.apply(notebook)
    return notebook_findings(notebook, layout(notebook))


# --- the command ---------------------------------------------------------------------------

def check(course: Path, *, apply_fixes: bool = False, db_url: str | None = None, refresh: bool = True) -> int:
    """``maxpool-grader check [--fix]``: 0 when the notebook agrees with the grader, else 1."""
    course = course.resolve()  # "--course-dir ." too: the paths it prints are relative to it
    path = notebook_path(course, "source")
    text = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    found = notebook_findings(notebook, text)
    if apply_fixes and any(finding.apply for finding in found):
        found = fix(notebook)
        path.write_text(layout(notebook), encoding="utf-8")
        print(f"fixed: {path.relative_to(course)}")
    for finding in found:
        print(finding)
    if found:
        fixable = sum(1 for finding in found if finding.apply)
        print(f"\n{len(found)} problem(s) in {path.relative_to(course)}"
              + (f"; 'maxpool-grader check --fix' fixes {fixable}" if fixable and not apply_fixes else ""))
        return 1
    print(f"{path.relative_to(course)} agrees with the grader")
    if apply_fixes and refresh:
        return refresh_class(course, db_url)
    return 0


def refresh_class(course: Path, db_url: str | None) -> int:
    """Regenerate release/, the sample class in submitted/ and its graded copies."""
    db_url = db_url or configured_db_url(course)
    try:  # generate_assignment, recorded as grade records it (so that grade does not run it again)
        GradingRun(course.resolve(), db_url, workers=1).release()
    except Broke as broke:
        print(broke, file=sys.stderr)
        return broke.status
    maker = course / "scripts" / "make_sample_class.py"
    if maker.is_file():  # the course repository's sample class (a course of one's own has none)
        print(f"$ python {maker.relative_to(course)}", flush=True)
        if subprocess.run([sys.executable, str(maker)], cwd=course).returncode != 0:
            return 1
    return grade(course, force=True, db_url=db_url)
