"""``maxpool-grader``: the instructor's one command for the course.

``maxpool-grader grade`` (run in the course directory) regenerates the release when the
source notebook changed, autogrades the new or changed submissions of ``submitted/`` in
parallel with nbgrader's own autograde (``parallel.py``), writes their feedback,
``grades.csv`` and the class report (``report.py``), and prints each student's score
per test cell. It exits non-zero only when grading itself broke, never because a
student's code failed (130 after Ctrl-C: run it again to finish).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from .checks import GRADED_CHECKS
from .lms import LmsError
from .roster import RosterError, import_roster

ASSIGNMENT = "max_pool_backward"
ROSTER = "roster.csv"  # imported by grade when the course has one
TITLES = {grade_id: check.title for grade_id, check in GRADED_CHECKS.items()}


def nbgrader_environment() -> dict[str, str]:
    """The environment for nbgrader: this interpreter's bin/ first on PATH.

    Creating a gradebook runs ``alembic`` as a subprocess, which fails with
    FileNotFoundError when the virtual environment was not activated.
    """
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "nbgrader"), *args]
    print("$ nbgrader " + " ".join(args), flush=True)
    return subprocess.run(command, cwd=course, env=nbgrader_environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def score_table(db_url: str, assignment: str = ASSIGNMENT) -> tuple[list, dict[str, dict]]:
    """Cells (notebook, grade id, max points) and, per student, {grade id: score or None
    (needs manual grade)}."""
    from .report import gradebook_table
    cells, students = gradebook_table(db_url, assignment)
    scores = {student: {grade_id: None if cell["manual"] else cell["score"] for grade_id, cell in row.items()}
              for student, row in students.items()}
    return [(notebook, grade_id, points) for notebook, grade_id, points, _ in cells], scores


def format_table(cells, scores) -> str:
    """A plain-text table: one row per student, one column per graded cell."""
    from .report import cell_labels, legend
    named = cell_labels(grade_id for _, grade_id, _ in cells)
    labels = [named[grade_id] for _, grade_id, _ in cells]
    auto = [(label, grade_id, points) for label, (_, grade_id, points) in zip(labels, cells)
            if label != "A"]
    width = max([len("student")] + [len(s) for s in scores])
    header = f"{'student':<{width}}  " + " ".join(f"{label:>4}" for label in labels) + "   autograded"
    lines = [header, "-" * len(header)]
    for student, row in scores.items():
        shown = ["   ?" if row[g] is None else f"{row[g]:>4g}" for _, g, _ in cells]
        total = sum(row[g] or 0 for _, g, _ in auto)
        lines.append(f"{student:<{width}}  " + " ".join(shown) + f"   {total:g}/{sum(p for *_, p in auto):g}")
    lines.append("")
    lines += [legend("A", "Part A, the derivation", points) + "; ? = still to grade"
              for label, (_, _, points) in zip(labels, cells) if label == "A"]
    lines += [legend(label, TITLES.get(grade_id, grade_id), points) for label, grade_id, points in auto]
    return "\n".join(lines)


def configured_db_url(course: Path) -> str:
    """The gradebook URL of nbgrader_config.py (CourseDirectory.db_url), else SQLite in the course."""
    from traitlets.config.loader import PyFileConfigLoader
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
        url = config.CourseDirectory.get("db_url")
    except Exception:  # noqa: BLE001  nbgrader reports a broken config itself
        url = None
    return url or f"sqlite:///{course / 'gradebook.db'}"


def grade(course: Path, *, workers: int | None = None, force: bool = False, db_url: str | None = None,
          assignment: str = ASSIGNMENT, similarity_threshold: float = 0.8, cluster: str | None = None) -> int:
    """Grade the class; 0 unless grading itself broke (a student's code never makes it fail)."""
    from . import parallel, report
    from .isolation import cgroups, sandbox
    course = course.resolve()
    db_url = db_url or configured_db_url(course)
    db_option = f"--CourseDirectory.db_url={db_url}"
    workers = workers or os.cpu_count() or 1
    state = parallel.load_state(course)
    started = time.monotonic()

    source = parallel.folder_digest(course / "source" / assignment) \
        if (course / "source" / assignment).is_dir() else None
    release = course / "release" / assignment / f"{assignment}.ipynb"
    if source is None or state.get("source") != source or state.get("db_url") != db_url \
            or not release.exists():
        result = run_nbgrader(course, "generate_assignment", assignment, "--force", db_option)
        if result.returncode != 0:
            print(result.stdout[-4000:], file=sys.stderr)
            return 1
        state = {"source": source, "db_url": db_url}
        parallel.save_state(course, state)
    else:
        print("release is current (source notebook unchanged)")
    sandbox.sweep_private_root()  # what killed workers of earlier runs left behind
    cgroups.sweep_all()
    if not sandbox.bwrap_works():
        print("\n!!! GRADING UNSANDBOXED: bwrap (Debian package bubblewrap) is missing or does not "
              "work here. Student code can read and write your files. !!!\n", file=sys.stderr)
    elif not cgroups.available():
        print(f"\n!!! {sandbox.without_cgroup_warning()} !!!\n", file=sys.stderr)

    if (course / ROSTER).is_file():  # names for formgrader, grades.csv and the report
        try:
            print(f"roster: {import_roster(course / ROSTER, db_url)} students from {ROSTER}")
        except RosterError as problem:
            print(f"roster not imported: {problem}", file=sys.stderr)

    grader = parallel.grader_digest(course, db_url, assignment)
    todo, current = parallel.students_to_grade(course, state, grader, force, assignment)
    if state.get("grader") != grader:
        state.update(grader=grader, submissions={})
    print(f"{len(todo)} submission(s) to grade with {workers} worker(s), {len(current)} up to date")

    def record(item: dict) -> None:
        if item["success"]:
            state["submissions"][item["student"]] = parallel.submission_digest(course, item["student"], assignment)
            parallel.save_state(course, state)

    graded_at = time.monotonic()
    if cluster:
        from . import cluster as dask_cluster
        try:
            batch = dask_cluster.run_batch(course, db_url, todo, cluster, record, assignment)
        except dask_cluster.WorkerRefused as problem:
            print(f"\nNot graded: {problem}", file=sys.stderr)
            return 1
    else:
        batch = parallel.run_batch(course, db_url, todo, workers, parallel.autograde_job, "autograde", record,
                                   assignment)
    timings = {"autograde_seconds": time.monotonic() - graded_at, "graded": len(batch.finished)}
    recorded = [item["record_seconds"] for item in batch.finished if "record_seconds" in item]
    if recorded:  # --cluster: the coordinator's gradebook writes
        timings["record_seconds_mean"] = sum(recorded) / len(recorded)
    cgroups.sweep_all()  # the workers have ended: their submissions' cgroups go too
    for item in batch.failed:
        print(f"\nGrading {item['student']} broke:\n{item['log']}", file=sys.stderr)
    if batch.interrupted:
        left = len(todo) - len(batch.finished)
        print(f"\nInterrupted: {len(batch.finished)} graded, {left} left. Run the command again to "
              "grade the rest.", file=sys.stderr)
        return 130

    no_feedback = [s for s in current
                   if not (course / "feedback" / s / assignment / f"{assignment}.html").exists()]
    feedback = [item["student"] for item in batch.finished if item["success"]] + no_feedback
    feedback_batch = parallel.run_batch(course, db_url, feedback, workers, parallel.feedback_job,
                                        "feedback", None, assignment)
    export = run_nbgrader(course, "export", "--to", str(course / "grades.csv"), db_option)
    if export.returncode != 0:
        print(export.stdout[-4000:], file=sys.stderr)
    paths = report.write_report(course, db_url, assignment, similarity_threshold)
    timings["total_seconds"] = time.monotonic() - started
    parallel.save_timings(course, timings)

    cells, scores = score_table(db_url, assignment)
    print()
    print(format_table(cells, scores))
    print(f"\nClass report: {paths['html']}\nGrades: {course / 'grades.csv'}")
    broke = batch.failed or feedback_batch.failed or export.returncode != 0
    return 1 if broke else 0


def collect_lms(args, db_url: str) -> int:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    from . import lms
    try:
        zone = ZoneInfo(args.zip_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise lms.LmsError(f"--zip-timezone {args.zip_timezone!r} is not a time zone (e.g. UTC, Europe/Berlin)") from None
    due = lms.parse_due(args.due) if args.due else None
    if due is not None:  # the gradebook needs the assignment before its due date can be set
        result = run_nbgrader(args.course_dir, "generate_assignment", ASSIGNMENT, "--force",
                              f"--CourseDirectory.db_url={db_url}")
        if result.returncode != 0:
            print(result.stdout[-4000:], file=sys.stderr)
            return 1
    found = lms.collect(args.zip, args.course_dir, db_url, due=due, zip_timezone=zone)
    late = sorted(student for student, info in found.students.items() if info["late"])
    print(f"{len(found.students)} students' submissions put in submitted/ from {args.zip.name}"
          + (f"; late: {', '.join(late)}" if late else ""))
    for message in found.messages:
        print(f"  {message}")
    if found.unmatched:
        print(f"{len(found.unmatched)} file(s) match no student (copied to {lms.UNMATCHED}/{args.zip.stem}/; add the "
              "student to roster.csv, or an lms_id column, and run collect-lms again):")
        for line in found.unmatched:
            print(f"  {line}")
    if late and due is None:
        print("Late submissions were found but no --due was given: no late penalty is applied.")
    print("Next: maxpool-grader grade")
    return 0


def export_lms(args, db_url: str) -> int:
    from . import lms
    out_dir = args.out_dir or args.course_dir
    result = lms.export(args.course_dir, db_url, out_dir, canvas_column=args.canvas_column)
    print(f"{result['rows']} students: {out_dir / 'canvas_grades.csv'} (Canvas gradebook import), "
          f"{out_dir / 'lms_grades.csv'} (every number)")
    if result["ungraded"]:
        print(f"Part A is not graded yet for {len(result['ungraded'])} student(s): {', '.join(result['ungraded'])}. "
              "Their grade is left empty in canvas_grades.csv (part_a_graded = no in lms_grades.csv), so an "
              "upload does not give them half a grade.")
    if result["missing_lms_id"]:
        print(f"No LMS id for {len(result['missing_lms_id'])} student(s) ({', '.join(result['missing_lms_id'][:10])}"
              f"{' ...' if len(result['missing_lms_id']) > 10 else ''}): Canvas matches them by SIS User ID "
              "(the student id) only. Add an lms_id column to roster.csv, or collect their work with collect-lms.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="maxpool-grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grade_parser = commands.add_parser(
        "grade", help="regenerate the release if the source changed, autograde new or changed "
                      "submissions in parallel, write feedback, grades.csv and the class report")
    grade_parser.add_argument("--course-dir", type=Path, default=Path.cwd(),
                              help="the nbgrader course directory (default: the current directory)")
    grade_parser.add_argument("--workers", type=int, default=None,
                              help="grading processes (default: one per core)")
    grade_parser.add_argument("--force", action="store_true",
                              help="regrade every submission, not only new or changed ones")
    grade_parser.add_argument("--db", metavar="URL", default=None,
                              help="gradebook URL, e.g. postgresql://user@host/db (default: "
                                   "nbgrader_config.py's CourseDirectory.db_url, else gradebook.db)")
    roster_parser = commands.add_parser(
        "roster", help="import a roster CSV (id, first name, last name, email) into the gradebook's students")
    roster_parser.add_argument("csv", type=Path, help="the roster file")
    roster_parser.add_argument("--course-dir", type=Path, default=Path.cwd(),
                               help="the nbgrader course directory (default: the current directory)")
    roster_parser.add_argument("--db", metavar="URL", default=None, help="gradebook URL (as for grade)")
    collect_parser = commands.add_parser(
        "collect-lms", help="put a Canvas or Moodle 'download all submissions' zip into submitted/ "
                            "(students from roster.csv; late flags and times become nbgrader timestamps)")
    collect_parser.add_argument("zip", type=Path, help="the zip the LMS gave")
    collect_parser.add_argument("--due", default=None,
                                help="the due date, e.g. '2026-11-20 23:59' (UTC) or 2026-11-20T23:59+01:00; "
                                     "stored in the gradebook for the late penalty")
    collect_parser.add_argument("--zip-timezone", default="UTC",
                                help="the time zone of the zip's file times (default UTC), e.g. Europe/Berlin")
    export_parser = commands.add_parser(
        "export-lms", help="write canvas_grades.csv (Canvas gradebook import) and lms_grades.csv (every number)")
    export_parser.add_argument("--out-dir", type=Path, default=None, help="where to write them (default: the course)")
    export_parser.add_argument("--canvas-column", default=None,
                               help="the Canvas assignment column, as Canvas exports it: 'Name (assignment id)'")
    for extra in (roster_parser, collect_parser, export_parser):
        if extra is not roster_parser:
            extra.add_argument("--course-dir", type=Path, default=Path.cwd(),
                               help="the nbgrader course directory (default: the current directory)")
            extra.add_argument("--db", metavar="URL", default=None, help="gradebook URL (as for grade)")
    grade_parser.add_argument("--cluster", metavar="ADDRESS", default=None,
                              help="grade on the workers of a Dask scheduler, e.g. tcp://host:8786 (README: "
                                   "grading past one machine); feedback, CSV and report stay here")
    grade_parser.add_argument("--similarity-threshold", type=float, default=0.8, metavar="SHARE",
                              help="list pairs of submissions in the report when at least this share (0-1) of one "
                                   "side's own code is also in the other (default 0.8)")
    args = parser.parse_args(argv)
    if not (args.course_dir / "nbgrader_config.py").is_file():
        parser.error(f"{args.course_dir.resolve()} has no nbgrader_config.py: "
                     "run this in the course directory or pass --course-dir")
    if args.command == "roster":
        os.environ["PATH"] = nbgrader_environment()["PATH"]  # a new gradebook runs alembic
        db_url = args.db or configured_db_url(args.course_dir)
        try:
            count = import_roster(args.csv, db_url)
        except RosterError as problem:
            parser.exit(2, f"maxpool-grader roster: {problem}\n")
        print(f"{count} students imported from {args.csv} into {db_url}")
        return 0
    if args.command in ("collect-lms", "export-lms"):
        os.environ["PATH"] = nbgrader_environment()["PATH"]  # a new gradebook runs alembic
        db_url = args.db or configured_db_url(args.course_dir)
        try:
            return collect_lms(args, db_url) if args.command == "collect-lms" else export_lms(args, db_url)
        except (LmsError, RosterError) as problem:
            parser.exit(2, f"maxpool-grader {args.command}: {problem}\n")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if not 0 < args.similarity_threshold <= 1:
        parser.error("--similarity-threshold must be a share between 0 and 1, e.g. 0.8")
    return grade(args.course_dir, workers=args.workers, force=args.force, db_url=args.db,
                 similarity_threshold=args.similarity_threshold, cluster=args.cluster)


if __name__ == "__main__":
    sys.exit(main())
