"""The out-of-process verdict: the student's code runs in a fresh, limited process; the
comparison with the reference and the score are computed here, in the grader.

Nothing the student's code does can reach this process: it runs the notebook's code
cells in ``untrusted.py`` (process.py), is handed each test input in a shared memory and
sends back the numbers its function returned, which are read with bounds, without
unpickling, and checked field by field (replies.py). The grader decides every test from
what it sees (dx's numbers, the inputs as it reads them back), never from what the process
says about itself. The reports are built by the same code as in the notebook
(exercise/explain.py), so a student reads the same message whichever side found the mistake.
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from ..exercise.checks import GRADED_CHECKS, GradedCheck
from ..exercise.diagnosis import compile_problems, explain_missing
from ..exercise.evidence import Page
from ..exercise.explain import explain, passed_message, report
from ..exercise.search import graded_failure
from ..exercise.student_call import StudentError
from ..names import FUNCTION
from ..sandbox.box import GraderFault
from . import replies
from .evidence import FreshStarts, page_of
from .fairness import CpuWatch
from .fairness import fairly as _fairly
from .process import Limits, ProcessEnded, SolutionProcess, Timeout
from .remote import Cell, RemoteFunction, as_python, cell_error, notebook_cells
from .shortcuts import find_shortcuts, shortcut_message


class VerdictKind(str, enum.Enum):
    """Why a test passed or failed (kept as its value in the graded notebook, for the report)."""

    PASSED = "passed"
    WRONG = "wrong"  # a wrong dx, or the function raised
    TIMEOUT = "timeout"
    CRASH = "crash"  # the process running the student's code ended
    NOT_DEFINED = "not defined"  # the cells gave no max_pool_backward
    SHORTCUT = "shortcut"  # an autograd library or the grader's code
    GRADER_ERROR = "grader error"


@dataclass(frozen=True)
class Verdict:
    grade_id: str
    passed: bool
    message: str  # the report (failed) or the "Passed: ..." line
    kind: str = VerdictKind.PASSED.value  # a VerdictKind: why it failed, for the class report
    bugs: tuple[str, ...] = ()  # the catalogue mistakes its report names as likely


@dataclass
class _Session:
    """The untrusted process of one notebook's verdicts, restarted after a timeout or crash."""

    cells: list[Cell]
    limits: Limits
    wrap: Callable | None
    started: float = field(default_factory=time.monotonic)
    process: SolutionProcess | None = None
    function: RemoteFunction | None = None
    load_failure: str = VerdictKind.NOT_DEFINED.value  # or TIMEOUT, CRASH
    skipped: dict[int, str] = field(default_factory=dict)  # student cells left out: why
    notes: list[str] = field(default_factory=list)  # what went wrong running the cells
    ran_any: bool = False  # a process of this session ran the notebook's cells (so the box holds its doings)
    watch: CpuWatch | None = None  # the CPU its box received (fairness.py)

    def __post_init__(self):
        self.watch = self.watch or CpuWatch(getattr(self.wrap, "box", None))

    def budget_left(self) -> float:
        """The notebook's time left, not counting time its box was owed CPU and did not get."""
        return self.limits.total_seconds - (time.monotonic() - self.started - self.watch.credited)

    def load(self) -> str | None:
        """Start a process and run the notebook's cells in it; None when max_pool_backward
        is ready, else why not (for the student). A cell the student added that does not
        finish or ends the process is left out, and the cells run again without it (a
        kernel would interrupt it and go on)."""
        while True:
            problem = self._load_once()
            if problem is not _AGAIN:
                return problem

    def _load_once(self):
        self.close()
        try:
            self.process = SolutionProcess(self.limits, self.wrap, self.watch)
        except OSError as problem:  # bwrap, the zygote or Python could not be started
            raise GraderFault(f"the verdict process could not be started ({problem})") from None
        self.process.deadline = time.monotonic() + min(self.limits.load_seconds, max(self.budget_left(), 0))
        running: list[int] = []
        request = {"op": "load", "cells": [cell.source for cell in self.cells], "skip": sorted(self.skipped)}
        try:
            reply, _ = self.process.request(request, running=running.append, cells=len(self.cells))
            reply = replies.load_reply(reply, len(self.cells))
        except replies.Malformed as malformed:
            self.ran_any = True
            self.load_failure = VerdictKind.CRASH.value
            return f"Running your notebook's cells, {malformed.sentence()}."
        except (Timeout, ProcessEnded) as stopped:
            if not running and not self.ran_any:  # nothing of the student's ran in this box yet
                what = "did not start in time" if isinstance(stopped, Timeout) else str(stopped)
                raise GraderFault(f"the verdict process {what} before it ran a line of the notebook "
                                  "(can Python import NumPy inside the sandbox?)") from None
            self.ran_any = True
            cell = running[-1] if running else None
            timeout = isinstance(stopped, Timeout)
            if (cell is not None and self.cells[cell].kind == "student" and cell not in self.skipped
                    and self.budget_left() > 0):
                self.skipped[cell] = (f"did not finish within {self.limits.load_seconds:g} s" if timeout
                                      else str(stopped))
                return _AGAIN
            self.load_failure = (VerdictKind.TIMEOUT if timeout else VerdictKind.CRASH).value
            if timeout:
                return (f"Your solution cell did not finish running within {self.limits.load_seconds:g} s "
                        f"(is there an endless loop outside the function?), so {FUNCTION} could not be "
                        "tested.")
            return (f"Running your solution cell {stopped} before {FUNCTION} was defined, so it could "
                    "not be tested.")
        self.ran_any = True
        self.load_failure = VerdictKind.NOT_DEFINED.value
        self.notes = [f"{self.cells[cell].describe(capital=True)} {why}, so it was left out."
                      for cell, why in sorted(self.skipped.items())]
        self.notes += [cell_error(error, self.cells) for error in reply["cell_errors"]]
        if reply.get("missing"):
            return self._with_notes(explain_missing([cell.source for cell in self.cells
                                                     if cell.kind != "provided"]))
        if "not_callable" in reply:
            return self._with_notes(f"{FUNCTION} is not a function (it is {reply['not_callable']}).")
        self.function = RemoteFunction(self.process, reply["parameters"], self.cells)
        return None

    def source(self) -> str:
        """The student's code (not the provided cells), for the diagnosis."""
        return "\n\n".join(cell.source for cell in self.cells if cell.kind != "provided")

    def _with_notes(self, text: str) -> str:
        """``text`` and what went wrong when the notebook's cells ran."""
        if not self.notes:
            return text
        return (text + "\n\nWhen the grader ran your notebook's cells from the top (as a fresh kernel "
                "does):\n" + "\n".join(f"- {note}" for note in self.notes)).lstrip("\n")

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
        self.process = self.function = None


