"""The control submission: before a grading backend records anything, its workers grade the
reference solution and the blank release notebook, in the same sandbox and with the same
configuration as every student, and record neither.

A grader that cannot run the students' code inside its box (a package the grader imports
that the sandbox does not see, a kernel that does not start, bwrap or a cgroup that fails)
once recorded every student at 0 and said nothing. The reference must get every test's
points and the blank must get none; when either does not, the run stops before any grade is
written, and says what failed and, where it is known, how to fix it. ``maxpool-grader
doctor`` runs the same control and prints its result.

The graded reference then goes through the feedback step as a student's graded notebook does
(``_feedback_page``: the course's ``GenerateFeedback`` preprocessors and exporter, with the
control's own scores where ``GetGrades`` reads the gradebook): a grader that grades but cannot
render a page (nbconvert's templates not found, a ``pip install --target`` folder's
``share/jupyter`` on no ``JUPYTER_PATH``) once recorded every grade and then failed every
feedback job without a word.
"""

from __future__ import annotations

import copy
import logging
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.converters import GenerateFeedback
from nbgrader.utils import determine_grade, is_grade
from traitlets.utils.importstring import import_item

from ..course.directory import notebook_path, use_nbgrader_environment
from ..exercise.checks import GRADED_CHECKS
from ..glue.outofprocessverdicts import OutOfProcessVerdicts
from ..glue.safeexecute import SafeExecute
from ..glue.sealedbox import SealedBox
from ..names import ASSIGNMENT, SOLUTION_CELL, grade_id
from ..sandbox.box import Box, GraderFault, private_directory, use_sandbox
from ..sandbox.filesystem import PYTHON, environment

REFERENCE, BLANK = "the reference solution", "the blank release notebook"
CONTROL_FAILED = "The control submission failed"  # how its sentence starts


@dataclass(frozen=True)
class ControlResult:
    """What the control found: nothing (it passed), or each problem in a sentence."""

    problems: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.problems

    def sentence(self) -> str:
        """What failed, what it means and, where known, the fix."""
        return (f"{CONTROL_FAILED}, so nothing was graded or recorded: "
                + " ".join(self.problems) + f" {_hint(' '.join(self.problems))}")


def control_notebooks(course: Path, assignment: str = ASSIGNMENT) -> dict[str, nbformat.NotebookNode]:
    """The release notebook as a student gets it, with its test cells as the source notebook
    holds them (as nbgrader's OverwriteCells puts them back): blank, and with the source's
    solution filled in (its solution markers taken out)."""
    source = nbformat.read(notebook_path(course, "source", ".", assignment), as_version=4)
    release = nbformat.read(notebook_path(course, "release", ".", assignment), as_version=4)
    tests = {grade_id(cell): cell.source for cell in source.cells if is_grade(cell) and cell.cell_type == "code"}
    solution = next(cell.source for cell in source.cells if grade_id(cell) == SOLUTION_CELL)
    solution = "\n".join(line for line in solution.splitlines() if not re.search(r"### (BEGIN|END) SOLUTION", line))

    def made(answer: str | None) -> nbformat.NotebookNode:
        nb = copy.deepcopy(release)
        for cell in nb.cells:
            if grade_id(cell) in tests:
                cell.source = tests[grade_id(cell)]
            elif answer is not None and grade_id(cell) == SOLUTION_CELL:
                cell.source = answer
        return nb
    return {REFERENCE: made(solution), BLANK: made(None)}


def run_control(course: Path, config, log: logging.Logger | None = None,
                assignment: str = ASSIGNMENT) -> ControlResult:
    """Grade both control notebooks through the course's own steps that run student code (the
    out-of-process verdict, then the kernel), in a box of their own; the reference must get
    every test's points and the blank none."""
    log = log or logging.getLogger(__name__)
    started, problems = time.monotonic(), []
    use_nbgrader_environment()  # as every command that grades has it (doctor too): nbconvert's templates
    try:
        notebooks = control_notebooks(course, assignment)
    except (OSError, ValueError, StopIteration) as problem:
        return ControlResult((f"The source or release notebook could not be read ({problem}).",))
    for label, nb in notebooks.items():
        try:
            scores, graded = _graded(nb, config, log, assignment)
        except GraderFault as fault:
            problems.append(f"Grading {label}: {fault}.")
            seen = probe_sandbox(SealedBox(config=config).sandbox, log)
            if seen:
                problems.append(f"In a sandbox of the same kind, Python itself says: {seen}")
            break
        expected = {cell: (check.points if label == REFERENCE else 0) for cell, check in GRADED_CHECKS.items()}
        for cell, want in expected.items():
            got, outputs = scores.get(cell, (None, ""))
            if got != want:
                problems.append(f"{label[0].upper() + label[1:]} scored {_points(got)} of "
                                f"{GRADED_CHECKS[cell].points:g} where {_points(want)} is due, in "
                                f"'{GRADED_CHECKS[cell].title}': {outputs[:300]}")
        if label == REFERENCE and not problems:
            problems += _feedback_page(graded, scores, config, log, assignment)
    return ControlResult(tuple(problems), time.monotonic() - started)


