"""LTI 1.3 launches into ``maxpool-grader serve``: pylti1p3's tool, adapted to tornado.

pylti1p3 ships adapters for Django and Flask; these are tornado's: its ``Request`` (the
handler's parameters), ``CookieService`` (the OIDC state's short cookie, on the service's
path), ``SessionService`` over ``LaunchStore`` (serve/lti_store.py: nonces and states in
SQLite, each taken once, so a launch replayed is refused after a restart too), ``Redirect``,
``OIDCLogin`` and ``MessageLaunch``. Every check of the token is the library's: the signature
against the platform's key set, ``iss``, ``aud`` (its client id), the deployment, ``exp``/``iat``,
the nonce, the state, the message type and the version. What it leaves to the tool is done
here: ``azp`` is the client id when given (or when ``aud`` names several); ``exp`` is there;
only a resource link launch is taken (never Deep Linking or Submission Review); a login in
the LMS's frame goes on in a new tab (serve/lti_frame.py); the platform's key set is kept
and read again when a launch names a key it does not have (rotated keys), at most once a
minute per key set (``KEY_SET_EVERY``), and only for a launch whose state and nonce this
service gave out (checked first); every read has serve/lti.py's timeout, and the whole check
runs in a thread, off the event loop, so a key set that hangs stalls no page; the library's
copy of a launch is never stored: nothing of a launch is kept before the service takes it.

A checked launch is then taken only from the course the service is bound to (lti_store's
``other_course``: the first instructor launch binds it); only then are its addresses kept. Who the launch is, is
serve/signin.py's decision (``SignIn.lti_user``), from the launch's course roles alone
(serve/lti.py's ``teaching``: an institution or system role never counts). Every refusal is
a page with a sentence, recorded for the instructor's live view.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from urllib.parse import parse_qs, urlparse

from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService

from .handler import Handler
from .lti import LtiSetupError, public_jwks, teaching, timed_session, tool_conf, urls
from .lti_frame import framed, new_tab_page
from .lti_refusals import MESSAGE_TYPE, NOT_BOUND, RESOURCE_LINK, header_of, refusal_sentence
from .lti_store import LaunchStore, course_of, described, other_course, student_of
from .policy import NOT_ON_ROSTER, Refused

STATE_SECONDS = 600
KEY_SET_EVERY = 60.0  # seconds: a platform's key set is read at most once in this time

class TornadoRequest(Request):
    def __init__(self, handler: Handler):
        self.handler = handler

    @property
    def session(self):
        return None

    def is_secure(self) -> bool:
        return self.handler.request.protocol == "https" or bool(self.handler.application.settings["secure"])

    def get_param(self, key: str) -> str:
        return self.handler.get_argument(key, "")


class TornadoCookies(CookieService):
    """The OIDC state's cookie: HttpOnly, on the service's path; SameSite=None over HTTPS (the
    launch is a form the LMS's page posts), Lax otherwise."""

    def __init__(self, handler: Handler):
        self.handler = handler

    def get_cookie(self, name: str):
        return self.handler.get_cookie(f"{self._cookie_prefix}-{name}")

    def set_cookie(self, name: str, value, exp=3600):
        secure = TornadoRequest(self.handler).is_secure()
        self.handler.set_cookie(f"{self._cookie_prefix}-{name}", str(value), path=self.handler.prefix, httponly=True,
                                secure=secure, samesite="None" if secure else "Lax", max_age=exp)


class StoredData(LaunchDataStorage):
    """pylti1p3's launch data in the service's LaunchStore (no session cookie of its own)."""

    _session_cookie_name = None

    def __init__(self, store: LaunchStore):
        self.store = store

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str):
        return self.store.get(self._prepare_key(key))

    def set_value(self, key: str, value, exp=None) -> None:
        self.store.put(self._prepare_key(key), value, exp or STATE_SECONDS)

    def check_value(self, key: str) -> bool:
        return self.store.get(self._prepare_key(key)) is not None


