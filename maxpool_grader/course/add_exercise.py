"""``maxpool-grader add-to-course``: the exercise put into an instructor's existing nbgrader
course as assignment NAME. Its source notebook is copied to ``source/NAME/NAME.ipynb`` and the
course's ``nbgrader_config.py`` gets one marked block at its end, which calls
``glue.exercise_config.apply``: that sets only what the course does not set itself, so every
line of the instructor's stays as it was, byte for byte, and so does every value it sets.

``plan`` decides everything before anything is written, and refuses (``Refused``, one sentence
that names the problem) a folder that is no directory, a NAME nbgrader would not take as an
assignment id, a ``source/NAME/`` that holds anything but the exercise's notebook, a config
that does not run, and a course that has the exercise under another name already.
``carry_out`` writes what was planned; run again, the plan is empty and nothing is written."""

from __future__ import annotations

import copy
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from traitlets import TraitError
from traitlets.config import Config

from ..glue.exercise_config import missing, wanted
from ..glue.thisexercise import exercise_notebooks
from ..names import ASSIGNMENT, PACKAGE_DIR
from .directory import read_course_config
from .files import replace_file

BEGIN = "# ---- BEGIN max_pool_backward exercise (written by maxpool-grader add-to-course) ----"
END = "# ---- END max_pool_backward exercise ----"
NEW_CONFIG = ('"""nbgrader configuration of this course (begun by maxpool-grader add-to-course)."""\n\n'
              "c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)\n")
CALL = re.compile(r"^maxpool_grader\.glue\.exercise_config\.apply\(c, assignment=('[^'\n]*')\)$", re.MULTILINE)


class Refused(Exception):
    """add-to-course would not do what was asked; the message says why. Nothing was written."""


@dataclass
class Plan:
    """What add-to-course does to a course, decided before anything is written."""

    name: str
    notebook: Path  # source/NAME/NAME.ipynb
    notebook_text: str | None  # None: the exercise's notebook is there already
    config: Path
    config_text: str | None  # None: nbgrader_config.py stays as it is
    new_config: bool = False  # the course had no nbgrader_config.py
    added: dict[str, object] = field(default_factory=dict)  # what the block sets: "Section.name" -> value
    kept: dict[str, tuple[object, object]] = field(default_factory=dict)  # the course's value, the exercise's
    yours: list[str] = field(default_factory=list)  # every setting the course's file makes itself
    problems: list[str] = field(default_factory=list)  # what of the exercise's plugins the course leaves out

    @property
    def changes(self) -> bool:
        return self.notebook_text is not None or self.config_text is not None


def block(name: str) -> str:
    """The lines add-to-course appends to a course's nbgrader_config.py."""
    return f"""{BEGIN}
# The max_pool_backward exercise, as assignment {name!r} (source/{name}/{name}.ipynb), graded by
# the maxpool_grader package. apply() sets only what the lines above leave unset, so every
# setting of yours wins (a line below this block replaces what apply() set). To take the
# exercise out of the course, delete these lines, BEGIN to END, and source/{name}/.
try:
    import maxpool_grader.glue.exercise_config
except ImportError as problem:  # nbgrader would log it and grade with its defaults: stop instead
    raise SystemExit(f"nbgrader_config.py: {{problem}}. The max_pool_backward exercise is graded "
                     "with the maxpool_grader package: install it where nbgrader runs.") from None
maxpool_grader.glue.exercise_config.apply(c, assignment={name!r})
{END}
"""


def plan(course: Path, name: str = ASSIGNMENT, origin: Path | None = None) -> Plan:
    """What ``carry_out`` will do to ``course`` (Refused when it should do nothing at all);
    ``origin``: the course the exercise's notebook comes from (default: ``exercise_source``'s)."""
    if not course.is_dir():
        raise Refused(f"{course} is not a directory: give the folder of your nbgrader course, "
                      "the one that holds source/ (and nbgrader_config.py, if it has one)")
    check_name(name)
    config_path = course / "nbgrader_config.py"
    text = config_path.read_text(encoding="utf-8") if config_path.is_file() else None
    yours_text, present = _without_block(text or "")
    if present not in (None, name):
        raise Refused(f"nbgrader_config.py adds the exercise as {present!r} already (its block "
                      f"'max_pool_backward exercise'): run add-to-course --as {present}, or delete that block first")
    try:
        yours = read_course_config(course, yours_text)
    except (Exception, SystemExit) as problem:  # noqa: BLE001  the course's own file, whatever it raises
        raise Refused(f"nbgrader_config.py does not run ({type(problem).__name__}: {problem}): "
                      "fix it first, nbgrader cannot use it either") from None
    _check_not_elsewhere(course, yours, name)
    notebook, notebook_text = _notebook(course, yours, name, exercise_source(origin))
    exercise = wanted(name)
    added = {key: value for key, value in exercise.items() if key not in yours}
    result = copy.deepcopy(yours)
    for key, value in added.items():
        section, option = key.split(".")
        setattr(result[section], option, value)
    config_text = None
    if present is None and added:
        before = text if text is not None else NEW_CONFIG
        config_text = before + ("" if before.endswith("\n") else "\n") + "\n" + block(name)
    return Plan(name, notebook, notebook_text, config_path, config_text, new_config=text is None,
                added={} if present else added,
                kept={key: (_value(yours, key), value) for key, value in exercise.items() if key in yours},
                yours=sorted(f"{section}.{option}" for section in yours if isinstance(yours[section], Config)
                             for option in yours[section]),
                problems=missing(result))


