"""Writing what collect-lms read and checked (lms/intake.py decides, lms/zip_upload.py reads): a
student's folder swapped into ``submitted/`` whole, and the files that do not go there
kept in ``lms-unmatched/``, never over another file."""

from __future__ import annotations

import datetime as dt
import filecmp
import os
import secrets
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.utils import parse_utc

from .zip_upload import checkpoint, safe_parts, shown

STAGING = "lms-staging-"  # the staging folders in .maxpool-grader/
PARTIAL = ".lms-part-"  # a copy into lms-unmatched/ before it gets its name


@dataclass
class Collected:
    """What collect-lms did, for the instructor (printed) and export-lms (saved)."""

    students: dict[str, dict] = field(default_factory=dict)  # id -> lms, lms_id, files, timestamp, late
    notes: list[str] = field(default_factory=list)  # one line per file not collected as it was named
    messages: list[str] = field(default_factory=list)  # per student: two notebooks, no notebook ...
    unmatched: int = 0  # files copied to lms-unmatched/
    failed: int = 0  # files skipped (unreadable) or kept out of submitted/ for their student: exit status 1
    layout: str | None = None  # "canvas", "moodle-folders", "moodle-flat"


class KeepOut:
    """Files that do not go into submitted/: copied to lms-unmatched/<zip>/ under their own
    safe path, or, if they could not be read, skipped; each named in ``result.notes``."""

    def __init__(self, course: Path, folder: Path, read: dict, skipped: dict, result: Collected):
        self.course, self.folder, self.read, self.skipped, self.result = course, folder, read, skipped, result

    def __call__(self, entry: zipfile.ZipInfo, reason: str, *, failed: bool = False) -> None:
        if entry in self.skipped:
            self.result.failed += 1
            self.result.notes.append(f"{shown(entry.filename)}: {reason}; SKIPPED, {self.skipped[entry]}")
            return
        self.result.unmatched += 1
        self.result.failed += failed
        where = place(self.folder, safe_parts(entry.filename), self.read[entry])
        self.result.notes.append(f"{shown(entry.filename)}: {reason}; copied to {where.relative_to(self.course)}")


def place(root: Path, parts: list[str], staged: Path) -> Path:
    """Copy ``staged`` to root/parts. A component that clashes with something else there
    gets a number (``name~2.ipynb``); the very same file already there is kept once."""
    where = root
    for index, part in enumerate(parts):
        last, number, candidate = index == len(parts) - 1, 1, where / part
        while not _free(candidate, staged, last):
            number += 1
            stem, dot, suffix = part.rpartition(".") if last and "." in part[1:] else (part, "", "")
            candidate = where / f"{stem}~{number}{dot}{suffix}"
        where = candidate
        if not last:
            where.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    partial = where.parent / f"{PARTIAL}{secrets.token_hex(4)}"  # a killed copy never has a real name
    shutil.copyfile(staged, partial)
    checkpoint("unmatched-copy")
    os.rename(partial, where)
    return where


def _free(candidate: Path, staged: Path, last: bool) -> bool:
    """Whether ``candidate`` can take the file (last component) or hold it (a folder)."""
    if candidate.is_symlink():
        return False
    if not candidate.exists():
        return True
    if not last:
        return candidate.is_dir()
    return candidate.is_file() and filecmp.cmp(candidate, staged, shallow=False)


def swap_in(folder: Path, files: dict[str, Path], when: dt.datetime) -> None:
    """Make ``folder`` hold exactly ``files`` (name -> staged copy) and nbgrader's
    timestamp.txt: built next to it, then renamed into place; the old folder is removed
    only once the new one is there, and stays whole if anything fails."""
    tag = secrets.token_hex(4)
    new, old = folder.parent / f".{folder.name}.lms-new-{tag}", folder.parent / f".{folder.name}.lms-old-{tag}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        new.mkdir()
        for name, staged in files.items():
            shutil.copyfile(staged, new / name)
        (new / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
        checkpoint("swap")
        if folder.exists() or folder.is_symlink():
            os.rename(folder, old)
            checkpoint("between-renames")
        try:
            os.rename(new, folder)
        except OSError:
            if old.exists() or old.is_symlink():
                os.rename(old, folder)
            raise
    finally:
        shutil.rmtree(new, ignore_errors=True)  # gone already when it was renamed into place
    if old.is_symlink():
        old.unlink()
    shutil.rmtree(old, ignore_errors=True)


def recover(course: Path, submitted: Path, unmatched: Path, staging_parent: Path, assignment: str) -> list[str]:
    """Finish what a killed collect-lms left (it holds the course's lock, so none runs now):
    a student's folder that survives only as ``.<assignment>.lms-old-*`` is renamed back, every
    other ``.lms-new-*``/``.lms-old-*`` folder, staging folder and partial copy is removed.
    Returns a line for the instructor per student restored."""
    restored = []
    for leftover in sorted(staging_parent.glob(f"{STAGING}*")):
        shutil.rmtree(leftover, ignore_errors=True)
    for student in sorted(submitted.iterdir()) if submitted.is_dir() else []:
        folder = student / assignment
        for old in sorted(student.glob(f".{assignment}.lms-old-*")):
            if not (folder.exists() or folder.is_symlink()):
                os.rename(old, folder)
                restored.append(f"{student.name}: submitted/{student.name}/{assignment} restored as it was before "
                                "an interrupted collect-lms")
            else:
                shutil.rmtree(old, ignore_errors=True)
        for new in student.glob(f".{assignment}.lms-new-*"):
            shutil.rmtree(new, ignore_errors=True)
    for partial in unmatched.rglob(f"{PARTIAL}*") if unmatched.is_dir() else []:
        partial.unlink(missing_ok=True)
    return restored


def submitted_time(folder: Path) -> dt.datetime | None:
    """When the submission already in ``folder`` was made (UTC), from its timestamp.txt."""
    try:
        with open(folder / "timestamp.txt") as handle:
            return parse_utc(handle.read(100).strip()).replace(tzinfo=dt.timezone.utc)
    except (OSError, ValueError, OverflowError, AttributeError):
        return None