_AGAIN = object()  # _Session._load_once: run the cells again, without the one that stopped


def _stopped(check: GradedCheck, limits: Limits, what: str, failure: BaseException,
             seconds: float) -> str:
    if isinstance(failure, Timeout):
        # the limit that stopped it, in words that do not depend on how busy the machine was
        limit = (f"within {limits.check_seconds:g} s" if seconds >= limits.check_seconds else
                 f"before the {limits.total_seconds:g} s for all tests of one notebook ran out")
        body = (f"{FUNCTION} did not return {limit} on {what} (an endless loop, or "
                f"far too slow: a correct solution needs well under a second).")
    else:
        body = f"The process running {FUNCTION} {failure} while it was running on {what}."
    return report(check, body + " The test gives no points when it cannot finish.")


@dataclass(frozen=True)
class _Failed:
    """A check whose graded input went wrong, explained once every check has run (exercise/evidence.py)."""
    check: GradedCheck
    failed: object  # the search's Outcome
    after: str


def verdict_of(check: GradedCheck, session: _Session, page: Page | None = None) -> Verdict | _Failed:
    """Run one check against the remote function, within its time limits (a wrong dx is
    returned as ``_Failed`` when ``page`` is None: ``explained`` makes its report)."""
    limits = session.limits
    if session.budget_left() <= 0:
        return Verdict(check.grade_id, False, report(check, (
            f"Not run: your function used up the {limits.total_seconds:g} s that grading one "
            "notebook may take (see the tests above that timed out).")), VerdictKind.TIMEOUT.value)
    if session.function is None:
        problem = session.load()
        if problem:
            return Verdict(check.grade_id, False, report(check, problem), session.load_failure)
    process, function = session.process, session.function
    seconds = min(limits.check_seconds, session.budget_left())
    process.deadline = time.monotonic() + seconds
    try:
        failed = graded_failure(check, function, [])
    except replies.Malformed as malformed:
        session.close()
        return Verdict(check.grade_id, False, report(check, f"Calling {FUNCTION} on this test's inputs, "
                                                            f"{malformed.sentence()}."), VerdictKind.CRASH.value)
    except (Timeout, ProcessEnded) as failure:
        session.close()
        return Verdict(check.grade_id, False, _stopped(check, limits, "this test's inputs", failure, seconds),
                       (VerdictKind.TIMEOUT if isinstance(failure, Timeout) else VerdictKind.CRASH).value)
    if failed is None:
        return Verdict(check.grade_id, True, passed_message(check))
    if isinstance(failed, str):
        return Verdict(check.grade_id, False, report(check, failed), VerdictKind.WRONG.value)
    # what went wrong running the cells matters when a name is missing (the cell that should
    # have defined it may have stopped early); else the notebook's own outputs show it
    missing_name = isinstance(failed.error, StudentError) and type(failed.error.exception) is NameError
    pending = _Failed(check, failed, session._with_notes("") if missing_name else "")
    return pending if page is None else explained(pending, session, page)


