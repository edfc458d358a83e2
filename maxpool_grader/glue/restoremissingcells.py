"""``RestoreMissingCells``: nbgrader's ``OverwriteCells``, putting back every graded cell a
student deleted, wherever it was."""

from __future__ import annotations

from nbgrader.preprocessors import OverwriteCells

from .notes import add_note
from .thisexercise import is_exercise


class RestoreMissingCells(OverwriteCells):
    """nbgrader's ``OverwriteCells`` (``add_missing_cells``) puts a deleted graded cell back
    after the cell that precedes it in the source notebook, and assumes that one is a graded
    cell too: when it is not (Part A's question, a read-only cell before the answer), the
    submission failed with ``KeyError: 'part_a_question'`` and got no grade. Here a missing
    cell goes after the nearest earlier cell of the assignment that the notebook still has
    (else first), and a note says which cells were put back. A cell of the assignment
    stripped of its grading data is known by its text (a read-only cell keeps the released
    one): a notebook whose every cell was stripped gets its tests back after the tests'
    heading, below the student's code, not above it. Task cells are looked up only in cells
    that carry grading data (a pasted copy stripped of it has none). A patch of nbgrader's
    bug, so every assignment's notebooks get it (``c.OverwriteCells.add_missing_cells`` is
    the course's); the note is the exercise's alone."""

    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_ids = [cell.name for cell in source_nb.source_cells]
        solutions = {cell.name for cell in source_nb.solution_cells}
        restored = []
        by_text = {cell.source: cell.name for cell in source_nb.source_cells if cell.source and cell.source.strip()}
        for graded in source_nb.grade_cells:
            present = {_grade_id(cell): index for index, cell in enumerate(nb.cells) if _grade_id(cell)}
            if graded.name in present:
                continue
            known = {by_text[cell.source]: index for index, cell in enumerate(nb.cells)
                     if not _grade_id(cell) and cell.source in by_text} | present  # where to put it back
            before = source_ids[:source_ids.index(graded.name)]
            anchor = next((known[name] for name in reversed(before) if name in known), -1)
            source = source_nb.source_cells[source_ids.index(graded.name)]
            nb.cells.insert(anchor + 1, self.missing_cell_transform(source, graded.max_score,
                                                                    is_solution=graded.name in solutions))
            restored.append(graded.name)
        if restored:
            self.log.warning("Missing graded cells put back: %s", ", ".join(restored))
        if restored and is_exercise(self, resources):  # the exercise's notes cell; another notebook gets none
            add_note(nb, "These cells of the assignment were missing from your notebook and were put back as "
                         f"released before grading: {', '.join(restored)}.")
        return nb, resources

    def add_missing_task_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_cells = {cell.name: cell for cell in source_nb.source_cells}
        present = {_grade_id(cell) for cell in nb.cells}
        for task in source_nb.task_cells:
            if task.name not in present:
                nb.cells.append(self.missing_cell_transform(source_cells[task.name], task.max_score, is_task=True))
        return nb, resources


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
