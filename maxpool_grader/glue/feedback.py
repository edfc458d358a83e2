"""Formulas in the feedback and the grader's pages (Part A's model answer: ``model_answer``).

* ``MathToMathML`` (``HTMLExporter.preprocessors``: the feedback pages and formgrader's
  grading page) turns the LaTeX of markdown cells into MathML, which browsers render
  without a network: nbconvert's pages load MathJax from a CDN, so offline (and on many
  campus networks) formulas stayed raw ``$...$``. Math it cannot convert stays as it is.
"""

from __future__ import annotations

import re

from latex2mathml.converter import convert
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .inert import clean_mathml

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
