"""Time limits judged on the CPU the box received (sandbox/cpushare.py): a verdict's limit that
runs out while other boxes, or other programs, held the CPU the box was owed is the grader's
fault, never the student's.

A ``CpuWatch`` follows one notebook's verdict processes: each deadline they are given starts an
interval (``start``). A deadline that passes while the box has not yet received its share of the
limit, though it asked for it, is put off (``more_time``), up to ``EXTEND_TIMES`` the limit: the
limit is judged on CPU time. When it passes for good the interval ends (``stop``): a starved one
raises ``Starved`` instead of the ``Timeout`` the student would be charged with; verdicts.py
grades that step again, at most ``STARVED_TRIES`` times, and then reports a grader fault (no
grade is recorded). The notebook's total time counts none of the time its box was owed CPU and
did not get, nor the time a deadline was put off (``credited``).
"""

from __future__ import annotations

import logging
from typing import Callable

from ..sandbox import cpushare
from ..sandbox.box import Box, GraderFault

STARVED_TRIES = 3  # attempts of one step (a test, the notebook's cells) whose box was starved of CPU
EXTEND_TIMES = 3  # a starved deadline is put off until the wait reaches this many times the limit


class Starved(BaseException):
    """A time limit ran out while the box did not receive its share of the CPU (BaseException,
    like process.Timeout: student code paths catch Exception)."""

    def __init__(self, interval: cpushare.Interval):
        super().__init__(interval.sentence())
        self.interval = interval


def starved_fault(starved: Starved, tries: int = STARVED_TRIES) -> str:
    """The grader fault's sentence when a step was starved in every try."""
    return (f"the submission's box did not receive its share of the CPU in {tries} tries (the last time, "
            f"{starved.interval.sentence()}): other programs on this machine took it. Grade again when the "
            "machine is less busy, or with fewer --workers")


class CpuWatch:
    """The CPU one notebook's box received in each interval that a deadline bounds."""

    def __init__(self, box: Box | None):
        self.cgroup = box.cgroup if box is not None else None
        self.share = cpushare.share(self.cgroup)
        self.since: cpushare.Sample | None = None
        self.limit = self.put_off = 0.0  # the interval's limit, and the seconds its deadline was put off
        self.credited = 0.0  # wall seconds not charged to the notebook's total time

    def start(self, seconds: float = 0.0) -> None:
        """A new deadline, ``seconds`` from now: the interval before it ends, a new one begins."""
        self.stop()
        self.since, self.limit, self.put_off = cpushare.sample(self.cgroup), seconds, 0.0

    def _now(self) -> cpushare.Interval | None:
        now = cpushare.sample(self.cgroup) if self.since is not None else None
        return cpushare.between(self.since, now, self.share, self.limit) if now else None

    def more_time(self) -> float:
        """At a deadline: the seconds to wait on, while the box asked for CPU and has not received
        its share of the limit yet (0: judge it now)."""
        interval = self._now()
        if interval is None or self.limit < cpushare.SHORTEST_SECONDS or interval.fair() or not interval.asked():
            return 0.0
        more = min(EXTEND_TIMES * self.limit - interval.seconds, max(0.25, self.limit / 4))
        self.put_off += max(more, 0.0)
        return more

    def stop(self) -> cpushare.Interval | None:
        """The interval that ends now (None where the box's CPU time is not counted), credited."""
        interval, self.since = self._now(), None
        if interval is not None:
            self.credited += max(interval.credit(), self.put_off)
        return interval


def fairly(session, step: Callable, reload: bool = False):
    """``step()``, done again while a time limit of it runs out with the box of ``session`` (a
    verdicts._Session) starved of CPU (``Starved``): that timeout is the grader's, never a fail.
    After ``STARVED_TRIES`` tries the submission is not graded (a GraderFault). ``reload``: the
    step needs the function, which a starved try's process took with it."""
    for attempt in range(STARVED_TRIES):
        try:
            if attempt and reload and session.function is None:
                session.load()
            return step()
        except Starved as starved:
            session.close()
            last = starved
            logging.getLogger(__name__).warning("A verdict was cut short while its box was starved of CPU "
                                                "(%s); trying again", starved)
    raise GraderFault(starved_fault(last))
