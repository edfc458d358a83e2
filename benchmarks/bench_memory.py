"""Benchmark: the peak memory of every grading process on the worst submissions there are.

Two classes, each graded once:

* **the attack suite**: every attack of tests/hostile.py and tests/inside.py (the 300 MB output
  flood, memory spread over 16 processes, the fork bomb, huge and malformed replies, ...)
  between correct classmates, as tests/test_sealed_box.py builds it, graded by
  ``maxpool-grader grade --workers 2`` and by plain ``nbgrader autograde``;
* **the bounded notebook**: a few kB that adds 400 cells each printing just under one cell's
  output cap (416 MB of graded notebook before the notebook's own caps), beside a correct
  classmate, as tests/test_bounded_notebook.py builds it, graded by ``maxpool-grader grade``.

For ``grade`` it prints the peak (VmHWM) of the command and of each of its workers, sampled
every 0.2 s while they grade (tests/test_sealed_box.py's ``GraderPeaks``); for plain nbgrader,
its own peak as it exits. The processes in the box (kernels, verdict processes) are under the
box's own memory cap, ``c.SealedBox.memory_mib``, and are not counted. The test suite asserts
the bound (600 MiB, ``GRADER_PEAK_MIB``); this prints the figures docs/security.md gives. Run as
root, where the sandbox and its cgroups are whole. Not a test: it prints numbers.

    .venv/bin/python benchmarks/bench_memory.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from helpers import copy_course, grade_command  # noqa: E402
from test_bounded_notebook import write_class  # noqa: E402
from test_sealed_box import GRADER_PEAK_MIB, Batch, GraderPeaks  # noqa: E402


def _grade_peaks(peaks: dict[int, tuple[str, int]]) -> list[tuple[str, int]]:
    """(the command or "worker", its peak MiB), the command first."""
    rows = sorted(peaks.values(), key=lambda row: (" grade " not in f" {row[0]} ", -row[1]))
    return [("command" if index == 0 else "worker", peak) for index, (_, peak) in enumerate(rows)]


def attack_suite() -> list[tuple[str, str, int]]:
    rows = []
    for command in ("maxpool-grader grade", "nbgrader autograde"):
        started = time.monotonic()
        batch = Batch(as_root=os.geteuid() == 0, command=command)
        try:
            seconds = time.monotonic() - started
            if command == "nbgrader autograde":
                rows.append(("attack suite", f"plain nbgrader autograde ({seconds:.0f} s)",
                             int(batch.peak_file.read_text())))
            else:
                rows += [("attack suite", f"maxpool-grader grade, {what} ({seconds:.0f} s)", peak)
                         for what, peak in _grade_peaks(batch.grade_peaks)]
        finally:
            batch.cleanup()
    return rows


def bounded_notebook() -> list[tuple[str, str, int]]:
    base = Path(tempfile.mkdtemp(prefix="maxpool-memory-", dir="/tmp"))
    try:
        course = copy_course(base / "course", with_submissions=False)
        write_class(course)
        tmpdir = base / "tmp"
        tmpdir.mkdir()
        sampler = GraderPeaks(tmpdir)
        started = time.monotonic()
        graded = grade_command(course, "--workers", "2", env={"TMPDIR": str(tmpdir)})
        peaks, seconds = sampler.finish(), time.monotonic() - started
        if graded.returncode != 0:
            raise SystemExit(f"grade failed:\n{graded.stdout[-2000:]}{graded.stderr[-2000:]}")
        page = course / "feedback" / "flooder" / "max_pool_backward" / "max_pool_backward.html"
        return [("bounded notebook", f"maxpool-grader grade, {what} ({seconds:.0f} s; feedback page "
                 f"{page.stat().st_size / 2**20:.1f} MiB)", peak) for what, peak in _grade_peaks(peaks)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    load = os.getloadavg()[0]
    rows = attack_suite() + bounded_notebook()
    print(f"\n{os.cpu_count()} cores; load average (1 min) before {load:.2f}, after {os.getloadavg()[0]:.2f}")
    width = max(len(what) for _, what, _ in rows)
    for suite, what, peak in rows:
        print(f"{suite:18} {what:{width}}  {peak:5d} MiB")
    worst = max(peak for _, _, peak in rows)
    print(f"\nthe largest: {worst} MiB; the test suite's bound: {GRADER_PEAK_MIB} MiB")


if __name__ == "__main__":
    main()
