"""``ModelAnswer`` (``GenerateFeedback.preprocessors``): Part A's answer, in the final feedback only.

Part A is graded by hand after the deadline, and its answer can change until then. So the
model answer, Figure 2 (Figure 1 with its backward pass), the explanation of the backward
pass and the rubric are added to a feedback page only when it is the final one: made by the
instructor (``maxpool-grader grade``, ``nbgrader generate_feedback``) once the deadline has
passed, or for a course without a deadline. Every page ``maxpool-grader serve`` makes, and
every page made before the deadline, keeps the student's own answer and says when Part A is
graded instead (docs/serve.md#before-the-deadline). The release notebook never holds any of
it (tests/test_notebook.py)."""

from __future__ import annotations

import base64
import time

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook
from nbgrader.utils import compute_checksum
from traitlets import Bool, Enum

from ..exercise.part_a import EXPLANATION, MODEL_ANSWER, PART_A_POINTS, RUBRIC, figure_png
from ..names import MODEL_ANSWER_TAG, PART_A_CELL, RESOURCES_KEY, RUBRIC_TAG, grade_id
from .deadline import deadline
from .thisexercise import is_exercise

RUBRIC_HEADING = "**How your Part A answer is graded**"


# What Figure 2 shows, for whoever does not see it (a screen reader reads the alt text)
FIGURE_2_ALT = ("Figure 2: Figure 1's example, forward and backward. Forward: the maximum of each 2x2 window "
                "(framed, in bold: 4, 2, 6 and 8) is its output, 4 and 2 in the top row, 6 and 8 below. Backward: "
                "each window's upstream gradient goes to that maximum, 0.1 to the 4 in row 2, column 1, 0.2 to the "
                "2 in row 1, column 3, 0.3 to the 6 in row 4, column 2, and 0.4 to the 8 in row 3, column 4; every "
                "other input gets 0.")


NOT_YET = ("**Part A is graded by a person after the deadline.** The model answer, how Part A is "
           "graded and Figure 2 come with your final feedback. Until the deadline your answer is "
           "yours to change.")


def is_final(config, resources) -> bool:
    """Whether this feedback page is the final one (module doc): kept in ``resources`` so that
    every step of one page sees the same answer."""
    ours = resources.setdefault(RESOURCES_KEY, {})
    if "final" not in ours:
        ours["final"] = _final(config, resources.get("nbgrader", {}))
    return ours["final"]


def _final(config, found: dict) -> bool:
    if ModelAnswer(config=config).release == "never":
        return False
    # c.Serve.deadline is read by name: the service's policy lives in a layer above this one
    configured = config.Serve.get("deadline", "") if "Serve" in config else ""
    try:
        due = deadline(configured, found["db_url"], found["assignment"])
    except (KeyError, ValueError):  # no gradebook (a page made by hand), or a deadline that is no time
        return not configured
    return due is None or time.time() > due.timestamp()


class ModelAnswer(Preprocessor):
    """Add Part A's model answer, Figure 2 and the explanation of the backward pass after the
    student's answer, and address the rubric to the student, in the final feedback; before
    it, say when Part A is graded instead (module doc)."""

    enabled = Bool(True)  # nbgrader registers it by name, which leaves nbconvert's default off
    release = Enum(("after_deadline", "never"), default_value="after_deadline", help=(
        "When a feedback page shows Part A's model answer, rubric, Figure 2 and the explanation of the "
        "backward pass: 'after_deadline' (a page made after c.Serve.deadline, or the assignment's due "
        "date; every page when there is neither) or 'never'. maxpool-grader serve makes its pages with "
        "'never': they are read while Part A can still change.")).tag(config=True, unit="")

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):  # another assignment's page: nbgrader's own
            return nb, resources
        final = is_final(self.config, resources)
        for cell in nb.cells:  # the rubric ShowRubric wrote for the grader: the student's, or a note
            if cell.cell_type == "markdown" and RUBRIC_TAG in cell.get("metadata", {}).get("tags", []):
                cell.source = f"{RUBRIC_HEADING}\n\n{RUBRIC}" if final else NOT_YET
        if any(MODEL_ANSWER_TAG in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
            if not final:  # a page made again from an earlier one: never more than the run may show
                nb.cells = [cell for cell in nb.cells
                            if MODEL_ANSWER_TAG not in cell.get("metadata", {}).get("tags", [])]
            return nb, resources
        part_a = next((index for index, cell in enumerate(nb.cells) if grade_id(cell) == PART_A_CELL), None)
        if part_a is None:
            return nb, resources
        at = part_a
        while at + 1 < len(nb.cells) and RUBRIC_TAG in nb.cells[at + 1].get("metadata", {}).get("tags", []):
            at += 1
        if final:
            nb.cells.insert(at + 1, _model_answer_cell())
        elif at == part_a:  # graded without ShowRubric: no rubric cell holds the note
            nb.cells.insert(at + 1, _note_cell())
        return nb, resources


def _model_answer_cell():
    cell = new_markdown_cell(
        "### Part A: the model answer\n\n" + MODEL_ANSWER + f"\n\n![{FIGURE_2_ALT}](attachment:figure1-backward.png)"
        "\n\n" + EXPLANATION,
        metadata={"tags": [MODEL_ANSWER_TAG]})
    cell.id = MODEL_ANSWER_TAG
    cell.attachments = {"figure1-backward.png": {"image/png": base64.b64encode(figure_png(backward=True)).decode()}}
    return cell


def _note_cell():
    """The note in the rubric's place, for a notebook graded without ShowRubric."""
    cell = new_markdown_cell(NOT_YET, metadata={"tags": [RUBRIC_TAG]})
    cell.id = RUBRIC_TAG
    return cell


# ------------------------------------------------------------------ Part A's score on a page
def _ungraded(resources) -> set[str]:
    """The grade ids still waiting for a hand grade (Part A), from the gradebook."""
    found = resources.get("nbgrader", {})
    try:
        with Gradebook(found["db_url"]) as gradebook:
            notebook = gradebook.find_submission_notebook(found["notebook"], found["assignment"], found["student"])
            return {grade.name for grade in notebook.grades if grade.needs_manual_grade}
    except Exception:  # noqa: BLE001  no gradebook (a page made by hand): the scores speak alone
        return set()


def part_a_pending(nb, resources, config) -> dict[str, str]:
    """{PART_A_CELL: what the page says instead of a score} while Part A has no grade of a
    person: an answer waiting for one, or, before the final feedback, no answer yet (nbgrader
    scores an unchanged answer 0 at once, which is a grade only once the deadline passed)."""
    part_a = next((cell for cell in nb.cells if grade_id(cell) == PART_A_CELL), None)
    if part_a is None:
        return {}
    points = f"{float(part_a.metadata.get('nbgrader', {}).get('points') or PART_A_POINTS):g}"
    if PART_A_CELL in _ungraded(resources):
        return {PART_A_CELL: f"not graded yet, of {points}"}
    if unanswered(part_a) and not is_final(config, resources):
        return {PART_A_CELL: f"not answered yet, of {points}"}
    return {}


def unanswered(cell) -> bool:
    """nbgrader's own test (``utils.determine_grade``): the answer is the one released."""
    return compute_checksum(cell) == cell.metadata.get("nbgrader", {}).get("checksum")
