"""From the LMS and back: a Canvas or Moodle "download all submissions" zip into
``submitted/`` (here; lms/zip_upload.py reads and checks the zip), and the grades out again as a
CSV the LMS imports (lms/export.py).

How the LMSs name the files in their bulk download (from their source and guides):

* **Canvas** (Assignments → Download Submissions): one file per upload, named
  ``<lastfirst>[_LATE]_<user id>_<submission id>_<file name>``: ``<lastfirst>`` is the
  student's sortable name in lower case without spaces or punctuation, ``_LATE`` marks a
  submission after the due date, and a file uploaded again gets ``-1``, ``-2`` ... before
  its extension (``max_pool_backward-1.ipynb``).
* **Moodle** (Assignment → View all submissions → Download all submissions; the zip's
  names are built by ``mod/assign`` ``download_submissions``): a folder per student and
  plugin, ``<Full Name>_<participant id>_assignsubmission_file/<file name>`` (Moodle 3.1
  and later; some versions end the folder name with ``_``), or with "Download
  submissions in folders" off, flat ``<Full Name>_<participant id>_assignsubmission_file_<file name>``.

Every student is treated as an attacker. Files are matched to the course's ``roster.csv``
by the LMS's part of the name only (lms/match.py): a student whose ``lms_id`` is in the roster
is matched by it alone, a student collected before by the LMS user recorded then, the others
by name (Unicode letters and digits, accents dropped; a name with none, or one of look-alike
letters of another script, matches nobody); two LMS users who fit one student, or a new user
with a collected student's name, are refused. Every match by display name alone is printed
as a note. Nothing is written until the whole zip is read and checked; then each student's
folder is built next to the old one and renamed into place, so a failure leaves the old one
whole, and a file copied to lms-unmatched/ gets its name only once it is whole. Each student
is recorded (``.maxpool-grader/lms.json``, replaced by rename, synced) once their new folder
is built and before it is renamed into place, so a run stopped at any point leaves every
student it collected recorded, and the next run matches them by that record. One
collect-lms runs at a time per course, and it first finishes what a killed one left
(store.recover). Files macOS's zip adds (``__MACOSX/``) and two files of one student whose
names clean up to the same name are named, and exit status 1. A
student whose upload cannot be read, who uploaded more files than the limit, or whose
``submitted/`` folder holds a newer submission than the zip's, or one without a timestamp
(unless ``replace_newer``), keeps their folder as it was. Every file not collected is copied
to ``lms-unmatched/<zip>/`` under its own path, or, if it cannot be read, skipped, and each is
named with what happened (``Collected.notes``).

Submission times: each zip entry's time (taken as UTC unless ``--zip-timezone`` says
otherwise) becomes nbgrader's ``timestamp.txt``; a Canvas file marked ``_LATE`` whose
entry time is not after the due date is taken as one second late (the LMS says it was
late; the per-day policy then counts one started day). The due date (``--due``) goes
into the gradebook, and nbgrader's ``AssignLatePenalties`` applies ``LatePolicy``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import tempfile
import zipfile
from pathlib import Path

from nbgrader.api import Gradebook

from ..course.directory import course_path
from ..course.files import replace_file
from ..course.roster import read_roster
from ..glue.safecsvexport import shown
from ..names import ASSIGNMENT
from .export import LMS_STATE, export  # noqa: F401  (the other half of "from the LMS and back")
from .match import match, records_of
from .store import STAGING, Collected, KeepOut, recover, submitted_time, swap_in
from .tree import holds_files
from .zip_upload import (
    BLOCK,
    Budget,
    LmsError,
    ZipLimits,
    ZipUpload,
    ambiguous,
    detect_layout,
    files_of,
    litter,
    parse,
    safe_parts,
    stage,
)

UNMATCHED = "lms-unmatched"


# ------------------------------------------------------------------ into submitted/
def collect(zip_path: Path, course: Path, db_url: str, *, due: dt.datetime | None = None,
            zip_timezone: dt.tzinfo = dt.timezone.utc, assignment: str = ASSIGNMENT, limits: ZipLimits | None = None,
            lms: str | None = None, replace_newer: bool = False) -> Collected:
    """Put the zip's submissions into ``submitted/<student>/<assignment>/`` (each student's
    folder replaced whole), with ``timestamp.txt``; see the module doc."""
    roster = _roster(course)
    try:
        archive = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile) as problem:
        raise LmsError(f"{zip_path} is not a zip file that can be read ({problem})") from None
    result = Collected()
    (course / LMS_STATE.parent).mkdir(exist_ok=True)
    submitted = course_path(course, "submitted", "_", assignment).parent.parent
    with archive, _locked(course / LMS_STATE.parent / "collect-lms.lock"):
        result.messages += recover(course, submitted, course / UNMATCHED, course / LMS_STATE.parent, assignment)
        with tempfile.TemporaryDirectory(prefix=STAGING, dir=course / LMS_STATE.parent) as staging:
            _collect_zip(archive, zip_path, Path(staging), course, result, roster, limits or ZipLimits(), lms,
                         assignment=assignment, due=due, zip_timezone=zip_timezone, replace_newer=replace_newer)
        if due is not None:
            with Gradebook(db_url) as book:
                book.update_or_create_assignment(assignment,
                                                 duedate=due.astimezone(dt.timezone.utc).replace(tzinfo=None))
    return result


def _collect_zip(archive: zipfile.ZipFile, zip_path: Path, staging: Path, course: Path, result: Collected,
                 roster: list[dict], limits: ZipLimits, lms: str | None, *, assignment: str, **options) -> None:
    """Read, stage, match and write the zip (``options``: those of ``_collect_student``)."""
    entries = files_of(archive)
    result.layout = detect_layout(entries, lms)
    budget = Budget(limits.total)
    read, skipped = stage(archive, entries, staging, limits, budget)
    keep_out = KeepOut(course, course / UNMATCHED / safe_parts(zip_path.stem)[-1], read, skipped, result, budget)
    uploads = [upload for entry in entries if (upload := parse(entry, result.layout))]
    parsed = {upload.entry for upload in uploads}
    for entry in entries:
        if litter(entry):
            keep_out(entry, "a file of the __MACOSX/ folder macOS's zip adds (no LMS does: this zip was made again "
                            "on a Mac; check it is the LMS's own download)", failed=True)
        elif ambiguous(entry, result.layout):
            keep_out(entry, "Moodle's '_<id>_assignsubmission_file_' is in its name twice, so whose file it "
                            "is cannot be told (download the submissions in folders)")
        elif entry not in parsed:
            keep_out(entry, f"not named as {result.layout or 'Canvas or Moodle'} names its files")
    why = match(uploads, roster, records_of(course / LMS_STATE))
    by_student: dict[str, list[ZipUpload]] = {}
    for upload in uploads:
        if upload.student is None:
            keep_out(upload.entry, why[upload.entry][0], failed=why[upload.entry][1])
        else:
            by_student.setdefault(upload.student, []).append(upload)
    for student, theirs in sorted(by_student.items()):
        first = theirs[0]
        record = {"lms": first.lms, "lms_id": first.lms_id, "name": first.name, "matched_by": first.matched_by,
                  "zip": zip_path.name}
        info = _collect_student(course_path(course, "submitted", student, assignment), theirs, keep_out,
                                per_student=limits.per_student, budget=budget,
                                record=lambda student=student, record=record: _record(course / LMS_STATE, student,
                                                                                      record), **options)
        if info is not None:
            result.students[student] = info
            if first.matched_by == "name":
                result.messages.append(
                    f"{student}: matched by display name alone ({shown(first.name)!r}, {first.lms} user "
                    f"{first.lms_id}): roster.csv has no lms_id for them and no earlier collection recorded one. "
                    f"Check in the LMS that it is them: from now on only this LMS user stands for {student}")


def _roster(course: Path) -> list[dict]:
    roster_path = course / "roster.csv"
    if not roster_path.is_file():
        raise LmsError(f"{roster_path} is missing: collect-lms matches the zip's files to the students of "
                       "roster.csv (id, first name, last name, email, and optionally lms_id)")
    roster = read_roster(roster_path)
    unsafe = [row["id"] for row in roster if safe_parts(row["id"]) != [row["id"]]]
    if unsafe:
        raise LmsError(f"roster.csv: student ids {unsafe!r} cannot be folder names in submitted/")
    return roster


def _record(state: Path, student: str, record: dict) -> None:
    """``student`` recorded as ``record``'s LMS user in lms.json now: written whole beside it,
    synced, renamed into place and the folder synced, so a kill or a power cut leaves the old
    file or the new one, never half of one."""
    saved = records_of(state)
    saved[student] = {**saved.get(student, {}), **record,
                      "collected": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}
    replace_file(state, json.dumps(saved, indent=1, sort_keys=True))


@contextlib.contextmanager
def _locked(path: Path):
    """One collect-lms at a time per course: what a killed one left is cleaned up under it."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LmsError("another collect-lms is running in this course; wait for it to finish") from None
        yield


