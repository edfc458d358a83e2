"""``KeepHandGrades``: nbgrader's SaveAutoGrades, keeping the hand grades of unchanged
answers when a submission is graded again."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades

from ..sandbox.box import GraderFault
from .notes import add_note
from .recording import forget_new_submission, wait_to_record
from .thisexercise import is_exercise


class KeepHandGrades(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, except that regrading keeps a hand grade of an answer
    that did not change.

    nbgrader marks every cell that has a manual score "needs manual grade" again on each
    autograde, so ``--force``, a change of the source notebook, or a moved gradebook sent
    every Part A back to the grader. Here a cell graded only by hand (no autograder score)
    keeps its grade when its source is the one that was autograded last time: a digest
    per cell is kept in ``.maxpool-grader/answers/<assignment>/<student>.json`` in the
    course directory. When the answer changed, it goes back to "needs manual grade" and
    a note says why (the class report lists it). The notebook's grades are committed
    once, together (nbgrader committed each cell's: a dozen fsyncs of the gradebook).
    Another assignment's grades are saved by nbgrader's own SaveAutoGrades, unchanged.
    """

    _stock = False  # another assignment's notebook: nbgrader's own rule for every cell

    def preprocess(self, nb, resources):
        try:
            wait_to_record()  # a grading worker's control submission first (backend/control.py)
        except GraderFault:
            forget_new_submission(resources)
            raise
        self._stock = not is_exercise(self, resources)
        if self._stock:
            return SaveAutoGrades.preprocess(self, nb, resources)
        found = resources["nbgrader"]
        root = Path(CourseDirectory(parent=self).root)
        self._answers = root / ".maxpool-grader" / "answers" / found["assignment"] / f"{found['student']}.json"
        try:
            self._before = json.loads(self._answers.read_text()).get(found["notebook"], {})
        except (OSError, ValueError, AttributeError):
            self._before = {}
        self._now, self._changed = {}, []
        # nbgrader's SaveAutoGrades.preprocess, with one commit for the whole notebook instead of
        # one per cell (each an fsync of the gradebook): the grades stored are the same
        self.notebook_id, self.assignment_id = found["notebook"], found["assignment"]
        self.student_id, self.db_url = found["student"], found["db_url"]
        self.gradebook = Gradebook(self.db_url)
        with self.gradebook:
            nb, resources = NbGraderPreprocessor.preprocess(self, nb, resources)
            self.gradebook.db.commit()
        for changed in self._changed:
            add_note(nb, f"Your answer in '{changed}' changed since it was graded by hand; it will be "
                         "graded again.")
        self._save(found["notebook"])
        return nb, resources

    def _add_score(self, cell, resources):
        """nbgrader's SaveAutoGrades._add_score (its rule, without its commit), then a hand grade
        of an unchanged answer kept."""
        if self._stock:
            return SaveAutoGrades._add_score(self, cell, resources)
        cell_id = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(cell_id, self.notebook_id, self.assignment_id, self.student_id)
        grade.auto_score, _ = utils.determine_grade(cell, self.log)
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        digest = hashlib.sha256(cell.source.encode()).hexdigest()
        self._now[cell_id] = digest
        if grade.auto_score is not None or grade.manual_score is None:
            return  # an autograded cell, or not graded by hand yet: nbgrader's rule
        if self._before.get(cell_id) == digest:
            grade.needs_manual_grade = False
        else:
            self._changed.append(cell_id)

    def _add_comment(self, cell, resources):
        """nbgrader's SaveAutoGrades._add_comment, without its commit."""
        if self._stock:
            return SaveAutoGrades._add_comment(self, cell, resources)
        comment = self.gradebook.find_comment(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                              self.assignment_id, self.student_id)
        unchanged = cell.metadata.nbgrader.get("checksum", None) == utils.compute_checksum(cell)
        comment.auto_comment = "No response." if unchanged and not utils.is_task(cell) else None

    def _save(self, notebook: str) -> None:
        try:
            saved = json.loads(self._answers.read_text())
        except (OSError, ValueError):
            saved = {}
        saved[notebook] = self._now
        self._answers.parent.mkdir(parents=True, exist_ok=True)
        partial = self._answers.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(saved, indent=1, sort_keys=True))
        os.replace(partial, self._answers)
