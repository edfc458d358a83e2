"""``maxpool-grader``: the instructor's commands for the course.

* ``grade`` (run in the course directory) regenerates the release when the source
  notebook changed, autogrades the new or changed submissions of ``submitted/`` in
  parallel with nbgrader's own autograde (grading/grade.py), writes their feedback,
  ``grades.csv`` and the class report, and prints each student's score per test cell.
* ``roster`` imports the class list (course/roster.py).
* ``collect-lms`` and ``export-lms``: a Canvas or Moodle zip in, the grades out (intake.py; the
  zip read in lms/zip_upload.py, matched in lms/match.py, written in lms/store.py; export.py).
* ``lti-config`` prints what an LMS's administrator registers the tool with; ``roster
  --from-lti`` reads the roster from the LMS (lti/tool.py, lti/roster.py).
* ``cluster-certs`` writes the certificates of a course's Dask cluster (tls.py).
* ``doctor`` says which grading guarantees hold here, and whether students reach the exchange (cli/doctor.py).
* ``check`` checks the source notebook against the grader; ``--fix`` fixes what it can and
  refreshes the release, the sample class and its graded copies (authoring/check.py).
* ``add-to-course`` puts the exercise into another nbgrader course (cli/add_to_course.py).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ..authoring.check import check
from ..cluster import tls
from ..course import directory
from ..course.directory import configured_db_url, use_nbgrader_environment
from ..course.roster import RosterError, import_roster
from ..grading.grade import grade
from ..grading.similarity import THRESHOLD
from ..lms.cli import collect_lms, export_lms
from ..lms.zip_upload import LAYOUTS, LmsError, ZipLimits
from ..lti import roster as lti_roster
from ..serve import cli as serve_cli
from ..serve.signin import revoke
from . import add_to_course
from .doctor import doctor

COLLECT_EXIT = ("Exit status: 0 when every file of the zip is in submitted/ or lms-unmatched/ (each file not "
                "collected is named); 1 when a file was skipped (encrypted, damaged, too large) or refused (an "
                "ambiguous name), or a student's folder was left as it was (see the notes); 2 when the zip, the "
                "roster or an option cannot be used.")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="maxpool-grader", description="The instructor's commands of the max_pool_"
                                     "backward nbgrader course: grade a class, bring its files in from an LMS and "
                                     "its grades back out.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = _Commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    grading = commands.add_parser("grade", help="regenerate the release if the source changed, autograde new or "
                                                "changed submissions in parallel, write feedback, grades.csv and "
                                                "the class report")
    grading.add_argument("--workers", type=int, default=None, help="grading processes (default: one per core, and one)")
    grading.add_argument("--force", action="store_true", help="regrade every submission, not only new or changed ones")
    _cluster_options(grading)
    _assignment_option(grading)
    grading.add_argument("--similarity-threshold", type=float, default=THRESHOLD, metavar="SHARE",
                         help="list pairs of submissions in the report when at least this share (0-1) of one side's "
                              f"own code is also in the other (default {THRESHOLD})")
    roster, lti = _roster_parsers(commands)
    collect = commands.add_parser("collect-lms", help="put a Canvas or Moodle 'download all submissions' zip into "
                                                      "submitted/ (students from roster.csv; late flags and times "
                                                      "become nbgrader timestamps)", epilog=COLLECT_EXIT)
    collect.add_argument("zip", type=Path, help="the zip the LMS gave")
    collect.add_argument("--due", default=None, help="the due date, e.g. '2026-11-20 23:59' (UTC) or "
                                                     "2026-11-20T23:59+01:00; stored in the gradebook for the late "
                                                     "penalty")
    collect.add_argument("--zip-timezone", default="UTC",
                         help="the time zone of the zip's file times (default UTC), e.g. Europe/Berlin")
    collect.add_argument("--max-file-size", default=f"{ZipLimits.per_file >> 20}MiB", metavar="SIZE",
                         help="skip (and name) a file of the zip that unpacks to more than this (default %(default)s)")
    collect.add_argument("--max-total-size", default=f"{ZipLimits.total >> 20}MiB", metavar="SIZE",
                         help="skip (and name) the files past this much unpacked in all (default %(default)s)")
    collect.add_argument("--max-files", type=int, default=ZipLimits.files, metavar="N",
                         help=f"refuse a zip of more files (default %(default)s; {ZipLimits.per_student} per student)")
    collect.add_argument("--lms", choices=LAYOUTS, default=None,
                         help="the zip's layout, when its names fit two equally (default: told from the names)")
    collect.add_argument("--replace-newer", action="store_true",
                         help="replace a submission in submitted/ even when it is newer than the zip's")
    export = commands.add_parser("export-lms", help="write canvas_grades.csv (Canvas gradebook import) and "
                                                    "lms_grades.csv (every number)")
    export.add_argument("--out-dir", type=Path, default=None, help="where to write them (default: the course)")
    export.add_argument("--canvas-column", default=None,
                        help="the Canvas assignment column, as Canvas exports it: 'Name (assignment id)'")
    _assignment_option(export, "the assignment whose grades to write, any of the course's (without part_a columns)")
    certs = commands.add_parser("cluster-certs", help="write a Dask cluster's TLS certificates: ca.pem, and "
                                                      "<role>.pem + <role>-key.pem for scheduler, worker, client")
    certs.add_argument("dir", type=Path, help="the folder to write them to (a new one)")
    certs.add_argument("--days", type=int, default=tls.DAYS, help=f"how long they are valid (default {tls.DAYS})")
    checkup = commands.add_parser("doctor", help="check which grading guarantees hold on this machine for this "
                                                 "user and course, and whether students reach the exchange, each "
                                                 "with its fix")
    checkup.add_argument("--json", action="store_true", help="print the findings as JSON")
    checkup.add_argument("--student", metavar="USER", help="as root: check the exchange as this user, with groups")
    checking = commands.add_parser("check", help="check the source notebook against the grader (hidden cells, "
                                   "points, solution, model answer, leaks, outputs): each problem, its cell and fix")
    checking.add_argument("--fix", action="store_true", help="fix what can be fixed from the grader, then regenerate "
                                                             "the release, the sample class and its graded copies")
    add_to_course.add_parser(commands)
    serving, tokens = serve_cli.add_parsers(commands, _cluster_options)
    for command in (grading, roster, collect, export, checkup, checking, serving, tokens, lti):
        _course_options(command)
    return parser


def _roster_parsers(commands: _Commands) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """``roster`` (a CSV, or the LMS's members) and ``lti-config``."""
    roster = commands.add_parser("roster", help="import a roster CSV (id, first name, last name, email) into the "
                                                "gradebook's students")
    roster.add_argument("csv", type=Path, nargs="?", help="the roster file")
    roster.add_argument("--from-lti", action="store_true",
                        help="read the course's members from the LMS (LTI Names and Roles) into roster.csv and the "
                             "gradebook instead; students who left are removed and their links ended, with a diff")
    roster.add_argument("--members-url", default=None, help="with --from-lti: the Names and Roles address "
                                                            "(default: c.Lti.members_url, or the last launch's)")
    roster.add_argument("--yes", action="store_true", help="with --from-lti: remove the students who left even "
                        "when they are more than a fifth of the class (without it, such a sync changes nothing)")
    lti = commands.add_parser("lti-config", help="print the tool's public key set and the JSON that Canvas's developer "
                                                 "key and Moodle's external tool registration ask for (docs/lti.md)")
    lti.add_argument("--base-url", required=True, help="the service's public address, e.g. https://grader.example.edu/")
    return roster, lti


def _assignment_option(command: argparse.ArgumentParser, what: str = "the exercise's assignment") -> None:
    command.add_argument("--assignment", metavar="ID", default=None, help=f"{what} (default: the exercise's, "
                         "c.ThisExercise.assignment, else the one whose source notebook is this exercise's)")


def _assignment(args, parser: argparse.ArgumentParser) -> str:
    """The assignment a command works on: --assignment, else the course's exercise."""
    try:
        return directory.exercise_in(args.course_dir.resolve(), args.assignment)[0]
    except ValueError as problem:
        parser.error(str(problem))


def _course_options(command: argparse.ArgumentParser) -> None:
    """What every command that works on a course takes: how much it says, and where the course is."""
    loudness = command.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true",
                          help="print results and problems only: no progress lines, no nbgrader commands")
    loudness.add_argument("-v", "--verbose", action="store_true",
                          help="print nbgrader's own output of every nbgrader command run, too")
    command.add_argument("--course-dir", type=Path, default=Path.cwd(),
                         help="the nbgrader course directory (default: the current directory)")
    command.add_argument("--db", metavar="URL", default=None,
                         help="gradebook URL, e.g. postgresql://user@host/db (default: nbgrader_config.py's "
                              "CourseDirectory.db_url, else gradebook.db)")


