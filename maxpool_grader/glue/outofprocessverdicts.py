"""``OutOfProcessVerdicts``: every graded test decided in a separate, limited, sandboxed
process (verdict/verdicts.py), before the kernel starts."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_locked
from traitlets import Float

from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from ..names import RESOURCES_KEY, SOLUTION_CELL, grade_id
from ..verdict.process import Limits, untrusted_process_wrapper
from ..verdict.remote import Cell
from ..verdict.verdicts import Verdict, verdicts
from .sealedbox import SealedBox, box_for
from .thisexercise import is_exercise


def error_output(message: str) -> NotebookNode:
    return new_output("error", ename="CheckFailed", evalue=message,
                      traceback=message.split("\n"))


class OutOfProcessVerdicts(NbGraderPreprocessor):
    """Decide every graded test of the exercise's notebook in a separate process
    (verdict/verdicts.py); another assignment's tests run in its sandboxed kernel alone."""

    # The defaults are Limits's (verdict/process.py); docs/settings.md is made from these traits.
    check_seconds = Float(Limits.check_seconds, help=(
        "Time limit of one test's graded inputs: the test fails, saying the function did not "
        "return in time.")).tag(config=True, unit="s")
    search_seconds = Float(Limits.search_seconds, help=(
        "Time limit of the search for a failed test's smallest failing input; when it runs out, "
        "the graded input is shown.")).tag(config=True, unit="s")
    load_seconds = Float(Limits.load_seconds, help=(
        "Time limit for running the code cells before the tests: for the solution cell every "
        "test fails; a cell the student added is left out.")).tag(config=True, unit="s")
    total_seconds = Float(Limits.total_seconds, help=(
        "Time limit of all out-of-process tests of one notebook: the tests not run by then fail. "
        "A verdict process's CPU time follows from it (docs/settings.md).")).tag(config=True, unit="s")

    def limits(self) -> Limits:
        return Limits(self.check_seconds, self.search_seconds, self.load_seconds,
                      self.total_seconds, SealedBox(parent=self).verdict_memory_mib << 20)

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources) or not executing(self.config):
            return nb, resources
        cells = code_before_tests(nb)
        graded = [cell_id for cell in nb.cells if (cell_id := grade_id(cell)) in GRADED_CHECKS
                  and cell.metadata.nbgrader.get("grade")]
        settings = SealedBox(parent=self)
        box = box_for(self, resources)
        wrap = untrusted_process_wrapper(settings.sandbox, self.log, box, settings.warm_start)
        limits, log = self.limits(), self.log

        def decide() -> dict[str, Verdict]:
            started = time.monotonic()
            found = verdicts(cells, grade_ids=graded, limits=limits, wrap=wrap) if graded else {}
            log.info("Out-of-process verdict: %d of %d tests passed (%.1f s)%s",
                     sum(verdict.passed for verdict in found.values()), len(found),
                     time.monotonic() - started, "" if wrap else " [UNSANDBOXED]")
            return found

        # Decided in a thread; SafeExecute waits for it, and for every process it left in the
        # box to be gone, before it starts the kernel: the verdict has the box's caps to
        # itself, and nothing it started can starve the kernel's start (glue/safeexecute.py).
        pending = _VERDICT_THREADS.submit(decide)
        resources.setdefault(RESOURCES_KEY, {}).update(verdicts=pending, graded=set(graded))
        return nb, resources


def executing(config) -> bool:
    """Whether the course runs notebooks at all (``--no-execute`` turns nbgrader's Execute, and
    so SafeExecute, off): without it no student code runs, out of process neither."""
    return all(config[name].get("enabled", True) is not False for name in ("Execute", "SafeExecute")
               if name in config)


def decided_in_the_grader(cell, verdict: Verdict | None) -> list[NotebookNode] | None:
    """The outputs of a hidden test cell, decided by the grader alone: it never runs in the
    student's kernel, which holds nothing of the hidden tests (their code calls the grader
    package, which no sandbox sees). A passed test shows the line ``run_check`` prints, a
    failed one its report; a cell with no verdict fails, saying so. None for any other cell
    (a visible test runs in the kernel as well, and can only lose points there)."""
    if grade_id(cell) not in HIDDEN_CHECKS or not is_grade(cell):
        return None
    if verdict is None:
        return [error_output("This test was not decided (the grader found no verdict for it), so it scores 0.")]
    if not verdict.passed:
        return [error_output(verdict.message)]
    return [new_output("stream", name="stdout", text=verdict.message + "\n")]


def code_before_tests(nb: NotebookNode) -> list[Cell]:
    """The code cells a kernel runs before the first test, in order, as the out-of-process
    verdict runs them: the solution cell, every cell the student added (no nbgrader
    metadata), and the assignment's provided code cells (read-only: nbgrader has put
    their released source back)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if is_grade(cell):
            break
        if grade_id(cell) == SOLUTION_CELL:
            cells.append(Cell(cell.source, "solution"))
        elif is_locked(cell):
            cells.append(Cell(cell.source, "provided"))
        else:
            cells.append(Cell(cell.source, "student"))
    if not any(cell.kind == "solution" for cell in cells):  # deleted: graded as an empty solution
        cells.append(Cell("", "solution"))
    if not any(cell.kind == "provided" for cell in cells):  # the provided cell gone: NumPy at least
        cells.insert(0, Cell("import numpy as np", "provided"))
    return cells


_VERDICT_THREADS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maxpool-verdicts")
