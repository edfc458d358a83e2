"""Reading a submission, whatever it holds: ``TolerantNotebookExporter`` grades a notebook
that is not valid JSON, missing, renamed or a link (with a note) instead of failing the
submission; ``grade_folders_without_notebooks`` makes nbgrader see a folder with no
notebook at all; ``skip_symbolic_links`` keeps nbgrader from following links when it
copies files; ``RestoreCellOrder`` puts moved cells back in the assignment's order."""

from __future__ import annotations

import glob
import json
import os
import warnings
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_solution
from sqlalchemy.exc import SAWarning

from ..names import RESOURCES_KEY, grade_id
from .notes import add_note


def quiet_known_nbgrader_warnings() -> None:
    """Silence exactly one known warning of nbgrader 0.9.6, nothing else.

    Creating a submission in a new gradebook (``Gradebook.update_or_create_submission``)
    reads ``submission.assignment.notebooks`` while the new SubmittedAssignment and its
    SubmittedNotebooks are not in the session yet; SQLAlchemy's autoflush then warns
    "Object of type <SubmittedAssignment> not in session, add operation along
    'Student.submissions' will not proceed" (three lines per submission). The objects
    are added right after, and every grade is saved (the tests count them).
    """
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted(Assignment|Notebook)> not in session",
                            category=SAWarning, module=r"nbgrader\.api")


def _release_notebook(nb_name: str, assignment: str) -> NotebookNode | None:
    """The released notebook (the course directory is nbgrader's working directory)."""
    for step in ("release", "source"):
        path = Path(step) / assignment / f"{nb_name}.ipynb"
        if path.exists():
            return nbformat.read(path, as_version=4)
    return None


class TolerantNotebookExporter(NotebookExporter):
    """nbgrader's exporter, except that a notebook that cannot be read is replaced by the
    released notebook with an empty solution, and a note saying why, so the submission
    still gets a grade and a reason (plain nbgrader fails the whole submission)."""

    def from_filename(self, filename, resources=None, **kw):
        resources = {} if resources is None else resources
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
        if _through_a_link(path):
            reason = (f"Your notebook file {path.name} is a symbolic link, not a file: the grader does not "
                      "follow links. It was graded as if the solution were empty. Submit the notebook itself.")
            return self._stand_in(nb_name, assignment, reason)
        if path.exists():
            # Only reading is the student's: an error of the preprocessors after it is the
            # grader's, and must not be reported (and graded) as an unreadable notebook.
            try:
                with open(path, encoding="utf-8") as handle:
                    nb = nbformat.read(handle, as_version=4)
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
        nb = _release_notebook(nb_name, assignment) or nbformat.v4.new_notebook()
        for cell in nb.cells:  # an empty solution; written answers stay as released ("no response": 0)
            if is_solution(cell) and cell.cell_type == "code":
                cell.source = ""
        self._note(nb, reason)
        return nb


def _through_a_link(path: Path) -> bool:
    """Whether the notebook, its submission folder or its student folder is a symbolic link
    (the course directory above them may be reached through one: that is the instructor's)."""
    return any(part.is_symlink() for part in (path, path.parent, path.parent.parent))


def skip_symbolic_links() -> None:
    """nbgrader copies a submission's other files into ``autograded/`` and from there into
    ``feedback/`` with ``shutil.copy``, which follows a symbolic link: a link planted in a
    submission would copy the file it points to (a key in the instructor's home) and hand
    it back in the feedback. Make the copying skip links."""
    from nbgrader.converters import base
    listing = base.find_all_files
    if getattr(listing, "_skips_links", False):
        return

    def find_all_files(path, exclude=None):
        return [name for name in listing(path, exclude) if not os.path.islink(name)]

    find_all_files._skips_links = True
    base.find_all_files = find_all_files


def grade_folders_without_notebooks(converter_class) -> None:
    """Make ``converter_class`` (nbgrader's Autograde) grade every submission folder for
    each of the assignment's notebooks, even when the folder lacks it: nbgrader skips a
    folder without notebooks silently, and fails one whose notebook was renamed, so the
    student would get no grade and no feedback. TolerantNotebookExporter then grades a
    renamed notebook in its place, or explains what was missing."""
    original = converter_class.init_notebooks
    if getattr(original, "_grades_every_folder", False):
        return

    def init_notebooks(self) -> None:
        try:
            original(self)
        except Exception:  # no notebook anywhere: maybe folders without one
            self.assignments = {}
        pattern = self._format_source(self.coursedir.assignment_id, self.coursedir.student_id)
        names: dict[str, list[str]] = {}
        for folder in sorted(glob.glob(pattern)):
            if not os.path.isdir(folder):
                continue
            found = self.assignments.setdefault(folder, [])
            assignment = os.path.basename(folder)
            if assignment not in names:
                names[assignment] = _notebook_names(self, assignment)
            for name in names[assignment]:
                expected = os.path.join(folder, f"{name}.ipynb")
                if expected not in found:
                    self.log.warning("%s is missing: it is graded as missing (or renamed)", expected)
                    found.append(expected)
        if not self.assignments:
            original(self)  # nothing at all: nbgrader's own error

    init_notebooks._grades_every_folder = True
    converter_class.init_notebooks = init_notebooks


def _notebook_names(converter, assignment: str) -> list[str]:
    from nbgrader.api import Gradebook
    try:
        with Gradebook(converter.coursedir.db_url, converter.coursedir.course_id) as gradebook:
            return [notebook.name for notebook in gradebook.find_assignment(assignment).notebooks]
    except Exception:  # noqa: BLE001  no gradebook or assignment yet: nbgrader says so itself
        return []


class RestoreCellOrder(NbGraderPreprocessor):
    """Put the assignment's own cells back in the released order; a cell the student added
    stays right after the assignment cell it followed."""

    def preprocess(self, nb, resources):
        release = _release_notebook(resources["nbgrader"]["notebook"], resources["nbgrader"]["assignment"])
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
