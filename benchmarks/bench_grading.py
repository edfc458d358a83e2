"""Benchmark: plain serial `nbgrader autograde` against `maxpool-grader grade` on a class.

Builds a synthetic class of N submissions (default 40, cycling through the sample
class), grades one copy with plain `nbgrader autograde max_pool_backward` (one process,
one submission after another) and another with `maxpool-grader grade`, checks that the
grades are equal cell for cell, and prints seconds per submission for both, their ratio,
and the floor: a fresh kernel running the hidden tests of one correct submission,
measured alone. For comparison it also grades a third copy with plain serial nbgrader
and warm start switched on (what maxpool-grader's workers do: kernels and verdict
processes forked from a zygote, see maxpool_grader/sandbox/zygote.py), so that the gain of warm
start and the gain of parallel workers can be told apart. With ``--repeats N`` it grades
the three copies N times in turn (fresh copies each round, so that a slow minute of the
machine hits every configuration alike) and prints each round and the medians. Not a
test: it prints numbers.

    .venv/bin/python benchmarks/bench_grading.py [--students 40] [--workers N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.api import Gradebook

from maxpool_grader.backend.pool import default_workers
from maxpool_grader.exercise.checks import HIDDEN_CHECKS
from maxpool_grader.names import ASSIGNMENT, PROVIDED_CELL, SOLUTION_CELL, grade_id

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


def build_class(course: Path, students: int) -> None:
    course.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "source", course / "source")
    samples = sorted(p for p in (ROOT / "submitted").iterdir() if p.is_dir())
    for number in range(students):
        sample = samples[number % len(samples)]
        shutil.copytree(sample, course / "submitted" / f"s{number:03d}_{sample.name}")


def run(course: Path, *command: str) -> float:
    started = time.monotonic()
    subprocess.run(command, cwd=course, env=ENV, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def grades(course: Path) -> dict:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {(s.id, g.name): g.score for s in gradebook.students
                for nb in gradebook.find_submission(ASSIGNMENT, s.id).notebooks for g in nb.grades}


def floor_seconds(repeats: int = 5) -> float:
    """A fresh kernel that runs the provided helpers, a correct solution and the hidden
    tests (what a submission cannot do without), start to shutdown; the median."""
    release = nbformat.read(ROOT / "autograded" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                            as_version=4)
    keep = [cell for cell in release.cells if cell.cell_type == "code"
            and grade_id(cell) in {PROVIDED_CELL, SOLUTION_CELL, *HIDDEN_CHECKS}]
    source = nbformat.read(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    hidden = {grade_id(c): c.source for c in source.cells if grade_id(c) in HIDDEN_CHECKS}
    for cell in keep:
        cell.source = hidden.get(grade_id(cell), cell.source)
        cell.outputs = []
    notebook = nbformat.v4.new_notebook(cells=keep)
    times = []
    for _ in range(repeats):
        started = time.monotonic()
        NotebookClient(nbformat.from_dict(json.loads(json.dumps(notebook))), timeout=60,
                       kernel_name="python3").execute()
        times.append(time.monotonic() - started)
    return statistics.median(times)


def one_round(work: Path, students: int, workers: int | None) -> dict:
    """Grade three fresh copies of the class: plain serial nbgrader, the same with warm
    start, maxpool-grader grade. Seconds of each, and whether the grades are equal."""
    serial, warm, ours = work / "serial", work / "warm", work / "ours"
    for course in (serial, warm, ours):
        shutil.rmtree(course, ignore_errors=True)
        build_class(course, students)
        run(course, str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT)
    found = {"serial": run(serial, str(BIN / "nbgrader"), "autograde", ASSIGNMENT),
             "warm": run(warm, str(BIN / "nbgrader"), "autograde", ASSIGNMENT, "--SealedBox.warm_start=True")}
    found["total"] = run(ours, str(BIN / "maxpool-grader"), "grade", *(["--workers", str(workers)] if workers else []))
    found["ours"] = json.loads((ours / ".maxpool-grader" / "last_run.json").read_text())["autograde_seconds"]
    found["equal"] = grades(serial) == grades(ours) == grades(warm)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=None, help="for maxpool-grader (default: grade's)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of all three, in turn (default 1)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="maxpool-bench-"))
    n = args.students
    try:
        rounds = []
        for number in range(args.repeats):
            rounds.append(one_round(work, n, args.workers))
            found = rounds[-1]
            if args.repeats > 1:
                print(f"round {number + 1}: serial {found['serial'] / n:.2f}, warm {found['warm'] / n:.2f}, "
                      f"ours {found['ours'] / n:.2f} s/submission: {found['serial'] / found['ours']:.2f}x", flush=True)
        floor = floor_seconds()
        median = {key: statistics.median(found[key] for found in rounds) for key in ("serial", "warm", "ours", "total")}
        ratios = sorted(found["serial"] / found["ours"] for found in rounds)
        equal = all(found["equal"] for found in rounds)
        print(f"\n{n} submissions, {os.cpu_count()} cores, workers: {args.workers or default_workers()}"
              + (f", median of {args.repeats} rounds" if args.repeats > 1 else ""))
        print(f"{'':44}{'seconds':>10}{'s/submission':>14}")
        print(f"{'plain serial nbgrader autograde':44}{median['serial']:>10.1f}{median['serial'] / n:>14.2f}")
        print(f"{'  the same, warm start switched on':44}{median['warm']:>10.1f}{median['warm'] / n:>14.2f}")
        print(f"{'maxpool-grader grade: autograde (+ feedback)':44}{median['ours']:>10.1f}{median['ours'] / n:>14.2f}")
        print(f"{'maxpool-grader grade: whole command':44}{median['total']:>10.1f}{median['total'] / n:>14.2f}"
              "   (+ feedback, CSV, report)")
        print(f"{'floor: fresh kernel + hidden tests, alone':44}{'':>10}{floor:>14.2f}")
        print(f"\nspeed-up over serial nbgrader (autograde): {statistics.median(ratios):.2f}x"
              + (f" (rounds: {ratios[0]:.2f}x to {ratios[-1]:.2f}x)" if len(ratios) > 1 else "")
              + f"  (over serial nbgrader with warm start: {median['warm'] / median['ours']:.2f}x)")
        print(f"per-submission cost / floor: {median['ours'] / n / floor:.2f}")
        print(f"grades equal cell for cell: {'yes' if equal else 'NO'}")
        if not equal:
            sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
