"""The personal links of ``maxpool-grader serve`` and the sessions they open, revocable while
the service runs.

A link carries a student id and an HMAC of it, made with the course's secret
(``.maxpool-grader/serve/secret``) and the student's generation
(``.maxpool-grader/serve/generations.json``, 0 until revoked). ``tokens --revoke ID`` raises
one student's generation: their link and their session stop working, and the new link is
printed. ``tokens --rotate`` makes a new secret: every link and every session (the cookies
are signed with it too) stops working, and tokens.csv is written anew. The running service
reads both files again as soon as they change (``Credentials.refresh``: a ``stat`` per
request), so neither needs a restart. Files are replaced by rename, never rewritten in place.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

INSTRUCTOR = "\0instructor"  # the instructor's token is made for this id (no student can have it)
SECRET, GENERATIONS = "secret", "generations.json"


def service_secret(folder: Path) -> bytes:
    """The key the links and the cookies are signed with (made once, owner-only)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / SECRET
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def rotate_secret(folder: Path) -> bytes:
    """A new key in place of the old one: every link and session made so far stops working."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(32)
    _replace(folder / SECRET, key)
    return bytes.fromhex(key)


def revoke(folder: Path, student: str) -> int:
    """Raise ``student``'s generation (their link and session stop working); the new one."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / ".generations.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two revocations at once both count
        found = generations(folder)
        found[student] = found.get(student, 0) + 1
        _replace(folder / GENERATIONS, json.dumps(found, indent=1, sort_keys=True))
    return found[student]


def generations(folder: Path) -> dict[str, int]:
    try:
        found = json.loads((folder / GENERATIONS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(who): int(n) for who, n in found.items() if isinstance(n, int)} if isinstance(found, dict) else {}


def _replace(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def token_for(secret: bytes, who: str, generation: int = 0) -> str:
    """A personal token: the id it is for, and a signature only the service can make."""
    message = b"maxpool-serve\0" + who.encode() + (b"\0%d" % generation if generation else b"")
    signature = hmac.new(secret, message, hashlib.sha256).hexdigest()[:40]
    return base64.urlsafe_b64encode(who.encode()).decode().rstrip("=") + "." + signature


def who_has(secret: bytes, token: str, generation_of=lambda who: 0) -> str | None:
    """The id a token was made for, at its current generation, or None when it is not one of ours."""
    encoded, _, _signature = token.partition(".")
    try:
        who = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return who if hmac.compare_digest(token_for(secret, who, generation_of(who)), token) else None


class Credentials:
    """The secret and the generations as they are on disk now (module doc)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.secret = service_secret(folder)
        self._generations: dict[str, int] = generations(folder)
        self._seen = self._stamp()

    def _stamp(self) -> tuple:
        def of(name: str):
            try:
                found = os.stat(self.folder / name)
            except OSError:
                return None
            return found.st_ino, found.st_mtime_ns, found.st_size
        return of(SECRET), of(GENERATIONS)

    def refresh(self) -> bool:
        """Read the files again if they changed; True when the secret did (sessions end)."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        old, self._seen = self.secret, stamp
        self.secret, self._generations = service_secret(self.folder), generations(self.folder)
        return self.secret != old

    def generation(self, who: str) -> int:
        return self._generations.get(who, 0)

    def holder(self, token: str) -> str | None:
        """Who a link is for, if it is valid now."""
        return who_has(self.secret, token, self.generation)

    def session(self, who: str) -> str:
        """The value a session cookie holds: the id and its generation (the cookie's signature,
        made with the secret, ends it at a rotation)."""
        return f"{who}|{self.generation(who)}"

    def session_holder(self, value: str) -> str | None:
        who, _, generation = value.rpartition("|")
        return who if who and generation == str(self.generation(who)) else None
