"""Reading and checking an LMS zip before anything in the course changes (lms/intake.py writes).

* **Whose file is it.** The zip's layout is decided once for the whole zip, from the names
  the LMS built: Canvas's flat ``<lastfirst>[_LATE]_<user id>_<submission id>_<file>``,
  Moodle's folders ``<Full Name>_<participant id>_assignsubmission_file[_]/<file>``, or
  Moodle's flat ``<Full Name>_<participant id>_assignsubmission_file_<file>``. The layout
  that explains the most entries wins; a tie (only possible when students named their
  files after the other LMS's prefix) is refused, and ``--lms`` decides. Each entry is
  then read with that layout only: the part a student chose (their file name, their
  sub-folders) never decides whose submission it is. A Moodle flat name that holds
  Moodle's marker twice is nobody's: Moodle lets students edit their full name, so both
  sides of the marker can be theirs.
* **Can it be read.** Every entry is copied out with a bounded read into a staging folder:
  encrypted entries, damaged ones (bad CRC, a broken stream) and entries larger than the
  per-file or total limit (counted while reading, so a lying header cannot blow memory
  or disk) are reported and skipped.
* **Where may it go.** Names are cut into safe path components (backslashes are
  separators, no ``..``, no absolute paths, no hidden or control characters, each
  component at most ``NAME_BYTES`` bytes, at most ``DEPTH`` of them: deeper folders are
  joined into the last component's name), so no path written is longer than about 1,600
  bytes, however long or deep the zip's name.
* **How much may it write.** One budget (``Budget``, ``--max-total-size``) counts every
  byte staged, as whole 4 KiB blocks, and every folder made for the files kept out (a
  block each): a zip of thousands of tiny entries in their own folders fills it as surely
  as one large file. The staged copies are then linked, not copied, into the course, so a
  run's disk use peaks at about the budget.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import signal
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..glue.safecsvexport import shown

LAYOUTS = ("canvas", "moodle-folders", "moodle-flat")
# Canvas keeps only letters and digits of the sortable name: no "_" in <lastfirst>
CANVAS = re.compile(r"^(?P<name>[^\W_]*?)(?P<late>_LATE)?_(?P<lms_id>[0-9]+)_(?P<submission>[0-9]+)_(?P<file>[^/]+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>.*)_(?P<lms_id>[0-9]+)_assignsubmission_file_?$")  # the first folder only
MOODLE_FLAT = re.compile(r"^(?P<name>[^/]*?)_(?P<lms_id>[0-9]+)_assignsubmission_file_(?P<file>[^/]+)$")
MOODLE_MARK = re.compile(r"_[0-9]+_assignsubmission_file_")  # twice in a flat name: whose it is cannot be told
ATTEMPT = re.compile(r"^(?P<stem>.+?)-(?P<attempt>[0-9]+)(?P<suffix>\.[^.]+)$")
LITTER = "__MACOSX"  # macOS's zip adds it; no LMS does
NAME_BYTES = 200  # a path component on disk; file systems allow 255
DEPTH = 8  # path components of a file kept: deeper folders are joined into its name
MiB = 1 << 20
CHUNK = MiB
BLOCK = 4096  # what a file costs on disk at least: the limits count it so
KILL_AT = "MAXPOOL_GRADER_TEST_KILL_AT"  # tests only: the step at which collect-lms kills itself


class LmsError(ValueError):
    """A zip or a setting that cannot be used, in words for the instructor."""


@dataclass
class ZipUpload:
    """One file of the zip, and what the LMS's part of its name says."""

    entry: zipfile.ZipInfo
    lms: str  # "canvas" or "moodle"
    name: str  # the student's name as the LMS wrote it
    lms_id: str
    file: str  # the path the student uploaded (their part of the name)
    attempt: int = 0  # Canvas: the n of "-n" (uploaded again)
    late: bool = False  # Canvas: "_LATE"
    student: str | None = None  # matched in the roster
    matched_by: str = ""  # how: "lms_id" (roster.csv), "recorded" (an earlier collection), "name"

    @property
    def time(self) -> dt.datetime:
        try:
            return dt.datetime(*self.entry.date_time)
        except ValueError:  # month 0 and the like: stage() skips the entry, sorting must not fail
            return dt.datetime(1980, 1, 1)


