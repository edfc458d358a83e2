"""What a report's evidence needs of the student's function, in the verdict process, beyond the
failed test (exercise/evidence.py): what the notebook's own self-check says of it (``page_of``:
the tools cell's ``check_rules``, the course's released code, run here against the remote
function, as the kernel's tests run it against the notebook's), and the function as a fresh
kernel defines it (``FreshStarts``: the provided cells and the solution cell run again in a new
verdict process, before any call, for a mistake that shows only after earlier calls,
exercise/state.py)."""

from __future__ import annotations

import time
from typing import Callable

from ..exercise.evidence import Page, self_check_results
from .process import ProcessEnded, Timeout
from .replies import Malformed

MOST_STARTS = 4  # fresh processes for one report: each runs the notebook's cells again


class FreshStarts:
    """Calling it gives a fresh function (None when the time or the starts are used up).
    ``make`` builds a session of the same cells, ``budget_left`` says the notebook's time left."""

    def __init__(self, make: Callable, budget_left: Callable[[], float], seconds: float):
        self.make, self.budget_left, self.seconds, self.sessions = make, budget_left, seconds, []

    def __call__(self):
        if self.budget_left() <= 0 or len(self.sessions) >= MOST_STARTS:
            return None
        self.close()  # one fresh process at a time: the box caps its processes
        fresh = self.make()
        self.sessions.append(fresh)
        if fresh.load():
            return None
        fresh.process.deadline = time.monotonic() + min(self.seconds, max(self.budget_left(), 0))
        return fresh.function

    def close(self) -> None:
        for fresh in self.sessions:
            fresh.close()


def page_of(passed: frozenset[str], session) -> Page:
    """The page of a notebook whose tests ``passed`` (their grade ids), with the rules of its
    self-check the student's function passes, when the notebook has the tools cell. A function
    that stops the process while they run leaves them unknown (the page as without a self-check)."""
    tools = next((cell.source for cell in session.cells if cell.kind == "provided"
                  and "def rule_problems" in cell.source), "")
    if not tools or session.function is None:
        return Page(passed)
    session.process.deadline = time.monotonic() + min(session.limits.check_seconds, max(session.budget_left(), 0))
    try:
        return Page(passed, self_check_results(tools, session.function), tools)
    except (Timeout, ProcessEnded, Malformed):
        session.close()
        return Page(passed)
    finally:
        if session.process is not None and session.process.process.poll() is not None:
            session.close()  # it ended meanwhile: the next test starts a new one
