"""The command line of ``maxpool-grader serve`` (service.py) and ``maxpool-grader tokens`` (each
roster student's personal link to the serve page, for the LMS to mail), for cli/main.py."""

from __future__ import annotations

import argparse
import csv
import difflib
import os
import sys
from pathlib import Path

from nbgrader.api import Gradebook

from ..course.files import exposed_to_git, replace_file
from ..course.roster import import_roster, read_roster
from ..glue.deadline import parse_time
from ..glue.safecsvexport import csv_cell
from ..lti.tool import load_lti
from ..names import SERVE_DIR, STUDENT_ID
from . import service
from .policy import load_settings
from .signin import (
    INSTRUCTOR_LINK,
    TOKENS_FILE,
    Credentials,
    generations,
    hub_address,
    hub_auth,
    instructor_link,
    restore,
    revocations,
    revoke,
    rotate_secret,
    token_for,
)


def add_parsers(commands, cluster_options) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The ``serve`` and ``tokens`` commands, on cli/main.py's ``_Commands``."""
    serving = commands.add_parser("serve", help="grade each submission as it arrives, through nbgrader's exchange "
                                                "and a web page, and show its feedback at once, within the attempt "
                                                "limits of nbgrader_config.py (c.Serve); Ctrl-C stops it, the queue "
                                                "is kept")
    serving.add_argument("--workers", type=int, default=None, help="grading processes (default: one per core)")
    serving.add_argument("--address", default=None, help="where the web page listens (default 127.0.0.1; a reverse "
                                                         "proxy with TLS in front for others)")
    serving.add_argument("--port", type=int, default=None, help="its port (default 8765; with --hub-login, the "
                                                                "port of the service's url on the Hub)")
    serving.add_argument("--base-url", default=None, help="the page's public address, as students reach it (default: "
                                                          "http://ADDRESS:PORT/); its path is the page's prefix")
    serving.add_argument("--certfile", default=None, help="serve HTTPS with this certificate (PEM)")
    serving.add_argument("--keyfile", default=None, help="the certificate's private key (PEM)")
    serving.add_argument("--secure-cookies", action="store_true",
                         help="mark cookies Secure: set it behind a reverse proxy that speaks HTTPS")
    serving.add_argument("--hub-login", action="store_true",
                         help="students sign in with their JupyterHub account (OAuth), the service registered as "
                              "a Hub service; the Hub user name is the student id")
    serving.add_argument("--no-web", action="store_true", help="no web page: the exchange only")
    serving.add_argument("--no-exchange", action="store_true", help="do not watch nbgrader's exchange")
    cluster_options(serving)
    tokens = commands.add_parser("tokens", help="write tokens.csv: each roster student's personal link to the serve "
                                                "page, for the LMS to mail; --revoke or --rotate ends links and "
                                                "sessions, also while serve runs")
    tokens.add_argument("--base-url", required=True, help="the page's public address, e.g. https://grader.example.edu/")
    tokens.add_argument("--out", type=Path, default=Path(TOKENS_FILE),
                        help="the CSV to write, owner-only (default %(default)s in the course folder, which the "
                             "course's .gitignore lists)")
    tokens.add_argument("--revoke", metavar="ID", action="append", default=[],
                        help="end this student's link and session (a running serve sees it at once); the new link "
                             "is in the CSV. Repeat it for more students")
    tokens.add_argument("--restore", metavar="ID", action="append", default=[],
                        help="undo this student's last --revoke: the link they had before works again, the one "
                             "given at the revocation ends. Repeat it for more students")
    tokens.add_argument("--rotate", action="store_true",
                        help="a new secret: every link and session so far ends, the instructor's link too")
    return serving, tokens


def serve_command(args, parser: argparse.ArgumentParser, db_url: str, security) -> int:
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.no_web and args.no_exchange:
        parser.error("--no-web and --no-exchange leave no way in")
    if bool(args.certfile) != bool(args.keyfile):
        parser.error("--certfile and --keyfile go together")
    try:
        settings = load_settings(args.course_dir)
        if settings.deadline:
            parse_time(settings.deadline)
    except Exception as problem:  # noqa: BLE001  traitlets names the bad value
        parser.exit(2, f"maxpool-grader serve: nbgrader_config.py's c.Serve: {problem}\n")
    try:
        load_lti(args.course_dir)
    except Exception as problem:  # noqa: BLE001  traitlets names the bad value
        parser.exit(2, f"maxpool-grader serve: nbgrader_config.py's c.Lti: {problem}\n")
    if args.hub_login and args.no_web:
        parser.error("--hub-login signs students in to the web page, which --no-web turns off")
    address, port, base_url, hub = args.address, args.port, args.base_url, None
    try:
        if args.hub_login:  # where the Hub expects the service, unless given
            if port is None or base_url is None:
                given = hub_address()
                address, port, base_url = address or given[0], port or given[1], base_url or given[2]
            hub = hub_auth(base_url)
    except Exception as problem:  # noqa: BLE001  HubSetupError, or HubOAuth refusing its environment
        parser.exit(2, f"maxpool-grader serve: {problem}\n")
    address, port = address or "127.0.0.1", port or 8765
    base_url = base_url or f"{'https' if args.certfile else 'http'}://{address}:{port}/"
    # the web layer (tornado's server; hub.py: jupyterhub), imported only to start the page, and
    # given to the core, which never imports it
    from .web import start_web
    return service.run(args.course_dir.resolve(), db_url, args.workers or os.cpu_count() or 1, address=address,
                     port=port, base_url=base_url, exchange=not args.no_exchange,
                     start_web=None if args.no_web else start_web,
                     certfile=args.certfile, keyfile=args.keyfile, secure_cookies=args.secure_cookies,
                     cluster=args.cluster, security=security, hub_auth=hub)


