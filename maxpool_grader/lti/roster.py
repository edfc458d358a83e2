"""The roster from the LMS (LTI Names and Role Provisioning Services), and the command lines
of LTI: ``maxpool-grader roster --from-lti`` and ``maxpool-grader lti-config``.

``roster --from-lti`` reads the course's members from the platform (pylti1p3's client, signed
with the tool's key) and makes roster.csv say what the LMS says, printing each change:

* an active learner (a Learner of the course's membership: lti/tool.py's ``learning``; an
  institution or system role never counts) is a student. Which roster student an LMS user is, is recorded once, in
  ``.maxpool-grader/lti.json``, by the user's ``sub``: a user recorded before keeps their
  student; a new one is the roster row whose id is the user's SIS id
  (``lis_person_sourcedid``), or a new row with that id (or, without one, an id made from the
  ``sub``). A display name never decides; it is only copied into the row.
* a student recorded from the LMS who is no longer an active learner there left the course:
  their row is removed and their link and session are ended as ``tokens --revoke`` ends them
  (the service's ``revoke``, which the command line gives: sign-in is serve/signin.py's alone;
  their submissions and grades stay in the gradebook). Rows the LMS never knew are kept,
  and named.
* never more than ``MOST_REMOVED`` of the class (roster.csv's rows) removed at once without
  ``--yes``: a sync that would is refused, changing nothing, and names whom it would remove
  (a Names and Roles address of another course, or an LMS answering with an empty page,
  would otherwise empty the class).

The gradebook gets the new and renamed students as ``maxpool-grader roster`` gives them.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Callable
from pathlib import Path

from pylti1p3.names_roles import NamesRolesProvisioningService

from ..course.files import replace_file
from ..course.roster import clean_name, import_roster, read_roster
from ..glue.safecsvexport import csv_cell, shown
from ..names import SERVE_DIR, STUDENT_ID
from .passback import connector
from .store import LaunchStore, records, write_records
from .tool import LtiSetupError, learning, load_lti, missing, registration_text

COLUMNS = ("id", "first_name", "last_name", "email", "lms_id")
MOST_REMOVED = 0.2  # the share of the class one sync may remove without --yes


class TooManyLeaving(Exception):
    """A sync would remove more than MOST_REMOVED of the class: whom, and of how many."""

    def __init__(self, leaving: list[str], of: int):
        super().__init__(f"{len(leaving)} of {of}")
        self.leaving, self.of = leaving, of


def fetch_members(course: Path, members_url: str = "") -> list[dict]:
    """The course's members, as the platform's Names and Roles service lists them."""
    try:
        settings = load_lti(course)
    except Exception as problem:  # noqa: BLE001  traitlets names the bad value
        raise LtiSetupError(f"nbgrader_config.py's c.Lti: {problem}") from None
    if problems := missing(settings):
        raise LtiSetupError(f"{', '.join(problems)} not set in nbgrader_config.py (docs/lti.md#settings)")
    url = members_url or settings.members_url
    if not url:
        store = LaunchStore(course / SERVE_DIR)
        try:
            url = (store.services()[0] or {}).get("context_memberships_url", "")
        finally:
            store.close()
    if not url:
        raise LtiSetupError("no Names and Roles address is known yet: launch the tool once from the course as its "
                            "instructor, or set c.Lti.members_url (or pass --members-url)")
    service = NamesRolesProvisioningService(connector(course, settings), {"context_memberships_url": url})
    return service.get_members()


def learners(members: list[dict]) -> list[dict]:
    return [member for member in members if member.get("user_id") and member.get("status", "Active") == "Active"
            and learning(member.get("roles", []))]


def student_id(member: dict, taken: set[str]) -> str:
    """A roster id for an LMS user no one recorded: their SIS id when the service takes it as an id."""
    sis = str(member.get("lis_person_sourcedid") or "")
    if STUDENT_ID.fullmatch(sis):
        return sis
    sub = str(member["user_id"])
    if STUDENT_ID.fullmatch(sub) and sub not in taken:
        return sub
    return "lti-" + hashlib.sha256(sub.encode()).hexdigest()[:16]


def sync(course: Path, db_url: str, members: list[dict], *, revoke: Callable[[Path, str], int],
         yes: bool = False) -> list[str]:
    """roster.csv, lti.json and the gradebook made to say what the LMS says; the diff's lines.
    ``revoke(folder, student)`` ends a student's link and session (serve/signin.py's), giving
    the new generation. Raises TooManyLeaving, having changed nothing, when more than
    MOST_REMOVED of the class would be removed and ``yes`` is not given."""
    path = course / "roster.csv"
    rows = {row["id"]: row for row in read_roster(path)} if path.is_file() else {}
    before = set(rows)
    saved = records(course)
    by_sub = {info["sub"]: student for student, info in saved.items()}
    lines, active = [], set()
    for member in learners(members):
        sub = str(member["user_id"])
        student = by_sub.get(sub) or student_id(member, set(rows) | set(saved))
        active.add(student)
        # names and the email as the LMS's users typed them: no control or invisible character kept
        row = {"id": student, "first_name": clean_name(str(member.get("given_name") or member.get("name") or "")),
               "last_name": clean_name(str(member.get("family_name") or "")),
               "email": clean_name(str(member.get("email") or "")),
               "lms_id": (rows.get(student) or {}).get("lms_id") or ""}
        if student not in rows:
            lines.append(shown(f"+ {student} ({row['first_name']} {row['last_name']}".rstrip() + ")"))
        rows[student] = {**(rows.get(student) or {}), **{k: v for k, v in row.items() if v}}
        saved[student] = {**saved.get(student, {}), "sub": sub, "name": clean_name(str(member.get("name") or "")),
                          "matched_by": "recorded" if sub in by_sub else "nrps"}
    leaving = sorted(student for student in set(saved) - active if student in rows)
    if not yes and len(leaving) > MOST_REMOVED * len(before):  # nothing is written yet
        raise TooManyLeaving(leaving, len(before))
    for student in sorted(set(saved) - active):
        if student in rows:
            del rows[student]
            generation = revoke(course / SERVE_DIR, student)
            lines.append(f"- {student}: left the course in the LMS; removed from roster.csv, link and session "
                         f"ended (generation {generation}); their submissions and grades are kept")
        saved.pop(student)
    kept = sorted(set(rows) - active)
    if kept:
        lines.append(f"  kept, not in the LMS's course: {', '.join(kept)}")
    _write_roster(path, rows.values())
    write_records(course, saved)
    import_roster(path, db_url)
    return lines


def _write_roster(path: Path, rows) -> None:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([csv_cell(row.get(column) or "") for column in COLUMNS])
    replace_file(path, text.getvalue(), mode=0o644)


def roster_from_lti(args, db_url: str, revoke: Callable[[Path, str], int]) -> int:
    """``maxpool-grader roster --from-lti``; ``revoke`` as ``sync`` takes it."""
    try:
        members = fetch_members(args.course_dir, args.members_url or "")
    except LtiSetupError as problem:
        print(f"maxpool-grader roster: {problem}")
        return 2
    except Exception as problem:  # noqa: BLE001  the platform's or the network's: a sentence
        print(f"maxpool-grader roster: the LMS's member list could not be read ({type(problem).__name__}: "
              f"{str(problem)[:300]}); nothing was changed")
        return 1
    try:
        lines = sync(args.course_dir, db_url, members, revoke=revoke, yes=args.yes)
    except TooManyLeaving as refused:
        print(f"maxpool-grader roster: the LMS's member list would remove {len(refused.leaving)} of the class's "
              f"{refused.of} students, more than {MOST_REMOVED:.0%}; nothing was changed. Whom it would remove:")
        for student in refused.leaving:
            print(f"- {shown(student)}")
        print("If that is right (they left the course in the LMS), run it again with --yes.")
        return 3
    for line in lines:
        print(line)
    print(f"roster.csv: {len(learners(members))} learners of {len(members)} members in the LMS; "
          f"{sum(line.startswith('+') for line in lines)} added, {sum(line.startswith('-') for line in lines)} "
          "removed")
    return 0


def lti_config(args) -> int:
    """``maxpool-grader lti-config``: the tool's key set and the registration, as JSON."""
    if not args.base_url.startswith(("https://", "http://")):
        print(f"maxpool-grader lti-config: --base-url {args.base_url!r} is not an address: give the service's "
              "public address, e.g. https://grader.example.edu/maxpool/")
        return 2
    try:
        settings = load_lti(args.course_dir)
    except Exception as problem:  # noqa: BLE001  traitlets names the bad value
        print(f"maxpool-grader lti-config: nbgrader_config.py's c.Lti: {problem}")
        return 2
    print(registration_text(args.course_dir, settings, args.base_url))
    return 0
