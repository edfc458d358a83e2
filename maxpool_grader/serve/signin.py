"""Signing in to ``maxpool-grader serve``: who a request is, decided here and only here.

* Personal links. A link carries a student id and an HMAC of it, made with the course's
  secret (``.maxpool-grader/serve/secret``) and the student's generation
  (``.maxpool-grader/serve/generations.json``, 0 until revoked). ``tokens --revoke ID``
  gives one student a generation never used before: their link and their session stop
  working, and the new link is printed. ``tokens --restore ID`` undoes their last revocation:
  the generation before it is theirs again (the link they had works again, the one given at
  the revocation no longer does); generations are never reused, so a later revocation
  brings no older link back. ``tokens --rotate`` makes a new secret: every link and every session (the
  cookies are signed with it too) stops working, and tokens.csv is written anew. The running
  service reads both files again as soon as they change (``Credentials.refresh``: a ``stat``
  per request), so neither needs a restart. Files are replaced by rename, never rewritten in
  place.
* Sessions. A link, or the Hub, leads to a signed, HttpOnly session cookie (``SignIn``):
  the student's holds their id and generation; the instructor's says yes. Every request
  reads it again, against the roster and the current generations.
* JupyterHub (``serve --hub-login``). The service is registered as a Hub service, and a
  student signs in with their Hub account through the Hub's OAuth (``HubOAuth``, with PKCE).
  The Hub user name is the student id: the Hub's identity decides who the student is, never
  a name inside the upload, and only a student of the roster gets the page
  (``c.Serve.hub_instructors`` get the instructor's live view instead). Once the Hub has
  said who it is, the Hub's token is not kept: the browser holds the service's own session
  cookie, as after a personal link.
* LTI 1.3 (``c.Lti``). Once pylti1p3 has checked a launch's token (serve/lti_web.py), the
  LMS user's ``sub`` decides who it is (``SignIn.lti_user``): the roster student it was
  recorded as (``.maxpool-grader/lti.json``, by Names and Roles), never a name in the launch.
  A user the roster does not know gets nothing; an instructor's role leads to the live view,
  unless that user is recorded as a student of the roster (a learner who claims more). The
  student then holds the same session cookie as after a personal link.

The web layer (serve/handler.py, web.py, hub.py) reads and sets the cookies these
decisions name; this module knows nothing of tornado's handlers. It is past 300 lines because
sign-in is decided here and nowhere else (tests/test_layout.py checks it): the links, their
generations, the sessions and the Hub's client read best side by side.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tornado.httputil import url_concat

from ..course.files import replace_file

if TYPE_CHECKING:  # annotations only: jupyterhub is imported where --hub-login needs it
    from jupyterhub.services.auth import HubOAuth

INSTRUCTOR = "\0instructor"  # the instructor's token is made for this id (no student can have it)
SECRET, GENERATIONS = "secret", "generations.json"
TOKENS_FILE = "tokens.csv"  # tokens' CSV of personal links, in the course folder (git-ignored)
INSTRUCTOR_LINK = "instructor-link"  # in the service's folder, .maxpool-grader/serve/, written by serve and tokens
# What grants access, relative to the course: every student's link, the key links and cookies are
# signed with, the instructor's link and the LTI tool's private key (lti/tool.py's default). Each is
# written owner-only; doctor says when git tracks one, or would offer one for the next commit.
ACCESS_FILES = (TOKENS_FILE, f".maxpool-grader/serve/{SECRET}", f".maxpool-grader/serve/{INSTRUCTOR_LINK}",
                ".maxpool-grader/lti/tool-key.pem")
STUDENT_COOKIE, INSTRUCTOR_COOKIE = "maxpool_student", "maxpool_instructor"
COOKIE_DAYS = {STUDENT_COOKIE: 120, INSTRUCTOR_COOKIE: 30}  # the oldest signature each cookie is taken with
INSTRUCTOR_SIGNED_IN = "yes"  # the instructor's cookie's value (the cookie's signature is what counts)
HUB_ENVIRONMENT = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID")


# ------------------------------------------------------------------ the secret and the generations

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
    replace_file(folder / SECRET, key)
    return bytes.fromhex(key)


class NotRevoked(ValueError):
    """``tokens --restore`` of a student whose link was never revoked (or is restored already)."""


def revoke(folder: Path, student: str) -> int:
    """Give ``student`` a generation never used before (their link and session stop working);
    the new one."""
    with _ledger(folder) as ledger:
        entry = ledger.setdefault(student, {"current": 0, "highest": 0, "before": []})
        entry["before"].append(entry["current"])
        entry["current"] = entry["highest"] = entry["highest"] + 1
        return entry["current"]


def restore(folder: Path, student: str) -> int:
    """Undo ``student``'s last revocation: the generation before it is theirs again; it."""
    with _ledger(folder) as ledger:
        entry = ledger.get(student)
        if not entry or not entry["before"]:
            raise NotRevoked(f"{student}'s link was never revoked (or every revocation is undone already)")
        entry["current"] = entry["before"].pop()
        return entry["current"]