def _stored_name(upload: ZipUpload) -> str:
    """The name a file gets in the student's folder: the last component of their path, made safe."""
    name = safe_parts(upload.file)[-1]
    return "_" + name if name == "timestamp.txt" else name


def _collect_student(folder: Path, uploads: list[ZipUpload], keep_out: KeepOut, *, due, zip_timezone,
                     replace_newer: bool, per_student: int, budget: Budget, record) -> dict | None:
    """Swap one student's folder for their uploads (``record`` them once it is built); None
    when it is kept as it was."""
    student, latest, clashes = folder.parent.name, {}, []
    for upload in sorted(uploads, key=lambda upload: (upload.attempt, upload.time, upload.entry.filename)):
        if (earlier := latest.get(_stored_name(upload))) is not None:
            if earlier.file != upload.file:  # two different files, one name once cleaned: which is meant?
                clashes.append(f"{shown(earlier.file)!r} and {shown(upload.file)!r} are both saved as "
                               f"{shown(_stored_name(upload))!r}")
                keep_out(earlier.entry, f"{student}'s file, named like another of theirs once cleaned up, so "
                                        f"submitted/{student} is left as it was", failed=True)
            else:  # the same file uploaded again replaces it
                keep_out(earlier.entry, f"{student}'s file, superseded by {shown(upload.entry.filename)}")
        latest[_stored_name(upload)] = upload
    unreadable = [shown(upload.entry.filename) for upload in latest.values() if upload.entry in keep_out.skipped]
    times = [upload.time.replace(tzinfo=zip_timezone).astimezone(dt.timezone.utc) for upload in latest.values()]
    late, when, before = any(upload.late for upload in latest.values()), max(times), submitted_time(folder)
    if late and due is not None and when <= due:
        when = due + dt.timedelta(seconds=1)  # late by the LMS's word: the earliest it can have been
    reason = None
    if clashes:
        reason = (f"kept out: {'; '.join(clashes)} (their names differ only in what cannot be a file name), so "
                  f"submitted/{student} is left as it was: rename one in the LMS, or copy the right one by hand")
    elif unreadable:
        reason = f"kept out: {', '.join(unreadable)} cannot be read, so submitted/{student} is left as it was"
    elif len(latest) > per_student:
        reason = (f"kept out: {len(latest)} files, more than {per_student} for one student, so submitted/{student} "
                  "is left as it was")
    elif before is not None and before > when and not replace_newer:
        reason = (f"kept out: submitted/{student} holds a newer submission ({before:%Y-%m-%d %H:%M:%S} UTC) than "
                  f"this zip's ({when:%Y-%m-%d %H:%M:%S} UTC); --replace-newer replaces it")
    elif before is None and _holds_files(folder) and not replace_newer:
        reason = (f"kept out: submitted/{student} holds a submission without a timestamp.txt, so it may be newer "
                  "than this zip's; --replace-newer replaces it")
    elif not budget.spend(2 * BLOCK):  # the student's new folder (and their own, the first time)
        reason = f"kept out: {budget.over()}, so submitted/{student} is left as it was"
    else:
        try:
            swap_in(folder, {name: keep_out.read[upload.entry] for name, upload in latest.items()}, when, record)
        except OSError as error:
            reason = f"kept out: submitted/{student} could not be replaced ({shown(str(error))}); it is left as it was"
    for upload in latest.values():
        if reason:
            unreadable_itself = unreadable and upload.entry in keep_out.skipped
            keep_out(upload.entry, f"{student}'s file, " + (f"so submitted/{student} is left as it was"
                                                            if unreadable_itself else reason), failed=True)
        elif _stored_name(upload) != upload.file:
            keep_out.result.notes.append(f"{shown(upload.entry.filename)}: {student}'s file, saved as "
                                         f"submitted/{student}/{folder.name}/{shown(_stored_name(upload))}")
    if reason:
        return None
    keep_out.result.messages.extend(_notebook_messages(student, folder.name, sorted(latest)))
    first = next(iter(latest.values()))
    return {"lms": first.lms, "lms_id": first.lms_id, "name": first.name, "files": sorted(latest),
            "timestamp": when.isoformat(), "late": late or (due is not None and when > due)}


