"""Reading a submission, whatever it holds (``TolerantNotebookExporter`` and
``RestoreCellOrder`` use these): ``grade_folders_without_notebooks`` makes nbgrader see a
folder with no notebook at all; ``skip_symbolic_links`` keeps nbgrader from following links
when it copies files; ``release_notebook`` is the notebook as released."""

from __future__ import annotations

import glob
import os
import stat
import warnings
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from sqlalchemy.exc import SAWarning

from .thisexercise import exercise_notebooks


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


def release_notebook(nb_name: str, assignment: str) -> NotebookNode | None:
    """The released notebook (the course directory is nbgrader's working directory)."""
    for step in ("release", "source"):
        path = Path(step) / assignment / f"{nb_name}.ipynb"
        if path.exists():
            return nbformat.read(path, as_version=4)
    return None


def through_a_link(path: Path) -> bool:
    """Whether the notebook, its submission folder or its student folder is a symbolic link
    (the course directory above them may be reached through one: that is the instructor's)."""
    return any(part.is_symlink() for part in (path, path.parent, path.parent.parent))


def skip_symbolic_links() -> None:
    """nbgrader copies a submission's other files into ``autograded/`` and from there into
    ``feedback/`` with ``shutil.copy``, which follows a symbolic link: a link planted in a
    submission would copy the file it points to (a key in the instructor's home) and hand
    it back in the feedback; and it fails the whole submission on a FIFO, a socket or a device
    (``shutil.SpecialFileError``), so one planted there would keep it from ever being graded.
    Make the copying take regular files only."""
    # the patched module, imported as install() applies the patch: after the version check, so that
    # another nbgrader is refused by name (PatchVersionError), not by an ImportError
    from nbgrader.converters import base
    listing = base.find_all_files
    if getattr(listing, "_skips_links", False):
        return

    def find_all_files(path, exclude=None):
        return [name for name in listing(path, exclude) if _regular_file(name)]

    find_all_files._skips_links = True
    base.find_all_files = find_all_files


TIMESTAMP_BYTES = 256  # a timestamp is about 30 characters; the rest of a larger file is not read


def timestamp_text(moment: datetime) -> str:
    """``moment`` as nbgrader's ``timestamp.txt`` holds it (read back by ``parse_utc``), in UTC;
    a naive time is taken as UTC already."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.replace(tzinfo=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


def read_timestamp(path: str) -> str | None:
    """The text of a submission's ``timestamp.txt``, read as a student may have made it: not
    through a link, not from a FIFO or a device (which would block or never end), at most
    ``TIMESTAMP_BYTES``; None when there is no regular file to read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, TIMESTAMP_BYTES).decode("utf-8", errors="replace").strip()
    finally:
        os.close(fd)


def read_timestamps_safely() -> None:
    """nbgrader reads a submission's ``timestamp.txt``, which the student's side writes, and
    on one it cannot parse calls ``self.fail``, which its CourseDirectory does not have: an
    AttributeError, and the submission (and the class's grades.csv with it) is never graded. A
    link, a FIFO or a huge file there would be followed, block or be read whole. Read it as
    ``read_timestamp`` does; an unreadable one counts as none, as nbgrader counts an empty one,
    with a warning in the log that names the file."""
    # the patched module, imported as install() applies the patch: after the version check
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import parse_utc
    if getattr(CourseDirectory.get_existing_timestamp, "_reads_safely", False):
        return

    def get_existing_timestamp(self, dest_path):
        path = os.path.join(dest_path, "timestamp.txt")
        text = read_timestamp(path)
        if not text:
            if text is not None or os.path.lexists(path):
                self.log.warning("No timestamp in %s: the submission counts as without one", path)
            return None
        try:
            return parse_utc(text)
        except (ValueError, OverflowError, TypeError):
            self.log.warning("Unreadable timestamp in %s (%r): the submission counts as without one",
                             path, text[:40])
            return None

    get_existing_timestamp._reads_safely = True
    CourseDirectory.get_existing_timestamp = get_existing_timestamp


def _regular_file(name: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(name).st_mode)  # lstat: a link is no regular file
    except OSError:
        return False


def grade_folders_without_notebooks(converter_class) -> None:
    """Make ``converter_class`` (nbgrader's Autograde) grade every submission folder for
    each of the assignment's notebooks, even when the folder lacks it: nbgrader skips a
    folder without notebooks silently, and fails one whose notebook was renamed, so the
    student would get no grade and no feedback. TolerantNotebookExporter then grades a
    renamed notebook in its place, or explains what was missing. Only this exercise's
    folders (thisexercise.py): another assignment's are found as nbgrader finds them."""
    original = converter_class.init_notebooks
    if getattr(original, "_grades_every_folder", False):
        return

    def init_notebooks(self) -> None:
        exercise = dict(exercise_notebooks(self.config))  # assignment -> the exercise's notebook
        try:
            original(self)
        except Exception:  # no notebook anywhere: maybe the exercise's folders without one
            if not exercise:
                raise
            self.assignments = {}
        pattern = self._format_source(self.coursedir.assignment_id, self.coursedir.student_id)
        for folder in sorted(glob.glob(pattern)):
            assignment = os.path.basename(folder)
            if not os.path.isdir(folder) or assignment not in exercise:
                continue
            found = self.assignments.setdefault(folder, [])
            expected = os.path.join(folder, f"{exercise[assignment]}.ipynb")
            if expected not in found:
                self.log.warning("%s is missing: it is graded as missing (or renamed)", expected)
                found.append(expected)
        if not self.assignments:
            original(self)  # nothing at all: nbgrader's own error

    init_notebooks._grades_every_folder = True
    converter_class.init_notebooks = init_notebooks
