"""``OutOfProcessVerdicts``: every graded test decided in a separate, limited, sandboxed
process (verdict/verdicts.py), before the kernel starts."""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor

from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_locked
from traitlets import Float

from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from ..names import RESOURCES_KEY, SOLUTION_CELL, grade_id
from ..sandbox.box import untrusted_process_wrapper
from ..verdict.process import Limits
from ..verdict.remote import Cell
from ..verdict.verdicts import Verdict, as_python, verdicts
from .sealedbox import SealedBox, box_for


def error_output(message: str) -> NotebookNode:
    return new_output("error", ename="CheckFailed", evalue=message,
                      traceback=message.split("\n"))


class OutOfProcessVerdicts(NbGraderPreprocessor):
    """Decide every graded test of the notebook in a separate process (verdict/verdicts.py)."""

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
        # itself, and nothing it started can starve the kernel's start (glue/execute.py).
        pending = _VERDICT_THREADS.submit(decide)
        resources.setdefault(RESOURCES_KEY, {}).update(verdicts=pending, graded=set(graded),
                                                       as_in_the_kernel=_as_in_the_kernel(nb, cells))
        return nb, resources


def _as_in_the_kernel(nb: NotebookNode, cells: list[Cell]) -> bool:
    """Whether the kernel runs the hidden tests on the function the verdict tested: the
    student's code is all before the first test (no cell of theirs among or after the tests)
    and plain Python (no magic or shell command, which the verdict's process does not run,
    and nothing only IPython runs, such as a top-level await)."""
    tests = [index for index, cell in enumerate(nb.cells) if cell.cell_type == "code" and is_grade(cell)]
    after = [cell for cell in nb.cells[tests[0]:] if cell.cell_type == "code"] if tests else []
    student = [cell.source for cell in cells if cell.kind != "provided"]
    return all(is_grade(cell) for cell in after) and all(map(_plain, student))


@functools.lru_cache(maxsize=256)
def _plain(source: str) -> bool:
    python = as_python(source)
    if "get_ipython" in python:
        return False
    try:
        compile(python, "<cell>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def passed_in_the_grader(cell, verdict: Verdict | None, as_in_the_kernel: bool) -> str | None:
    """What a hidden test cell prints in the kernel, when the verdict already knows it: the
    test passed, the student's function wrote and warned nothing while it ran, the kernel
    would test the same function, and the cell does nothing but that test (run_check prints
    its "Passed" line then). None when the cell must run in the kernel."""
    if not (as_in_the_kernel and verdict is not None and verdict.passed and verdict.quiet
            and verdict.grade_id in HIDDEN_CHECKS):
        return None
    code = [line.strip() for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#")]
    calls = ["from maxpool_grader.checks import run_check", f"run_check({verdict.grade_id!r}, globals())"]
    return verdict.message + "\n" if code == calls else None


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
