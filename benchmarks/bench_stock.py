"""Benchmark: stock nbgrader against `maxpool-grader grade`, from the first command to the last file.

Builds a class of N submissions (default 40, cycling through the sample class, as
bench_grading.py does) twice:

* **stock**: a course directory whose nbgrader_config.py sets nothing (nbgrader's defaults:
  its own preprocessors, exporters and CSV plugin, no sandbox, one process), the source
  notebook, the submissions. Timed: `nbgrader autograde max_pool_backward`, then
  `nbgrader generate_feedback max_pool_backward`, then `nbgrader export`, one after another,
  as an instructor runs them.
* **ours**: the course's own nbgrader_config.py, the same source and submissions. Timed:
  `maxpool-grader grade`, the whole command (release check, grading, feedback, grades.csv,
  the class report, the score table).

Both courses are released first with their own `nbgrader generate_assignment` (not timed:
an instructor releases before students submit). The two are run in turn (`--repeats N`
alternates them, fresh copies each round, and prints the medians). Prints each command's
wall time, the CPU time of everything each side ran (a cpuacct cgroup of its own, as root),
the ratio, the machine's load before and after, and whether the two gave the same score in
every graded cell (they need not: stock nbgrader runs the notebook as it is, with no
out-of-process verdict; the differences are listed). Not a test: it prints numbers.

    .venv/bin/python benchmarks/bench_stock.py [--students 40] [--repeats N] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grading import BIN, ENV, build_class, grades  # noqa: E402
from profile_grading import CpuGroup  # noqa: E402

from maxpool_grader.names import ASSIGNMENT  # noqa: E402

STOCK_CONFIG = '''"""Stock nbgrader: nothing of the course's configuration (nbgrader's defaults throughout)."""
c = get_config()  # noqa: F821
'''
STOCK = (("autograde", ASSIGNMENT), ("generate_feedback", ASSIGNMENT), ("export",))


def build_stock(course: Path, students: int) -> None:
    """The class of build_class, under nbgrader's defaults."""
    build_class(course, students)
    (course / "nbgrader_config.py").write_text(STOCK_CONFIG)


def timed(course: Path, command: list[str]) -> tuple[float, float | None]:
    """Run ``command`` in ``course``: (wall seconds, CPU seconds of it and all it started)."""
    group = CpuGroup("bench") if CpuGroup.available() else None
    with group or _Nothing():
        started = time.monotonic()
        subprocess.run(command, cwd=course, env=ENV, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, preexec_fn=group.join if group else None)
        wall = time.monotonic() - started
        cpu = group.seconds() if group else None
    return wall, cpu


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None


def one_round(work: Path, students: int, workers: int | None) -> dict:
    stock, ours = work / "stock", work / "ours"
    for course in (stock, ours):
        shutil.rmtree(course, ignore_errors=True)
    build_stock(stock, students)
    build_class(ours, students)
    for course in (stock, ours):
        subprocess.run([str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT], cwd=course, env=ENV,
                       check=True, capture_output=True)
    found = {"load_before": os.getloadavg()[0]}
    for command in STOCK:
        found[command[0]] = timed(stock, [str(BIN / "nbgrader"), *command])
    found["grade"] = timed(ours, [str(BIN / "maxpool-grader"), "grade",
                                  *(["--workers", str(workers)] if workers else [])])
    found["load_after"] = os.getloadavg()[0]
    found["stock"] = sum(found[command[0]][0] for command in STOCK)
    found["stock_cpu"] = None if found["grade"][1] is None else sum(found[command[0]][1] for command in STOCK)
    stock_grades, our_grades = grades(stock), grades(ours)
    found["differences"] = sorted(key for key in stock_grades.keys() | our_grades.keys()
                                  if stock_grades.get(key) != our_grades.get(key))
    found["cells"] = len(our_grades)
    found["csv"] = (stock / "grades.csv").exists() and (ours / "grades.csv").exists()
    return found


def report(rounds: list[dict], students: int) -> None:
    median = lambda values: statistics.median(values)  # noqa: E731
    print(f"\n{students} submissions, {os.cpu_count()} cores"
          + (f", median of {len(rounds)} rounds" if len(rounds) > 1 else "")
          + f"; load average (1 min) before {median(r['load_before'] for r in rounds):.2f}, "
            f"after {median(r['load_after'] for r in rounds):.2f}")
    print(f"{'':46}{'seconds':>10}{'s/submission':>14}{'CPU s':>10}")
    for command in STOCK:
        wall = median(r[command[0]][0] for r in rounds)
        cpu = rounds[0][command[0]][1] is not None and median(r[command[0]][1] for r in rounds)
        print(f"{'stock nbgrader ' + command[0]:46}{wall:>10.1f}{wall / students:>14.2f}"
              + (f"{cpu:>10.1f}" if cpu is not False else ""))
    stock = median(r["stock"] for r in rounds)
    wall = median(r["grade"][0] for r in rounds)
    has_cpu = rounds[0]["grade"][1] is not None
    print(f"{'stock nbgrader, the three together':46}{stock:>10.1f}{stock / students:>14.2f}"
          + (f"{median(r['stock_cpu'] for r in rounds):>10.1f}" if has_cpu else ""))
    print(f"{'maxpool-grader grade, whole command':46}{wall:>10.1f}{wall / students:>14.2f}"
          + (f"{median(r['grade'][1] for r in rounds):>10.1f}" if has_cpu else ""))
    ratios = sorted(r["stock"] / r["grade"][0] for r in rounds)
    print(f"\nmaxpool-grader grade is {median(ratios):.2f}x faster than stock nbgrader's three commands"
          + (f" (rounds: {ratios[0]:.2f}x to {ratios[-1]:.2f}x)" if len(ratios) > 1 else ""))
    differences = rounds[-1]["differences"]
    print(f"graded cells: {rounds[-1]['cells']}; the same score in every one: {'yes' if not differences else 'no'}"
          + ("" if not differences else f" ({len(differences)} differ, e.g. {differences[:3]})"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=None, help="for maxpool-grader (default: grade's)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of both, in turn (default 1)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="maxpool-bench-stock-"))
    try:
        rounds = []
        for number in range(args.repeats):
            rounds.append(one_round(work, args.students, args.workers))
            found = rounds[-1]
            print(f"round {number + 1}: stock {found['stock']:.1f} s, grade {found['grade'][0]:.1f} s: "
                  f"{found['stock'] / found['grade'][0]:.2f}x (load {found['load_before']:.2f} -> "
                  f"{found['load_after']:.2f})", flush=True)
        report(rounds, args.students)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
