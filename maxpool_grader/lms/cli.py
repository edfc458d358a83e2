"""The ``collect-lms`` and ``export-lms`` command lines: what they print, and their exit status."""

from __future__ import annotations

import sys
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..course.directory import run_nbgrader
from ..names import ASSIGNMENT
from . import export, intake
from .zip_upload import LmsError, ZipLimits, parse_size


def collect_lms(args, db_url: str) -> int:
    try:
        zone = ZoneInfo(args.zip_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise intake.LmsError(f"--zip-timezone {args.zip_timezone!r} is not a time zone "
                           "(e.g. UTC, Europe/Berlin)") from None
    due = intake.parse_due(args.due) if args.due else None
    if due is not None:  # the gradebook needs the assignment before its due date can be set
        result = run_nbgrader(args.course_dir, "generate_assignment", ASSIGNMENT, "--force",
                              f"--CourseDirectory.db_url={db_url}")
        if result.returncode != 0:
            print(result.stdout[-4000:], file=sys.stderr)
            return 1
    limits = ZipLimits(_size("--max-file-size", args.max_file_size), _size("--max-total-size", args.max_total_size),
                    files=args.max_files)
    found = intake.collect(args.zip, args.course_dir, db_url, due=due, zip_timezone=zone, limits=limits, lms=args.lms,
                        replace_newer=args.replace_newer)
    late = sorted(student for student, info in found.students.items() if info["late"])
    print(f"{len(found.students)} students' submissions put in submitted/ from {args.zip.name} "
          f"({found.layout or 'no LMS'} layout)" + (f"; late: {', '.join(late)}" if late else ""))
    for message in found.messages:
        print(f"  {message}")
    if found.notes:
        print(f"{len(found.notes)} file(s) not collected as named ({found.unmatched} copied to {intake.UNMATCHED}/; "
              "add a missing student to roster.csv, or an lms_id column, and run collect-lms again):")
        for line in found.notes:
            print(f"  {line}")
    if late and due is None:
        print("Late submissions were found but no --due was given: no late penalty is applied.")
    if found.failed:
        print(f"{found.failed} file(s) SKIPPED or KEPT OUT of submitted/ (see above; exit status 1)")
        return 1
    print("Next: maxpool-grader grade")
    return 0


def _size(option: str, text: str) -> int:
    size = parse_size(text)
    if size <= 0:
        raise LmsError(f"{option} {text!r} must be more than 0")
    return size


def export_lms(args, db_url: str) -> int:
    out_dir = args.out_dir or args.course_dir
    result = export.export(args.course_dir, db_url, out_dir, canvas_column=args.canvas_column,
                           assignment=getattr(args, "assignment", None) or ASSIGNMENT)
    print(f"{result['rows']} students: {out_dir / 'canvas_grades.csv'} (Canvas gradebook import), "
          f"{out_dir / 'lms_grades.csv'} (every number)")
    if result["ungraded"]:
        print(f"Part A is not graded yet for {len(result['ungraded'])} student(s): {', '.join(result['ungraded'])}. "
              "Their grade is left empty in canvas_grades.csv (part_a_graded = no in lms_grades.csv), so an "
              "upload does not give them half a grade.")
    if result["missing_lms_id"]:
        missing = result["missing_lms_id"]
        print(f"No LMS id for {len(missing)} student(s) ({', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}"
              "): Canvas matches them by SIS User ID (the student id) only. Add an lms_id column to roster.csv, or "
              "collect their work with collect-lms.")
    return 0
