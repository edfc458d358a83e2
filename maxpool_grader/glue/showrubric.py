"""``ShowRubric``: Part A's rubric under the answer, for the person grading it."""

from __future__ import annotations

from nbformat.v4 import new_markdown_cell
from nbgrader.preprocessors import NbGraderPreprocessor

from ..exercise.part_a import RUBRIC
from ..names import PART_A_CELL, RUBRIC_TAG, grade_id
from .thisexercise import is_exercise


class ShowRubric(NbGraderPreprocessor):
    """Put Part A's rubric right under the student's answer in the autograded notebook, the
    one formgrader shows while grading by hand (the final feedback keeps it, and adds the
    model answer: modelanswer.ModelAnswer). The release never has it."""

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):
            return nb, resources
        at = next((index for index, cell in enumerate(nb.cells) if grade_id(cell) == PART_A_CELL), None)
        if at is not None and not any(RUBRIC_TAG in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
            rubric = new_markdown_cell(
                "**For the grader: Part A's rubric** (students see it with their final feedback, after the "
                "deadline)\n\n" + RUBRIC,
                metadata={"tags": [RUBRIC_TAG]})
            rubric.id = RUBRIC_TAG  # a fixed id: regrading writes the same notebook
            nb.cells.insert(at + 1, rubric)
        return nb, resources
