"""``RestoreCellOrder``: the assignment's cells put back in the released order."""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from ..names import grade_id
from .notes import add_note
from .submission import release_notebook


class RestoreCellOrder(NbGraderPreprocessor):
    """Put the assignment's own cells back in the released order; a cell the student added
    stays right after the assignment cell it followed."""

    def preprocess(self, nb, resources):
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
        return nb, resources
