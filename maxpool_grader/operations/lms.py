"""From the LMS and back: a Canvas or Moodle "download all submissions" zip into
``submitted/``, and the grades out again as a CSV the LMS imports.

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
  Moodle keeps only the last version of each file.

Files are matched to the course's ``roster.csv``: by its ``lms_id`` column when it has
one (the Canvas user id or Moodle participant id), else by name. A file that matches
no student is copied to ``lms-unmatched/`` and listed, never dropped.

Submission times: each zip entry's time (taken as UTC unless ``--zip-timezone`` says
otherwise) becomes nbgrader's ``timestamp.txt``; a Canvas file marked ``_LATE`` whose
entry time is not after the due date is taken as one second late (the LMS says it was
late; the per-day policy then counts one started day). The due date (``--due``) goes
into the gradebook, and nbgrader's ``AssignLatePenalties`` applies ``LatePolicy``.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
import shutil
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from ..names import ASSIGNMENT
from .roster import read_roster

STATE = Path(".maxpool-grader") / "lms.json"  # who is who in the LMS, for export-lms
UNMATCHED = "lms-unmatched"

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+?)(?P<late>_LATE)?_(?P<lms_id>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<lms_id>\d+)_assignsubmission_file_?$")
MOODLE_FLAT = re.compile(r"^(?P<name>.+?)_(?P<lms_id>\d+)_assignsubmission_file_(?P<file>.+)$")
ATTEMPT = re.compile(r"^(?P<stem>.+?)-(?P<attempt>\d+)(?P<suffix>\.[^.]+)$")


class LmsError(ValueError):
    """A zip or a setting that cannot be used, in words for the instructor."""


@dataclass
class Upload:
    """One file of the zip, and what its name says."""

    entry: zipfile.ZipInfo
    lms: str  # "canvas" or "moodle"
    name: str  # the student's name as the LMS wrote it
    lms_id: str
    file: str  # the file name the student uploaded
    attempt: int = 0  # Canvas: the n of "-n" (uploaded again)
    late: bool = False  # Canvas: "_LATE"
    student: str | None = None  # matched in the roster

    @property
    def time(self) -> dt.datetime:
        return dt.datetime(*self.entry.date_time)


@dataclass
class Collected:
    """What collect-lms did, for the instructor (printed) and export-lms (saved)."""

    students: dict[str, dict] = field(default_factory=dict)  # id -> lms, lms_id, files, timestamp, late
    unmatched: list[str] = field(default_factory=list)  # zip entries that match no student
    messages: list[str] = field(default_factory=list)  # per student: two notebooks, no notebook ...


# ------------------------------------------------------------------ reading the zip
def _key(text: str) -> str:
    """A name reduced to lower-case letters and digits (accents dropped), for matching."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", plain.lower())


def parse(entry: zipfile.ZipInfo) -> Upload | None:
    """What the LMS's name of a zip entry says, or None for a name of neither LMS."""
    path = PurePosixPath(entry.filename)
    if len(path.parts) >= 2 and (found := MOODLE_FOLDER.match(path.parts[-2])):
        return Upload(entry, "moodle", found["name"], found["lms_id"], path.name)
    if found := MOODLE_FLAT.match(path.name):
        return Upload(entry, "moodle", found["name"], found["lms_id"], found["file"])
    if found := CANVAS.match(path.name):
        file, attempt = found["file"], 0
        if again := ATTEMPT.match(file):
            file, attempt = again["stem"] + again["suffix"], int(again["attempt"])
        return Upload(entry, "canvas", found["name"], found["lms_id"], file, attempt, bool(found["late"]))
    return None


