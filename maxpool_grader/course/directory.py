"""The course directory as the commands see it: its folders, its gradebook URL, and
nbgrader run in it."""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbgrader
from nbgrader.apps import NbGraderAPI
from nbgrader.apps.exportapp import ExportApp
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import capture_log
from traitlets.config.loader import PyFileConfigLoader

from ..glue.thisexercise import exercise_notebooks, the_exercise
from ..names import ASSIGNMENT


def nbgrader_environment() -> dict[str, str]:
    """The environment for nbgrader: this interpreter's bin/ first on PATH, then that of the
    folder nbgrader is installed in, and that folder's Jupyter data on JUPYTER_PATH.

    Creating a gradebook runs ``alembic`` as a subprocess, which fails with
    FileNotFoundError when the virtual environment was not activated; a ``pip install
    --target DIR`` keeps its programs in ``DIR/bin`` and nbconvert's templates (which the
    feedback pages extend) in ``DIR/share/jupyter``, where nothing looks for them; and a
    ``pip install --user`` keeps its programs in the user base's ``bin/`` (``PYTHONUSERBASE``,
    ``~/.local``), which is on no PATH by default.
    """
    env = dict(os.environ)
    library = Path(nbgrader.__file__).resolve().parent.parent  # site-packages, or a --target folder
    user = sysconfig.get_paths(f"{os.name}_user")  # where pip install --user puts packages and programs
    programs = [str(Path(sys.executable).parent)] + ([str(library / "bin")] if (library / "bin").is_dir() else []) \
        + ([user["scripts"]] if Path(user["purelib"]).resolve() == library and Path(user["scripts"]).is_dir() else [])
    searched = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join([*programs, *(part for part in searched if part not in programs)])
    data = library / "share" / "jupyter"
    if data.is_dir() and str(data) not in env.get("JUPYTER_PATH", "").split(os.pathsep):
        env["JUPYTER_PATH"] = os.pathsep.join(part for part in (env.get("JUPYTER_PATH", ""), str(data)) if part)
    return env


def use_nbgrader_environment() -> None:
    """This process's environment made ``nbgrader_environment``, for nbgrader run in it."""
    for name, value in nbgrader_environment().items():
        if name in ("PATH", "JUPYTER_PATH") and os.environ.get(name) != value:
            os.environ[name] = value


VERBOSITY = 1  # 0: --quiet, 1: the default, 2: --verbose (the command line sets it once)


def say(text: str, level: int = 1) -> None:
    """A progress line on stdout, shown at ``level`` of verbosity and above (results and
    problems are printed as they are, whatever the verbosity)."""
    if VERBOSITY >= level:
        print(text, flush=True)


def quiet() -> bool:
    """--quiet: no progress lines at all."""
    return VERBOSITY <= 0


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """A real nbgrader command in the course (shown on the terminal as it is run; with
    --verbose, nbgrader's own output too)."""
    return start_nbgrader(course, *args)()