def _holds_files(folder: Path) -> bool:
    return folder.is_dir() and holds_files(folder)


def _notebook_messages(student: str, assignment: str, files: list[str]) -> list[str]:
    notebooks = [name for name in files if name.endswith(".ipynb")]
    expected = f"{assignment}.ipynb"
    if not notebooks:
        return [f"{student}: uploaded no notebook ({', '.join(shown(name) for name in files)}); it is graded 0, "
                "with a note saying so"]
    if len(notebooks) == 1 and notebooks[0] != expected:
        return [f"{student}: uploaded one notebook, {shown(notebooks[0])}, not named {expected}: it is graded in "
                "its place, with a note saying so"]
    if len(notebooks) > 1:
        which = (f"{expected} is graded" if expected in notebooks else
                 f"none is named {expected}, so none is graded: ask the student which one counts and rename it")
        return [f"{student}: uploaded {len(notebooks)} notebooks ({', '.join(shown(n) for n in notebooks)}); {which}"]
    return []


def parse_due(text: str) -> dt.datetime:
    """A due date such as "2026-11-20 23:59" (UTC) or "2026-11-20T23:59+01:00"."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace(" UTC", "+00:00"))
    except ValueError:
        raise LmsError(f"--due {text!r} is not a date and time like 2026-11-20 23:59 or "
                       "2026-11-20T23:59+01:00") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