def _entries(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The files of the zip, without folders and the litter of macOS and Windows."""
    return [entry for entry in archive.infolist() if not entry.is_dir()
            and not any(part in ("__MACOSX", ".DS_Store", "Thumbs.db") for part in PurePosixPath(entry.filename).parts)]


def _match(uploads: list[Upload], roster: list[dict]) -> None:
    """Set each upload's student: the roster's lms_id, else its name (Canvas: last name then
    first name; Moodle: first name then last name)."""
    by_lms_id = {row["lms_id"]: row["id"] for row in roster if row.get("lms_id")}
    by_name: dict[str, set[str]] = {}
    for row in roster:
        first, last = row.get("first_name") or "", row.get("last_name") or ""
        for key in {_key(last + first), _key(first + last)}:
            by_name.setdefault(key, set()).add(row["id"])
    for upload in uploads:
        if upload.lms_id in by_lms_id:
            upload.student = by_lms_id[upload.lms_id]
        else:
            found = by_name.get(_key(upload.name), set())
            upload.student = next(iter(found)) if len(found) == 1 else None  # two namesakes: ask the instructor


# ------------------------------------------------------------------ into submitted/
def collect(zip_path: Path, course: Path, db_url: str, *, due: dt.datetime | None = None,
            zip_timezone: dt.tzinfo = dt.timezone.utc, assignment: str = ASSIGNMENT) -> Collected:
    """Put the zip's submissions into ``submitted/<student>/<assignment>/`` (each student's
    folder replaced), with ``timestamp.txt``; see the module doc."""
    roster_path = course / "roster.csv"
    if not roster_path.is_file():
        raise LmsError(f"{roster_path} is missing: collect-lms matches the zip's files to the students of "
                       "roster.csv (id, first name, last name, email, and optionally lms_id)")
    roster = read_roster(roster_path)
    try:
        archive = zipfile.ZipFile(zip_path)
    except (OSError, zipfile.BadZipFile) as problem:
        raise LmsError(f"{zip_path} is not a zip file that can be read ({problem})") from None
    result = Collected()
    with archive:
        uploads = []
        for entry in _entries(archive):
            upload = parse(entry)
            if upload is None:
                result.unmatched.append(f"{entry.filename}: not named as Canvas or Moodle name files")
            else:
                uploads.append(upload)
        _match(uploads, roster)
        unmatched = [upload for upload in uploads if upload.student is None]
        for upload in unmatched:
            result.unmatched.append(f"{upload.entry.filename}: no student in roster.csv is "
                                    f"{upload.name!r} (LMS id {upload.lms_id})")
        _keep(archive, [upload.entry for upload in unmatched] + [
            entry for entry in _entries(archive) if parse(entry) is None], course / UNMATCHED / zip_path.stem)
        by_student: dict[str, list[Upload]] = {}
        for upload in uploads:
            if upload.student is not None:
                by_student.setdefault(upload.student, []).append(upload)
        for student, theirs in sorted(by_student.items()):
            result.students[student] = _write_submission(archive, course, student, theirs, due, zip_timezone,
                                                         assignment, result.messages)
    if due is not None:
        with Gradebook(db_url) as book:
            book.update_or_create_assignment(assignment, duedate=due.astimezone(dt.timezone.utc).replace(tzinfo=None))
    state = course / STATE
    state.parent.mkdir(exist_ok=True)
    saved = json.loads(state.read_text()) if state.exists() else {}
    saved.update({student: {key: value for key, value in info.items() if key in ("lms", "lms_id", "name")}
                  for student, info in result.students.items()})
    state.write_text(json.dumps(saved, indent=1, sort_keys=True))
    return result


def _keep(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo], folder: Path) -> None:
    """Copy entries that match no student out of the zip, so nothing is lost."""
    for entry in entries:
        target = folder / PurePosixPath(entry.filename).name
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(entry) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)


def _write_submission(archive, course: Path, student: str, uploads: list[Upload], due, zip_timezone,
                      assignment: str, messages: list[str]) -> dict:
    latest: dict[str, Upload] = {}
    for upload in uploads:  # an upload made again replaces the earlier one
        kept = latest.get(upload.file)
        if kept is None or (upload.attempt, upload.time) > (kept.attempt, kept.time):
            latest[upload.file] = upload
    folder = course / "submitted" / student / assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for upload in latest.values():
        name = PurePosixPath(upload.file).name
        if name.startswith(".") or name in ("timestamp.txt",):
            name = "_" + name
        with archive.open(upload.entry) as source, open(folder / name, "wb") as out:
            shutil.copyfileobj(source, out)
    notebooks = sorted(name for name in latest if name.endswith(".ipynb"))
    expected = f"{assignment}.ipynb"
    if not notebooks:
        messages.append(f"{student}: uploaded no notebook ({', '.join(sorted(latest))}); it is graded 0, with a "
                        "note saying so")
    elif len(notebooks) > 1:
        which = (f"{expected} is graded" if expected in notebooks else
                 f"none is named {expected}, so none is graded: ask the student which one counts and rename it")
        messages.append(f"{student}: uploaded {len(notebooks)} notebooks ({', '.join(notebooks)}); {which}")
    late = any(upload.late for upload in latest.values())
    times = [upload.time.replace(tzinfo=zip_timezone).astimezone(dt.timezone.utc) for upload in latest.values()]
    when = max(times)
    if late and due is not None and when <= due:
        when = due + dt.timedelta(seconds=1)  # late by the LMS's word: the earliest it can have been
    (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    first = uploads[0]
    return {"lms": first.lms, "lms_id": first.lms_id, "name": first.name, "files": sorted(latest),
            "timestamp": when.isoformat(), "late": late or (due is not None and when > due)}


def parse_due(text: str) -> dt.datetime:
    """A due date such as "2026-11-20 23:59" (UTC) or "2026-11-20T23:59+01:00"."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace(" UTC", "+00:00"))
    except ValueError:
        raise LmsError(f"--due {text!r} is not a date and time like 2026-11-20 23:59 or "
                       "2026-11-20T23:59+01:00") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


