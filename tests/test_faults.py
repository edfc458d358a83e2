"""A fault of the grader is never a student's grade, and every submission gets a grade and a
reason (docs/security.md#faults, #control).

- An install that works outside the box works inside it: the course's dependencies put in a
  folder with ``pip install --target`` and named by ``PYTHONPATH`` (no virtual environment)
  grade the sample class to the README's table.
- The same install with its ``share/jupyter`` (nbconvert's templates) moved away: autograding
  would work and every feedback page fail, so the control (which makes a feedback page) fails,
  nothing is recorded, the sentence names ``JUPYTER_PATH``, ``doctor`` agrees; named in
  ``JUPYTER_PATH``, the class grades with feedback, grades.csv and the report.
- A course whose export plugin fails: ``grades.csv`` and the report are tried before anything
  is graded, so the run stops with nothing recorded and a sentence naming the setting.
- The same install with NumPy moved to a folder of loose modules (the grader imports it, the
  sandbox cannot): the control submission fails, nothing is recorded (no submission in the
  gradebook, no graded notebook, no feedback, no grades.csv), the exit status is 1, the
  sentence names the module, and ``doctor`` fails on it. The same on ``serve`` (an upload is
  failed, never graded; the live view, the service's log and the attempt's log say why) and on
  a Dask worker of that install (then, NumPy back, a worker of it grades to the README's rows).
- Notebooks whose structure nbgrader's own steps failed on (a pasted graded cell, 50 copies of
  the solution cell, deleted cells, moved and added cells, nbformat 3) each get a grade,
  feedback and the reason, through ``maxpool-grader grade`` and plain nbgrader alike; and
  ``nbgrader release_feedback`` releases every student of the sample class.

A kernel that never starts: tests/test_kernel_start.py; a failed attempt of ``serve``:
tests/test_serve_term.py.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import requests
from corpus import ZEROS, notebook_with
from helpers import (
    ASSIGNMENT,
    BIN,
    ROOT,
    STUDENTS,
    all_grades,
    copy_course,
    flat,
    free_port,
    grade_command,
    nbgrader,
    sqlite,
)
from make_sample_class import LOOP_CORRECT, submission_files
from nbgrader.api import Gradebook

from maxpool_grader.backend.control import CONTROL_FAILED
from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.names import PART_A_CELL, SOLUTION_CELL, grade_id

pytestmark = pytest.mark.integration  # real installs, kernels, sandboxes and nbgrader

BASE_PYTHON = Path(sys.base_prefix) / "bin" / "python3"  # the interpreter the test's venv was made from
FULL = sum(check.points for check in GRADED_CHECKS.values())


def readme_table() -> list[str]:
    """The score table the README says the main job prints (its rows, student by student)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("The main job prints", 1)[1].split("```", 2)[1]
    return [line.rstrip() for line in block.splitlines() if line.strip() and not line.startswith(("student", "-"))]


def printed_table(output: str) -> list[str]:
    lines = output.split("\nstudent ", 1)[1].splitlines()[2:]
    return [line.rstrip() for line in lines[:lines.index("")]]


# ------------------------------------------------------------------ pip install --target
def package_source(source: Path) -> Path:
    """The package's files copied to ``source``: built from there, the build leaves nothing
    in the repository."""
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(ROOT / "maxpool_grader", source / "maxpool_grader", ignore=shutil.ignore_patterns("__pycache__"))
    return source