class StoredSession(SessionService):
    """pylti1p3's session service with its nonces taken once."""

    def __init__(self, request: Request, store: LaunchStore):
        self.data_storage = StoredData(store)
        self.store = store

    def check_nonce(self, nonce: str) -> bool:
        return self.store.take(self._get_key("nonce", nonce))  # as StoredData keeps it: prefixed once


class TornadoRedirect(Redirect):
    def __init__(self, location: str, handler: Handler):
        self.location, self.handler = location, handler

    def do_redirect(self):
        self.handler.redirect(self.location, status=302)

    def do_js_redirect(self):
        self.do_redirect()

    def set_redirect_url(self, location: str):
        self.location = location

    def get_redirect_url(self) -> str:
        return self.location


class TornadoOIDCLogin(OIDCLogin):
    def get_redirect(self, url: str) -> Redirect:
        return TornadoRedirect(url, self._request.handler)

    def _prepare_redirect_url(self, launch_url: str) -> str:
        """The library's, and its state kept on this side too: a launch must bring back a
        state this service gave out, once."""
        url = super()._prepare_redirect_url(launch_url)
        state = parse_qs(urlparse(url).query)["state"][0]
        self._session_service.store.put(f"state:{state}", True, STATE_SECONDS)
        return url


class TornadoMessageLaunch(MessageLaunch):
    key_sets: dict = {}  # the platform's key set by its address, kept between launches (per process)
    read_at: dict = {}  # when each key set was last read (time.monotonic()), kept with them
    reading = threading.Lock()

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def validate_state(self):
        super().validate_state()  # the library's: the state's cookie matches the form's
        if not self._session_service.store.take(f"state:{self._get_request_param('state')}"):
            raise LtiException("State not found")
        return self

    def validate_jwt_signature(self):
        super().validate_jwt_signature()  # the library's: PyJWT checks exp and iat only when they are there
        if not isinstance(self._jwt.get("body", {}).get("exp"), (int, float)):
            raise LtiException("No exp claim")
        return self

    def validate_message(self):
        kind = self._jwt.get("body", {}).get(MESSAGE_TYPE)
        if kind != RESOURCE_LINK:
            raise LtiException(f"Message type not taken: {re.sub(r'[^A-Za-z]', '', str(kind))[:40]}")
        return super().validate_message()

    def save_launch_data(self):
        """Nothing: the library's copy of a launch (its claims, the service addresses among them)
        is never read here, and nothing of a launch is kept before the service has taken it."""
        return self

    def validate_registration(self):
        super().validate_registration()
        body = self._jwt.get("body", {})
        aud, azp = body.get("aud"), body.get("azp")
        if (azp is not None or isinstance(aud, list) and len(aud) > 1) and azp != self.get_client_id():
            raise LtiException("azp is not this tool's client id")
        return self

    def fetch_public_key(self, key_set_url: str):
        with self.reading:  # one read at a time, and none within KEY_SET_EVERY of the last
            if key_set_url not in self.key_sets:
                if time.monotonic() - self.read_at.get(key_set_url, -KEY_SET_EVERY) < KEY_SET_EVERY:
                    raise LtiException("Key set not read again: its last read failed less than a minute ago")
                self.read_at[key_set_url] = time.monotonic()
                self.key_sets[key_set_url] = super().fetch_public_key(key_set_url)
            return self.key_sets[key_set_url]

    def get_public_key(self):
        try:
            return super().get_public_key()
        except LtiException as problem:
            url = self._registration.get_key_set_url()
            if ("Unable to find public key" not in str(problem)
                    or time.monotonic() - self.read_at.get(url, -KEY_SET_EVERY) < KEY_SET_EVERY):
                raise
            self.key_sets.pop(url, None)  # the platform may have rotated its keys: its key set once more
            self._registration.set_key_set(None)
            return super().get_public_key()


