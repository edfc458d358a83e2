"""``maxpool-grader check``'s findings about the notebook's form and its test cells: layout and
outputs, the hidden cells against ``HIDDEN_CHECKS``, the visible ones against ``VISIBLE_CHECKS``.
Each ``Finding`` names the cell, the problem and the fix, and carries the fix ``--fix`` applies
when the grader decides what the cell must be (authoring/check.py says which side is the source of truth)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Callable

import nbformat
import numpy as np
from nbformat.v4 import new_code_cell

from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS, VISIBLE_CHECKS
from ..exercise.explain import points_label
from ..exercise.part_a import MODEL_ANSWER, RUBRIC
from ..names import PART_A_CELL, grade_id

FIGURE = "figure1.png"  # Part A's attachment: Figure 1, the forward pass only
PART_A_QUESTION = "part_a_question"
PART_B_EXPLANATION = "part_b_explanation"
VISIBLE_POINTS = sum(check.points for check in VISIBLE_CHECKS.values())
HIDDEN_POINTS = sum(check.points for check in HIDDEN_CHECKS.values())
PART_B_POINTS = VISIBLE_POINTS + HIDDEN_POINTS
# The Part A cell: the model answer and the rubric in a solution region, which the release
# never has (the feedback and the grader's view get them from maxpool_grader.exercise.part_a).
PART_A_ANSWER = "### BEGIN SOLUTION\n" + MODEL_ANSWER.strip() + "\n\n" + RUBRIC.strip() + "\n### END SOLUTION"
GRADER_WORDS = ("Rubric", "Model answer", "maxpool_grader", "run_check")
# What a JupyterLab session adds that only churns diffs: removed by --fix.
NOISY_CELL_METADATA = ("collapsed", "scrolled", "execution", "ExecuteTime", "trusted")
NOISY_NOTEBOOK_METADATA = ("widgets", "celltoolbar", "toc", "varInspector")


@dataclass(frozen=True)
class Finding:
    cell: str  # "cell <grade id> (#index)", or "notebook"
    problem: str
    fix: str
    apply: Callable[[nbformat.NotebookNode], None] | None = None  # what --fix does, if it can

    def __str__(self) -> str:
        how = " (check --fix does this)" if self.apply else ""
        return f"{self.cell}: {self.problem}\n    fix: {self.fix}{how}"


def hidden_test_source(check) -> str:
    return (f"# Hidden test: {check.title} ({points_label(check.points)})\n"
            "### BEGIN HIDDEN TESTS\n"
            "from maxpool_grader.checks import run_check\n"
            f"run_check({check.grade_id!r}, globals())\n"
            "### END HIDDEN TESTS")


def nbgrader_metadata(cell_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": cell_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def layout(notebook: nbformat.NotebookNode) -> str:
    """The file's text as JupyterLab saves it (nbformat.write: indent 1, sorted keys, final newline)."""
    return nbformat.writes(notebook, version=nbformat.NO_CONVERT) + "\n"


# --- finding the problems ------------------------------------------------------------------

def cell_name(notebook, index: int) -> str:
    gid = grade_id(notebook.cells[index])
    return f"cell {gid} (#{index})" if gid else f"cell #{index}"


def cell_index(notebook, cell_id: str) -> int | None:
    return next((i for i, cell in enumerate(notebook.cells) if grade_id(cell) == cell_id), None)


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def set_nbgrader(cell_id: str, meta: dict):
    def apply(notebook):
        notebook.cells[cell_index(notebook, cell_id)].metadata["nbgrader"] = dict(meta)
    return apply


def set_source(cell_id: str, source: str):
    def apply(notebook):
        notebook.cells[cell_index(notebook, cell_id)].source = source
    return apply


def student_visible(source: str) -> str:
    """A cell's source as generate_assignment leaves it: no solution or hidden-test region."""
    kept, skipping = [], False
    for line in source.splitlines():
        if "BEGIN SOLUTION" in line or "BEGIN HIDDEN TESTS" in line:
            skipping = True
        elif "END SOLUTION" in line or "END HIDDEN TESTS" in line:
            skipping = False
        elif not skipping:
            kept.append(line)
    return "\n".join(kept)