@contextlib.contextmanager
def _ledger(folder: Path):
    """generations.json as {student: {current, highest, before}}, changed under a lock and
    written back by rename when the block ends without an error."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / ".generations.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two revocations at once both count
        ledger = _read_ledger(folder)
        yield ledger
        replace_file(folder / GENERATIONS, json.dumps(ledger, indent=1, sort_keys=True))


def _read_ledger(folder: Path) -> dict[str, dict]:
    try:
        found = json.loads((folder / GENERATIONS).read_text())
    except (OSError, ValueError):
        return {}
    ledger = {}
    for who, entry in (found.items() if isinstance(found, dict) else ()):
        if isinstance(entry, int):  # the first format: the current generation alone
            entry = {"current": entry, "highest": entry, "before": list(range(entry))}
        if isinstance(entry, dict) and isinstance(entry.get("current"), int):
            before = [n for n in entry.get("before", []) if isinstance(n, int)]
            ledger[str(who)] = {"current": entry["current"], "before": before,
                                "highest": max([entry.get("highest", 0), entry["current"], *before])}
    return ledger


def revocations(folder: Path) -> dict[str, int]:
    """How many revocations of each student ``tokens --restore`` can undo."""
    return {who: len(entry["before"]) for who, entry in _read_ledger(folder).items()}


def generations(folder: Path) -> dict[str, int]:
    """Each revoked student's generation now."""
    return {who: entry["current"] for who, entry in _read_ledger(folder).items()}


# ------------------------------------------------------------------ the links

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


def instructor_link(secret: bytes, base_url: str) -> str:
    """The instructor's link to the live view (``serve`` writes it when it starts, ``tokens --rotate`` anew)."""
    return f"{base_url.rstrip('/')}/instructor/login/{token_for(secret, INSTRUCTOR)}"


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


# ------------------------------------------------------------------ the sessions

def page_prefix(base_url: str) -> str:
    """The path every page of the service is under, and every cookie's: --base-url's, ending in '/'."""
    prefix = urlparse(base_url).path or "/"
    return prefix if prefix.endswith("/") else prefix + "/"


def cookie_flags(secure: bool, prefix: str) -> dict:
    """How every session cookie is set: out of the page's scripts' reach, not sent by another
    site's forms, Secure over HTTPS, for the service's pages only, gone with the browser."""
    return {"httponly": True, "samesite": "Lax", "secure": secure, "path": prefix, "expires_days": None}