@pytest.fixture(scope="module")
def target_install(tmp_path_factory):
    """The course's dependencies (and the grader) installed into one folder with pip's
    ``--target``, and a bare virtual environment with none of them to run Python from."""
    base = tmp_path_factory.mktemp("target")
    target, bare, source = base / "deps", base / "bare", package_source(base / "source")
    done = subprocess.run([str(BIN / "pip"), "install", "--quiet", "--no-compile", "--no-build-isolation",
                           "--target", str(target), str(source)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    yield target, bare / "bin" / "python"
    shutil.rmtree(base, ignore_errors=True)


def _grader(python: Path, course: Path, pythonpath: str, *argv: str, **more: str) -> subprocess.CompletedProcess:
    """maxpool-grader run by ``python`` with only ``PYTHONPATH`` to find its packages (the
    PATH of a fresh login: neither the install's bin/ nor the test's venv), and ``more``."""
    return subprocess.run([str(python), "-m", "maxpool_grader.cli.entry", *argv], cwd=course,
                          env=dict(_environment(course, pythonpath), **more), text=True,
                          capture_output=True, timeout=1200)


def test_an_install_with_pip_target_and_pythonpath_grades_the_sample_class_to_the_readme_table(
        target_install, tmp_path):
    target, python = target_install
    course = copy_course(tmp_path / "course")
    shutil.copy(ROOT / "roster.csv", course)
    graded = _grader(python, course, str(target), "grade")
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    assert printed_table(graded.stdout) == readme_table()
    assert len(list((course / "feedback").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.html"))) == len(STUDENTS)
    assert (course / "grades.csv").is_file() and (course / "report" / "index.html").is_file()
    assert "FAILED" not in graded.stdout + graded.stderr
    doctor = _grader(python, course, str(target), "doctor")
    assert re.search(r"ok +control .*its feedback page", flat(doctor.stdout)), doctor.stdout[-3000:]


@contextlib.contextmanager
def jupyter_data_moved(target: Path):
    """The --target folder's ``share/jupyter`` (nbconvert's templates, which every feedback page
    extends) moved where no one looks for it; yields that folder, puts it back after."""
    data, elsewhere = target / "share" / "jupyter", target.parent / "jupyter-elsewhere"
    shutil.move(data, elsewhere)
    try:
        yield elsewhere
    finally:
        shutil.move(elsewhere, data)


def test_feedback_that_cannot_be_made_stops_the_run_before_anything_is_recorded(target_install, tmp_path):
    """Autograding works without nbconvert's templates; every feedback job did not, after every
    grade was recorded, with no reason. The control makes a feedback page: nothing is recorded,
    the sentence names the templates and JUPYTER_PATH, doctor agrees; named there, all works."""
    target, python = target_install
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    with jupyter_data_moved(target) as elsewhere:
        graded = _grader(python, course, str(target), "grade")
        doctor = _grader(python, course, str(target), "doctor")
        said = flat(graded.stderr)
        assert graded.returncode == 1, graded.stdout[-2000:] + said[-2000:]
        assert "The control submission failed, so nothing was graded or recorded" in said, said[-3000:]
        assert "feedback page could not be made" in said and "JUPYTER_PATH" in said, said[-3000:]
        failed = [line for line in (graded.stdout + graded.stderr).splitlines() if "FAILED" in line]
        assert failed and all(re.search(r"FAILED \(\S", line) for line in failed), failed  # each with its reason
        _nothing_recorded(course)
        assert doctor.returncode == 1 and re.search(r"FAIL control .*JUPYTER_PATH", flat(doctor.stdout)), \
            doctor.stdout[-3000:]
        fixed = _grader(python, course, str(target), "grade", JUPYTER_PATH=str(elsewhere))
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
    assert (course / "feedback" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file()
    assert (course / "grades.csv").is_file() and (course / "report" / "index.html").is_file()


SEEN_FROM_A_SANDBOX = """
import json, os, subprocess, sys
from maxpool_grader.sandbox import box, filesystem
sealed, private = box.Box(mode="required"), box.private_directory("seen-")
launch = sealed.sandbox(private)
look = "import json, os, sys; print(json.dumps([sys.path, os.listdir(sys.argv[1])]))"
done = subprocess.run(launch.argv + sealed.command({}) + [filesystem.PYTHON, "-c", look, sys.argv[1]],
                      pass_fds=tuple(launch.fds), env=filesystem.environment(), capture_output=True, text=True)
sealed.close()
print(done.stdout or done.stderr)
"""


def test_an_install_with_pip_target_shows_the_sandbox_its_packages_but_not_the_grader(target_install):
    """The --target folder is seen inside at its own path, on the sandbox's Python path, with
    the grader package in it an empty folder."""
    target, python = target_install
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target), "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    done = subprocess.run([str(python), "-c", SEEN_FROM_A_SANDBOX, str(target / "maxpool_grader")], env=env,
                          capture_output=True, text=True, timeout=300)
    path, listed = json.loads(done.stdout)
    assert str(target) in path and listed == [], done.stdout + done.stderr


@contextlib.contextmanager
def numpy_hidden(target: Path):
    """NumPy moved from the --target folder to a folder of loose modules beside it (not in
    any test's own folder, which a Dask worker here does not see): the grader imports it, no
    sandbox sees it. Yields the PYTHONPATH that finds both; puts NumPy back after."""
    loose = target.parent / "loose"
    loose.mkdir(exist_ok=True)
    moved = [name for name in ("numpy", "numpy.libs") if (target / name).exists()]
    for name in moved:
        shutil.move(target / name, loose / name)
    try:
        yield f"{target}{os.pathsep}{loose}"
    finally:
        for name in moved:
            shutil.move(loose / name, target / name)


def _nothing_recorded(course: Path) -> None:
    with Gradebook(sqlite(course)) as gradebook:
        assert [submission for assignment in gradebook.assignments for submission in assignment.submissions] == []
    assert not list((course / "autograded").glob(f"*/{ASSIGNMENT}/*")) if (course / "autograded").exists() else True
    assert not (course / "feedback").exists() and not (course / "grades.csv").exists()


def test_an_export_plugin_that_fails_stops_the_run_before_anything_is_graded(tmp_path):
    """grades.csv and the report are made after grading: a course whose export plugin fails
    there had every grade recorded and no CSV. Tried first, it stops the run before any grade,
    naming the step and the setting; with the setting fixed, the class grades with both."""
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    config = (course / "nbgrader_config.py").read_text()
    (course / "nbgrader_config.py").write_text(config + '\nc.ExportApp.plugin_class = "nowhere.NoPlugin"\n')
    faulty = grade_command(course)
    said = flat(faulty.stderr)
    assert faulty.returncode == 1, faulty.stdout[-2000:] + said[-2000:]
    assert "A step after grading failed when it was tried first, so nothing was graded or recorded" in said, said
    assert "c.ExportApp.plugin_class" in said and "nowhere" in said, said
    _nothing_recorded(course)
    (course / "nbgrader_config.py").write_text(config)
    fixed = grade_command(course)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
    assert (course / "grades.csv").is_file() and (course / "report" / "index.html").is_file()


def test_numpy_the_sandbox_cannot_import_records_nothing_and_says_so(target_install, tmp_path):
    target, python = target_install
    with numpy_hidden(target) as pythonpath:
        course = copy_course(tmp_path / "course")
        graded = _grader(python, course, pythonpath, "grade")
        doctor = _grader(python, course, pythonpath, "doctor")
    said = flat(graded.stderr)
    assert graded.returncode == 1, graded.stdout[-2000:] + said[-2000:]
    assert "The control submission failed, so nothing was graded or recorded" in said
    assert "No module named 'numpy'" in said and "library folders" in said
    _nothing_recorded(course)
    assert doctor.returncode == 1 and re.search(r"FAIL control .*No module named 'numpy'", flat(doctor.stdout))


def test_serve_where_the_box_cannot_import_numpy_records_no_upload_and_says_why(target_install, tmp_path):
    """Issue 37.1 on serve: its pool's control fails, so an upload is tried twice and failed,
    never graded; the service's log, the live view and the attempt's log say the control's
    sentence, the student's page says it failed, and nothing is recorded."""
    from bs4 import BeautifulSoup
    from test_serve import _session, _upload, links, notebook_of
    target, python = target_install
    course = copy_course(tmp_path / "course", with_submissions=False)
    shutil.copy(ROOT / "roster.csv", course)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    with numpy_hidden(target) as pythonpath, open(tmp_path / "serve.log", "w+") as output:
        env = _environment(course, pythonpath)
        service = subprocess.Popen([str(python), "-m", "maxpool_grader.cli.entry", "serve", "--port", str(port),
                                    "--workers", "1", "--no-exchange"], cwd=course, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            said = lambda: (tmp_path / "serve.log").read_text()  # noqa: E731
            _until(lambda: "serve: web page on" in said() or service.poll() is not None, 120)
            assert service.poll() is None, said()
            made = _grader(python, course, pythonpath, "tokens", "--base-url", base)
            assert made.returncode == 0, made.stdout + made.stderr
            student, xsrf = _session(links(course)["loop_correct"])
            answer = _upload(SimpleNamespace(base=base), student, xsrf, notebook_of(LOOP_CORRECT))
            assert answer.status_code == 303, answer.text[:500]
            number = int(answer.headers["Location"].rsplit("/", 1)[1])
            failed = rf"serve: attempt {number} of loop_correct FAILED: grading failed twice: (.+) \(whole log: (.+)\)"
            _until(lambda: re.search(failed, said()) or service.poll() is not None, 180)
            found = re.search(failed, said())
            assert found, said()[-3000:]
            why = flat(found[1])
            assert why.startswith("The control submission failed, so nothing was graded or recorded")
            assert "No module named 'numpy'" in why and "library folders" in why
            assert found[2].endswith(f"attempt-{number}-try-2.log") and "No module named 'numpy'" in \
                Path(found[2]).read_text()  # the attempt's log: the control's sentence
            instructor = requests.Session()
            instructor.get((course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip(), timeout=30)
            live = BeautifulSoup(instructor.get(base + "instructor", timeout=30).text, "html.parser").get_text(" ")
            live = flat(live)
            assert f"attempt {number} of loop_correct failed: grading failed twice: {CONTROL_FAILED}" in live
            assert "No module named 'numpy'" in live
            page = flat(student.get(base.rstrip("/") + answer.headers["Location"], timeout=30).text)
            assert "Grading this submission failed twice" in page
        finally:
            service.send_signal(signal.SIGINT)
            service.wait(timeout=60)
    _nothing_recorded(course)


def test_a_dask_worker_whose_box_cannot_import_numpy_grades_nothing(target_install, tmp_path):
    """Issue 37.1 on Dask: a worker started from the --target install with NumPy where its
    sandbox cannot see it runs its control before its first submission, fails it, and the
    coordinator's grade records nothing and says why. A worker of the same install, NumPy
    back, then grades the class (it once failed on the first gradebook: no ``alembic`` on
    its PATH, which is in the --target folder's bin/)."""
    from test_cluster import Cluster
    target, python = target_install
    course = copy_course(tmp_path / "course", students=["loop_correct", "forum_verbatim"])
    cluster = Cluster(hide=tmp_path)  # plain tcp on loopback; the course hidden from the workers
    try:
        with numpy_hidden(target) as pythonpath:
            cluster.add_worker("hidden", env={"PYTHONPATH": pythonpath}, python=python)
            cluster.wait_for_workers("hidden")
            faulty = grade_command(course, "--cluster", cluster.address)
            cluster.lose("hidden")
        said = flat(faulty.stderr)
        assert faulty.returncode == 1, faulty.stdout[-2000:] + said[-2000:] + cluster.log("hidden")
        assert "The control submission failed, so nothing was graded or recorded" in said, said[-3000:]
        assert "No module named 'numpy'" in said and "library folders" in said
        assert "Nothing was recorded; run the command again once the cause is fixed" in said
        _nothing_recorded(course)
        cluster.add_worker("whole", env={"PYTHONPATH": str(target)}, python=python)
        cluster.wait_for_workers("whole")
        fixed = grade_command(course, "--cluster", cluster.address)
        assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:] + cluster.log("whole")
    finally:
        cluster.stop()
    assert [row.split() for row in printed_table(fixed.stdout)] == [  # the README's rows (columns narrower)
        row.split() for row in readme_table() if row.split()[0] in ("loop_correct", "forum_verbatim")]


def _environment(course: Path, pythonpath: str) -> dict:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(course.parent), "LANG": "C.UTF-8",
            "PYTHONPATH": pythonpath, "TMPDIR": os.environ.get("TMPDIR", "/tmp")}


def _until(check, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.3)


# ------------------------------------------------------------------ a notebook's structure
def _index(nb, name: str) -> int:
    return next(index for index, cell in enumerate(nb.cells) if grade_id(cell) == name)


def _pasted(name: str, copies: int = 1, code: str | None = None):
    """``copies`` pasted copies of the cell ``name`` below it, holding ``code`` if given."""
    def change(nb):
        at = _index(nb, name)
        for number in range(copies):
            pasted = copy.deepcopy(nb.cells[at])
            pasted.id = uuid.uuid4().hex[:8]  # what JupyterLab gives a pasted cell
            pasted.source = pasted.source if code is None else code
            nb.cells.insert(at + 1 + number, pasted)
        return nb
    return change


def _deleted(name: str):
    def change(nb):
        del nb.cells[_index(nb, name)]
        return nb
    return change


def _moved(nb):
    nb.cells.append(nb.cells.pop(_index(nb, SOLUTION_CELL)))
    return nb


def _added(nb):
    nb.cells.insert(3, nbformat.v4.new_code_cell("print('my own cell')"))
    nb.cells.append(nbformat.v4.new_markdown_cell("my own notes"))
    return nb


# student: (change, the autograded points, what its feedback says)
SHAPES = {
    # the copy below returns zeros: the cell in the assignment's place (correct) is graded, the copy never runs
    "pasted_solution": (_pasted(SOLUTION_CELL, code=ZEROS), FULL,
                        "2 copies of the assignment's cell 'max_pool_backward' (a cell copied and pasted keeps its "
                        "grading data). The one in the assignment's own place was graded as that cell; the other 1 "
                        "stayed in your notebook as plain text and did not run."),
    "fifty_copies": (_pasted(SOLUTION_CELL, 50), FULL, "51 copies of the assignment's cell 'max_pool_backward'"),
    "pasted_test": (_pasted("hidden_overlapping_windows"), FULL, "2 copies of the assignment's cell"),
    "pasted_part_a": (_pasted(PART_A_CELL), FULL, f"2 copies of the assignment's cell '{PART_A_CELL}'"),
    "deleted_answer": (_deleted(PART_A_CELL), FULL, f"put back as released before grading: {PART_A_CELL}"),
    "deleted_question": (_deleted("part_a_question"), FULL, "These read-only cells of the assignment were missing "
                         "from your notebook: part_a_question. They hold no points"),
    "deleted_test": (_deleted("hidden_overlapping_windows"), FULL, "put back as released before grading"),
    "deleted_solution": (_deleted(SOLUTION_CELL), 0, "max_pool_backward"),
    "moved_cells": (_moved, FULL, "put back in the assignment's order"),
    "added_cells": (_added, FULL, "You added 2 cell(s) of your own: they stayed where you put them, their code ran "
                    "in its place, and they are not graded."),
}
NBFORMAT3 = "nbformat_3"
NBFORMAT3_REASON = "Your notebook is in nbformat 3 (an older Jupyter's format); it was converted to nbformat 4"


def write_shapes(course: Path) -> None:
    """A student for each shape, as ``nbgrader collect`` leaves a submission (its notebook, and
    the time and secret ``nbgrader submit`` wrote)."""
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for student, (change, _, _) in [*SHAPES.items(), (NBFORMAT3, (None, FULL, ""))]:
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        if change is None:
            nbformat.write(nbformat.convert(notebook_with(release, LOOP_CORRECT), 3), folder / f"{ASSIGNMENT}.ipynb",
                           version=3)
        else:
            nbformat.write(change(notebook_with(release, LOOP_CORRECT)), folder / f"{ASSIGNMENT}.ipynb")
        for name, text in submission_files(student).items():
            (folder / name).write_text(text)


def _autograded_points(course: Path) -> dict[str, float]:
    grades = all_grades(sqlite(course))
    return {student: sum(grades.get((student, cell)) or 0 for cell in GRADED_CHECKS)
            for student in {student for student, _ in grades}}


def _feedback(course: Path, student: str) -> str:
    return flat((course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text())


def test_every_shape_of_notebook_gets_a_grade_feedback_and_a_reason_and_release_feedback_reaches_all(tmp_path):
    course = copy_course(tmp_path / "course")  # the sample class, and a student for each shape
    write_shapes(course)
    graded = subprocess.run([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course)], text=True,
                            capture_output=True, timeout=1200)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    points = _autograded_points(course)
    for student, (_, due, reason) in SHAPES.items():
        assert points[student] == due, (student, points[student])
        assert reason in _feedback(course, student), student
    assert points[NBFORMAT3] == FULL and NBFORMAT3_REASON in _feedback(course, NBFORMAT3)

    # plain nbgrader, on a copy of the same class: the same grade in every cell, the same reasons
    plain = copy_course(tmp_path / "plain", with_submissions=False)
    write_shapes(plain)
    nbgrader(plain, "generate_assignment", ASSIGNMENT)
    assert nbgrader(plain, "autograde", ASSIGNMENT).returncode == 0
    ours, theirs = all_grades(sqlite(course)), all_grades(sqlite(plain))
    assert theirs and {key: ours.get(key) for key in theirs} == theirs
    assert nbgrader(plain, "generate_feedback", ASSIGNMENT).returncode == 0
    for student, (_, _, reason) in SHAPES.items():
        assert reason in _feedback(plain, student), student
    assert NBFORMAT3_REASON in _feedback(plain, NBFORMAT3)

    # the instructor releases every student's feedback through the exchange
    released = nbgrader(course, "release_feedback", ASSIGNMENT, check=False)
    assert released.returncode == 0, released.stdout[-3000:]
    outbound = list((course / "exchange" / ASSIGNMENT / "feedback").glob("*.html"))
    assert len(outbound) == len(STUDENTS) + len(SHAPES) + 1  # as collected: with nbgrader submit's files
