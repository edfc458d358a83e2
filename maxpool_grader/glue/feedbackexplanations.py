"""``FeedbackExplanations`` (``GenerateFeedback.preprocessors``, after ``ModelAnswer``): what a
failed test's report says on a feedback page, before and after the release.

A graded notebook holds each report as the grader wrote it: about the student's code and
data, never the derivation Part A asks for (exercise/reveal.py). In the final feedback (the
page ``ModelAnswer`` makes with Part A's model answer: ``modelanswer.is_final``) each report
gets its full explanations back. On every page made before it, each report is checked
against the rubric's own phrases, and a sentence that holds one is left out (with a warning
in the log, which names the phrase: none of the grader's own sentences holds one, so only a
student's text, such as their exception's message, can). The graded notebook is not changed."""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..exercise.checks import GRADED_CHECKS
from ..exercise.reveal import after_release, guarded
from ..names import grade_id
from .modelanswer import is_final
from .thisexercise import is_exercise


class FeedbackExplanations(Preprocessor):
    """Full explanations in the final feedback; before it, nothing of Part A's rubric (module doc)."""

    enabled = Bool(True)  # nbgrader registers it by name, which leaves nbconvert's default off

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):
            return nb, resources
        final = is_final(self.config, resources)
        for cell in nb.cells:
            check = GRADED_CHECKS.get(grade_id(cell)) if cell.cell_type == "code" else None
            if check is None:
                continue
            for output in cell.get("outputs", []):
                if output.get("output_type") != "error" or output.get("ename") != "CheckFailed":
                    continue
                message = str(output.get("evalue", ""))
                if final:
                    shown = after_release(message, check)
                else:
                    shown, phrases = guarded(message)
                    if phrases:
                        self.log.warning("%s: left out of the report before the release, for the rubric's "
                                         "phrases %s", check.grade_id, ", ".join(map(repr, phrases)))
                if shown != message:
                    output["evalue"], output["traceback"] = shown, shown.split("\n")
        return nb, resources