# ------------------------------------------------------------------ the late policy
class LatePolicy(LateSubmissionPlugin):
    """The course's late policy: a late submission loses ``percent_per_day`` of its
    autograded points for every started day (24 hours) after the due date, up to all of
    them. Part A, graded by hand later, is not reduced (so the penalty does not change when
    it is graded)."""

    percent_per_day = Float(10.0, help="Share of the autograded points lost per started day late (%).").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / 86400)
        parent = self.parent  # nbgrader's AssignLatePenalties, with the gradebook open
        try:
            notebook = parent.gradebook.find_submission_notebook(parent.notebook_id, parent.assignment_id, student_id)
            autograded = notebook.code_score
        except (AttributeError, MissingEntry):
            autograded = score
        return round(min(1.0, days * self.percent_per_day / 100) * autograded, 6)


# ------------------------------------------------------------------ back to the LMS
def export(course: Path, db_url: str, out_dir: Path, *, canvas_column: str | None = None,
           assignment: str = ASSIGNMENT) -> dict:
    """Write ``canvas_grades.csv`` (Canvas's gradebook import) and ``lms_grades.csv`` (every
    number, for any LMS). A student whose Part A is not graded yet gets no grade in the
    Canvas file (an upload changes nothing for them) and ``part_a_graded = no`` in the other.
    Returns {"ungraded": [...], "rows": n}."""
    state = course / STATE
    lms = json.loads(state.read_text()) if state.exists() else {}
    roster = {row["id"]: row for row in read_roster(course / "roster.csv")} \
        if (course / "roster.csv").is_file() else {}
    rows, ungraded = [], []
    with Gradebook(db_url) as book:
        graded_assignment = book.find_assignment(assignment)
        maximum = graded_assignment.max_score
        for student in sorted(book.students, key=lambda s: s.id):
            try:
                submission = book.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            manual = [grade for notebook in submission.notebooks for grade in notebook.grades
                      if grade.cell_type == "markdown"]
            part_a_graded = all(not grade.needs_manual_grade for grade in manual)
            penalty = submission.late_submission_penalty or 0
            total = max(0.0, submission.score - penalty)
            lms_id = (roster.get(student.id) or {}).get("lms_id") or lms.get(student.id, {}).get("lms_id") or ""
            if not part_a_graded:
                ungraded.append(student.id)
            rows.append({"student_id": student.id, "first_name": student.first_name or "",
                         "last_name": student.last_name or "", "email": student.email or "", "lms_id": lms_id,
                         "autograded": submission.code_score, "part_a": sum(g.score or 0 for g in manual),
                         "part_a_graded": "yes" if part_a_graded else "no", "late_penalty": penalty,
                         "total": total, "max": maximum})
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "lms_grades.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["student_id"])
        writer.writeheader()
        writer.writerows({key: (f"{value:g}" if isinstance(value, float) else value) for key, value in row.items()}
                         for row in rows)
    column = canvas_column or f"{assignment}"
    with open(out_dir / "canvas_grades.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column])
        writer.writerow(["Points Possible", "", "", "", "", f"{maximum:g}"])
        for row in rows:
            name = ", ".join(part for part in (row["last_name"], row["first_name"]) if part) or row["student_id"]
            grade = f"{row['total']:g}" if row["part_a_graded"] == "yes" else ""
            writer.writerow([name, row["lms_id"], row["student_id"], "", "", grade])
    return {"rows": len(rows), "ungraded": ungraded,
            "missing_lms_id": [row["student_id"] for row in rows if not row["lms_id"]]}
