"""What ``maxpool-grader grade`` does once, before it forks its grading workers, instead
of every worker doing it for itself: the zygotes each worker forks its kernels and verdict
processes from, started while the command prepares the run (they import on a core that is
idle then), and the warm-up (imports, caches of pure functions) the workers inherit."""

from __future__ import annotations

import contextlib
from pathlib import Path

import nbformat
from nbgrader.converters import GenerateFeedback

from ..course.directory import course_config, nbgrader_api, notebook_path, say
from ..exercise.checks import warm_up_checks
from ..exercise.part_a import figure_png
from ..glue.sealedbox import SealedBox
from ..names import ASSIGNMENT, RESOURCES_KEY
from ..sandbox import kernels
from ..sandbox.box import bwrap_works
from ..verdict import process
from ..verdict.remote import as_python


def start_zygotes(course: Path, db_url: str, count: int, assignment: str = ASSIGNMENT) -> list[tuple]:
    """A kernel zygote and a verdict zygote for ``count`` workers to share, started now, so
    that they import while this process does its own work; each worker forked from this
    process adopts a socket of each (pool.LocalPool). [] when the course grades unsandboxed (no
    zygote). One zygote serves every worker: each spawn takes it a few milliseconds."""
    if SealedBox(config=course_config(course, db_url)).sandbox == "off" or not bwrap_works():
        return []
    return [(kernels.start_kernel_zygote(_assignment_code(course, assignment), count),
             process.start_verdict_zygote(count))]


def adopt_zygotes(zygotes, taken) -> None:
    """The next socket of ``zygotes`` no other worker took is this worker's (a worker beyond
    their holders starts zygotes of its own); it lets go of the others."""
    with taken.get_lock():
        mine, taken.value = taken.value, taken.value + 1
    for kernel, verdict in zygotes:
        if mine < kernel.holders:
            kernels.adopt_kernel_zygote(kernel, mine)
            process.adopt_verdict_zygote(verdict, mine)
        else:
            kernel.let_go()
            verdict.let_go()


def _assignment_code(course: Path, assignment: str) -> list[str]:
    """The code cells of the release notebook: what every student has of the assignment. Never
    the source notebook's: every kernel holds what its zygote read, and the source holds the
    solution and the hidden tests (a hidden test cell is not run in the kernel anyway)."""
    with contextlib.suppress(OSError, ValueError):
        nb = nbformat.read(notebook_path(course, "release", ".", assignment), as_version=4)
        return list(dict.fromkeys(cell.source for cell in nb.cells if cell.cell_type == "code"))
    return []


def warm_up(course: Path, db_url: str, assignment: str = ASSIGNMENT) -> None:
    """What every worker would do once for itself (imports; for its verdicts, the released
    code cells read as IPython reads them; for its feedback pages, nbconvert's templates
    compiled, the code cells every page shares highlighted, Part A's figure drawn), done
    once here before the workers are forked from this process. What it leaves are caches of
    pure functions of their inputs: every verdict and page is the same byte for byte."""
    figure_png(backward=True)
    warm_up_checks()  # the verdicts' numerical gradients, computed once for every worker
    release = notebook_path(course, "release", ".", assignment)
    try:
        nb = nbformat.read(release, as_version=4)
    except (OSError, ValueError):
        return
    for cell in nb.cells:
        if cell.cell_type == "code":
            as_python(cell.source)
    try:  # the release as a page, with a score of 0 where GetGrades and the summary would put one
        _feedback_page(course, db_url, assignment, nb)
    except Exception as problem:  # noqa: BLE001  only a cost: each worker warms up by itself then
        say(f"warm-up of the feedback pages skipped ({type(problem).__name__}: {problem})", level=2)


def _feedback_page(course: Path, db_url: str, assignment: str, nb) -> None:
    """``nb`` made into a feedback page by the course's exporter, and thrown away."""
    api = nbgrader_api(course, db_url)
    converter = GenerateFeedback(coursedir=api.coursedir, parent=api)
    exporter = converter.exporter_class(parent=converter, config=converter.config)
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}  # as the kernel says
    for cell in nb.cells:
        if "nbgrader" in cell.metadata:
            cell.metadata.nbgrader.update(score=0, points=cell.metadata.nbgrader.get("points", 0), comment=None)
    exporter.from_notebook_node(nb, {RESOURCES_KEY: {"titles": {}, "pending": {}, "header": ""}, "nbgrader": {
        "notebook": assignment, "score": 0, "max_score": 0, "late_penalty": 0}})
