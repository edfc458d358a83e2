"""The grading backend: where submissions are autograded, behind one interface that
``grade`` and ``serve`` both use (``pool.LocalPool`` on this machine, the cluster package's
``DaskCluster`` on a Dask cluster).

A backend is started, given submissions one at a time, and stopped:

* ``submit(student, then=..., args=...)`` autogrades ``submitted/<student>/`` exactly as
  ``nbgrader autograde`` does with the course's configuration; the grades are in the
  gradebook and the graded notebook in ``autograded/`` before the future is done. ``then``
  (a module-level function, run in a worker of this machine with the course's
  ``NbGraderAPI``: ``worker_api()``) runs right after a grading that worked, as
  ``then(student, assignment, graded, *args)``, and its result is the ``JobResult``'s
  ``then``: the student's feedback, say. ``autograde=False`` runs ``then`` alone.
* The future's result is the grading's ``JobResult`` (a submission's trouble is a failed
  result with its log, never an exception); it fails with ``WorkerDied`` when the process
  that ran it died (killed, out of memory), which the caller may answer by submitting
  again: the backend has replaced what died.
* ``stop(now=True)`` kills what is running (Ctrl-C, a service that stops); unfinished
  futures then fail or are cancelled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Future
from typing import Callable


class WorkerDied(Exception):
    """The process grading a submission died; the submission may be submitted again."""


class GradingBackend(ABC):
    """Where submissions are autograded (see the module doc)."""

    @property
    @abstractmethod
    def capacity(self) -> int:
        """Submissions graded at once: more submitted wait in the backend."""

    @abstractmethod
    def start(self, warm: bool = False) -> None:
        """Be ready to grade; ``warm``: start every worker now, not at the first submission."""

    @abstractmethod
    def submit(self, student: str, *, autograde: bool = True, then: Callable | None = None,
               args: tuple = ()) -> Future:
        """Grade ``student``'s submission (and run ``then``); a future of its ``JobResult``."""

    @abstractmethod
    def stop(self, now: bool = False) -> None:
        """Let the workers go; ``now``: kill them, whatever they are doing."""

    def __enter__(self) -> GradingBackend:
        self.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.stop(now=kind is not None)