class _Commands:
    """add_parser that gives each command its one-line help as its description too (shown by
    ``maxpool-grader COMMAND --help``)."""

    def __init__(self, subparsers):
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        kwargs.setdefault("description", textwrap.fill(kwargs["help"][:1].upper() + kwargs["help"][1:] + ".", 78))
        examples = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))
        kwargs["epilog"] = "\n\n".join(filter(None, [examples if name in EXAMPLES else "",
                                                       textwrap.fill(kwargs.get("epilog") or "", 78)]))
        return self._subparsers.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


EXAMPLES = {  # shown under each command's --help
    "grade": ["maxpool-grader grade                      # the class in submitted/, in parallel",
              "maxpool-grader grade --force -q           # regrade everyone; print the table only",
              "maxpool-grader grade --db postgresql://grader@db/course",
              "maxpool-grader grade --cluster tls://sched:8786 --tls-ca-file certs/ca.pem \\",
              "    --tls-cert certs/client.pem --tls-key certs/client-key.pem"],
    "roster": ["maxpool-grader roster roster.csv", "maxpool-grader roster --from-lti   # the LMS's members (LTI)"],
    "lti-config": ["maxpool-grader lti-config --base-url https://grader.example.edu/ > registration.json"],
    "collect-lms": ["maxpool-grader collect-lms submissions.zip --due '2026-11-20 23:59'",
                    "maxpool-grader collect-lms moodle.zip --lms moodle-folders --zip-timezone Europe/Berlin"],
    "export-lms": ["maxpool-grader export-lms --canvas-column 'Max pooling (12345)'"],
    "cluster-certs": ["maxpool-grader cluster-certs certs/ --days 120"],
    "doctor": ["maxpool-grader doctor", "maxpool-grader doctor --db postgresql://grader@db/course --json",],
    "serve": ["maxpool-grader serve                         # exchange + http://127.0.0.1:8765/",
              "maxpool-grader serve --base-url https://grader.example.edu/ --secure-cookies   # behind TLS",
              "maxpool-grader serve --no-web --workers 4         # on JupyterHub: the exchange only",
              "maxpool-grader serve --cluster tls://sched:8786 --tls-ca-file certs/ca.pem \\",
              "    --tls-cert certs/client.pem --tls-key certs/client-key.pem   # grading on a Dask cluster"],
    "tokens": ["maxpool-grader tokens --base-url https://grader.example.edu/"],
    "check": ["maxpool-grader check          # after editing the notebook in JupyterLab",
              "maxpool-grader check --fix    # repair, then refresh release/ and the sample class"],
    "add-to-course": ["maxpool-grader add-to-course ~/courses/ml101 --as hw3   # run in this course's folder",
                      "maxpool-grader doctor --course-dir ~/courses/ml101     # then check that course"],
}


