"""The student's function as a fresh kernel defines it: the provided cells and the solution cell
run again in a new verdict process, before any call (a cell of the student's may call it), for
the report of a mistake that shows only after earlier calls (exercise/state.py: state kept
between calls)."""

from __future__ import annotations

import time
from typing import Callable

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
