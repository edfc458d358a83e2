"""What one job (autograde or feedback of one student) reports back to the command that
started it, from a worker process (backend/pool.py) or a Dask worker (cluster/worker.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class JobResult:
    """One student's job: whether it worked, and what the batch and the report need of it."""

    student: str
    success: bool
    log: str = ""  # the end of nbgrader's log (and its error) when the job failed
    seconds: float | None = None  # how long the job took where it ran
    cpu_seconds: float | None = None  # the CPU time of the process that ran it (its threads), meanwhile
    record_seconds: float | None = None  # --cluster: the coordinator's gradebook write of it
    notebooks: dict[str, bytes] | None = None  # --cluster: the graded notebooks, sent back to be recorded
    worker: str = ""  # --cluster: host:pid of the worker that graded it
    then: object = None  # what the backend's ``then`` gave, run right after this grading (backend/interface.py)

    def failing(self, log: str) -> JobResult:
        """This job, failed after all (recording its grades broke, say)."""
        self.success, self.log = False, log
        return self
