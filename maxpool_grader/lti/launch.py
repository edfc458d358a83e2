"""pylti1p3's tool, adapted to tornado: what ``maxpool-grader serve``'s LTI pages
(serve/lti_web.py) check a launch and start a login with.

pylti1p3 ships adapters for Django and Flask; these are tornado's: its ``Request`` (the
handler's parameters), ``CookieService`` (the OIDC state's short cookie, on the service's
path), ``SessionService`` over ``LaunchStore`` (lti/store.py: nonces and states in SQLite,
each taken once, so a launch replayed is refused after a restart too), ``Redirect``,
``OIDCLogin`` and ``MessageLaunch``. Every check of the token is the library's: the signature
against the platform's key set, ``iss``, ``aud`` (its client id), the deployment, ``exp``/``iat``,
the nonce, the state, the message type and the version. What it leaves to the tool is done
here: ``azp`` is the client id when given (or when ``aud`` names several); ``exp`` is there;
only a resource link launch is taken (never Deep Linking or Submission Review); the
platform's key set is kept and read again when a launch names a key it does not have
(rotated keys), at most once a minute per key set (``KEY_SET_EVERY``), and only for a launch
whose state and nonce this service gave out (checked first); every read has lti/tool.py's
timeout (the page runs the whole check in a thread, off the event loop, so a key set that
hangs stalls no page); the library's copy of a launch is never stored: nothing of a launch
is kept before the service takes it.

The handler each class is given is a tornado ``RequestHandler`` with the service's path as
its ``prefix`` and the application's ``secure`` setting (serve/handler.py's ``Handler``): the
only part of the service this module knows, given and never imported.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService

from .refusals import MESSAGE_TYPE, RESOURCE_LINK
from .store import LaunchStore

if TYPE_CHECKING:
    from tornado.web import RequestHandler as Handler

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
