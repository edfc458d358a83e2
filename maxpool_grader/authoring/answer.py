"""``maxpool-grader check``'s findings about the answer: the solution passes every graded check,
Part A's cell holds part_a.py's model answer and rubric and its question shows Figure 1, the
prose states the grader's points and what Validate does not check, and nothing of the answer is
in what students get."""

from __future__ import annotations

import base64
import contextlib
import io
import re
import warnings

from ..exercise.checks import GRADED_CHECKS, VISIBLE_CHECKS
from ..exercise.contract import RULES, self_checked
from ..exercise.grading import evaluate
from ..exercise.part_a import (
    EXPLANATION,
    FIGURE_1_ALT,
    MODEL_ANSWER,
    PART_A_POINTS,
    QUESTION_POINTS,
    RUBRIC,
    figure_png,
)
from ..exercise.reveal import rubric_phrases_in
from ..names import FUNCTION, PART_A_CELL, PROVIDED_CELL, PROVIDED_TOOLS_CELL, SOLUTION_CELL, grade_id
from .cells import (
    FIGURE,
    GRADER_WORDS,
    HIDDEN_POINTS,
    PART_A_ANSWER,
    PART_A_QUESTION,
    PART_B_EXPLANATION,
    PART_B_POINTS,
    VISIBLE_POINTS,
    Finding,
    cell_index,
    cell_name,
    nbgrader_meta,
    nbgrader_metadata,
    points_label,
    set_nbgrader,
    set_source,
    student_visible,
)


def solution_findings(notebook) -> list[Finding]:
    """The solution cell passes every graded check, and the visible test cells pass with it."""
    indices = {cell_id: cell_index(notebook, cell_id)
               for cell_id in (PROVIDED_CELL, PROVIDED_TOOLS_CELL, SOLUTION_CELL)}
    missing = [cell_id for cell_id, index in indices.items() if index is None]
    if missing:
        return [Finding(f"cell {cell_id}", "is missing", "restore it (git checkout), with its grade id")
                for cell_id in missing]
    found = []
    solution = notebook.cells[indices[SOLUTION_CELL]]
    name = cell_name(notebook, indices[SOLUTION_CELL])
    if not (nbgrader_meta(solution).get("solution") and "### BEGIN SOLUTION" in solution.source
            and "### END SOLUTION" in solution.source):
        found.append(Finding(name, "is not an 'Autograded answer' cell with a ### BEGIN/END SOLUTION region",
                             "make it one in the Create Assignment toolbar and mark the answer's lines"))
    return found + _run_solution(notebook, indices, name)


def _run_solution(notebook, indices: dict[str, int], name: str) -> list[Finding]:
    """Run the provided cells and the solution here, then every graded check and visible test."""
    found: list[Finding] = []
    namespace: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell_id, index in indices.items():
            try:
                exec(compile(notebook.cells[index].source, f"<cell {cell_id}>", "exec"), namespace)  # noqa: S102
            except Exception as error:  # noqa: BLE001  reported as a finding
                return [Finding(cell_name(notebook, index), f"raises {type(error).__name__}: {error}",
                                "fix the cell: the notebook must run from the top")]
        function = namespace.get(FUNCTION)
        for check_id in GRADED_CHECKS:
            problem = evaluate(check_id, function)
            if problem:
                found.append(Finding(name, f"fails the check {check_id}: {problem.strip().splitlines()[0]}",
                                     "fix the solution (or the check in maxpool_grader/exercise/)"))
        for check_id in VISIBLE_CHECKS:
            index = cell_index(notebook, check_id)
            if index is None:
                continue
            try:
                exec(compile(notebook.cells[index].source, f"<cell {check_id}>", "exec"), dict(namespace))  # noqa: S102
            except Exception as error:  # noqa: BLE001  reported as a finding
                found.append(Finding(cell_name(notebook, index), f"fails with the solution: {type(error).__name__}: "
                                     f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}",
                                     "fix the test or the solution"))
    return found


