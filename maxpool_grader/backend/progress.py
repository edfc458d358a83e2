"""What a batch shows while it runs: a live bar (done/total, failures, ETA) on a terminal,
plain lines otherwise."""

from __future__ import annotations

import sys
import time

from ..course.directory import quiet


class Progress:
    """A live bar (done/total, failures, ETA) on a terminal, plain lines otherwise; ``add``
    puts a second counter (feedback beside autograde) on the same display."""

    def __init__(self, total: int, label: str, stream=None):
        self.label = label
        self.stream = stream or sys.stdout
        self.counters: dict[str, dict] = {}
        self.live = None
        self.add(total, label)

    def add(self, total: int, label: str) -> None:
        counter = {"total": total, "done": 0, "failures": 0, "started": time.monotonic(), "task": None}
        if self.live is None and total and self.stream.isatty() and not quiet():
            # rich: the live bar is drawn only on a terminal; a log or a test never imports it
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar
            self.live = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failures]} failed"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn())
            self.live.start()
        if self.live is not None and total:
            counter["task"] = self.live.add_task(label, total=total, failures=0)
        self.counters[label] = counter

    def expect(self, label: str, change: int) -> None:
        """``change`` more (or fewer) jobs of ``label`` than it was made with."""
        counter = self.counters[label]
        counter["total"] += change
        if counter["task"] is not None:
            self.live.update(counter["task"], total=counter["total"])

    def advance(self, student: str, ok: bool, seconds: float | None = None, label: str | None = None,
                why: str = "") -> None:
        """One job done; a failed one is shown with ``why`` (what its job said, ``reason``)."""
        label = label or self.label
        counter = self.counters[label]
        counter["done"] += 1
        counter["failures"] += not ok
        if self.live is not None:
            if counter["task"] is not None:
                self.live.update(counter["task"], advance=1, failures=counter["failures"])
            return
        if quiet():
            return
        done, total, failures = counter["done"], counter["total"], counter["failures"]
        elapsed = time.monotonic() - counter["started"]
        eta = elapsed / done * max(0, total - done)
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        print(f"[{label} {done}/{total}] {student}{took}"
              f"{'' if ok else ' FAILED (' + (why or 'no reason was given') + ')'}; {failures} failed, ETA {eta:.0f} s",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def reason(fault: str, log: str, most: int = 300) -> str:
    """Why a job failed, in one line: the grader's fault, else the last line of its log that
    says something (nbgrader's log ends with the error that stopped it)."""
    lines = [line.strip() for line in (fault or log or "").splitlines() if line.strip()]
    if not lines:
        return ""
    said = lines[0] if fault else next((line for line in reversed(lines) if not line.startswith(("^", "~"))), "")
    return said if len(said) <= most else said[:most - 1] + "…"
