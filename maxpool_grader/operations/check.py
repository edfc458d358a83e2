"""``maxpool-grader check``: the instructor notebook in source/ against the grader.

The notebook is the source: an instructor edits it in JupyterLab with nbgrader's Create
Assignment toolbar. ``check`` says, cell by cell, where it disagrees with the grader
package and how to fix it:

* every hidden test cell is the two-line call of its check in ``HIDDEN_CHECKS`` (id, title,
  points), and every check has its cell;
* every visible test cell has the id, points, title and inputs of ``VISIBLE_CHECKS``;
* the solution cell passes every graded check (run here, in this process: it is the
  instructor's own code), and the visible test cells pass with it;
* the Part A cell holds part_a.py's model answer and rubric in a solution region, and Figure 1
  is attached to the question;
* nothing of the answer is in the text students get (what generate_assignment keeps);
* outputs and execution counts are cleared, and the file is laid out as JupyterLab saves it.

Where the grader and the notebook must agree, the grader is the source of truth: the hidden
cells, Figure 1, Part A's answer and the points of hidden cells are written from it by
``check --fix``. A visible test's points, title or inputs are only named, never changed: the
student reads that cell, so whoever changed it decides which side is right.

``check --fix`` writes the fixable findings into the notebook, and when nothing is left
refreshes what is made from it: ``nbgrader generate_assignment``, the sample class
(scripts/make_sample_class.py) and its graded copies (``grade --force``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
import numpy as np
from nbformat.v4 import new_code_cell

from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS, VISIBLE_CHECKS
from ..exercise.part_a import EXPLANATION, MODEL_ANSWER, PART_A_POINTS, RUBRIC, figure_png
from ..names import ASSIGNMENT, FUNCTION, PART_A_CELL, PROVIDED_CELL, PROVIDED_TOOLS_CELL, SOLUTION_CELL, grade_id

FIGURE = "figure1.png"  # Part A's attachment: Figure 1, the forward pass only
PART_A_QUESTION = "part_a_question"
PART_B_EXPLANATION = "part_b_explanation"
VISIBLE_POINTS = sum(check.points for check in VISIBLE_CHECKS.values())
HIDDEN_POINTS = sum(check.points for check in HIDDEN_CHECKS.values())
PART_B_POINTS = VISIBLE_POINTS + HIDDEN_POINTS
# The Part A cell: the model answer and the rubric in a solution region, which the release
# never has (the feedback and the grader's view get them from maxpool_grader.exercise.part_a).
PART_A_ANSWER = "### BEGIN SOLUTION\n" + MODEL_ANSWER.strip() + "\n\n" + RUBRIC.strip() + "\n### END SOLUTION"
# Phrases of the derivation that the student-visible text never holds (Part A asks for it).
ANSWER_PHRASES = ("add up", "sum of their", "gradient goes to", "gets 0", "subgradient", "partial derivative is")
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


def points_label(points: int) -> str:
    return f"{points} point" + ("s" if points != 1 else "")


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


def source_notebook(course: Path) -> Path:
    return course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def layout(notebook: nbformat.NotebookNode) -> str:
    """The file's text as JupyterLab saves it (nbformat.write: indent 1, sorted keys, final newline)."""
    return nbformat.writes(notebook, version=nbformat.NO_CONVERT) + "\n"


# --- finding the problems ------------------------------------------------------------------

def _name(notebook, index: int) -> str:
    gid = grade_id(notebook.cells[index])
    return f"cell {gid} (#{index})" if gid else f"cell #{index}"


def _index(notebook, cell_id: str) -> int | None:
    return next((i for i, cell in enumerate(notebook.cells) if grade_id(cell) == cell_id), None)


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _set_nbgrader(cell_id: str, meta: dict):
    def apply(notebook):
        notebook.cells[_index(notebook, cell_id)].metadata["nbgrader"] = dict(meta)
    return apply


def _set_source(cell_id: str, source: str):
    def apply(notebook):
        notebook.cells[_index(notebook, cell_id)].source = source
    return apply


