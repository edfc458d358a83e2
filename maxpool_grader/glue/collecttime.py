"""When a submission collected from the exchange was made, as the file system saw it.

nbgrader's ``collect`` takes a submission's time from two things its student wrote: the
inbound folder's name and its ``timestamp.txt``. Both are the student's files in a folder the
student owns, so after the deadline they can be rewritten to any earlier time, and the
notebook beside them changed (jupyter/nbgrader#1104, open). What the student cannot set back
is a file's status-change time (ctime): the kernel sets it on every write, rename, chmod or
new entry, and only a change of the system clock moves it back. So a submission counts as
made no earlier than the last change of anything in its folder; a stated time later than
that is kept as it is, and one up to ``SLACK`` earlier too (``nbgrader submit`` stamps the
time, then copies the files).

The one case where this counts a submission later than it was made: the exchange copied to
another disk (or its files' mode changed) before ``collect``. Collect first, or move the
exchange with the instructor's collected copies instead (docs/security.md#collect-time).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .safecsvexport import shown
from .submission import read_timestamp, timestamp_text

SLACK = timedelta(seconds=120)  # submit's stamp to its last copied file, for a large submission


def last_change(folder: str) -> datetime | None:
    """The latest status change of ``folder`` and of everything in it (UTC, naive, as
    nbgrader's ``parse_utc`` gives), never following a link; None when it cannot be read."""
    latest, stack = None, [folder]
    while stack:
        path = stack.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        latest = info.st_ctime if latest is None else max(latest, info.st_ctime)
        if stat.S_ISDIR(info.st_mode):
            try:
                with os.scandir(path) as entries:
                    stack.extend(entry.path for entry in entries)
            except OSError:
                pass
    return None if latest is None else datetime.fromtimestamp(latest, timezone.utc).replace(tzinfo=None)


class TooBig(RuntimeError):
    """A submission folder larger than nbgrader's ``CourseDirectory.max_dir_size``."""


def regular_copy(src: str, dest: str, max_bytes: int, log) -> str:
    """``src``'s folders and regular files copied to ``dest`` (returned), never through a link:
    nbgrader's ``shutil.copytree`` follows one, so a link planted in an inbound folder would
    copy the instructor's file it names into ``submitted/`` (and from there into the
    student's sandbox), and a FIFO there stops the whole collect. Those are left out, each
    named in the log; a folder larger than ``max_bytes`` is refused, as nbgrader refuses it."""
    copied = 0
    os.mkdir(dest)
    for directory, folders, files in os.walk(src):  # os.walk never descends into a linked folder
        target = os.path.join(dest, os.path.relpath(directory, src))
        for name in folders + files:
            path = os.path.join(directory, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:  # gone since it was listed (its student is still changing it)
                continue
            if stat.S_ISDIR(mode):
                os.mkdir(os.path.join(target, name))
            elif not stat.S_ISREG(mode):
                log.warning("%s: not a regular file or folder (a link, FIFO or device): not collected", path)
                if name in folders:
                    folders.remove(name)
            else:
                copied += _copy_file(path, os.path.join(target, name), max_bytes - copied)
    return dest


def _copy_file(path: str, target: str, room: int) -> int:
    """One regular file, opened without following a link; its size."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        size = 0
        with open(target, "xb") as out:
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > room:
                    raise TooBig("larger than the limit for a submission folder")
                out.write(chunk)
        return size
    finally:
        os.close(fd)


def submitted_at(stated: datetime | None, changed: datetime | None) -> datetime | None:
    """The time a submission counts as made: what it states, unless its files were changed
    more than ``SLACK`` after that (or it states none), then their last change."""
    if changed is None:
        return stated
    if stated is None or changed - stated > SLACK:
        return changed
    return stated


def stamp_collected_submissions() -> None:
    """Patch nbgrader's ``ExchangeCollect``: each inbound folder's record (which of a
    student's submissions is the latest, or the last before the deadline) and the
    ``timestamp.txt`` copied into ``submitted/`` (the time autograde judges lateness by) say
    when the folder was last changed, where that is later than what the student wrote. A folder
    name whose time does not parse no longer stops the whole collect (nbgrader's ``parse_utc``
    raised for every student); that folder counts as made at its last change."""
    # the patched module, imported as install() applies the patch: after the version check
    from nbgrader.exchange.default import collect
    ExchangeCollect = collect.ExchangeCollect
    if getattr(ExchangeCollect._path_to_record, "_stamps", False):
        return
    copy, copy_files, start = ExchangeCollect.do_copy, ExchangeCollect.copy_files, ExchangeCollect.start

    def start_printing_safely(self):
        if not any(isinstance(each, _Printable) for each in self.log.filters):
            self.log.addFilter(_Printable())
        return start(self)

    def do_copy(self, src, dest):
        collected = False
        try:
            collected = _copy_without_links(self, src, dest, copy)
        finally:  # not collected (too large, or the copy failed): the one collected before, back
            if not collected:
                put_back(dest)
        if collected:
            shutil.rmtree(aside_of(dest), ignore_errors=True)
            _stamp(self, src, dest)
        else:
            self.not_collected.append(src)

    def copy_files_then_say(self):
        self.not_collected = []
        copy_files(self)
        if self.not_collected:
            self.fail(f"{len(self.not_collected)} submission folder(s) NOT collected (see above); every other "
                      "one is")

    _path_to_record._stamps = True
    ExchangeCollect._path_to_record = _path_to_record
    ExchangeCollect.do_copy = do_copy
    ExchangeCollect.copy_files = copy_files_then_say
    ExchangeCollect.start = start_printing_safely
    collect.shutil = SetAside()  # its only use: the collected submission, removed before the copy


class _Printable(logging.Filter):
    """Every line collect logs, printable: it names the exchange's folders, whose names the
    students chose (an escape there would drive the instructor's terminal, a newline forge a
    line of the log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = shown(record.getMessage()), ()
        return True


class SetAside:
    """``shutil`` for nbgrader's collect module, whose ``copy_files`` deletes a student's
    collected submission before it copies their newer one: that one is moved aside instead,
    and put back if the newer one is not collected (``do_copy`` above)."""

    def __getattr__(self, name: str):
        return getattr(shutil, name)

    @staticmethod
    def rmtree(path: str, *args, **kwargs) -> None:
        if os.path.lexists(aside_of(path)):  # a collect killed after its copy left it: older than path
            shutil.rmtree(aside_of(path))
        os.rename(path, aside_of(path))


def aside_of(dest: str) -> str:
    return os.path.join(os.path.dirname(dest), ".replaced-" + os.path.basename(dest))


def put_back(dest: str) -> None:
    """The collected submission moved aside, back in place of whatever is at ``dest``."""
    if os.path.isdir(aside_of(dest)):
        if os.path.lexists(dest):
            shutil.rmtree(dest)
        os.rename(aside_of(dest), dest)


def _parsed(text: str | None) -> datetime | None:
    from nbgrader.utils import parse_utc  # nbgrader's own reading; imported once the patch is installed
    try:
        return parse_utc(text) if text else None
    except (ValueError, OverflowError, TypeError):
        return None


def _path_to_record(collector, path: str) -> dict:
    """nbgrader's record of an inbound folder, with the time it counts as made."""
    name = os.path.basename(path)
    parts = name.rsplit("+", 3)
    if len(parts) < 3:
        collector.fail(f"Invalid filename: {name}")
    stated = _parsed(parts[2])
    if stated is None:
        collector.log.warning("%s: the time in its name does not parse; it counts as made when it was last "
                              "changed", path)
    when = submitted_at(stated, last_change(path)) or datetime.now(timezone.utc).replace(tzinfo=None)
    return {"username": parts[0], "filename": name, "timestamp": when}


def _copy_without_links(collector, src: str, dest: str, copy) -> bool:
    """nbgrader's copy (its include, ignore, size and group rules) from a copy of ``src`` without
    links; False, with an error naming it, for a folder too large (nbgrader stopped the collect
    of the whole class there)."""
    private = tempfile.mkdtemp(prefix=".collecting-", dir=os.path.dirname(dest))
    try:
        copy(collector, regular_copy(src, os.path.join(private, "submission"),
                                     1000 * collector.coursedir.max_dir_size, collector.log), dest)
        return True
    except TooBig as problem:
        collector.log.error("%s was NOT collected: %s (CourseDirectory.max_dir_size is %d KB); it stays in the "
                            "exchange, and the other submissions are collected", src, problem,
                            collector.coursedir.max_dir_size)
        return False
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _stamp(collector, src: str, dest: str) -> None:
    """The collected ``timestamp.txt`` says when the submission counts as made."""
    path = os.path.join(dest, "timestamp.txt")
    text = read_timestamp(path)
    stated = _parsed(text)
    when = submitted_at(stated, last_change(src))
    if when is not None and when != stated:
        if os.path.lexists(path):
            os.unlink(path)  # a link there is replaced, never written through
        with open(path, "x") as handle:
            handle.write(timestamp_text(when))
        collector.log.warning("%s: its timestamp.txt says %s, but its files were last changed at %s UTC; that "
                              "time counts (the student's own files cannot set it back)", src,
                              (text or "nothing")[:40], when)


def recover_interrupted_collects(submitted: Path, assignment: str) -> list[str]:
    """What a collect killed while it replaced a submission left set aside in ``submitted``
    (``<student>/.replaced-<assignment>``), in sentences for the instructor: where the
    student's folder is gone, the set-aside submission is put back in its place (and the next
    ``collect --update`` brings the newer one again); where a copy is there, both are left."""
    said = []
    for aside in sorted(submitted.glob(f"*/.replaced-{assignment}")):
        dest = aside.with_name(assignment)
        if os.path.lexists(dest):
            said.append(f"{aside}: a collect was stopped while it replaced this submission; {dest} may be "
                        f"incomplete: run 'nbgrader collect --update {assignment}' again")
        else:
            put_back(str(dest))
            said.append(f"{dest}: a collect was stopped while it replaced this submission; the one it had "
                        f"collected before is put back (run 'nbgrader collect --update {assignment}' for the newer)")
    return said