@dataclass(frozen=True)
class ZipLimits:
    """How much the zip may unpack to: per entry and in total (bytes), and how many files."""

    per_file: int = 50 * MiB
    total: int = 2048 * MiB  # every file counted as whole 4 KiB blocks, at least one
    files: int = 10_000  # entries of the zip: a zip with more is refused whole
    per_student: int = 100  # files of one student: more, and their folder is left as it was


def parse_size(text: str) -> int:
    """A size such as "50MiB", "50M", "64k" or "1000" (bytes); K, M and G are powers of 1024."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(?:([kmg])(?:i?b)?|b)?\s*", text, re.IGNORECASE)
    if not found:
        raise LmsError(f"{text!r} is not a size like 50MiB, 512KiB or 1000 (bytes)")
    return int(float(found[1]) * 1024 ** " kmg".index((found[2] or " ").lower()))


def shorten(component: str, limit: int = NAME_BYTES) -> str:
    """A path component cut to ``limit`` bytes of UTF-8, keeping its extension and adding a
    short hash of the whole, so two long names that start alike stay apart."""
    if len(component.encode()) <= limit:
        return component
    suffix = PurePosixPath(component).suffix
    suffix = suffix if len(suffix.encode()) <= 16 else ""
    tag = "~" + hashlib.sha256(component.encode()).hexdigest()[:8]
    room = limit - len(tag.encode()) - len(suffix.encode())
    stem = component[:len(component) - len(suffix)].encode()[:room].decode(errors="ignore")
    return stem + tag + suffix


def safe_parts(path: str) -> list[str]:
    """``path`` as safe relative path components: backslashes are separators, empty, ``.``
    and ``..`` components are dropped, hidden names get a leading ``_``, characters that
    are not printable become ``_``; past ``DEPTH`` components the rest are joined with
    ``_`` into the last one, and each component is shortened."""
    parts = []
    for part in re.split(r"[/\\]", path):
        if part in ("", ".", ".."):
            continue
        clean = "".join(ch if ch.isprintable() else "_" for ch in part)
        parts.append("_" + clean if clean.startswith(".") else clean)
    if len(parts) > DEPTH:
        parts[DEPTH - 1:] = ["_".join(parts[DEPTH - 1:])]
    return [shorten(part) for part in parts] or ["_"]


def files_of(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The files of the zip, without its folders."""
    return [entry for entry in archive.infolist() if not entry.is_dir()]


def litter(entry: zipfile.ZipInfo) -> bool:
    """Whether the entry is under the ``__MACOSX/`` folder that macOS's zip adds at the top
    (no LMS does: the zip was made again on a Mac). Further down, a student could have named
    a folder so."""
    return PurePosixPath(entry.filename).parts[:1] == (LITTER,)


def parse(entry: zipfile.ZipInfo, layout: str | None) -> ZipUpload | None:
    """What the LMS's part of an entry's name says in ``layout``, or None when the entry is
    not named that way."""
    name = entry.filename
    if litter(entry):
        return None
    if layout == "canvas" and (found := CANVAS.match(name)):
        file, attempt = found["file"], 0
        if again := ATTEMPT.match(file):
            file, attempt = again["stem"] + again["suffix"], int(again["attempt"])
        return ZipUpload(entry, "canvas", found["name"], found["lms_id"], file, attempt, bool(found["late"]))
    if layout == "moodle-folders" and "/" in name:
        folder, file = name.split("/", 1)
        if found := MOODLE_FOLDER.match(folder):
            return ZipUpload(entry, "moodle", found["name"], found["lms_id"], file)
    if layout == "moodle-flat" and not ambiguous(entry, layout) and (found := MOODLE_FLAT.match(name)):
        return ZipUpload(entry, "moodle", found["name"], found["lms_id"], found["file"])
    return None


def ambiguous(entry: zipfile.ZipInfo, layout: str | None) -> bool:
    """Whether a Moodle flat name holds Moodle's marker twice: the full name (which Moodle
    lets a student edit) and the file name are both the student's, so the LMS's own
    participant id cannot be told from one the student wrote."""
    return layout == "moodle-flat" and len(MOODLE_MARK.findall(entry.filename)) > 1


