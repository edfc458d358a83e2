"""Whether a box received its share of the CPU over an interval of wall time.

A box's cgroup (cgroups.py) caps the CPU its processes may use at once (``Cgroup.cpus``) and
counts what they received (``Cgroup.cpu_seconds``). A time limit that ran out says the
student's code was too slow only if the box had the CPU it was owed meanwhile; on a machine
that others keep busy, it may not have had it. ``sample`` reads what a box received so far,
and for each of its threads, and the grader's thread that calls it, the time it waited on a run
queue, ready to run (``/proc/PID/task/TID/schedstat``, its second field); ``between`` compares
two samples:

* **fair**: the box received at least ``FAIR_FRACTION`` of the time limit in CPU time (of one
  CPU, or of its quota when that is less): a time limit that ran out counts against it;
* **starved**: it received less, though its threads were running or ready to run for at
  least that long: it was owed CPU it did not get, and a time limit that ran out is the
  grader's fault, not the student's;
* neither (it slept, or waited for something other than a CPU), or an interval shorter than
  ``SHORTEST_SECONDS`` (the last of a notebook's time, say): the limit counts as well.

Where the box has no cgroup or its cgroup counts no CPU time (no cpu controller or
accounting here), ``sample`` gives None and the limits hold on the wall clock alone.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field

from .cgroups import Cgroup

FAIR_FRACTION = 0.5  # of the CPU time owed in an interval, what a box must have received
SHORTEST_SECONDS = 1.0  # a shorter interval is never judged starved: the scheduler's slices make it noise
WITHOUT_CPU_SHARE = (  # the grading run's banner (box.py) where boxes get no CPU quota
    "NO CPU SHARE PER SUBMISSION: the cgroup of a submission has no cpu controller here, so a\n"
    "submission's processes may take every CPU, and a verdict's time limits hold on the wall clock\n"
    "alone: a slow student graded beside a submission that spins can lose points. Grade as root, or\n"
    "delegate the cpu controller (docs/security.md#cpu-share).")


@dataclass(frozen=True)
class Sample:
    """What a box had received at one moment (``wall``: time.monotonic)."""

    wall: float
    used: float  # CPU seconds of all its processes so far
    waits: dict[int, float] = field(default_factory=dict)  # thread id -> seconds it waited, ready to run


@dataclass(frozen=True)
class Interval:
    """What a box received between two samples, and what it was owed (``share``: CPUs)."""

    seconds: float
    used: float
    waited: float
    share: float
    limit: float = 0.0  # the time limit the interval had (it may have run past it); 0: its length

    @property
    def owed(self) -> float:
        return FAIR_FRACTION * self.share * (self.limit or self.seconds)

    def fair(self) -> bool:
        return self.used >= self.owed

    def asked(self) -> bool:
        """Whether its threads were running or ready to run for as long as it was owed."""
        return self.used + self.waited >= self.owed

    def starved(self) -> bool:
        return (self.limit or self.seconds) >= SHORTEST_SECONDS and not self.fair() and self.asked()

    def credit(self) -> float:
        """The wall time of the interval not charged to the box: all of it when it was starved,
        else the time its threads waited for a CPU while it received less than it was owed."""
        if self.fair():
            return 0.0
        return self.seconds if self.starved() else min(self.seconds, self.waited)

    def sentence(self) -> str:
        return (f"in {self.seconds:.1f} s its processes received {self.used:.2f} s of CPU time, though their "
                f"threads were running or ready to run for {self.used + self.waited:.1f} s in all (at least "
                f"{self.owed:.1f} s was owed)")


def share(cgroup: Cgroup | None) -> float:
    """The CPUs a box is owed at once: one (a verdict's function runs in one thread), or its
    quota where that is less."""
    return min(1.0, cgroup.cpus) if cgroup is not None and cgroup.cpus > 0 else 1.0


def sample(cgroup: Cgroup | None) -> Sample | None:
    """What the box received so far, or None where its CPU time is not counted."""
    used = cgroup.cpu_seconds() if cgroup is not None else None
    if used is None:
        return None
    found = waits(cgroup.pids())
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/thread-self/schedstat") as stats:
        found[-1] = int(stats.read().split()[1]) / 1e9  # the grader's thread that calls the box waits too
    return Sample(time.monotonic(), used, found)


def between(before: Sample, after: Sample, cpus: float, limit: float = 0.0) -> Interval:
    """The interval from ``before`` to ``after``: the waits of the threads alive at its end
    (a thread that ended meanwhile took its own with it)."""
    waited = sum(max(0.0, seconds - before.waits.get(thread, 0.0)) for thread, seconds in after.waits.items())
    return Interval(after.wall - before.wall, max(0.0, after.used - before.used), waited, cpus, limit)


def waits(pids: list[int]) -> dict[int, float]:
    """Each thread of ``pids``: the seconds it waited on a run queue so far."""
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for thread in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{pid}/task/{thread}/schedstat") as stats:
                        found[int(thread)] = int(stats.read().split()[1]) / 1e9
    return found
