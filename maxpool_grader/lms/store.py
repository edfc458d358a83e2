"""Writing what collect-lms read and checked (lms/intake.py decides, lms/zip_upload.py reads): a
student's folder swapped into ``submitted/`` whole, and the files that do not go there
kept in ``lms-unmatched/``, never over another file. Staged files are linked into place
(copied only across file systems), so the zip's bytes are on disk once; every folder made
in ``lms-unmatched/`` is paid for from the run's budget (zip_upload.Budget). Folders are
removed and searched without recursion (lms/tree.py)."""

from __future__ import annotations

import datetime as dt
import errno
import filecmp
import os
import secrets
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.utils import parse_utc

from ..glue.safecsvexport import shown
from ..glue.submission import timestamp_text
from .tree import remove_files, remove_tree
from .zip_upload import BLOCK, Budget, checkpoint, safe_parts

STAGING = "lms-staging-"  # the staging folders in .maxpool-grader/
PARTIAL = ".lms-part-"  # a copy into lms-unmatched/ before it gets its name
UNMATCHED_NAME = "lms-unmatched"


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

    def __init__(self, course: Path, folder: Path, read: dict, skipped: dict, result: Collected,
                 budget: Budget | None = None):
        self.course, self.folder, self.read, self.skipped, self.result = course, folder, read, skipped, result
        self.budget = budget or Budget(1 << 62)

    def __call__(self, entry: zipfile.ZipInfo, reason: str, *, failed: bool = False) -> None:
        if entry not in self.skipped:
            try:
                where = place(self.folder, safe_parts(entry.filename), self.read[entry], self.budget)
            except OverBudget:
                self.skipped[entry] = self.budget.over()
            except OSError as error:
                self.skipped[entry] = f"it could not be copied to {UNMATCHED_NAME}/ ({shown(str(error))})"
            else:
                self.result.unmatched += 1
                self.result.failed += failed
                self.result.notes.append(f"{shown(entry.filename)}: {reason}; copied to "
                                         f"{where.relative_to(self.course)}")
                return
        self.result.failed += 1
        self.result.notes.append(f"{shown(entry.filename)}: {reason}; SKIPPED, {self.skipped[entry]}")


class OverBudget(Exception):
    """The folders a file kept out needs are more than the run's budget has left."""


def place(root: Path, parts: list[str], staged: Path, budget: Budget | None = None) -> Path:
    """Link (or copy) ``staged`` to root/parts. A component that clashes with something else
    there gets a number (``name~2.ipynb``); the very same file already there is kept once.
    Each folder made costs a block of ``budget``: ``OverBudget`` when it has too few."""
    where, made = root, []
    for index, part in enumerate(parts):
        last, number, candidate = index == len(parts) - 1, 1, where / part
        while not _free(candidate, staged, last):
            number += 1
            stem, dot, suffix = part.rpartition(".") if last and "." in part[1:] else (part, "", "")
            candidate = where / f"{stem}~{number}{dot}{suffix}"
        where = candidate
        if not last and not where.is_dir():
            made.append(where)
    if budget is not None and not budget.spend(len(made) * BLOCK):
        raise OverBudget
    for folder in made:
        folder.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    partial = where.parent / f"{PARTIAL}{secrets.token_hex(4)}"  # a killed copy never has a real name
    link_or_copy(staged, partial)
    checkpoint("unmatched-copy")
    os.rename(partial, where)
    return where


def link_or_copy(staged: Path, target: Path) -> None:
    """``staged`` at ``target`` too: a hard link (no second copy on disk), or a copy where
    the two are on different file systems."""
    try:
        os.link(staged, target)
    except OSError as error:
        if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(staged, target)


def _free(candidate: Path, staged: Path, last: bool) -> bool:
    """Whether ``candidate`` can take the file (last component) or hold it (a folder)."""
    if candidate.is_symlink():
        return False
    if not candidate.exists():
        return True
    if not last:
        return candidate.is_dir()
    return candidate.is_file() and filecmp.cmp(candidate, staged, shallow=False)


def swap_in(folder: Path, files: dict[str, Path], when: dt.datetime,
            record: Callable[[], None] = lambda: None) -> None:
    """Make ``folder`` hold exactly ``files`` (name -> staged copy) and nbgrader's
    timestamp.txt: built next to it, then renamed into place; the old folder is removed
    only once the new one is there, and stays whole if anything fails. ``record`` is called
    once the new folder is built, before it is renamed into place: whatever stops the run
    after that, the student is recorded (lms/intake.py)."""
    tag = secrets.token_hex(4)
    new, old = folder.parent / f".{folder.name}.lms-new-{tag}", folder.parent / f".{folder.name}.lms-old-{tag}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        new.mkdir()
        for name, staged in files.items():
            link_or_copy(staged, new / name)
        (new / "timestamp.txt").write_text(timestamp_text(when))
        checkpoint("swap")
        record()
        checkpoint("recorded")
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
        remove_tree(new)  # gone already when it was renamed into place
    remove_tree(old)
    checkpoint("swapped")


def recover(course: Path, submitted: Path, unmatched: Path, staging_parent: Path, assignment: str) -> list[str]:
    """Finish what a killed collect-lms left (it holds the course's lock, so none runs now):
    a student's folder that survives only as ``.<assignment>.lms-old-*`` is renamed back, every
    other ``.lms-new-*``/``.lms-old-*`` folder, staging folder and partial copy is removed.
    Returns a line for the instructor per student restored."""
    restored = []
    for leftover in sorted(staging_parent.glob(f"{STAGING}*")):
        remove_tree(leftover)
    for student in sorted(submitted.iterdir()) if submitted.is_dir() else []:
        folder = student / assignment
        for old in sorted(student.glob(f".{assignment}.lms-old-*")):
            if not (folder.exists() or folder.is_symlink()):
                os.rename(old, folder)
                restored.append(f"{student.name}: submitted/{student.name}/{assignment} restored as it was before "
                                "an interrupted collect-lms")
            else:
                remove_tree(old)
        for new in student.glob(f".{assignment}.lms-new-*"):
            remove_tree(new)
    remove_files(unmatched, PARTIAL)  # however deep an earlier run (or zip) made lms-unmatched/
    return restored


def submitted_time(folder: Path) -> dt.datetime | None:
    """When the submission already in ``folder`` was made (UTC), from its timestamp.txt."""
    try:
        with open(folder / "timestamp.txt") as handle:
            return parse_utc(handle.read(100).strip()).replace(tzinfo=dt.timezone.utc)
    except (OSError, ValueError, OverflowError, AttributeError):
        return None