class LtiHandler(Handler):
    """What both LTI endpoints share: no CSRF cookie (the LMS's page posts the forms; the
    state and the nonce are what tie a launch to its login), the launch store, refusals."""

    def check_xsrf_cookie(self):
        """The state and the nonce do what the CSRF token does for the service's own forms."""

    def refuse(self, sentence: str, who: str = "(LTI launch)", status: int = 403) -> None:
        self.service.policy.refuse(who, Refused(f"LTI launch refused: {sentence}", status), way="lti")
        self.message("This launch was refused", sentence, status=status)

    def parts(self):
        settings = self.service.lti
        return (tool_conf(self.service.course, settings), TornadoRequest(self),
                StoredSession(TornadoRequest(self), self.service.launches))

    def checked(self, conf, request, session) -> dict:
        """The launch's claims, every check made (in a thread: the key set may be read)."""
        return TornadoMessageLaunch(request, conf, session, TornadoCookies(self),
                                    requests_session=timed_session()).get_launch_data()


class LtiLogin(LtiHandler):
    """The OIDC login the LMS starts (third-party initiated login): on to its authorization
    address, with a state (cookie and store) and a nonce."""

    def get(self):
        self.login()

    def post(self):
        self.login()

    def login(self):
        if framed(self):  # in the LMS's frame: on in a new tab (serve/lti_frame.py)
            return new_tab_page(self, urls(self.service.base_url)["login"])
        try:
            conf, request, session = self.parts()
            login = TornadoOIDCLogin(request, conf, session, TornadoCookies(self))
            login.redirect(urls(self.service.base_url)["launch"])
        except LtiSetupError as problem:
            self.refuse(f"LTI is not set up on this service: {problem}.", status=503)
        except Exception as problem:  # noqa: BLE001  pylti1p3 raises a bare Exception for an unknown issuer
            self.refuse(refusal_sentence(problem, {}), status=403)


class LtiLaunch(LtiHandler):
    """The launch: the token checked, the user decided (serve/signin.py), the session cookie set."""

    async def post(self):
        try:
            conf, request, session = self.parts()
            claims = await asyncio.to_thread(self.checked, conf, request, session)  # off the event loop
        except LtiSetupError as problem:
            return self.refuse(f"LTI is not set up on this service: {problem}.", status=503)
        except Exception as problem:  # noqa: BLE001  pylti1p3 raises a bare Exception for an unknown issuer
            return self.refuse(refusal_sentence(problem, header_of(self.get_argument("id_token", ""))))
        self.clear_cookie(f"lti1p3-{self.get_argument('state', '')}", path=self.prefix)  # used: gone
        sub, store = str(claims.get("sub")), self.service.launches
        course, bound = course_of(claims, self.service.lti.client_id), store.binding()
        if why := other_course(bound, course):  # another course's launch: refused before anything of it is kept
            return self.refuse(why, who=f"LTI user {sub[:64]}")
        recorded = student_of(self.service.course, sub)
        kind, who = self.service.signin.lti_user(sub, teaching=teaching(claims), recorded_as=recorded)
        if bound is None and kind == "instructor":  # the first instructor launch binds the course
            if why := other_course(store.bind(course), course):  # another course's was bound meanwhile
                return self.refuse(why, who=f"LTI user {sub[:64]}")
            self.service.events.append(f"LTI: this service now serves {described(course)}, bound by this launch")
        elif bound is None and kind == "student":
            return self.refuse(NOT_BOUND, who=who)
        if kind in ("instructor", "student"):
            store.remember_services(claims)  # an accepted launch of the bound course: its addresses are the course's
        if kind == "instructor":
            self.sign_in_instructor()
            return self.redirect(self.url("/instructor"), status=303)
        if kind == "student":
            self.sign_in_student(who)
            return self.redirect(self.url("/"), status=303)
        if kind == "forged":
            return self.refuse(f"This launch claims an instructor's role for {who}, who is a student of this course: "
                               "a student never gets the instructor's view.", who=who)
        self.refuse("Your LMS account is not on this course's roster here: " + NOT_ON_ROSTER,
                    who=who or f"LTI user {sub[:64]}")


class LtiJwks(Handler):
    """The tool's public key set, which the LMS reads to check the tool's signed requests."""

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(public_jwks(self.service.course, self.service.lti)))


ROUTES = [(r"lti/login", LtiLogin), (r"lti/launch", LtiLaunch), (r"lti/jwks", LtiJwks)]
