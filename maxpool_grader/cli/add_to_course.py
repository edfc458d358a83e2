"""``maxpool-grader add-to-course COURSE_DIR [--as NAME]``: the exercise put into an
instructor's own nbgrader course (course/add_exercise.py decides, then writes), and what it
did, line by line: what it added, what it left as the course sets it, and what the course's
own settings leave out of the exercise's plugins."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..course.add_exercise import Plan, Refused, carry_out, plan
from ..glue.exercise_config import short
from ..names import ASSIGNMENT

EXIT = ("Exit status: 0 when the course has the exercise, as NAME, with every plugin it is graded with; 1 when "
        "it has it but a setting of yours leaves one of them out (named: doctor fails on it too); 2 when nothing "
        "was written (the sentence says why).")


def add_parser(commands) -> argparse.ArgumentParser:
    adding = commands.add_parser("add-to-course", help="put the exercise into your own nbgrader course as an "
                                 "assignment: its notebook in source/NAME/, and what it needs in nbgrader_config.py "
                                 "where your settings leave it unset (yours stay as they are)", epilog=EXIT)
    adding.add_argument("course", type=Path, metavar="COURSE_DIR", help="your course's folder (it holds source/)")
    adding.add_argument("--as", dest="name", default=ASSIGNMENT, metavar="NAME",
                        help="the exercise's assignment id in your course (default %(default)s)")
    adding.add_argument("--from", dest="origin", type=Path, default=None, metavar="DIR",
                        help="the max_pool_backward course whose notebook to copy (default: the clone the grader "
                             "was installed from, else the current directory)")
    return adding


def add_to_course(args, parser: argparse.ArgumentParser) -> int:
    try:
        planned = plan(args.course, args.name, args.origin)
    except Refused as problem:
        parser.exit(2, f"maxpool-grader add-to-course: {problem}. Nothing was written.\n")
    carry_out(planned)
    for line in report(planned, args.course):
        print(line)
    return 1 if planned.problems else 0


def report(planned: Plan, course: Path) -> list[str]:
    """What add-to-course did to ``course``, as it prints it."""
    notebook = os.path.relpath(planned.notebook, course)
    lines = []
    if not planned.changes:
        lines.append(f"Nothing changed: {notebook} is the exercise's notebook, and nbgrader_config.py adds the "
                     f"exercise as {planned.name} already (its block 'max_pool_backward exercise').")
    else:
        lines.append(f"{notebook}: the exercise's notebook, " + (
            "copied" if planned.notebook_text is not None else "there already"))
        if planned.config_text is not None:
            lines.append(("nbgrader_config.py: written, with one block" if planned.new_config else
                          "nbgrader_config.py: one block added at its end") + " (marked 'max_pool_backward exercise'),"
                         " which sets what your settings leave unset:")
            lines += [f"  added  c.{key} = {_cut(short(value))}" for key, value in planned.added.items()]
        if planned.kept:
            lines.append("left as your nbgrader_config.py sets them (yours win):")
            lines += [f"  kept   c.{key} = {_cut(short(theirs))}" + ("" if theirs == ours else
                                                                       f"  (the exercise's: {_cut(short(ours))})")
                      for key, (theirs, ours) in planned.kept.items()]
        others = [f"c.{key}" for key in planned.yours if key not in planned.kept]
        if others:
            lines.append(f"your other settings, untouched: {', '.join(others)}")
    lines += [f"WARNING {problem}: the exercise is not graded with its guarantees until it has them "
              "(docs/instructor.md#your-course)" for problem in planned.problems]
    if planned.changes:
        lines.append(f"Check it: maxpool-grader doctor --course-dir {course}; grade it: maxpool-grader grade "
                     f"--course-dir {course} --assignment {planned.name} (or nbgrader's own commands)")
    return lines


def _cut(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
