"""``LatePolicy`` (``c.AssignLatePenalties.plugin_class``): the course's late policy, which
nbgrader applies when it grades a late submission, however it came (LMS, exchange, web)."""

from __future__ import annotations

import math

from nbgrader.api import MissingEntry
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from .thisexercise import is_exercise


class LatePolicy(LateSubmissionPlugin):
    """The course's late policy: a late submission loses ``percent_per_day`` of its
    autograded points for every started day (24 hours) after the due date, up to all of
    them. Part A, graded by hand later, is not reduced (so the penalty does not change when
    it is graded). For this exercise only: every other assignment gets nbgrader's own
    policy (``LateSubmissionPlugin.penalty_method``, "none" unless the instructor set it),
    and so does the exercise when the instructor set ``penalty_method`` in the course."""

    percent_per_day = Float(10.0, help=(
        "Share of the autograded points lost per started day (24 hours) late, up to all of them; "
        "Part A, graded by hand, is not reduced.")).tag(config=True, unit="%")

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        parent = self.parent  # nbgrader's AssignLatePenalties, with the gradebook open
        found = {"nbgrader": {"assignment": getattr(parent, "assignment_id", None),
                              "notebook": getattr(parent, "notebook_id", None)}}
        if not is_exercise(self, found) or self._instructor_policy():
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / 86400)
        try:
            notebook = parent.gradebook.find_submission_notebook(parent.notebook_id, parent.assignment_id, student_id)
            autograded = notebook.code_score
        except (AttributeError, MissingEntry):
            autograded = score
        return round(min(1.0, days * self.percent_per_day / 100) * autograded, 6)

    def _instructor_policy(self) -> bool:
        """Whether the course sets nbgrader's own ``penalty_method`` (which then wins)."""
        return any("penalty_method" in self.config.get(name, {}) for name in ("LateSubmissionPlugin", "LatePolicy"))