def explained(pending: _Failed, session: _Session, page: Page) -> Verdict:
    """The report of a failed check: the smallest input and the named mistake, within the search's time."""
    check, failed, after, limits = pending.check, pending.failed, pending.after, session.limits
    named: list[str] = []
    function = session.function
    if function is not None:
        session.process.deadline = time.monotonic() + min(session.limits.search_seconds,
                                                          max(session.budget_left(), 0))
    own = [cell for cell in session.cells if cell.kind != "student"]  # no cell of trial calls of the function
    fresh = FreshStarts(lambda: _Session(own, session.limits, session.wrap), session.budget_left, limits.search_seconds)
    try:
        message = explain(check, function, failed, named, after=after, source=session.source(), page=page,
                          fresh=fresh)
    except (Timeout, ProcessEnded, replies.Malformed):  # the search for a smaller input ran out: the graded one
        session.close()
        named.clear()
        message = explain(check, None, failed, named, after=after, source=session.source(), page=page)
    finally:
        fresh.close()
    return Verdict(check.grade_id, False, message, VerdictKind.WRONG.value, tuple(named))


def verdicts(solution: str | list[Cell], helpers: str = "", grade_ids=None, limits: Limits | None = None,
             wrap: Callable | None = None) -> dict[str, Verdict]:
    """The out-of-process verdict of each graded check on the notebook's code: ``solution``
    is its code cells up to the tests, in order (``Cell``), or the solution cell's source
    alone (run after the provided ``helpers`` cell)."""
    cells = notebook_cells(solution, helpers) if isinstance(solution, str) else list(solution)
    cells = [replace(cell, source=as_python(cell.source)) for cell in cells]
    checks = [GRADED_CHECKS[grade_id] for grade_id in (grade_ids or GRADED_CHECKS)]

    def everywhere(body: str, kind: str) -> dict[str, Verdict]:
        return {check.grade_id: Verdict(check.grade_id, False, report(check, body), kind) for check in checks}

    shortcuts = [replace(shortcut, cell="" if cell.kind == "solution" else cell.describe())
                 for cell in cells if cell.kind != "provided" for shortcut in find_shortcuts(cell.source)]
    if shortcuts:
        return everywhere(shortcut_message(shortcuts), VerdictKind.SHORTCUT.value)
    solution_cell = next((cell.source for cell in cells if cell.kind == "solution"), "")
    if compile_problems(solution_cell):
        return everywhere(explain_missing([solution_cell]), VerdictKind.NOT_DEFINED.value)
    session = _Session(cells, limits or Limits(), wrap)
    try:
        problem = _fairly(session, session.load)
        if problem:
            return everywhere(problem, session.load_failure)
        first = {check.grade_id: _fairly(session, lambda check=check: _guarded(check, session)) for check in checks}
        if not any(isinstance(verdict, _Failed) for verdict in first.values()):
            return first
        passed = frozenset(grade_id for grade_id, verdict in first.items()
                           if isinstance(verdict, Verdict) and verdict.passed)
        page = _fairly(session, lambda: page_of(passed, session), reload=True)
        return {grade_id: _fairly(session, lambda verdict=verdict: _guarded(verdict, session, page), reload=True)
                if isinstance(verdict, _Failed) else verdict for grade_id, verdict in first.items()}
    finally:
        session.close()


def _guarded(check: GradedCheck | _Failed, session: _Session, page: Page | None = None) -> Verdict | _Failed:
    """verdict_of (or, for a ``_Failed`` check, its report), except that a failure of the
    grader's own code on strange output fails the test with a message (and a loud log line)
    instead of losing the submission. A fault of the grader (a process that cannot start) is
    never a grade: it propagates."""
    if isinstance(check, _Failed):
        pending, check = check, check.check
    try:
        if page is not None:
            return explained(pending, session, page)
        return verdict_of(check, session)
    except GraderFault:
        raise
    except Exception as problem:  # noqa: BLE001
        logging.getLogger(__name__).error("grader error in %s: %r", check.grade_id, problem, exc_info=True)
        session.close()
        return Verdict(check.grade_id, False, report(check, (
            f"The grader could not evaluate what your function returned ({type(problem).__name__}: "
            f"{str(problem)[:200]}). Make sure it returns a float array of x's shape; if it does, "
            "tell your instructor.")), VerdictKind.GRADER_ERROR.value)
