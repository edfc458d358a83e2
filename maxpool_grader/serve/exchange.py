"""The exchange way of ``maxpool-grader serve``: a student's ``nbgrader submit`` lands in the
exchange's inbound folder, which every student can write to. The service takes each new
submission once, and only when its folder, notebook and secret belong to the user the
submission names (nbgrader's own ``collect`` only warns, "cheating attempt?"); it never
follows a link. A submission made in another's name is the forger's record ("forged by X,
claiming Y"), never the named student's, and an account's forgeries are limited per hour
(``c.Serve.forgeries_per_hour``). A refusal of a genuine submission is released as its
feedback, where ``fetch_feedback`` finds it."""

from __future__ import annotations

import os
import pwd
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nbgrader.utils import notebook_hash

from ..course.directory import read_course_config, say
from ..names import STUDENT_ID
from .pages import refusal_page
from .policy import NOT_ON_ROSTER, Policy, Refused
from .queue import Queue


class ExchangeWatcher:
    """The exchange way: the submissions of the ``inbound`` folder, checked by ``policy`` (its
    assignment, roster, limits and notebook checks) and added to ``queue``; ``events`` is the
    instructor's list of what to know (a forged submission), ``on_queued`` is called after an
    attempt is queued. The feedback it releases goes to the exchange's ``feedback`` folder,
    beside ``inbound``."""

    def __init__(self, inbound: Path, *, policy: Policy, queue: Queue, events: list[str],
                 on_queued: Callable[[], None]):
        self.inbound, self.outbound = inbound, inbound.parent / "feedback"
        self.policy, self.assignment, self.queue = policy, policy.assignment, queue
        self.events, self.on_queued = events, on_queued
        self.first_seen: dict[str, float] = {}  # a folder's name -> when the scan saw it without its secret
        self.ignored: set[str] = set()  # forged folders past an account's hourly limit: not read again
        self.flooding: set[str] = set()  # the accounts past it (the instructor is told once)

    def scan(self) -> None:
        """Take every new submission of the exchange's inbound folder once."""
        inbound = self.inbound
        if not inbound.is_dir():
            return
        try:
            names = sorted(os.listdir(inbound))
        except OSError:
            return
        for name in names:
            parts = name.split("+")
            if len(parts) < 3 or parts[1] != self.assignment or name in self.ignored or self.queue.seen_source(name):
                continue  # another assignment's (plain nbgrader collect takes those) or taken already
            self.first_seen.setdefault(name, time.time())
            if not (inbound / name / "submission_secret.txt").exists() and time.time() - self.first_seen[name] < 30:
                continue  # nbgrader submit writes the secret last: still being copied
            self._take(inbound, name, parts[0])
            self.first_seen.pop(name, None)

    def _take(self, inbound: Path, name: str, student: str) -> None:
        try:
            content, secret, note, stems = self._read_submission(inbound, name, student)
        except Gone:
            return  # taken back before it was read: nothing was submitted
        except Forged as forged:
            self._forged(name, forged)
            return
        except Refused as refusal:
            self.queue.add(student, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            self.events.append(f"exchange submission {name!r} refused: {refusal}")
            print(f"serve: exchange submission {name!r} refused: {refusal}", file=sys.stderr, flush=True)
            if getattr(refusal, "secret", ""):  # the student's own submission: they read why
                self.release_page(refusal.secret, refusal_page(self.assignment, str(refusal)), refusal.stems)
            return
        try:
            if not self.policy.is_student(student):
                raise Refused(NOT_ON_ROSTER, 403)
            if isinstance(content, TooLarge):
                raise self.policy.too_large(content.size, way="exchange")
            content = self.policy.check_notebook(content, way="exchange")
            self.policy.admit(student, way="exchange")
        except Refused as refusal:
            self.queue.add(student, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            if secret:
                self.release_page(secret, refusal_page(self.assignment, str(refusal)), stems)
            return
        files = {".secret": secret.encode()} if secret else {}
        if stems != [self.assignment]:  # Fetch Feedback looks for the page under the notebook's own name
            files[".name"] = stems[0].encode()
        attempt = self.queue.add(student, self.assignment, "exchange", content, source=name, files=files)
        if note:
            self.events.append(f"exchange submission {name!r} (attempt {attempt}): {note}")
            say(f"serve: {student}'s exchange submission: {note}")
        self.on_queued()

    def _forged(self, name: str, forged: Forged) -> None:
        """A submission made in another student's name: the forger's record, shown to the
        instructor as "forged by X, claiming Y", up to ``c.Serve.forgeries_per_hour`` of one
        account in an hour; past that, left unread and counted once for the instructor."""
        limit = self.policy.settings.forgeries_per_hour
        if self.queue.forged_since(forged.forger, time.time() - 3600) >= limit:
            self.ignored.add(name)
            if forged.forger not in self.flooding:
                self.flooding.add(forged.forger)
                self.events.append(f"{forged.forger} made more than {limit} forged submissions in an hour: the "
                                   "service reads no more of them this hour (they stay in the exchange's inbound)")
            return
        self.flooding.discard(forged.forger)
        said = f"forged by {forged.forger}, claiming {forged.claimed}: {forged}"
        self.queue.add(forged.forger, self.assignment, "exchange", None, status="forged", message=said, source=name,
                       claimed=forged.claimed)
        self.events.append(f"exchange submission {name!r} {said}")
        print(f"serve: exchange submission {name!r} {said}", file=sys.stderr, flush=True)

    def _read_submission(self, inbound: Path, name: str, student: str) -> tuple[bytes | TooLarge, str, str, list]:
        """The notebook and secret of an inbound folder, read only when the folder and both files
        belong to the user the folder's name claims; never through a link. Whoever made the
        folder (or planted a file in it) in another's name is ``Forged``."""
        directory = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY)
        try:
            try:
                made_by = os.lstat(name, dir_fd=directory).st_uid
            except OSError:
                raise Gone from None
            folder = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
        except FileNotFoundError:
            raise Gone from None
        except OSError:  # a link, or a file: refused, as its maker's
            _check_claim(made_by, student, "the link or file in its place")
            raise Refused("not a folder (a link, or a file)") from None
        finally:
            os.close(directory)
        try:
            expected = _check_claim(os.fstat(folder).st_uid, student, "its folder")
            try:
                secret = _read_owned(folder, "submission_secret.txt", expected, 1024).decode().strip()
            except (Refused, TooLarge, UnicodeDecodeError):
                secret = ""
            if secret and not re.fullmatch(r"[0-9a-f]{16,256}", secret):
                secret = ""
            names = os.listdir(folder)
            stems = [name[:-len(".ipynb")] for name in sorted(names) if name.endswith(".ipynb")]
            try:
                notebook, note = notebook_of(names, self.assignment)
                content = _read_owned(folder, notebook, expected, self.policy.settings.max_upload * 1024)
            except TooLarge as too_large:
                content = too_large
            except Refused as refusal:
                refusal.secret, refusal.stems = secret, stems
                raise
            return content, secret, note, [notebook[:-len(".ipynb")]]
        finally:
            os.close(folder)

    def release_page(self, secret: str, page: str, stems=()) -> None:
        """A page of ours where ``fetch_feedback`` finds the feedback of the submission with this
        secret: it looks for one per notebook of the submission, by the notebook's own name."""
        self.outbound.mkdir(mode=0o755, exist_ok=True)
        for stem in dict.fromkeys([self.assignment, *stems]):
            target = self.outbound / f"{notebook_hash(secret=secret, notebook_id=stem)}.html"
            temporary = target.with_suffix(".tmp")
            temporary.write_text(page)
            temporary.chmod(0o644)
            temporary.replace(target)

    def release_graded(self, attempt_id: int, released: bool, page: Callable[[], str]) -> None:
        """A graded attempt's feedback where Fetch Feedback finds it: ``page()`` unless the
        grading job ``released`` nbgrader's own, and under the notebook's own name. A failure
        is said; the grade stands (the service's page has it)."""
        try:
            secret = self.queue.secret_path(attempt_id)
            if not released and secret.exists():
                self.release_page(secret.read_text().strip(), page())
            self.release_under_its_name(attempt_id)
        except OSError as problem:
            say(f"serve: the feedback of attempt {attempt_id} could not be put in the exchange: {problem}")

    def release_under_its_name(self, attempt_id: int) -> None:
        """The feedback released for a notebook the student named otherwise (``-Copy1``), also where
        Fetch Feedback looks for it: under that name."""
        stem, secret = self.queue.upload_path(attempt_id).with_suffix(".name"), self.queue.secret_path(attempt_id)
        if not (stem.exists() and secret.exists()):
            return
        key = secret.read_text().strip()
        released = self.outbound / f"{notebook_hash(secret=key, notebook_id=self.assignment)}.html"
        if released.exists():
            self.release_page(key, released.read_text(), [stem.read_text()])



def notebook_of(names: list[str], assignment: str) -> tuple[str, str]:
    """The notebook to grade among a submission's files, and a note when it is not named as
    released: JupyterLab's copy of it (``-Copy1``) or a browser's second download (`` (1)``)
    is taken when it is the only notebook; anything else is refused with what to do."""
    expected = f"{assignment}.ipynb"
    notebooks = sorted(name for name in names if name.endswith(".ipynb"))
    if expected in notebooks:
        return expected, ""
    copies = [name for name in notebooks if re.fullmatch(rf"{re.escape(assignment)}(-Copy\d+| \(\d+\))\.ipynb", name)]
    if len(notebooks) == 1 and copies:
        return copies[0], f"graded {copies[0]} as {expected} (its only notebook)"
    found = ", ".join(notebooks[:5]) if notebooks else "no notebook at all"
    raise Refused(f"Your submission has no notebook named {expected} ({found}). Rename your notebook to "
                  f"{expected} in JupyterLab's file browser (keep it in the {assignment} folder), then submit again. "
                  "This submission does not count against your attempts.")


class Forged(Exception):
    """A submission that names a student other than the account that made it (or planted a
    file in it): ``forger``'s, ``claimed`` the named id; the reason is its text."""

    def __init__(self, forger: str, claimed: str, reason: str):
        super().__init__(reason)
        self.forger, self.claimed = forger, claimed


class TooLarge(Exception):
    """A notebook above the limit, by its size on disk (``size``, bytes): never read."""

    def __init__(self, size: int):
        super().__init__(f"{size} bytes")
        self.size = size


class Gone(Exception):
    """A folder of the inbound that was there when listed and is gone when opened."""


def _check_claim(owner: int, claimed: str, what: str) -> int:
    """The uid of the student a submission claims to be from, when ``owner`` (of ``what``) is
    that student; else ``Forged``, naming the account that made it."""
    try:
        expected = pwd.getpwnam(claimed).pw_uid if STUDENT_ID.fullmatch(claimed) else None
    except KeyError:
        expected = None
    if owner != expected:
        known = "" if expected is not None else f" (no account of this machine is {claimed!r})"
        raise Forged(_user(owner), claimed, f"{what} belongs to {_user(owner)}, not to {claimed}{known}: a "
                                           "submission made in another student's name (cheating attempt?)")
    return expected


def _read_owned(folder: int, name: str, uid: int, limit: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        raise Refused(f"no {name} in it (or a link)") from None
    try:
        found = os.fstat(fd)
        if found.st_uid != uid:
            raise Forged(_user(found.st_uid), _user(uid), f"{name} in it belongs to {_user(found.st_uid)}, not "
                                                          f"to {_user(uid)}, whose submission it claims to be")
        if not stat.S_ISREG(found.st_mode):
            raise Refused(f"{name} is not a plain file")
        if found.st_size > limit:  # refused by its real size, read no further
            raise TooLarge(found.st_size)
        limit += 1  # a file that grows while it is read is still seen as too large
        data = os.read(fd, limit)
        while len(data) < limit:
            more = os.read(fd, limit - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


def exchange_inbound(course: Path) -> Path | None:
    config = read_course_config(course)
    root = config.Exchange.get("root") or "/srv/nbgrader/exchange"
    course_id = config.CourseDirectory.get("course_id") or ""
    return Path(root) / course_id / "inbound" if course_id else None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"
