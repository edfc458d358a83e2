"""``MakeSubmissionInert``: a submission made inert once, first thing at autograde."""

from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry

from ..names import NOTES_KEY, RESOURCES_KEY
from .everyassignment import protects
from .inert import inert_notebook
from .makeinert import MakeInert
from .thisexercise import is_exercise


class MakeSubmissionInert(MakeInert):
    """The same, first of ``Autograde.sanitize_preprocessors``, on the notebook as the student
    sent it: metadata that would make the notebook invalid, and the tags of the grader's own
    cells (a forged rubric), are gone before nbgrader's own steps read it. Another
    assignment's notebook is made inert as every page is (MakeInert), its cells, ids and
    outputs otherwise as sent: nbgrader's own steps read it as they would."""

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):
            return (inert_notebook(nb) if protects(self, "inert") else nb), resources
        nb = inert_notebook(nb, submitted=True)
        noted = (resources or {}).get(RESOURCES_KEY, {}).get("reader_notes")
        if noted:  # what the grader's reader noted (a missing or unreadable notebook) stays
            nb.metadata[NOTES_KEY] = list(noted)
        known = _assignment_cells(resources)
        for cell in nb.cells:  # nbgrader fails a notebook whose cell claims an id it does not know
            if known is not None and cell.metadata.get("nbgrader", {}).get("grade_id") not in known:
                cell.metadata.pop("nbgrader", None)
        return nb, resources


def _assignment_cells(resources) -> set[str] | None:
    """The grade ids of the released notebook's cells, from the gradebook (None: unknown)."""
    found = (resources or {}).get("nbgrader", {})
    if not all(key in found for key in ("db_url", "assignment", "notebook")):
        return None
    try:
        with Gradebook(found["db_url"]) as gradebook:
            notebook = gradebook.find_notebook(found["notebook"], found["assignment"])
            return {cell.name for cell in notebook.source_cells}
    except MissingEntry:
        return None
