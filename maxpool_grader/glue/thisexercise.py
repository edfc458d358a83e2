"""``ThisExercise`` (``c.ThisExercise``): which assignment of the course, and which of its
notebooks, is this exercise. Every plugin of the exercise acts on that notebook alone; every
other notebook of the course goes through nbgrader's own steps unchanged.

Decided from the instructor's side only: the course's setting, or the source notebook in
``source/`` that is this exercise's (its cells carry the solution's and Part A's grade
ids), matched with ``resources["nbgrader"]["assignment"]`` and ``["notebook"]``, which
nbgrader sets from the folder it grades. Nothing of a submitted notebook (its metadata,
its markers, its cells) counts: a student who strips them is graded as the exercise all
the same."""

from __future__ import annotations

import glob
import json
import os

from nbgrader.coursedir import CourseDirectory
from traitlets import Unicode
from traitlets.config import Configurable

from ..names import PART_A_CELL, SOLUTION_CELL


class ThisExercise(Configurable):
    """Which assignment, and which notebook of it, is this exercise (module doc)."""

    assignment = Unicode("", help=(
        "The assignment id of this exercise in the course, e.g. 'hw3'. Empty: every assignment "
        "whose source notebook is this exercise's (source/<assignment>/, recognised by its "
        "solution's and Part A's grade ids). Every other assignment is graded as nbgrader "
        "grades it.")).tag(config=True, unit="")
    notebook = Unicode("", help=(
        "The exercise's notebook, without .ipynb. Empty: the notebook of the assignment "
        "recognised as this exercise's, else the assignment's own name.")).tag(config=True, unit="")


def exercise_notebooks(config) -> list[tuple[str, str]]:
    """The (assignment, notebook) pairs that are this exercise in the course ``config``
    roots (its setting, else what ``source/`` holds), sorted; empty when the course has none."""
    settings = ThisExercise(config=config)
    coursedir = CourseDirectory(config=config)
    if settings.assignment and settings.notebook:
        return [(settings.assignment, settings.notebook)]
    found = _recognised(coursedir, settings.assignment or "*")
    if settings.assignment:
        return found or [(settings.assignment, settings.assignment)]
    if settings.notebook:
        return [pair for pair in found if pair[1] == settings.notebook]
    return found


def is_exercise(owner, resources) -> bool:
    """Whether the notebook nbgrader is working on (``resources["nbgrader"]``, set by nbgrader
    from the folder) is this exercise's; ``owner``: the plugin, whose config is the course's."""
    found = (resources or {}).get("nbgrader") or {}
    if "assignment" not in found or "notebook" not in found:
        return False
    return (found["assignment"], found["notebook"]) in exercise_notebooks(owner.config)


def the_exercise(config) -> tuple[str, str]:
    """The one (assignment, notebook) of the course that is this exercise, for the commands
    that grade it; ValueError naming the setting when there is none or more than one."""
    found = exercise_notebooks(config)
    if len(found) == 1:
        return found[0]
    which = ", ".join(f"{assignment}/{notebook}" for assignment, notebook in found) or "none in source/"
    raise ValueError(f"cannot tell which assignment is the max_pool_backward exercise ({which}): set "
                     "c.ThisExercise.assignment in nbgrader_config.py, or pass --assignment")


def _recognised(coursedir: CourseDirectory, assignment: str) -> list[tuple[str, str]]:
    found = set()
    for step in ("source", "release"):
        for folder in glob.glob(coursedir.format_path(step, ".", assignment)):
            for path in glob.glob(os.path.join(folder, "*.ipynb")):
                if _is_exercise_notebook(path):
                    found.add((os.path.basename(folder), os.path.splitext(os.path.basename(path))[0]))
        if found:
            break
    return sorted(found)


_SEEN: dict[str, tuple[tuple[int, int], bool]] = {}  # path -> ((mtime_ns, size), whether it is the exercise's)


def _is_exercise_notebook(path: str) -> bool:
    """Whether the instructor's notebook at ``path`` is this exercise's: its cells carry the
    solution's and Part A's grade ids (read once while the file is unchanged)."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    stamp = (status.st_mtime_ns, status.st_size)
    if path in _SEEN and _SEEN[path][0] == stamp:
        return _SEEN[path][1]
    try:
        with open(path, encoding="utf-8") as handle:
            cells = json.load(handle).get("cells", [])
        ids = {((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") for cell in cells
               if isinstance(cell, dict)}
    except (OSError, ValueError, AttributeError):
        ids = set()
    _SEEN[path] = (stamp, {SOLUTION_CELL, PART_A_CELL} <= ids)
    return _SEEN[path][1]
