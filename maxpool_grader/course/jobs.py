"""What one job (autograde or feedback of one student) reports back to the command that
started it, from a worker process (backend/pool.py) or a Dask worker (cluster/worker.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class JobResult:
    """One student's job: whether it worked, and what the batch and the report need of it."""

    student: str
    success: bool
    log: str = ""  # nbgrader's log (and its error) when the job failed
    fault: str = ""  # a fault of the grader, never the student's (nothing was recorded): why
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


def error_summary(log: str) -> str:
    """The exception that failed a job, from its log, in one line: its type and message, and
    the last frame it passed through (``file:line in function``). nbgrader's own closing
    "see the above traceback" is passed over for the one it points to; without any
    traceback (a log cut to its end), the last line naming an exception, else the log's last
    line. The exception's line is the first after the last frame
    indented less than that frame: a frame has a line of code below it only where Python
    has the source (not a frozen module's, ``<frozen os>``, nor a C extension's)."""
    lines = [line.rstrip() for line in (log or "").splitlines() if line.strip()]
    starts = [index for index, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    for start, end in reversed(list(zip(starts, starts[1:] + [len(lines)]))):
        block = lines[start + 1:end]
        frames = [index for index, line in enumerate(block) if line.lstrip().startswith('File "')]
        after = [line for line in block[frames[-1] + 1:] if _indent(line) < _indent(block[frames[-1]])] \
            if frames else block
        error = next((line.strip() for line in after if re.match(r"[A-Za-z_][\w.]*(: |$)", line.strip())), "")
        if not error or "above traceback" in error:
            continue
        found = re.match(r'File "(.+)", line (\d+), in (.+)', block[frames[-1]].strip()) if frames else None
        where = f" (at {found[1].rsplit('/', 1)[-1]}:{found[2]} in {found[3]})" if found else ""
        return (error + where)[:800]
    # no whole traceback (a log cut to its end): the last line naming an exception, if one does
    exceptions = [line.strip() for line in lines if "above traceback" not in line
                  and re.match(r"[A-Za-z_][\w.]*(Error|Exception|Fault)(: |$)", line.strip())]
    return ((exceptions or lines)[-1].strip())[:500] if lines else "no log"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