def tokens_command(args, db_url: str) -> int:
    roster = args.course_dir / "roster.csv"
    if roster.is_file():
        import_roster(roster, db_url)
    folder = args.course_dir / SERVE_DIR
    with Gradebook(db_url) as gradebook:
        known = {student.id for student in gradebook.students}
    if roster.is_file():
        known |= {row["id"] for row in read_roster(roster)}
    if problems := _unknown_or_not_revoked(args, folder, known):
        for problem in problems:
            print(f"maxpool-grader tokens: {problem}", file=sys.stderr)
        print("Nothing was changed.", file=sys.stderr)
        return 2
    if args.rotate:
        rotate_secret(folder)
        print("A new secret: every link and session given out so far has ended (a running serve sees it at once)")
    for student in args.revoke:
        print(f"{student}: link and session ended (generation {revoke(folder, student)}); the new link is in the CSV")
    for student in args.restore:
        print(f"{student}: the last revocation is undone (generation {restore(folder, student)}): the link they had "
              "before works again, the one given at the revocation no longer does")
    credentials = Credentials(folder)
    _instructor_link(folder, credentials)
    base = args.base_url.rstrip("/") + "/"
    with Gradebook(db_url) as gradebook:
        students = [(s.id, s.first_name, s.last_name, s.email) for s in gradebook.students]
    skipped = [student for student, *_ in students if not STUDENT_ID.fullmatch(student)]
    out = args.out if args.out.is_absolute() else args.course_dir / args.out
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the links are passwords
    os.fchmod(descriptor, 0o600)  # a file there before keeps its mode through O_CREAT: owner-only, whatever it was
    with os.fdopen(descriptor, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "first_name", "last_name", "email", "link"])
        for student, first, last, email in sorted(students):
            if student not in skipped:
                token = token_for(credentials.secret, student, credentials.generation(student))
                writer.writerow([*map(csv_cell, (student, first, last, email)), f"{base}login/{token}"])
    print(f"{len(students) - len(skipped)} personal links written to {out} (readable by you only: each link lets "
          "its holder submit as that student)")
    for path, how in exposed_to_git(out.parent, [out.name]).items():
        print(f"Warning: git {'tracks' if how == 'tracked' else 'does not ignore'} {out.parent / path}: every link "
              "in it is a password. Add it to .gitignore" + (" and git rm --cached it" if how == "tracked" else "")
              + ", or write it outside the repository (--out)", file=sys.stderr)
    if skipped:
        print(f"No link for {len(skipped)} id(s) the service does not take (letters, digits, . _ @ - only, up to 64): "
              f"{', '.join(repr(student) for student in skipped[:10])}")
    if not students:
        print("The gradebook has no students: import the roster first (maxpool-grader roster roster.csv)")
        return 1
    return 0


def _unknown_or_not_revoked(args, folder: Path, known: set[str]) -> list[str]:
    """Why the --revoke and --restore asked for cannot be done (nothing is, then): an id that is
    no student of the course (a typo would end nobody's link), or a restore of a link that is
    not revoked."""
    problems = []
    for student in dict.fromkeys([*args.revoke, *args.restore]):
        if student not in known:
            close = difflib.get_close_matches(student, sorted(known), n=3)
            problems.append(f"{student!r} is not a student of this course (neither in roster.csv nor in the "
                            "gradebook)" + (f"; did you mean {' or '.join(close)}?" if close else ""))
    pending = generations(folder)
    for student in dict.fromkeys(args.restore):
        undone = args.restore.count(student) - args.revoke.count(student)
        if student in known and undone > revocations(folder).get(student, 0):
            problems.append(f"{student}'s link is not revoked (generation {pending.get(student, 0)}): there is no "
                            "revocation to undo")
    return problems


def _instructor_link(folder: Path, credentials) -> None:
    """serve writes the instructor's link when it starts; after a rotation, the new one."""
    path = folder / INSTRUCTOR_LINK
    if path.is_file():
        address = path.read_text().strip().rsplit("/instructor/login/", 1)[0]
        replace_file(path, instructor_link(credentials.secret, address) + "\n", sync=False)  # owner-only
