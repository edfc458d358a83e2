"""``TolerantNotebookExporter`` (``Autograde.exporter_class``): grades a notebook that is not
valid JSON, missing, renamed or a link (with a note) instead of failing the submission."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat import NotebookNode
from nbgrader.utils import is_solution

from ..names import FORMAT_KEY, RESOURCES_KEY
from .notes import add_note
from .submission import release_notebook, through_a_link
from .thisexercise import is_exercise


class TolerantNotebookExporter(NotebookExporter):
    """nbgrader's exporter, except that a notebook that cannot be read is replaced by the
    released notebook with an empty solution, and a note saying why, so the submission
    still gets a grade and a reason (plain nbgrader fails the whole submission). Another
    assignment's notebook is read as nbgrader reads it (thisexercise.py)."""

    def from_filename(self, filename, resources=None, **kw):
        resources = {} if resources is None else resources
        if not is_exercise(self, resources):
            return super().from_filename(filename, resources, **kw)
        nb = self._read(Path(filename))
        # the notes this reader wrote, as opposed to any the file claims: the first of
        # nbgrader's steps (inert.MakeSubmissionInert) keeps these alone
        resources.setdefault(RESOURCES_KEY, {})["reader_notes"] = list(getattr(self, "_notes", []))
        return self.from_notebook_node(nb, resources, **kw)

    def _read(self, path: Path) -> NotebookNode:
        """The notebook to grade (module doc); ``self._notes``: what this reader noted."""
        self._notes: list[str] = []
        path = Path(path)
        nb_name, assignment = path.stem, path.parent.name
        if through_a_link(path):
            reason = (f"Your notebook file {path.name} is a symbolic link, not a file: the grader does not "
                      "follow links. It was graded as if the solution were empty. Submit the notebook itself.")
            return self._stand_in(nb_name, assignment, reason)
        if path.exists():
            # Only reading is the student's: an error of the preprocessors after it is the
            # grader's, and must not be reported (and graded) as an unreadable notebook.
            try:
                with open(path, encoding="utf-8") as handle:
                    nb = nbformat.read(handle, as_version=4)
                original = nb.metadata.pop(FORMAT_KEY, None) or nb.metadata.get("orig_nbformat", 4)
                if isinstance(original, int) and original < 4:  # (serve converted it on upload: FORMAT_KEY)
                    self._note(nb, f"Your notebook is in nbformat {original} (an older Jupyter's format); it was "
                                   "converted to nbformat 4 and graded as usual.")
            except (json.JSONDecodeError, UnicodeDecodeError, nbformat.reader.NotJSONError,
                    nbformat.ValidationError, KeyError, TypeError, AttributeError) as problem:
                what = ("it is not JSON: cut off, or edited outside Jupyter?"
                        if isinstance(problem, (nbformat.reader.NotJSONError, json.JSONDecodeError))
                        else f"it is not a valid notebook: {str(problem).splitlines()[0][:200]}")
                reason = (f"Your notebook file {path.name} could not be read ({what}). It was graded "
                          "as if the solution were empty. Open it in Jupyter, or submit a fresh copy.")
                nb = self._stand_in(nb_name, assignment, reason)
            return nb
        others = sorted(p for p in path.parent.glob("*.ipynb") if p != path)
        if len(others) == 1:
            try:
                nb = nbformat.read(others[0], as_version=4)
            except Exception:  # noqa: BLE001  unreadable too: fall through to the stand-in
                pass
            else:
                self._note(nb, f"No notebook named {path.name} was submitted; your notebook "
                               f"{others[0].name} was graded in its place.")
                return nb
        found = ", ".join(p.name for p in others) or "no notebook at all"
        reason = (f"No notebook named {path.name} was submitted (found: {found}), so there was "
                  "no solution to grade. Submit the assignment's notebook under its own name.")
        return self._stand_in(nb_name, assignment, reason)

    def _note(self, nb: NotebookNode, text: str) -> None:
        add_note(nb, text)
        self._notes.append(text)

    def _stand_in(self, nb_name: str, assignment: str, reason: str) -> NotebookNode:
        self.log.warning("%s/%s: %s", assignment, nb_name, reason)
        nb = release_notebook(nb_name, assignment) or nbformat.v4.new_notebook()
        for cell in nb.cells:  # an empty solution; written answers stay as released ("no response": 0)
            if is_solution(cell) and cell.cell_type == "code":
                cell.source = ""
        self._note(nb, reason)
        return nb