def format_findings(notebook: nbformat.NotebookNode, text: str | None) -> list[Finding]:
    found = []
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as problem:
        found.append(Finding("notebook", f"not a valid notebook: {str(problem).splitlines()[0]}",
                             "undo the last edit outside JupyterLab, or open and save it in JupyterLab"))
    seen: dict[str, int] = {}
    for index, cell in enumerate(notebook.cells):
        gid = grade_id(cell)
        if gid in seen:
            found.append(Finding(cell_name(notebook, index), f"has the grade id of cell #{seen[gid]}",
                                 "give one of them another grade id in the Create Assignment toolbar (nbgrader "
                                 "drops the metadata of duplicated ids)"))
        elif gid:
            seen[gid] = index
    for index, cell in enumerate(notebook.cells):
        noisy = cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
        noisy = noisy or any(key in cell.metadata for key in NOISY_CELL_METADATA)
        if noisy:
            found.append(Finding(cell_name(notebook, index), "has outputs, an execution count or view state",
                                 "Edit > Clear Outputs of All Cells, and save", _strip))
    info = notebook.metadata.get("language_info", {})
    if set(info) - {"name"} or any(key in notebook.metadata for key in NOISY_NOTEBOOK_METADATA):
        found.append(Finding("notebook", "its metadata holds the kernel's version details or view state "
                             "(they change from machine to machine)", "keep kernelspec and language_info.name",
                             _strip))
    if text is not None and not found and text != layout(notebook):
        found.append(Finding("notebook", "the file is not laid out as JupyterLab saves it (nbformat, indent 1)",
                             "open and save it in JupyterLab", lambda notebook: None))
    return found


def _strip(notebook: nbformat.NotebookNode) -> None:
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        for key in NOISY_CELL_METADATA:
            cell.metadata.pop(key, None)
    for key in NOISY_NOTEBOOK_METADATA:
        notebook.metadata.pop(key, None)
    if "language_info" in notebook.metadata:
        notebook.metadata["language_info"] = {"name": notebook.metadata["language_info"].get("name", "python")}


def hidden_cell_findings(notebook) -> list[Finding]:
    found = []
    for check in HIDDEN_CHECKS.values():
        index = cell_index(notebook, check.grade_id)
        wanted = nbgrader_metadata(check.grade_id, grade=True, locked=True, points=check.points)
        if index is None:
            found.append(Finding(f"cell {check.grade_id}", "is missing: every hidden check needs its graded cell",
                                 "add it after the test cells", _add_hidden_cell(check)))
            continue
        cell = notebook.cells[index]
        if cell.cell_type != "code":
            found.append(Finding(cell_name(notebook, index), "is not a code cell", "make it a code cell (Esc, y)"))
            continue
        if cell.source != hidden_test_source(check):
            found.append(Finding(cell_name(notebook, index), "is not the two-line call of its check in HIDDEN_CHECKS "
                                 "(maxpool_grader/exercise/checks.py: title, points, grade id)",
                                 "write it from HIDDEN_CHECKS", set_source(check.grade_id, hidden_test_source(check))))
        if nbgrader_meta(cell) != wanted:
            drift = ", ".join(f"{key} {nbgrader_meta(cell).get(key)!r} (HIDDEN_CHECKS: {value!r})"
                              for key, value in wanted.items() if nbgrader_meta(cell).get(key) != value)
            found.append(Finding(cell_name(notebook, index), f"has nbgrader metadata {drift}",
                                 "set it from HIDDEN_CHECKS (to change points, change checks.py)",
                                 set_nbgrader(check.grade_id, wanted)))
    return found


def _add_hidden_cell(check):
    def apply(notebook):
        cell = new_code_cell(hidden_test_source(check), metadata={"nbgrader": nbgrader_metadata(
            check.grade_id, grade=True, locked=True, points=check.points)})
        cell.id = check.grade_id.replace("_", "-")
        graded = [i for i, c in enumerate(notebook.cells) if grade_id(c) in GRADED_CHECKS]
        notebook.cells.insert(max(graded, default=len(notebook.cells) - 1) + 1, cell)
    return apply


