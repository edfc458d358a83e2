"""``RestoreCellOrder``: the assignment's cells put back in the released order."""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from ..names import grade_id
from .deduplicatecells import COPY_KEY
from .notes import add_note
from .sealedbox import SealedBox
from .submission import release_notebook
from .thisexercise import is_exercise


class RestoreCellOrder(NbGraderPreprocessor):
    """Put the assignment's own cells back in the released order; a cell the student added
    stays right after the assignment cell it followed. Another assignment's notebook is left
    as it is."""

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):
            return nb, resources
        release = release_notebook(resources["nbgrader"]["notebook"], resources["nbgrader"]["assignment"])
        if release is None:
            return nb, resources
        order = {cell_id: position for position, cell in enumerate(release.cells)
                 if (cell_id := grade_id(cell))}
        groups: list[tuple[int, list]] = []
        for cell in nb.cells:
            position = order.get(grade_id(cell))
            if position is not None or not groups:
                groups.append((-1 if position is None else position, [cell]))
            else:
                groups[-1][1].append(cell)
        ordered = sorted(groups, key=lambda group: group[0])  # stable: equal keys keep their order
        if ordered != groups:
            nb.cells = [cell for _, cells in ordered for cell in cells]
            add_note(nb, "Some of the assignment's cells were missing or moved; they were put back "
                         "in the assignment's order (tests after the solution) before grading.")
        _keep_added(nb, release, SealedBox(parent=self).added_cells)
        _note_added_and_missing(nb, release)
        return nb, resources


def _keep_added(nb, release, most: int) -> None:
    """Leave out the cells the student added (not the assignment's) past the first ``most``:
    a notebook of hundreds of cells each printing its fill made a graded notebook and a page
    of 400 MB, and held a grading worker for as long."""
    released = {cell.source for cell in release.cells}
    added = [index for index, cell in enumerate(nb.cells) if not grade_id(cell) and cell.source not in released]
    if len(added) > most:
        left_out = set(added[most:])
        nb.cells = [cell for index, cell in enumerate(nb.cells) if index not in left_out]
        add_note(nb, f"Your notebook adds {len(added)} cells of your own; a notebook may add {most}: the first "
                     f"{most} ran in their place, the other {len(left_out)} were left out (not run, not shown). "
                     "Your grade is what the tests decided.")


def _note_added_and_missing(nb, release) -> None:
    """A note for the cells the student added (not the assignment's, not a pasted copy, not
    empty), and for the assignment's cells still missing (graded ones were put back before:
    restoremissingcells.py; what is missing now is read-only text, which grades nothing)."""
    released = {cell.source for cell in release.cells}
    added = [cell for cell in nb.cells if not grade_id(cell) and cell.source.strip()
             and cell.source not in released and COPY_KEY not in cell.metadata]
    if added:
        add_note(nb, f"You added {len(added)} cell(s) of your own: they stayed where you put them, their code "
                     "ran in its place, and they are not graded.")
    present = {grade_id(cell) for cell in nb.cells}
    missing = [name for cell in release.cells if (name := grade_id(cell)) and name not in present]
    if missing:
        add_note(nb, f"These read-only cells of the assignment were missing from your notebook: {', '.join(missing)}. "
                     "They hold no points, so your grade is as it would be with them.")
