"""Shared helpers of the tests: the repository's paths, real nbgrader and maxpool-grader
commands in a throw-away copy of the course, gradebook readers. (Fixtures are in
conftest.py.)"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from maxpool_grader.names import ASSIGNMENT

ROOT = Path(__file__).resolve().parent.parent
SOURCE_NOTEBOOK = ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE_NOTEBOOK = ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
BIN = Path(sys.executable).parent
# the exercise's notebook as nbgrader names it (resources["nbgrader"]) when a test's working
# directory is the repository, whose source/ holds it: what the glue's plugins act on
EXERCISE = {"assignment": ASSIGNMENT, "notebook": ASSIGNMENT}


def nbgrader(cwd: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a real ``nbgrader`` command with the test interpreter's bin/ on PATH (for alembic);
    ``env`` adds variables (a TMPDIR of the test's own, say)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), **(env or {}))
    result = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if check and result.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed ({result.returncode}):\n{result.stdout}")
    return result


def copy_course(target: Path, *, with_submissions: bool = True, students: list[str] | None = None) -> Path:
    """The course as an instructor clones it: config, source notebook, sample class (or only
    ``students`` of it: a small class grades in seconds)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", target)
    shutil.copytree(ROOT / "source", target / "source")
    (target / "exchange").mkdir(exist_ok=True)  # the course-local exchange (exchange/.gitkeep in git)
    if with_submissions:
        for student in students or sorted(p.name for p in (ROOT / "submitted").iterdir() if p.is_dir()):
            shutil.copytree(ROOT / "submitted" / student, target / "submitted" / student)
    return target


def digests(*folders: Path, skip=("autograded", "feedback", "gradebook.db", ".maxpool-grader", "report",
                                  "grades.csv")) -> dict[str, str]:
    """Every file, link and folder of ``folders`` (a course, and what lies next to it) with its
    SHA-256, its target or "folder", except what grading writes (``skip``: top-level names)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if relative.parts[0] in skip:
                continue
            found[str(path)] = ("link:" + os.readlink(path)) if path.is_symlink() else \
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
    return found


STUDENTS = sorted(p.name for p in (ROOT / "submitted").iterdir() if p.is_dir())  # the sample class
GRADED_CELLS = sum(bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))  # Part A and every test
                   for cell in json.loads(SOURCE_NOTEBOOK.read_text())["cells"])
EXTRA = ["fault_infinite_loop", "fault_os_exit", "attack_imports_torch", "fault_missing_notebook"]  # from corpus


def grade_command(course: Path, *args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`maxpool-grader grade` on ``course``, as an instructor runs it."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | (env or {})
    return subprocess.run([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course), *args],
                          env=env, text=True, capture_output=True, timeout=1200, **kwargs)


def all_grades(db_url: str) -> dict[tuple[str, str], float | None]:
    """(student, grade id) -> score (None: needs a manual grade), every cell of every submission."""
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(db_url) as gradebook:
        grades = {}
        for student in gradebook.students:
            try:
                submission = gradebook.find_submission(ASSIGNMENT, student.id)
            except MissingEntry:  # a student of the roster who submitted nothing
                continue
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    grades[student.id, grade.name] = None if grade.needs_manual_grade else grade.score
        return grades


def sqlite(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


POSTGRES_HELP = "these tests need Debian's PostgreSQL server: apt-get install postgresql"


def admin_tool(name: str) -> str:
    """A system administrator's program (runuser, useradd) by its full path: a root shell's
    PATH does not always hold /usr/sbin (``su`` without ``-``, ``env -i``, a minimal image)."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])) or name