def _version() -> str:
    try:
        return version("maxpool-grader")
    except PackageNotFoundError:  # run from a checkout that was not installed
        return "(not installed)"


def _cluster_options(grading: argparse.ArgumentParser) -> None:
    grading.add_argument("--cluster", metavar="ADDRESS", default=None,
                         help="grade on the workers of a Dask scheduler, e.g. tls://host:8786 "
                              "(docs/operations.md#cluster); feedback, CSV and report stay here")
    for option, what, config in (("--tls-ca-file", "the course's CA certificate", "ca-file"),
                                 ("--tls-cert", "the coordinator's certificate", "client.cert"),
                                 ("--tls-key", "the coordinator's private key", "client.key")):
        grading.add_argument(option, metavar="PEM", default=None,
                             help=f"for a tls:// --cluster: {what} (default: Dask's config distributed.comm.tls."
                                  f"{config}); 'maxpool-grader cluster-certs' makes them")
    grading.add_argument("--insecure", action="store_true",
                         help="allow a plain tcp:// --cluster that is not loopback: whoever reaches the scheduler can "
                              "run code on the workers and read every submission")


def _cluster_security(args, parser: argparse.ArgumentParser):
    """How to reach ``--cluster`` (None without one); refused before anything is graded."""
    given = [option for option, value in (("--tls-ca-file", args.tls_ca_file), ("--tls-cert", args.tls_cert),
                                          ("--tls-key", args.tls_key), ("--insecure", args.insecure)) if value]
    if given and not args.cluster:
        parser.error(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only with --cluster "
                     "(grading on this machine needs no certificates)")
    if not args.cluster:
        return None
    try:
        return tls.coordinator_security(args.cluster, ca_file=args.tls_ca_file, cert=args.tls_cert,
                                                key=args.tls_key, insecure=args.insecure)
    except tls.InsecureCluster as problem:
        parser.error(f"--cluster refused: {problem}")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    directory.VERBOSITY = 1 + getattr(args, "verbose", False) - getattr(args, "quiet", False)
    if args.command in ("cluster-certs", "add-to-course"):  # no course of their own: each writes elsewhere
        return (cluster_certs if args.command == "cluster-certs" else add_to_course.add_to_course)(args, parser)
    if args.command == "doctor":
        return doctor(args.course_dir, args.db, as_json=args.json, student=args.student)
    if not (args.course_dir / "nbgrader_config.py").is_file():
        parser.error(f"{args.course_dir.resolve()} has no nbgrader_config.py: "
                     "run this in the course directory or pass --course-dir")
    if args.command == "lti-config":
        return lti_roster.lti_config(args)
    if args.command == "check":
        return check(args.course_dir, apply_fixes=args.fix, db_url=args.db)
    if args.command == "grade":
        if args.workers is not None and args.workers < 1:
            parser.error("--workers must be at least 1")
        if not 0 < args.similarity_threshold <= 1:
            parser.error("--similarity-threshold must be a share between 0 and 1, e.g. 0.8")
        return grade(args.course_dir, workers=args.workers, force=args.force, db_url=args.db,
                     assignment=_assignment(args, parser), similarity_threshold=args.similarity_threshold,
                     cluster=args.cluster,
                     security=_cluster_security(args, parser))
    use_nbgrader_environment()  # a new gradebook runs alembic; the feedback needs nbconvert's templates
    db_url = args.db or configured_db_url(args.course_dir)
    if args.command == "serve":
        return serve_cli.serve_command(args, parser, db_url, _cluster_security(args, parser))
    if args.command == "export-lms" and args.assignment is None:
        args.assignment = _assignment(args, parser)
    command = {"roster": roster_command, "collect-lms": collect_lms, "export-lms": export_lms,
               "tokens": serve_cli.tokens_command}[args.command]
    try:
        return command(args, db_url)
    except (LmsError, RosterError) as problem:
        parser.exit(2, f"maxpool-grader {args.command}: {problem}\n")


def cluster_certs(args, parser: argparse.ArgumentParser) -> int:
    if args.days < 1:
        parser.error("--days must be at least 1")
    try:
        written = tls.make_certificates(args.dir, days=args.days)
    except FileExistsError as problem:
        parser.exit(2, f"maxpool-grader cluster-certs: {problem}\n")
    folder = args.dir.resolve()
    print(f"{len(written)} files in {folder}, valid {args.days} days; the CA's own key was not kept:\n"
          f"  every machine:        {folder / 'ca.pem'}\n"
          f"  the scheduler:        scheduler.pem scheduler-key.pem\n"
          f"  each grading machine: worker.pem worker-key.pem\n"
          f"  the coordinator:      client.pem client-key.pem\n"
          "Each key lets its holder into the cluster: copy it only to its machine, readable by its owner only.")
    return 0


def roster_command(args, db_url: str) -> int:
    if args.from_lti:
        return lti_roster.roster_from_lti(args, db_url, revoke)
    if args.csv is None:
        raise RosterError("give the roster file (maxpool-grader roster roster.csv), or --from-lti")
    count = import_roster(args.csv, db_url)
    print(f"{count} students imported from {args.csv} into {db_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
