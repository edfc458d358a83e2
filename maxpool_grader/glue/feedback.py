"""What the feedback and the grader's pages add to a graded notebook.

* ``ModelAnswer`` (``GenerateFeedback.preprocessors``) puts Part A's model answer,
  Figure 2 (Figure 1's example forward and backward) and the explanation of the backward
  pass under the student's answer and the rubric (which ``autograde.ShowRubric`` put
  there for the grader, and which the feedback addresses to the student). Feedback is
  released after grading; the release notebook never holds any of it (tests/test_notebook.py).
* ``MathToMathML`` (``HTMLExporter.preprocessors``: the feedback pages and formgrader's
  grading page) turns the LaTeX of markdown cells into MathML, which browsers render
  without a network: nbconvert's pages load MathJax from a CDN, so offline (and on many
  campus networks) formulas stayed raw ``$...$``. Math it cannot convert stays as it is.
"""

from __future__ import annotations

import base64
import re

from latex2mathml.converter import convert
from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from traitlets import Bool

from ..exercise.part_a import EXPLANATION, MODEL_ANSWER, RUBRIC, figure_png
from ..names import MODEL_ANSWER_TAG, PART_A_CELL, RUBRIC_TAG, grade_id
from .inert import clean_mathml

RUBRIC_HEADING = "**How your Part A answer is graded**"


class ModelAnswer(Preprocessor):
    """Add Part A's model answer, Figure 2 (Figure 1 with its backward pass), and the
    explanation of the backward pass after the student's answer and the rubric in the
    feedback; the rubric, written for the grader, is addressed to the student there."""

    enabled = Bool(True)  # nbgrader registers it by name, which leaves nbconvert's default off

    def preprocess(self, nb, resources):
        for cell in nb.cells:  # the rubric (ShowRubric wrote it for the grader), to the student
            if cell.cell_type == "markdown" and RUBRIC_TAG in cell.get("metadata", {}).get("tags", []):
                cell.source = f"{RUBRIC_HEADING}\n\n{RUBRIC}"
        if any(MODEL_ANSWER_TAG in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
            return nb, resources
        at = next((index for index, cell in enumerate(nb.cells)
                   if grade_id(cell) == PART_A_CELL), None)
        if at is None:
            return nb, resources
        while at + 1 < len(nb.cells) and RUBRIC_TAG in nb.cells[at + 1].get("metadata", {}).get("tags", []):
            at += 1
        cell = new_markdown_cell(
            "### Part A: the model answer\n\n" + MODEL_ANSWER + "\n\n![Figure 2: Figure 1's example, forward "
            "and backward]"
            "(attachment:figure1-backward.png)\n\n" + EXPLANATION,
            metadata={"tags": [MODEL_ANSWER_TAG]})
        cell.id = MODEL_ANSWER_TAG
        cell.attachments = {"figure1-backward.png": {"image/png": base64.b64encode(figure_png(backward=True)).decode()}}
        nb.cells.insert(at + 1, cell)
        return nb, resources



# ------------------------------------------------------------------ math without a network
# code (left alone), $$display$$, and $inline$ as pandoc reads it: no space just inside the
# dollars, and no digit right after the closing one ("costs $5 and $6" is not math)
_MATH = re.compile(r"(?P<code>```.*?```|`[^`\n]*`)"
                   r"|(?<!\\)\$\$(?P<display>.+?)\$\$"
                   r"|(?<![\\$])\$(?P<inline>[^\s$](?:[^$]*?[^\s$\\])?)\$(?!\d)", re.S)


def latex_to_mathml(markdown: str) -> str:
    """``markdown`` with each ``$...$`` and ``$$...$$`` outside code replaced by MathML;
    a formula that cannot be converted (or spans a blank line) is left as it is."""
    def replace(match: re.Match) -> str:
        if match["code"] is not None:
            return match["code"]
        display = match["display"] is not None
        latex = match["display"] if display else match["inline"]
        if "\n\n" in latex or not latex.strip():
            return match[0]
        try:
            mathml = convert(latex.strip(), display="block" if display else "inline")
        except Exception:  # noqa: BLE001  anything latex2mathml cannot read stays LaTeX
            return match[0]
        mathml = clean_mathml(mathml).replace("\n", " ")  # \text{<img ...>} and \href stay inert
        return f"\n\n{mathml}\n\n" if display else mathml
    return _MATH.sub(replace, markdown)


class MathToMathML(Preprocessor):
    """Markdown cells' LaTeX as MathML, for pages that must render offline (module doc)."""

    enabled = Bool(True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown" and "$" in cell.source:
            cell.source = latex_to_mathml(cell.source)
        return cell, resources