def as_postgres(*command: str) -> None:
    prefix = [admin_tool("runuser"), "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(prefix + list(command), check=True, capture_output=True, timeout=120)


def free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


KILL_MATRIX = "kill-matrix"  # tests/test_mutation.py's table
FAIR_POINTS = "fair-points"  # tests/test_fair_points.py's table


def shared_folder(tmp_path_factory) -> Path:
    """A folder every test process of this run shares (pytest-xdist gives each its own
    base temporary folder, side by side under one parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def locked(path: Path):
    """Held by one test process at a time (an exclusive ``flock`` on ``path``)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def keep_summary_table(config, name: str, table: str) -> None:
    """A table for the run's closing summary; written to a file, since the test process that
    makes it is not the one that prints the summary under pytest-xdist."""
    config.stash.setdefault(SUMMARIES, {})[name] = table
    if getattr(config, "cache", None) is not None:  # None under -p no:cacheprovider (then one process prints)
        (config.cache.mkdir("summary") / name).write_text(table)


def summary_table(config, name: str) -> str | None:
    """The table ``keep_summary_table`` kept in this run (None if no test of this run made it)."""
    if name in config.stash.get(SUMMARIES, {}):
        return config.stash[SUMMARIES][name]
    if getattr(config, "cache", None) is None:
        return None
    path = config.cache.mkdir("summary") / name
    return path.read_text() if path.exists() and path.stat().st_mtime >= RUN_STARTED else None


SUMMARIES = pytest.StashKey[dict]()
RUN_STARTED = time.time()  # the controller's start: a table older than it is from an earlier run


def flat(text: str) -> str:
    """``text`` with every run of whitespace made one space: feedback wraps its prose lines."""
    return " ".join(text.split())


def cmdline(pid: str) -> str:
    """A process's command line, arguments joined by spaces ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


INSTRUCTOR = "maxpool-instructor"  # the normal user the non-root runs are graded as


def instructor() -> pwd.struct_passwd:
    """The non-root instructor the tests grade as, made once (the tests run as root in CI)."""
    return user_account(INSTRUCTOR)


def user_account(name: str) -> pwd.struct_passwd:
    """A normal user of this machine (a student, the instructor), made once."""
    with locked(Path(tempfile.gettempdir()) / "maxpool-useradd.lock"):  # two test processes may ask at once
        try:
            return pwd.getpwnam(name)
        except KeyError:
            subprocess.run([admin_tool("useradd"), "--create-home", "--shell", "/bin/sh", name], check=True)
            return pwd.getpwnam(name)


def reachable_python_script() -> str:
    """Shell lines that, in a private mount namespace, make this Python installation and the
    repository reachable by a normal user where a folder on the way is closed to others
    (pyenv under /root): a tmpfs over that folder, the needed trees bound back."""
    needed = sorted({os.path.realpath(path) for path in (sys.base_prefix, sys.prefix, ROOT)})
    lines, stash = [], 0
    for closed in sorted({str(ancestor) for tree in needed for ancestor in Path(tree).parents
                          if ancestor != Path("/") and not os.stat(ancestor).st_mode & 0o001}):
        inside = [tree for tree in needed if tree.startswith(closed + "/")]
        for tree in inside:
            lines.append(f"mkdir -p /run/maxpool-stash/{stash} && mount --bind '{tree}' /run/maxpool-stash/{stash}")
            stash += 1
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs '{closed}'")
        for offset, tree in enumerate(inside):
            stashed = stash - len(inside) + offset
            lines.append(f"mkdir -p '{tree}' && mount --bind /run/maxpool-stash/{stashed} '{tree}'")
    return " && ".join(lines) or "true"


def as_instructor(argv: list[str], env: dict) -> list[str]:
    return as_user(INSTRUCTOR, argv, env)


def as_user(name: str, argv: list[str], env: dict) -> list[str]:
    """``argv`` run as the normal user ``name`` with only ``env``, this Python reachable."""
    user = user_account(name)
    assignments = [f"{key}={value}" for key, value in env.items()]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            reachable_python_script() + f' && exec {admin_tool("runuser")} -u "$0" -- env -i "$@"',
            user.pw_name, *assignments, *argv]


@functools.lru_cache(maxsize=1)
def hidden_messages() -> dict[tuple[str, str], str | None]:
    """What every hidden check says to every catalogue bug and correct control (None: it
    passed), computed once per test run for the catalogue's tests (mutation, fair points)."""
    import contextlib
    import io

    from maxpool_grader.exercise.catalogue import BUGS, CONTROLS
    from maxpool_grader.exercise.checks import HIDDEN_CHECKS
    from maxpool_grader.exercise.grading import evaluate
    found = {}
    variants = {**{name: bug.function for name, bug in BUGS.items()},
                **{name: control.function for name, control in CONTROLS.items()}}
    for name, function in variants.items():
        for grade_id in HIDDEN_CHECKS:
            with contextlib.redirect_stdout(io.StringIO()):  # the noisy control's re-shown output
                found[name, grade_id] = evaluate(grade_id, function)
    return found


def part_a_answer_in(page: str) -> list[str]:
    """What of Part A's answer a page shows (empty: nothing): the model answer's and the
    explanation's heading, the rubric's heading and text, Figure 2, and every run of plain
    words of the model answer, the rubric and the explanation (their formulas are MathML on
    a page, so the words between them are what is looked for)."""
    import base64
    import re

    from bs4 import BeautifulSoup

    from maxpool_grader.exercise.part_a import EXPLANATION, MODEL_ANSWER, RUBRIC, figure_png
    from maxpool_grader.glue.modelanswer import RUBRIC_HEADING
    text = " ".join(BeautifulSoup(page, "html.parser").get_text(" ").split())
    markers = ["Part A: the model answer", RUBRIC_HEADING.strip("*"), "Figure 2:",
               "Why only the arg-max gets gradient"]
    for passage in (MODEL_ANSWER, RUBRIC, EXPLANATION):
        plain = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|\*\*|`|\*", "\n", passage, flags=re.S)
        markers += [" ".join(run.split()) for run in re.split(r"[\n:;()]", plain) if len(" ".join(run.split())) > 30]
    found = [marker for marker in markers if marker in text]
    figure = base64.b64encode(figure_png(backward=True)).decode()
    return found + (["Figure 2's image"] if figure[:200] in page else [])


def formulas_without_their_latex(page: str, notebook: Path | None = None) -> tuple[int, list[str]]:
    """The page's formulas (``<math>`` elements) and those whose ``alttext``, what a screen
    reader without MathML reads, is missing, empty, or not LaTeX the page's authors wrote: the
    Markdown of the notebook as submitted (``notebook``: the notebook's prose and the student's
    answers; the graded copy holds some of it as sanitized HTML) or Part A's model answer,
    rubric and explanation, which the final feedback adds."""
    from bs4 import BeautifulSoup

    from maxpool_grader.exercise.part_a import EXPLANATION, MODEL_ANSWER, RUBRIC
    written = [MODEL_ANSWER, RUBRIC, EXPLANATION]
    if notebook is not None:
        written += ["".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                    if cell["cell_type"] == "markdown"]
    sources = "\n".join(written)
    formulas = BeautifulSoup(page, "html.parser").find_all("math")
    wrong = [str(formula)[:120] for formula in formulas
             if not (formula.get("alttext") or "").strip() or formula["alttext"].strip() not in sources]
    return len(formulas), wrong
