"""LTI 1.3 launches into ``maxpool-grader serve``: the login and launch pages and the tool's
key set, with pylti1p3's tornado adapter (lti/launch.py), which checks every launch.

The login and the launch run pylti1p3's ``OIDCLogin`` and ``MessageLaunch`` as lti/launch.py
adapts them; a login in the LMS's frame goes on in a new tab (serve/lti_frame.py); the
launch's whole check runs in a thread, off the event loop, so a key set that hangs stalls
no page.

A checked launch is then taken only from the course the service is bound to (lti/store.py's
``other_course``: the first instructor launch binds it); only then are its addresses kept. Who the launch is, is
serve/signin.py's decision (``SignIn.lti_user``), from the launch's course roles alone
(lti/tool.py's ``teaching``: an institution or system role never counts). Every refusal is
a page with a sentence, recorded for the instructor's live view.
"""

from __future__ import annotations

import asyncio
import json

from ..lti.launch import StoredSession, TornadoCookies, TornadoMessageLaunch, TornadoOIDCLogin, TornadoRequest
from ..lti.refusals import NOT_BOUND, header_of, refusal_sentence
from ..lti.store import course_of, described, other_course, student_of
from ..lti.tool import LtiSetupError, public_jwks, teaching, timed_session, tool_conf, urls
from .handler import Handler
from .lti_frame import framed, new_tab_page
from .policy import NOT_ON_ROSTER, Refused


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
