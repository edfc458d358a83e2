"""``DeduplicateCells``: nbgrader's ``DeduplicateIds``, for a notebook with a graded cell
copied and pasted (JupyterLab keeps a cell's grading data when it pastes it)."""

from __future__ import annotations

from nbformat.v4 import new_raw_cell
from nbgrader.preprocessors import DeduplicateIds
from nbgrader.utils import is_grade, is_locked, is_solution

from ..names import grade_id
from .notes import add_note
from .submission import release_notebook
from .thisexercise import is_exercise

COPY_KEY = "maxpool_grader_copy_of"  # a demoted copy's metadata: the cell it copied


class DeduplicateCells(DeduplicateIds):
    """Of the copies of an assignment cell, grade the one in the assignment's own place: the
    copy that kept the released cell's id (the pasted ones get new ids), else the first.
    The other copies lose their grading data and stay in the notebook as plain text (a raw
    cell: their code does not run, so a copy below cannot redefine what the graded cell
    defines and be graded in its place), and a note says so.

    nbgrader's own step keeps the *last* copy and leaves the others an empty ``nbgrader``
    entry, on which ``OverwriteCells.add_missing_task_cells`` then fails with
    ``KeyError: 'grade_id'``: the submission got no grade at all (jupyter/nbgrader#1083,
    open; a fix proposed in #1753, not merged). Another assignment's notebook goes through
    nbgrader's own step."""

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):
            return super().preprocess(nb, resources)
        release = release_notebook(resources["nbgrader"]["notebook"], resources["nbgrader"]["assignment"])
        released_ids = {grade_id(cell): cell.get("id") for cell in release.cells} if release else {}
        copies: dict[str, list[int]] = {}
        for index, cell in enumerate(nb.cells):
            if (is_grade(cell) or is_solution(cell) or is_locked(cell)) and grade_id(cell):
                copies.setdefault(grade_id(cell), []).append(index)
        for name, indices in copies.items():
            if len(indices) < 2:
                continue
            kept = next((index for index in indices if nb.cells[index].get("id") == released_ids.get(name)),
                        indices[0])
            for index in indices:
                if index != kept:
                    copy = nb.cells[index]
                    del copy.metadata["nbgrader"]
                    if copy.cell_type == "code":  # shown, never run
                        nb.cells[index] = new_raw_cell(copy.source, metadata=copy.metadata, id=copy.get("id"))
                    nb.cells[index].metadata[COPY_KEY] = name
            self.log.warning("Cell with id '%s' exists %d times: the one in the assignment's place is graded",
                             name, len(indices))
            add_note(nb, f"Your notebook has {len(indices)} copies of the assignment's cell '{name}' (a cell "
                         "copied and pasted keeps its grading data). The one in the assignment's own place was "
                         f"graded as that cell; the other {len(indices) - 1} stayed in your notebook as plain text "
                         "and did not run. Delete the copies you do not need.")
        return nb, resources