def start_nbgrader(course: Path, *args: str):
    """``run_nbgrader`` started now; the function it returns waits for it and returns what
    run_nbgrader would (so the command can do other work while nbgrader runs)."""
    say("$ nbgrader " + " ".join(args))
    # nbgrader's own entry point, after this package's import (its fast start: __init__.py)
    process = subprocess.Popen([sys.executable, "-c", _NBGRADER_MAIN, *args], cwd=course, env=nbgrader_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finished() -> subprocess.CompletedProcess:
        output, _ = process.communicate()
        say(output.rstrip(), level=2)
        return subprocess.CompletedProcess(process.args, process.returncode, output)
    return finished


_NBGRADER_MAIN = ("import sys, maxpool_grader; from nbgrader.apps.nbgraderapp import main; "
                  "sys.argv[0] = 'nbgrader'; sys.exit(main())")


def read_course_config(course: Path, text: str | None = None):
    """The course's nbgrader_config.py as written (traitlets' Config): the one place the
    package reads it. ``text``: what the file would say instead, run as nbgrader runs the file
    (``c``, ``get_config``, ``load_subconfig`` and ``__file__`` as it gives them)."""
    loader = PyFileConfigLoader("nbgrader_config.py", path=str(course))
    if text is None:
        return loader.load_config()
    loader.full_filename = os.path.abspath(os.path.join(course, "nbgrader_config.py"))  # as load_config finds it
    namespace = {"c": loader.config, "get_config": lambda: loader.config, "load_subconfig": loader.load_subconfig,
                 "__file__": loader.full_filename}
    exec(compile(text, loader.full_filename, "exec"), namespace, namespace)  # noqa: S102  (the course's own file)
    return loader.config


def read_config_file(folder: Path | str):
    """The nbgrader_config.py of ``folder`` as written: the course's, or one of Jupyter's config
    folders that every user's nbgrader reads (``doctor``'s look at the students' config)."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()


def course_config(course: Path, db_url: str):
    """The course's nbgrader_config.py, as the grading workers load it, rooted in ``course``
    with ``db_url`` as its gradebook."""
    config = read_course_config(course)
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url
    return config


def exercise_in(course: Path, assignment: str | None = None) -> tuple[str, str]:
    """The exercise of the course as (assignment, notebook): ``assignment`` when given (a
    command's ``--assignment``), with its notebook as the course's ``c.ThisExercise`` or its
    ``source/`` says, else the course's one exercise (glue/thisexercise.py); ValueError
    when the course does not say which."""
    config = read_course_config(course)
    config.CourseDirectory.root = str(course)
    if assignment:
        config.ThisExercise.assignment = assignment
        found = exercise_notebooks(config)
        return found[0] if len(found) == 1 else (assignment, assignment)
    return the_exercise(config)


def exercise_assignments(course: Path) -> dict[str, str]:
    """Every assignment of the course that is this exercise, with its notebook (glue/thisexercise.py)."""
    config = read_course_config(course)
    config.CourseDirectory.root = str(course)
    return dict(exercise_notebooks(config))


def nbgrader_api(course: Path, db_url: str, warm_start: bool = False):
    """nbgrader's API on the course (its config as ``course_config`` loads it, warm start of
    kernels and verdict processes on with ``warm_start``), for nbgrader's commands run in
    this process; this interpreter's bin/ first on PATH (nbgrader runs ``alembic`` when it
    creates a gradebook)."""
    use_nbgrader_environment()
    config = course_config(course, db_url)
    if warm_start:
        config.SealedBox.warm_start = True
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def export_grades(course: Path, db_url: str, destination: Path) -> dict:
    """What ``nbgrader export --to destination`` does, in this process: the course's export
    plugin (``c.ExportApp.plugin_class``) writes the gradebook's grades. The result is
    nbgrader's API's: ``success``, ``log``, ``error``."""
    config = course_config(course, db_url)
    config.ExportPlugin.to = str(destination)
    app = ExportApp(config=config)
    app.coursedir = CourseDirectory(config=config)
    app.log = logging.getLogger("maxpool_grader.nbgrader_export")  # its lines kept in the result
    app.log.propagate = False
    app.log.setLevel(logging.INFO)
    shown = logging.StreamHandler(sys.stdout)  # with --verbose, shown as nbgrader export shows them
    shown.setFormatter(logging.Formatter("[ExportApp | %(levelname)s] %(message)s"))
    if VERBOSITY >= 2:
        app.log.addHandler(shown)
    try:
        return capture_log(app)
    finally:
        app.log.removeHandler(shown)


def configured_db_url(course: Path) -> str:
    """The gradebook URL of nbgrader_config.py (CourseDirectory.db_url), else SQLite in the course."""
    try:
        url = read_course_config(course).CourseDirectory.get("db_url")
    except Exception:  # noqa: BLE001  nbgrader reports a broken config itself
        url = None
    return url or f"sqlite:///{course / 'gradebook.db'}"


def course_path(course: Path, step: str, student: str = ".", assignment: str = ASSIGNMENT) -> Path:
    """nbgrader's folder of ``step`` (source, release, submitted, autograded, feedback) for
    ``student`` ("." for source and release), as ``CourseDirectory.format_path`` makes it."""
    return Path(_course_directory(str(course)).format_path(step, student, assignment))


def notebook_path(course: Path, step: str, student: str = ".", assignment: str = ASSIGNMENT) -> Path:
    """The assignment's one notebook in that folder (the feedback step holds its HTML page)."""
    return course_path(course, step, student, assignment) / f"{assignment}.{'html' if step == 'feedback' else 'ipynb'}"


@functools.lru_cache(maxsize=8)
def _course_directory(root: str):
    return CourseDirectory(root=root)