def part_a_findings(notebook) -> list[Finding]:
    found = []
    index = cell_index(notebook, PART_A_CELL)
    wanted = nbgrader_metadata(PART_A_CELL, grade=True, solution=True, points=PART_A_POINTS)
    if index is None:
        return [Finding(f"cell {PART_A_CELL}", "is missing: Part A's answer cell (model answer and rubric)",
                        "restore it (git checkout)")]
    cell, name = notebook.cells[index], cell_name(notebook, index)
    if cell.cell_type != "markdown":
        found.append(Finding(name, "is not a markdown cell", "make it markdown (Esc, m)"))
    if nbgrader_meta(cell) != wanted:
        found.append(Finding(name, f"is not a 'Manually graded answer' cell worth PART_A_POINTS = {PART_A_POINTS}",
                             "set it from maxpool_grader/exercise/part_a.py", set_nbgrader(PART_A_CELL, wanted)))
    if cell.source != PART_A_ANSWER:
        found.append(Finding(name, "does not hold part_a.py's MODEL_ANSWER and RUBRIC in a solution region (the "
                             "feedback and formgrader show part_a.py's)",
                             "edit them in maxpool_grader/exercise/part_a.py; --fix copies them here",
                             set_source(PART_A_CELL, PART_A_ANSWER)))
    question = cell_index(notebook, PART_A_QUESTION)
    if question is None:
        return found + [Finding(f"cell {PART_A_QUESTION}", "is missing: Part A's question",
                                "restore it (git checkout)")]
    cell, name = notebook.cells[question], cell_name(notebook, question)
    if f"attachment:{FIGURE}" not in cell.source:
        found.append(Finding(name, "does not show Figure 1", f"put ![Figure 1](attachment:{FIGURE}) in it"))
    elif FIGURE_1_IMAGE not in cell.source:
        found.append(Finding(name, "Figure 1's text alternative is not part_a.FIGURE_1_ALT (what the figure shows, "
                             "for a reader who cannot see it)", "use part_a.FIGURE_1_ALT as its alt text",
                             _describe_figure))
    png = base64.b64encode(figure_png()).decode()
    if cell.get("attachments", {}).get(FIGURE, {}).get("image/png") != png:
        found.append(Finding(name, f"its attachment {FIGURE} is missing or is not part_a.figure_png()'s",
                             "attach Figure 1 from maxpool_grader/exercise/part_a.py", _attach_figure))
    return found


FIGURE_1_IMAGE = f"![{FIGURE_1_ALT}](attachment:{FIGURE})"


def _describe_figure(notebook) -> None:
    cell = notebook.cells[cell_index(notebook, PART_A_QUESTION)]
    cell.source = re.sub(r"!\[[^\]]*\]\(attachment:" + re.escape(FIGURE) + r"\)", lambda _: FIGURE_1_IMAGE, cell.source)


def _attach_figure(notebook) -> None:
    cell = notebook.cells[cell_index(notebook, PART_A_QUESTION)]
    cell.setdefault("attachments", {})[FIGURE] = {"image/png": base64.b64encode(figure_png()).decode()}


