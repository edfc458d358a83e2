"""Benchmark: the similarity report on a big class (default 1,000 submissions).

Builds the students' own code the way a class writes it: one of the catalogue's bugs and
correct controls as the student's max_pool_backward (so many students share a solution's
shape, as in a real class), helper functions of their own, their own variable names,
comments and spacing; and ten students who copied a classmate and disguised the copy. Times
``similarity.similar_pairs`` (the fingerprints, the candidate pairs, copydetect's
comparison) and prints seconds, and how many of the planted copies it found.
Not a test: it prints numbers.

    .venv/bin/python benchmarks/bench_similarity.py [--students 1000]
"""

from __future__ import annotations

import argparse
import inspect
import random
import re
import time

from maxpool_grader.exercise import catalogue
from maxpool_grader.grading.similarity import THRESHOLD, similar_pairs

NAMES = ["a", "b", "g", "h", "k", "m", "n", "p", "q", "s", "t", "u", "w", "z"]


def variants() -> list[str]:
    """The catalogue's bugs and controls, each as a student's max_pool_backward."""
    functions = [bug.function for bug in catalogue.BUGS.values()] + [c.function for c in catalogue.CONTROLS.values()]
    return [inspect.getsource(function).replace(f"def {function.__name__}(", "def max_pool_backward(")
            for function in functions]


def own_helpers(rng: random.Random) -> str:
    """A student's own helper functions and checks: code no one else wrote the same way."""
    blocks = []
    for _ in range(rng.randint(2, 4)):
        terms = " + ".join(f"{rng.choice(['x', 'y', 'z'])} * {rng.randint(2, 99)}" for _ in range(rng.randint(3, 6)))
        body = "\n".join(f"    {rng.choice(NAMES)}{i} = {terms} - {rng.randint(1, 9)}"
                          for i in range(rng.randint(2, 5)))
        blocks.append(f"def helper_{rng.randrange(10**6)}(x, y, z):\n{body}\n    return x\n")
    return "\n\n".join(blocks)


def disguise(code: str, rng: random.Random) -> str:
    """The same code with other local names, comments and spacing."""
    renamed = {name: f"{rng.choice(NAMES)}{rng.randrange(100)}" for name in ("window", "weights", "share", "target",
                                                                         "rows", "cols", "dx", "planes_x")}
    for old, new in renamed.items():
        code = re.sub(rf"\b{old}\b", new, code)
    lines = [line + (f"  # {rng.choice(NAMES)}" if rng.random() < 0.2 else "") for line in code.splitlines()]
    return "\n".join(line if rng.random() < 0.9 else line + "\n" for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(0)
    sources = variants()
    codes = {f"student{index:04d}": disguise(rng.choice(sources) + "\n\n" + own_helpers(rng), rng)
             for index in range(args.students)}
    planted = set()
    for index in range(0, args.students, max(1, args.students // 10)):  # ten copied classmates
        copier, original = f"copier{index:04d}", f"student{index:04d}"
        codes[copier] = disguise(codes[original], rng)
        planted.add(tuple(sorted((copier, original))))
    started = time.perf_counter()
    pairs = similar_pairs(codes, [], THRESHOLD)
    seconds = time.perf_counter() - started
    found = {(pair.first, pair.second) for pair in pairs}
    print(f"{len(codes)} submissions ({len(sources)} different solutions, each student's own names and comments, "
          f"{len(planted)} disguised copies planted)")
    print(f"similarity report: {seconds:.1f} s ({1000 * seconds / len(codes):.1f} ms per submission), "
          f"{len(pairs)} pairs at or above {THRESHOLD:.0%}")
    print(f"planted copies found: {len(planted & found)} of {len(planted)}")


if __name__ == "__main__":
    main()