def carry_out(planned: Plan) -> None:
    """Write what ``plan`` decided: the notebook, then nbgrader_config.py (each replaced whole)."""
    if planned.notebook_text is not None:
        planned.notebook.parent.mkdir(parents=True, exist_ok=True)
        replace_file(planned.notebook, planned.notebook_text, mode=0o644)
    if planned.config_text is not None:
        mode = planned.config.stat().st_mode & 0o777 if planned.config.is_file() else 0o644
        replace_file(planned.config, planned.config_text, mode=mode)


def check_name(name: str) -> None:
    """Refused unless nbgrader takes ``name`` as an assignment id and a folder name."""
    problem = ("it is empty" if not name
               else "nbgrader strips the spaces around it" if name != name.strip()
               else "it is not one folder's name" if name in (".", "..") or any(ch in name for ch in "/\\\0")
               else "nbgrader refuses '+' in an assignment id (its exchange's separator)" if "+" in name
               else "nbgrader reads assignment ids as file patterns, where * ? [ ] match others"
               if any(ch in name for ch in "*?[]")
               else "a folder whose name starts with a dot is hidden from nbgrader's patterns" if name[0] == "."
               else "it would read as an option on nbgrader's command line" if name[0] == "-"
               else "it holds a control character" if any(ord(ch) < 32 or ord(ch) == 127 for ch in name)
               else None)
    if problem is None:
        try:
            CourseDirectory(assignment_id=name)
        except TraitError as refused:
            problem = str(refused)
    if problem:
        raise Refused(f"--as {name!r} is no assignment id for nbgrader: {problem}")


def exercise_source(origin: Path | None = None) -> Path:
    """The exercise's source notebook: in ``origin``, else in the course the grader was
    installed from (a clone of this course), else in the current directory."""
    places = [origin] if origin is not None else [PACKAGE_DIR.parent, Path.cwd()]
    for place in places:
        config = Config()
        config.CourseDirectory.root = str(place.resolve())
        found = sorted(exercise_notebooks(config), key=lambda pair: pair[0] != ASSIGNMENT)
        for assignment, notebook in found:
            path = Path(CourseDirectory(config=config).format_path("source", ".", assignment)) / f"{notebook}.ipynb"
            if path.is_file():
                return path
    raise Refused(f"no source notebook of the exercise in {' or '.join(str(place) for place in places)}: run "
                  "add-to-course in a clone of the max_pool_backward course, or pass --from with its folder")


def _without_block(text: str) -> tuple[str, str | None]:
    """The file's text without the exercise's block, and the name the block gives it (None: none)."""
    start = text.find(BEGIN)
    if start < 0:
        return text, None
    end = text.find(END, start)
    call = CALL.search(text, start, end if end >= 0 else len(text))
    if end < 0 or call is None:
        raise Refused("nbgrader_config.py has the start of the exercise's block but not its call and end line: "
                      f"delete what is left of it, from '{BEGIN}' on, and run add-to-course again")
    return text[:start] + text[end + len(END):].lstrip("\n"), call.group(1)[1:-1]


def _check_not_elsewhere(course: Path, yours, name: str) -> None:
    """Refused when the course has the exercise under another name (its setting, or source/)."""
    named = yours.ThisExercise.get("assignment") if "ThisExercise" in yours else None
    if named and named != name:
        raise Refused(f"nbgrader_config.py sets c.ThisExercise.assignment = {named!r}: the course has the exercise "
                      f"as {named} already; run add-to-course --as {named}, or change that line")
    plain = copy.deepcopy(yours)
    plain.ThisExercise = Config()
    plain.CourseDirectory.setdefault("root", str(course.resolve()))
    elsewhere = sorted({assignment for assignment, _ in exercise_notebooks(plain)} - {name})
    if elsewhere:
        raise Refused(f"the course has the exercise as {', '.join(elsewhere)} already (its notebook in source/): "
                      f"run add-to-course --as {elsewhere[0]}, or remove that assignment first")


def _notebook(course: Path, yours, name: str, source: Path) -> tuple[Path, str | None]:
    """Where the exercise's notebook goes (the course's own source folder, as nbgrader finds it),
    and its text (None when it is there already); Refused when the folder holds anything else."""
    config = copy.deepcopy(yours)
    config.CourseDirectory.setdefault("root", str(course.resolve()))
    coursedir = CourseDirectory(config=config)
    target = Path(coursedir.format_path("source", ".", name)) / f"{name}.ipynb"
    text = source.read_text(encoding="utf-8")
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise Refused(f"{folder} is a file, not a folder: choose another name with --as")
    if folder.is_dir():
        others = sorted(path.name for path in folder.iterdir() if path != target
                        and not any(fnmatch.fnmatch(path.name, pattern) for pattern in coursedir.ignore))
        if others:
            raise Refused(f"{folder} holds another assignment's files ({', '.join(others[:5])}): "
                          "choose another name with --as")
        if target.exists():
            if target.is_file() and target.read_bytes() == source.read_bytes():
                return target, None
            raise Refused(f"{target} is a different notebook than the exercise's ({source}): "
                          "choose another name with --as, or move it away")
    return target, text


def _value(config, key: str):
    section, option = key.split(".")
    return config[section][option]