def prose_findings(notebook) -> list[Finding]:
    found = []
    headings = ((PART_A_QUESTION, f"## Part A: the backward message ({points_label(PART_A_POINTS)})"),
                (PART_B_EXPLANATION, f"## Part B: implement `{FUNCTION}` ({points_label(PART_B_POINTS)})"))
    for cell_id, heading in headings:
        index = cell_index(notebook, cell_id)
        if index is not None and heading not in notebook.cells[index].source:
            found.append(Finding(cell_name(notebook, index), "does not state the points the grader gives",
                                 f"keep the heading: {heading}"))
    question = cell_index(notebook, PART_A_QUESTION)
    flat = lambda text: " ".join(text.split())  # noqa: E731  line breaks are the author's
    if question is not None and flat(QUESTION_POINTS) not in flat(notebook.cells[question].source):
        found.append(Finding(cell_name(notebook, question), "does not state the points of each item the rubric grades",
                             f"end the question with part_a.py's QUESTION_POINTS: {QUESTION_POINTS}"))
    tests = cell_index(notebook, TESTS_HEADER)
    if tests is not None and not all(words in flat(notebook.cells[tests].source) for words in VALIDATE_NOTE):
        found.append(Finding(cell_name(notebook, tests), "does not say what nbgrader validate checks and what it "
                             "does not (it runs the visible tests only; the hidden tests decide the grade)",
                             f"say it, with these words: {' ... '.join(VALIDATE_NOTE)}"))
    intro = next((i for i, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"), None)
    if intro is not None:
        text = notebook.cells[intro].source
        for points, what in ((PART_B_POINTS, "Part B"), (VISIBLE_POINTS, "the visible tests"),
                             (HIDDEN_POINTS, "the hidden tests")):
            if not re.search(rf"\b{points}\b", text):
                found.append(Finding(cell_name(notebook, intro), f"does not say that {what} are worth {points} points",
                                     "state the points of Part B, its visible and its hidden tests"))
    return found


TESTS_HEADER = "tests_header"  # the markdown cell above the tests
# What the tests' heading says of Validate: that it runs, what it checks, and that it is no grade
# (stock nbgrader prints "Success! Your notebook passes all the tests" for code the hidden tests fail).
VALIDATE_NOTE = ("`nbgrader validate`", "visible tests pass", 'Its "Success!" is not a grade', "hidden tests")


def contract_findings(notebook) -> list[Finding]:
    """The notebook states every rule of the contract (exercise/contract.py), and its tools cell's
    ``check_rules`` checks exactly the contract's self-checked rules, in its words and order."""
    found = []
    flat = lambda text: " ".join(text.split())  # noqa: E731  line breaks are the author's
    cells = {cell_id: cell_index(notebook, cell_id) for cell_id in (PART_A_QUESTION, PART_B_EXPLANATION)}
    text = " ".join(flat(notebook.cells[index].source) for index in cells.values() if index is not None)
    where = cell_name(notebook, cells[PART_B_EXPLANATION]) if cells[PART_B_EXPLANATION] is not None else "Part B"
    for rule in RULES:
        if flat(rule.stated) not in text:
            found.append(Finding(where, f"no longer states the rule {rule.name!r} as the grader's contract does",
                                 f"state it in these words: {flat(rule.stated)!r}, or change RULES in "
                                 "maxpool_grader/exercise/contract.py to the new wording"))
    tools = cell_index(notebook, PROVIDED_TOOLS_CELL)
    if tools is not None:
        source = notebook.cells[tools].source
        listed = re.findall(r'^    "([^"]+)": _rule_\w+,$', source, flags=re.M)
        if listed != self_checked():
            found.append(Finding(cell_name(notebook, tools), "checks other rules than the contract's self-checked ones",
                                 f"list in _RULES, in this order: {self_checked()}"))
    return found


def leak_findings(notebook) -> list[Finding]:
    """Nothing of the answer in what generate_assignment gives students."""
    found = []
    backward = base64.b64encode(figure_png(backward=True)).decode()
    passages = [line.strip() for passage in (MODEL_ANSWER, RUBRIC, EXPLANATION) for line in passage.splitlines()
                if len(line.strip()) > 25]
    for index, cell in enumerate(notebook.cells):
        name = cell_name(notebook, index)
        if any(image.get("image/png") == backward for image in cell.get("attachments", {}).values()):
            found.append(Finding(name, "shows Figure 2, the backward pass (Part A's answer)",
                                 "remove the attachment: the feedback shows it"))
        if grade_id(cell) == PART_A_CELL:
            continue  # students get "YOUR ANSWER HERE" instead
        visible = student_visible(cell.source)
        for line in passages:
            if line in visible:
                found.append(Finding(name, f"shows students a line of the model answer or rubric: {line[:60]}...",
                                     "remove it, or put it in a ### BEGIN/END SOLUTION region"))
        for word in GRADER_WORDS:
            if word in visible:
                found.append(Finding(name, f"shows students {word!r} outside a solution or hidden-test region",
                                     "remove it, or put it in such a region"))
        for phrase in rubric_phrases_in(visible):
            found.append(Finding(name, f"says {phrase!r} (stemmed), a phrase of Part A's rubric, which gives its "
                                 "answer away", "reword it (the final feedback explains the answer)"))
        if grade_id(cell) in (PROVIDED_CELL, PROVIDED_TOOLS_CELL) and (
                "argmax" in visible or f"def {FUNCTION}" in visible):
            found.append(Finding(name, "provided code holds a backward pass (argmax or the function itself)",
                                 "keep the provided cells to the forward pass and the tools"))
    tools = cell_index(notebook, PROVIDED_TOOLS_CELL)
    if tools is not None and notebook.cells[tools].metadata.get("jupyter", {}).get("source_hidden") is not True:
        found.append(Finding(cell_name(notebook, tools), "is not collapsed (students need not read the tools)",
                             "View > Collapse Selected Code, and save", _collapse_tools))
    return found


def _collapse_tools(notebook) -> None:
    notebook.cells[cell_index(notebook, PROVIDED_TOOLS_CELL)].metadata["jupyter"] = {"source_hidden": True}