def detect_layout(entries: list[zipfile.ZipInfo], forced: str | None = None) -> str | None:
    """The layout of the whole zip: the one that explains the most entries (None: none
    does). A tie is refused: the students' own names could have made it."""
    if forced:
        return forced
    counts = sorted(((sum(parse(entry, layout) is not None for entry in entries), layout) for layout in LAYOUTS),
                    reverse=True)
    (best, layout), (second, other) = counts[0], counts[1]
    if best == 0:
        return None
    if best == second:
        raise LmsError(f"the zip's names fit {layout} and {other} equally well ({best} files each), so which LMS "
                       "made it cannot be told from its names: pass --lms canvas, --lms moodle-folders or "
                       "--lms moodle-flat")
    return layout


_REACHED: dict[str, int] = {}


def checkpoint(step: str) -> None:
    """Where the tests kill collect-lms (``kill -9`` of itself, as a power cut would): the
    environment variable names the step, ``step:N`` its N-th time (a step per student);
    outside the tests it is never set."""
    _REACHED[step] = _REACHED.get(step, 0) + 1
    if os.environ.get(KILL_AT) in (step, f"{step}:{_REACHED[step]}"):
        os.kill(os.getpid(), signal.SIGKILL)


class _TooLarge(Exception):
    pass


@dataclass
class Budget:
    """What a run may write (``--max-total-size``): staged bytes as whole blocks, and a block
    for each folder it makes."""

    total: int
    used: int = 0

    def left(self) -> int:
        return self.total - self.used

    def spend(self, size: int) -> bool:
        """Take ``size`` bytes of the budget if they are left (True), else nothing (False)."""
        if size > self.left():
            return False
        self.used += size
        return True

    def over(self) -> str:
        return f"the zip unpacks to more than {_size(self.total)} in all, its folders counted (--max-total-size)"


def stage(archive: zipfile.ZipFile, entries: list[zipfile.ZipInfo], folder: Path, limits: ZipLimits,
          budget: Budget | None = None) -> tuple[dict[zipfile.ZipInfo, Path], dict[zipfile.ZipInfo, str]]:
    """Copy each entry into ``folder`` (as 0, 1, 2 ...) with a bounded read, within
    ``budget`` (a new one of ``limits.total`` when not given). Returns the entries read,
    with their copies, and the entries skipped, with the reason."""
    read, skipped = {}, {}
    budget = budget or Budget(limits.total)
    if len(entries) > limits.files:
        raise LmsError(f"the zip holds {len(entries)} files, more than {limits.files} (--max-files): no LMS "
                       "download of one assignment has that many; nothing was collected")
    for number, entry in enumerate(entries):
        problem = _check(entry, limits)
        if problem:
            skipped[entry] = problem
            continue
        target = folder / str(number)
        cap = min(limits.per_file, budget.left() - BLOCK)  # room for the block a file costs at least
        try:
            if cap < 0:
                raise _TooLarge
            budget.spend(_on_disk(_bounded_copy(archive, entry, target, cap)))
            read[entry] = target
            checkpoint("staging")
        except _TooLarge:
            skipped[entry] = (f"unpacks to more than {_size(limits.per_file)} (--max-file-size)"
                              if cap == limits.per_file else
                              f"the zip unpacks to more than {_size(limits.total)} in all (--max-total-size)")
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as error:
            skipped[entry] = f"damaged: {shown(str(error))}"
        if entry in skipped:
            target.unlink(missing_ok=True)
    return read, skipped


def _check(entry: zipfile.ZipInfo, limits: ZipLimits) -> str | None:
    """Why an entry cannot be read, from its headers alone (None: try it)."""
    if entry.flag_bits & 0x1:
        return "encrypted (password-protected): it cannot be read"
    if entry.file_size > limits.per_file:
        return f"unpacks to {_size(entry.file_size)}, more than {_size(limits.per_file)} (--max-file-size)"
    try:
        dt.datetime(*entry.date_time)
    except ValueError:
        return f"damaged: its time {entry.date_time} is not a date"
    return None


def _bounded_copy(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, target: Path, cap: int) -> int:
    """Copy at most ``cap`` bytes of the entry (the CRC is checked at its end); raise
    _TooLarge past that, whatever the header says."""
    copied = 0
    with archive.open(entry) as source, open(target, "wb") as out:
        while chunk := source.read(min(CHUNK, cap + 1 - copied)):
            copied += len(chunk)
            if copied > cap:
                raise _TooLarge
            out.write(chunk)
    return copied


def _on_disk(size: int) -> int:
    """What a file of ``size`` bytes takes on disk: whole blocks, at least one."""
    return max(1, -(-size // BLOCK)) * BLOCK


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.4g} {unit}"
    return f"{count} bytes"