class SignIn:
    """Who a request is: the holder of a link, of a session cookie, or of a Hub account. The
    student is asked for on the roster (``is_student``) at every request, so removing a row
    ends their access at once. The web layer gives the cookies' values as their signatures
    let them through (None: no cookie, or one the secret did not sign)."""

    def __init__(self, folder: Path, *, is_student: Callable[[str], bool], hub_instructors: Iterable[str] = ()):
        self.credentials = Credentials(folder)  # read again when tokens revokes or rotates
        self.is_student = is_student
        self.hub_instructors = frozenset(hub_instructors)

    @property
    def cookie_secret(self) -> str:
        """The key the web layer signs the cookies with."""
        return self.credentials.secret.hex()

    def refresh(self) -> bool:
        """The links and sessions as they are now (``tokens --revoke``/``--rotate`` while the
        service runs); True when the secret changed, so every session cookie so far ends."""
        return self.credentials.refresh()

    def session_holder(self, cookie: bytes | None) -> str | None:
        """Whose valid session a student cookie holds, on the roster or not."""
        return self.credentials.session_holder(cookie.decode()) if cookie else None

    def student(self, cookie: bytes | None) -> str | None:
        """The signed-in student of a student cookie, while they are on the roster."""
        who = self.session_holder(cookie)
        return who if who is not None and self.is_student(who) else None

    def is_instructor(self, cookie: bytes | None) -> bool:
        return cookie == INSTRUCTOR_SIGNED_IN.encode()

    def student_session(self, student: str) -> str:
        """The value of a student's cookie: the session of their generation now."""
        return self.credentials.session(student)

    def link(self, token: str) -> tuple[str, str]:
        """Who a personal link is for, now: ("instructor", "") for the instructor's link,
        ("student", id) for a student of the roster, ("stranger", id) for an id that is not on
        it (any more), ("invalid", "") for a token the service did not make or has revoked."""
        who = self.credentials.holder(token)
        if who is None:
            return "invalid", ""
        if who == INSTRUCTOR:
            return "instructor", ""
        return ("student" if self.is_student(who) else "stranger"), who

    def hub_user(self, model: dict | None) -> tuple[str, str]:
        """Who a Hub user is here, by the Hub user's name: ("instructor", name) for one of
        ``c.Serve.hub_instructors``, ("student", name) for a student of the roster,
        ("stranger", name) for any other user, and ("refused", "") when the Hub's own rules
        refused them (``model`` None) or it is not a user (a service's token, say)."""
        if model is None or model.get("kind", "user") != "user":
            return "refused", ""
        name = model["name"]
        if name in self.hub_instructors:
            return "instructor", name
        return ("student" if self.is_student(name) else "stranger"), name


    def lti_user(self, sub: str, *, teaching: bool, recorded_as: str | None) -> tuple[str, str]:
        """Who a checked LTI launch is: ("instructor", "") for a teaching role (instructor,
        teaching assistant, administrator) of a user not recorded as a student here;
        ("forged", student) for such a role claimed by a user recorded as a roster student;
        ("student", id) for the roster student ``sub`` was recorded as (``recorded_as``);
        ("stranger", id or "") for anyone else, or a recorded student off the roster now."""
        if teaching:
            return ("forged", recorded_as) if recorded_as and self.is_student(recorded_as) else ("instructor", "")
        if recorded_as is None:
            return "stranger", ""
        return ("student" if self.is_student(recorded_as) else "stranger"), recorded_as


# ------------------------------------------------------------------ JupyterHub's OAuth

class HubSetupError(Exception):
    """The service cannot sign students in with the Hub: what is missing, and the fix."""


def hub_address() -> tuple[str, int, str]:
    """The address, port and public base URL the Hub gave this service (a managed service with
    a ``url``): JUPYTERHUB_SERVICE_URL, JUPYTERHUB_SERVICE_PREFIX, JUPYTERHUB_PUBLIC_URL."""
    listen = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "")
    if not (listen.hostname and listen.port and prefix):
        raise HubSetupError("--hub-login without --port and --base-url needs the address the Hub gives a managed "
                            "service: give the service a \"url\" in c.JupyterHub.services (e.g. "
                            "\"http://127.0.0.1:10101\"), or pass --port and --base-url")
    public = urlparse(os.environ.get("JUPYTERHUB_PUBLIC_URL", ""))
    host = f"{public.scheme}://{public.netloc}" if public.netloc else ""
    return listen.hostname, listen.port, host + prefix


def hub_auth(base_url: str) -> HubOAuth:
    """The Hub's OAuth client of this service (its pages under ``base_url``), from the
    environment the Hub gives it."""
    # jupyterhub is heavy and only --hub-login needs it: imported here, never at the top
    from jupyterhub.services.auth import HubOAuth
    prefix = page_prefix(base_url)
    missing = [name for name in HUB_ENVIRONMENT if not os.environ.get(name)]
    if missing:
        raise HubSetupError(f"--hub-login needs the environment JupyterHub gives a service ({', '.join(missing)} "
                            "missing): register the service in jupyterhub_config.py (docs/serve.md#jupyterhub)")
    auth = HubOAuth(base_url=prefix, cache_max_age=60)
    callback = urlparse(auth.oauth_redirect_uri).path
    if callback != prefix + "oauth_callback":
        raise HubSetupError(f"the Hub sends students back to {callback}, but the service's pages are under {prefix}: "
                            f"set --base-url to the service's address on the Hub ({callback[:-len('oauth_callback')]})")
    return auth


def hub_login_url(auth, handler, next_url: str) -> str:
    """Where a browser goes to sign in with the Hub: its OAuth authorization, with the state
    (which HubOAuth keeps in a cookie it sets on ``handler``) and a PKCE challenge."""
    verifier, challenge, method = auth.generate_pkce_code_challenge()
    state = auth.set_state_cookie(handler, next_url=next_url, code_verifier=verifier)
    return url_concat(auth.login_url, {"state": state, "code_challenge": challenge, "code_challenge_method": method})