def graded_cell_findings(notebook) -> list[Finding]:
    """Graded cells the grader does not know, hidden regions outside hidden checks."""
    found = []
    for index, cell in enumerate(notebook.cells):
        gid = grade_id(cell)
        if nbgrader_meta(cell).get("grade") and gid not in GRADED_CHECKS and gid != PART_A_CELL:
            found.append(Finding(cell_name(notebook, index), "is a graded cell the grader has no check for",
                                 "add its check to VISIBLE_CHECKS or HIDDEN_CHECKS (maxpool_grader/exercise/"
                                 "checks.py), or make it ungraded in the Create Assignment toolbar"))
        if "BEGIN HIDDEN TESTS" in cell.source and gid not in HIDDEN_CHECKS:
            found.append(Finding(cell_name(notebook, index), "has a hidden-test region but is no hidden check",
                                 "add the check to HIDDEN_CHECKS, or move the code into the grader package"))
    return found


def visible_cell_findings(notebook) -> list[Finding]:
    found = []
    for check in VISIBLE_CHECKS.values():
        index = cell_index(notebook, check.grade_id)
        if index is None:
            found.append(Finding(f"cell {check.grade_id}", "is missing: VISIBLE_CHECKS grades it",
                                 "restore the visible test cell (git checkout), or take the check out of "
                                 "VISIBLE_CHECKS in maxpool_grader/exercise/checks.py"))
            continue
        cell, name = notebook.cells[index], cell_name(notebook, index)
        meta = nbgrader_meta(cell)
        if meta.get("points") != check.points:
            found.append(Finding(name, f"is worth {meta.get('points')} points in the notebook, {check.points} in "
                                 "VISIBLE_CHECKS (the grader's verdict and report use VISIBLE_CHECKS)",
                                 f"set its points back to {check.points} in the Create Assignment toolbar, or "
                                 f"change VISIBLE_CHECKS[{check.grade_id!r}].points in maxpool_grader/exercise/"
                                 "checks.py and the cell's first line"))
        for key, value in (("grade", True), ("locked", True), ("solution", False)):
            if meta.get(key) != value:
                found.append(Finding(name, f"has nbgrader {key} = {meta.get(key)!r}",
                                     "make it an 'Autograder tests' cell in the Create Assignment toolbar"))
        found += _visible_source_findings(name, cell.source, check)
    return found


def _visible_source_findings(name: str, source: str, check) -> list[Finding]:
    found = []
    title_line = f"# Visible test: {check.title} ({points_label(check.points)})"
    lines = source.splitlines()
    if not lines or lines[0] != title_line:
        found.append(Finding(name, "its first line does not give VISIBLE_CHECKS' title and points",
                             f"make it: {title_line}"))
    if f'print("Passed: {check.title}.")' not in source:
        found.append(Finding(name, "does not print its title when it passes (the feedback shows it)",
                             f'end it with: print("Passed: {check.title}.")'))
    if "numerical_gradient(d_output, x" not in source or "expected = np.array" in source:
        found.append(Finding(name, "does not compare with numerical_gradient (a written-out dx shows Part A's "
                             "answer)", "compare dx with numerical_gradient(d_output, x, ...)"))
    (case,) = check.cases()
    namespace: dict = {"np": np}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(source.split("dx = ", 1)[0], namespace)  # noqa: S102  the instructor's cell
    except Exception as error:  # noqa: BLE001  reported as a finding
        found.append(Finding(name, f"its inputs do not run: {type(error).__name__}: {error}",
                             "fix the lines before 'dx = '"))
        return found
    for variable in ("x", "d_output"):
        given, graded = namespace.get(variable), getattr(case, variable)
        if given is None or np.asarray(given).dtype != graded.dtype or not np.array_equal(given, graded):
            found.append(Finding(name, f"its {variable} is not the {variable} of VISIBLE_CHECKS[{check.grade_id!r}] "
                                 "(the out-of-process verdict grades that one)",
                                 f"make them equal, here or in {check.cases.__name__} of "
                                 "maxpool_grader/exercise/checks.py"))
    if f", d_output, x, {case.pool_size!r})" not in source:
        found.append(Finding(name, f"does not call with pool_size {case.pool_size!r}, as VISIBLE_CHECKS does",
                             f"call max_pool_backward(d_output, x, {case.pool_size!r})"))
    return found
