"""The exchange way of ``maxpool-grader serve``: a student's ``nbgrader submit`` lands in the
exchange's inbound folder, which every student can write to. The service takes each new
submission once, and only when its folder, notebook and secret belong to the user the
submission names (nbgrader's own ``collect`` only warns, "cheating attempt?"); it never
follows a link. A refusal of a genuine submission is released as its feedback, where
``fetch_feedback`` finds it."""

from __future__ import annotations

import os
import pwd
import re
import stat
import sys
import time
from pathlib import Path

from .serve_pages import refusal_page
from .serve_policy import STUDENT_ID, Refused


class ExchangeWay:
    """The exchange watcher of the ``Service`` (serve.py), which holds ``queue``, ``settings``,
    ``assignment``, ``exchange_inbound``, ``first_seen`` and ``events``."""

    def scan_exchange(self) -> None:
        """Take every new submission of the exchange's inbound folder once."""
        inbound = self.exchange_inbound
        if inbound is None or not inbound.is_dir():
            return
        try:
            names = sorted(os.listdir(inbound))
        except OSError:
            return
        for name in names:
            parts = name.split("+")
            if len(parts) < 3 or parts[1] != self.assignment or self.queue.seen_source(name):
                continue  # another assignment's (plain nbgrader collect takes those) or taken already
            self.first_seen.setdefault(name, time.time())
            if not (inbound / name / "submission_secret.txt").exists() and time.time() - self.first_seen[name] < 30:
                continue  # nbgrader submit writes the secret last: still being copied
            self._take(inbound, name, parts[0])
            self.first_seen.pop(name, None)

    def _take(self, inbound: Path, name: str, student: str) -> None:
        try:
            content, secret = self._read_submission(inbound, name, student)
        except Refused as refusal:
            who = student if STUDENT_ID.fullmatch(student) else "?"
            self.queue.add(who, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            self.events.append(f"exchange submission {name!r} refused: {refusal}")
            print(f"serve: exchange submission {name!r} refused: {refusal}", file=sys.stderr, flush=True)
            return
        try:
            self.check_notebook(content)
            self.admit(student)
        except Refused as refusal:
            self.queue.add(student, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            if secret:
                self._release_page(secret, refusal_page(self.assignment, str(refusal)))
            return
        files = {".secret": secret.encode()} if secret else {}
        self.queue.add(student, self.assignment, "exchange", content, source=name, files=files)
        self.poke()

    def _read_submission(self, inbound: Path, name: str, student: str) -> tuple[bytes, str]:
        """The notebook and secret of an inbound folder, read only when the folder and both files
        belong to the user the folder's name claims; never through a link."""
        if not STUDENT_ID.fullmatch(student):
            raise Refused(f"{student!r} is not a student id this service takes")
        try:
            expected = pwd.getpwnam(student).pw_uid
        except KeyError:
            raise Refused(f"claims to be from {student!r}, who has no account on this machine") from None
        try:
            folder = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=os.open(inbound, os.O_RDONLY))
        except OSError:
            raise Refused("not a folder (a link, or gone)") from None
        try:
            owner = os.fstat(folder).st_uid
            if owner != expected:
                raise Refused(f"claims to be {student}'s submission but belongs to {_user(owner)}: a submission "
                              "made in another student's name (cheating attempt?)")
            content = _read_owned(folder, f"{self.assignment}.ipynb", expected, self.settings.max_upload * 1024 + 1)
            try:
                secret = _read_owned(folder, "submission_secret.txt", expected, 1024).decode().strip()
            except Refused:
                secret = ""
            if secret and not re.fullmatch(r"[0-9a-f]{16,256}", secret):
                secret = ""
            return content, secret
        finally:
            os.close(folder)

    def _release_page(self, secret: str, page: str) -> None:
        """A page of ours where ``fetch_feedback`` finds the feedback of the submission with this secret."""
        from nbgrader.utils import notebook_hash
        outbound = self.exchange_inbound.parent / "feedback"
        outbound.mkdir(mode=0o755, exist_ok=True)
        target = outbound / f"{notebook_hash(secret=secret, notebook_id=self.assignment)}.html"
        temporary = target.with_suffix(".tmp")
        temporary.write_text(page)
        temporary.chmod(0o644)
        temporary.replace(target)



def _read_owned(folder: int, name: str, uid: int, limit: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        raise Refused(f"no {name} in it (or a link)") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise Refused(f"{name} is not a plain file")
        if found.st_uid != uid:
            raise Refused(f"{name} in it belongs to {_user(found.st_uid)}, not to the student it names")
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
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    root = config.Exchange.get("root") or "/srv/nbgrader/exchange"
    course_id = config.CourseDirectory.get("course_id") or ""
    return Path(root) / course_id / "inbound" if course_id else None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"