def _feedback_page(nb: nbformat.NotebookNode, scores: dict, config, log: logging.Logger,
                   assignment: str = ASSIGNMENT) -> list[str]:
    """The feedback step of a graded notebook (module doc), its page thrown away; [] when it
    made a page, else what failed, in a sentence."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:  # what GetGrades puts in from the gradebook
        if is_grade(cell) or cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell.metadata.nbgrader["comment"] = None
        if is_grade(cell):
            score = scores.get(grade_id(cell), (None, ""))[0]
            cell.metadata.nbgrader.update(score=score, points=cell.metadata.nbgrader.get("points", 0))
    total = sum(score for score, _ in scores.values() if score is not None)
    resources = {"nbgrader": {"assignment": assignment, "notebook": assignment, "student": "control",
                              "score": total, "max_score": total, "late_penalty": 0}}
    try:
        steps = GenerateFeedback(config=config)  # as BaseConverter.start makes its exporter
        made = import_item(steps.exporter_class) if isinstance(steps.exporter_class, str) else steps.exporter_class
        exporter = made(parent=steps, config=steps.config)
        for step in steps.preprocessors:
            if (step if isinstance(step, str) else step.__name__).rsplit(".", 1)[-1] != "GetGrades":
                exporter.register_preprocessor(step)
        page, _ = exporter.from_notebook_node(nb, resources=resources)
    except Exception as problem:  # noqa: BLE001  whatever stops a page stops every student's
        log.debug("The control's feedback page failed", exc_info=True)
        return [f"Its feedback page could not be made ({type(problem).__name__}: {str(problem)[:300]})."]
    return [] if "<html" in page.lower() else ["Its feedback page came out without HTML."]


PROBE = "import numpy, IPython, ipykernel, zmq, tornado"  # what the verdict process and the kernel import


def probe_sandbox(mode: str, log: logging.Logger) -> str:
    """What Python says when it starts in a sandbox like the students' and imports what
    grading needs (the grader's own code: its error output may be read); "" when it works or
    there is no sandbox."""
    if not use_sandbox(mode, log):
        return ""
    sealed, private = Box(mode=mode, log=log), private_directory("probe-")
    try:
        launch = sealed.sandbox(private)
        argv = launch.argv + sealed.command({}) + [PYTHON, "-P", "-c", PROBE]
        try:
            done = subprocess.run(argv, pass_fds=tuple(launch.fds), env=environment(), capture_output=True,
                                  timeout=120, stdin=subprocess.DEVNULL)
        finally:
            launch.close()
    except (OSError, subprocess.TimeoutExpired) as problem:
        return f"the sandbox could not run Python ({problem})"
    finally:
        sealed.close()
        shutil.rmtree(private, ignore_errors=True)
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return "" if done.returncode == 0 else (lines[-1] if lines else f"exit status {done.returncode}")[:500]


def _graded(nb: nbformat.NotebookNode, config, log: logging.Logger, assignment: str = ASSIGNMENT
            ) -> tuple[dict[str, tuple[float | None, str]], nbformat.NotebookNode]:
    """Each test cell's score and what it shows, as autograde would score it (no gradebook:
    the box has no submission folder, and nothing is written), and the graded notebook; the
    exercise's notebook, as nbgrader names it (its notebook is named as its assignment)."""
    resources: dict = {"nbgrader": {"assignment": assignment, "notebook": assignment}}
    nb, resources = OutOfProcessVerdicts(config=config, log=log).preprocess(nb, resources)
    nb, resources = SafeExecute(config=config, log=log).preprocess(nb, resources)
    scores = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and is_grade(cell) and grade_id(cell) in GRADED_CHECKS:
            shown = " ".join(" ".join(str(output.get("text") or output.get("evalue") or "").split())
                             for output in cell.get("outputs", []))
            scores[grade_id(cell)] = (determine_grade(cell, log)[0], shown)
    return scores, nb


def _points(value) -> str:
    return "nothing" if value is None else f"{value:g}"


JUPYTER_DATA = (r"TemplateNotFound|template .*not found|No template",
                "nbconvert's templates are not found, so no feedback page can be made: they live in the "
                "share/jupyter folder of the install (with pip install --target DIR: DIR/share/jupyter); "
                "name it in JUPYTER_PATH (export JUPYTER_PATH=DIR/share/jupyter), see docs/operations.md.")


KNOWN_CAUSES = (
    JUPYTER_DATA,
    (r"No module named '([\w.]+)'|ModuleNotFoundError",
     "A package the grader imports cannot be imported inside the sandbox: the sandbox sees the Python "
     "installation and its library folders (a virtual environment, site-packages, pip install --user, "
     "a pip install --target folder on PYTHONPATH), not a folder of loose modules. Install the course's "
     "dependencies into one of those (docs/security.md#control)."),
    (r"kernel did not start",
     "The kernel does not start inside the sandbox: run maxpool-grader doctor, and see "
     "docs/security.md#control."),
    (r"verdict process .* before it ran a line",
     "Python does not start inside the sandbox: run maxpool-grader doctor (bubblewrap, the cgroup, "
     "the installation's folders), and see docs/security.md#control."),
    (r"did not return within|did not finish running within|did not start in time",
     "The machine is too busy (or too slow) for the course's time limits: grade with fewer workers "
     "(--workers), or raise the limits in nbgrader_config.py (docs/settings.md)."),
    (r"The reference solution scored",
     "The source notebook's own solution does not pass its tests in the sandbox: fix the solution or the tests "
     "in source/ (maxpool-grader doctor grades the same control), and see docs/security.md#control."),
    (r"The blank release notebook scored",
     "The release notebook gives points for no work: its answer cell holds an answer (is the source's solution "
     "between ### BEGIN SOLUTION and ### END SOLUTION?) or a test passes on a blank answer. Fix source/, and see "
     "docs/security.md#control."),
)


def _hint(text: str) -> str:
    for pattern, hint in KNOWN_CAUSES:
        if re.search(pattern, text):
            return hint
    return "Its outputs above say what the box did; see docs/security.md#control."