def _strip_regions(source: str) -> str:
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
            found.append(Finding(_name(notebook, index), f"has the grade id of cell #{seen[gid]}",
                                 "give one of them another grade id in the Create Assignment toolbar (nbgrader "
                                 "drops the metadata of duplicated ids)"))
        elif gid:
            seen[gid] = index
    for index, cell in enumerate(notebook.cells):
        noisy = cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
        noisy = noisy or any(key in cell.metadata for key in NOISY_CELL_METADATA)
        if noisy:
            found.append(Finding(_name(notebook, index), "has outputs, an execution count or view state",
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
        index = _index(notebook, check.grade_id)
        wanted = nbgrader_metadata(check.grade_id, grade=True, locked=True, points=check.points)
        if index is None:
            found.append(Finding(f"cell {check.grade_id}", "is missing: every hidden check needs its graded cell",
                                 "add it after the test cells", _add_hidden_cell(check)))
            continue
        cell = notebook.cells[index]
        if cell.cell_type != "code":
            found.append(Finding(_name(notebook, index), "is not a code cell", "make it a code cell (Esc, y)"))
            continue
        if cell.source != hidden_test_source(check):
            found.append(Finding(_name(notebook, index), "is not the two-line call of its check in HIDDEN_CHECKS "
                                 "(maxpool_grader/exercise/checks.py: title, points, grade id)",
                                 "write it from HIDDEN_CHECKS", _set_source(check.grade_id, hidden_test_source(check))))
        if _meta(cell) != wanted:
            drift = ", ".join(f"{key} {_meta(cell).get(key)!r} (HIDDEN_CHECKS: {value!r})"
                              for key, value in wanted.items() if _meta(cell).get(key) != value)
            found.append(Finding(_name(notebook, index), f"has nbgrader metadata {drift}",
                                 "set it from HIDDEN_CHECKS (to change points, change checks.py)",
                                 _set_nbgrader(check.grade_id, wanted)))
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
        if _meta(cell).get("grade") and gid not in GRADED_CHECKS and gid != PART_A_CELL:
            found.append(Finding(_name(notebook, index), "is a graded cell the grader has no check for",
                                 "add its check to VISIBLE_CHECKS or HIDDEN_CHECKS (maxpool_grader/exercise/"
                                 "checks.py), or make it ungraded in the Create Assignment toolbar"))
        if "BEGIN HIDDEN TESTS" in cell.source and gid not in HIDDEN_CHECKS:
            found.append(Finding(_name(notebook, index), "has a hidden-test region but is no hidden check",
                                 "add the check to HIDDEN_CHECKS, or move the code into the grader package"))
    return found


def visible_cell_findings(notebook) -> list[Finding]:
    found = []
    for check in VISIBLE_CHECKS.values():
        index = _index(notebook, check.grade_id)
        if index is None:
            found.append(Finding(f"cell {check.grade_id}", "is missing: VISIBLE_CHECKS grades it",
                                 "restore the visible test cell (git checkout), or take the check out of "
                                 "VISIBLE_CHECKS in maxpool_grader/exercise/checks.py"))
            continue
        cell, name = notebook.cells[index], _name(notebook, index)
        meta = _meta(cell)
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


def solution_findings(notebook) -> list[Finding]:
    """The solution cell passes every graded check, and the visible test cells pass with it."""
    indices = {cell_id: _index(notebook, cell_id) for cell_id in (PROVIDED_CELL, PROVIDED_TOOLS_CELL, SOLUTION_CELL)}
    missing = [cell_id for cell_id, index in indices.items() if index is None]
    if missing:
        return [Finding(f"cell {cell_id}", "is missing", "restore it (git checkout), with its grade id")
                for cell_id in missing]
    found = []
    solution = notebook.cells[indices[SOLUTION_CELL]]
    name = _name(notebook, indices[SOLUTION_CELL])
    if not (_meta(solution).get("solution") and "### BEGIN SOLUTION" in solution.source
            and "### END SOLUTION" in solution.source):
        found.append(Finding(name, "is not an 'Autograded answer' cell with a ### BEGIN/END SOLUTION region",
                             "make it one in the Create Assignment toolbar and mark the answer's lines"))
    namespace: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell_id, index in indices.items():
            try:
                exec(compile(notebook.cells[index].source, f"<cell {cell_id}>", "exec"), namespace)  # noqa: S102
            except Exception as error:  # noqa: BLE001  reported as a finding
                return found + [Finding(_name(notebook, index), f"raises {type(error).__name__}: {error}",
                                        "fix the cell: the notebook must run from the top")]
        function = namespace.get(FUNCTION)
        for check_id in GRADED_CHECKS:
            problem = _evaluate(check_id, function)
            if problem:
                found.append(Finding(name, f"fails the check {check_id}: {problem.strip().splitlines()[0]}",
                                     "fix the solution (or the check in maxpool_grader/exercise/)"))
        for check_id in VISIBLE_CHECKS:
            index = _index(notebook, check_id)
            if index is None:
                continue
            try:
                exec(compile(notebook.cells[index].source, f"<cell {check_id}>", "exec"), dict(namespace))  # noqa: S102
            except Exception as error:  # noqa: BLE001  reported as a finding
                found.append(Finding(_name(notebook, index), f"fails with the solution: {type(error).__name__}: "
                                     f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}",
                                     "fix the test or the solution"))
    return found


def _evaluate(check_id: str, function) -> str | None:
    from ..exercise.grading import evaluate
    return evaluate(check_id, function)


def part_a_findings(notebook) -> list[Finding]:
    found = []
    index = _index(notebook, PART_A_CELL)
    wanted = nbgrader_metadata(PART_A_CELL, grade=True, solution=True, points=PART_A_POINTS)
    if index is None:
        return [Finding(f"cell {PART_A_CELL}", "is missing: Part A's answer cell (model answer and rubric)",
                        "restore it (git checkout)")]
    cell, name = notebook.cells[index], _name(notebook, index)
    if cell.cell_type != "markdown":
        found.append(Finding(name, "is not a markdown cell", "make it markdown (Esc, m)"))
    if _meta(cell) != wanted:
        found.append(Finding(name, f"is not a 'Manually graded answer' cell worth PART_A_POINTS = {PART_A_POINTS}",
                             "set it from maxpool_grader/exercise/part_a.py", _set_nbgrader(PART_A_CELL, wanted)))
    if cell.source != PART_A_ANSWER:
        found.append(Finding(name, "does not hold part_a.py's MODEL_ANSWER and RUBRIC in a solution region (the "
                             "feedback and formgrader show part_a.py's)",
                             "edit them in maxpool_grader/exercise/part_a.py; --fix copies them here",
                             _set_source(PART_A_CELL, PART_A_ANSWER)))
    question = _index(notebook, PART_A_QUESTION)
    if question is None:
        return found + [Finding(f"cell {PART_A_QUESTION}", "is missing: Part A's question",
                                "restore it (git checkout)")]
    cell, name = notebook.cells[question], _name(notebook, question)
    if f"attachment:{FIGURE}" not in cell.source:
        found.append(Finding(name, "does not show Figure 1", f"put ![Figure 1](attachment:{FIGURE}) in it"))
    png = base64.b64encode(figure_png()).decode()
    if cell.get("attachments", {}).get(FIGURE, {}).get("image/png") != png:
        found.append(Finding(name, f"its attachment {FIGURE} is missing or is not part_a.figure_png()'s",
                             "attach Figure 1 from maxpool_grader/exercise/part_a.py", _attach_figure))
    return found


def _attach_figure(notebook) -> None:
    cell = notebook.cells[_index(notebook, PART_A_QUESTION)]
    cell.setdefault("attachments", {})[FIGURE] = {"image/png": base64.b64encode(figure_png()).decode()}


def prose_findings(notebook) -> list[Finding]:
    found = []
    headings = ((PART_A_QUESTION, f"## Part A: the backward message ({points_label(PART_A_POINTS)})"),
                (PART_B_EXPLANATION, f"## Part B: implement `{FUNCTION}` ({points_label(PART_B_POINTS)})"))
    for cell_id, heading in headings:
        index = _index(notebook, cell_id)
        if index is not None and heading not in notebook.cells[index].source:
            found.append(Finding(_name(notebook, index), "does not state the points the grader gives",
                                 f"keep the heading: {heading}"))
    intro = next((i for i, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"), None)
    if intro is not None:
        text = notebook.cells[intro].source
        for points, what in ((PART_B_POINTS, "Part B"), (VISIBLE_POINTS, "the visible tests"),
                             (HIDDEN_POINTS, "the hidden tests")):
            if not re.search(rf"\b{points}\b", text):
                found.append(Finding(_name(notebook, intro), f"does not say that {what} are worth {points} points",
                                     "state the points of Part B, its visible and its hidden tests"))
    return found


def leak_findings(notebook) -> list[Finding]:
    """Nothing of the answer in what generate_assignment gives students."""
    found = []
    backward = base64.b64encode(figure_png(backward=True)).decode()
    passages = [line.strip() for passage in (MODEL_ANSWER, RUBRIC, EXPLANATION) for line in passage.splitlines()
                if len(line.strip()) > 25]
    for index, cell in enumerate(notebook.cells):
        name = _name(notebook, index)
        if any(image.get("image/png") == backward for image in cell.get("attachments", {}).values()):
            found.append(Finding(name, "shows Figure 2, the backward pass (Part A's answer)",
                                 "remove the attachment: the feedback shows it"))
        if grade_id(cell) == PART_A_CELL:
            continue  # students get "YOUR ANSWER HERE" instead
        visible = _strip_regions(cell.source)
        for line in passages:
            if line in visible:
                found.append(Finding(name, f"shows students a line of the model answer or rubric: {line[:60]}...",
                                     "remove it, or put it in a ### BEGIN/END SOLUTION region"))
        for word in GRADER_WORDS:
            if word in visible:
                found.append(Finding(name, f"shows students {word!r} outside a solution or hidden-test region",
                                     "remove it, or put it in such a region"))
        for phrase in ANSWER_PHRASES:
            if phrase in visible.lower():
                found.append(Finding(name, f"says {phrase!r}, which gives Part A's answer away",
                                     "reword it (the feedback explains the answer)"))
        if grade_id(cell) in (PROVIDED_CELL, PROVIDED_TOOLS_CELL) and (
                "argmax" in visible or f"def {FUNCTION}" in visible):
            found.append(Finding(name, "provided code holds a backward pass (argmax or the function itself)",
                                 "keep the provided cells to the forward pass and the tools"))
    tools = _index(notebook, PROVIDED_TOOLS_CELL)
    if tools is not None and notebook.cells[tools].metadata.get("jupyter", {}).get("source_hidden") is not True:
        found.append(Finding(_name(notebook, tools), "is not collapsed (students need not read the tools)",
                             "View > Collapse Selected Code, and save", _collapse_tools))
    return found


def _collapse_tools(notebook) -> None:
    notebook.cells[_index(notebook, PROVIDED_TOOLS_CELL)].metadata["jupyter"] = {"source_hidden": True}


def findings(notebook: nbformat.NotebookNode, text: str | None = None) -> list[Finding]:
    """Every problem of the instructor notebook (``text``: its file's text, for the layout)."""
    return (format_findings(notebook, text) + graded_cell_findings(notebook) + hidden_cell_findings(notebook)
            + visible_cell_findings(notebook) + part_a_findings(notebook) + prose_findings(notebook)
            + leak_findings(notebook) + solution_findings(notebook))


def fix(notebook: nbformat.NotebookNode) -> list[Finding]:
    """Apply every fixable finding (to ``notebook``); return the findings that are left."""
    for _ in range(3):  # a fix can reveal another (a hidden cell added, then its outputs)
        fixable = [finding for finding in findings(notebook) if finding.apply]
        if not fixable:
            break
        for finding in fixable:
            finding.apply(notebook)
    return findings(notebook, layout(notebook))


# --- the command ---------------------------------------------------------------------------

def check(course: Path, *, apply_fixes: bool = False, db_url: str | None = None, refresh: bool = True) -> int:
    """``maxpool-grader check [--fix]``: 0 when the notebook agrees with the grader, else 1."""
    path = source_notebook(course)
    text = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    found = findings(notebook, text)
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
    from .course import configured_db_url, run_nbgrader
    from .grade import grade
    db_url = db_url or configured_db_url(course)
    result = run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force", f"--CourseDirectory.db_url={db_url}")
    if result.returncode != 0:
        print(result.stdout[-4000:], file=sys.stderr)
        return 1
    maker = course / "scripts" / "make_sample_class.py"
    if maker.is_file():  # the course repository's sample class (a course of one's own has none)
        print(f"$ python {maker.relative_to(course)}", flush=True)
        if subprocess.run([sys.executable, str(maker)], cwd=course).returncode != 0:
            return 1
    return grade(course, force=True, db_url=db_url)
