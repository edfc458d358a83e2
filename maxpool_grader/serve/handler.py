"""What every page of ``maxpool-grader serve`` has in common: ``Handler``, the base of the web
way's handlers (serve/web.py) and of the JupyterHub sign-in's (serve/hub.py).

It sets the headers every page sends (no scripts but the service's own, no framing, no
caching, no referrer: a personal link carries a token), reads and sets the session cookies
that serve/signin.py decides on (who they name, against the roster and the current links:
``tokens --revoke`` and ``--rotate`` take effect at the next request), and renders the
templates (serve/pages.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tornado.web
from markupsafe import Markup

from .pages import PAGE_POLICY, POLL_POLICY, home_view, render
from .policy import NOT_ON_ROSTER
from .signin import COOKIE_DAYS, INSTRUCTOR_COOKIE, INSTRUCTOR_SIGNED_IN, STUDENT_COOKIE, cookie_flags

if TYPE_CHECKING:  # annotations only: the service core never imports its web layer
    from .service import Service


class Handler(tornado.web.RequestHandler):
    service: Service

    def initialize(self, service: Service, prefix: str):
        self.service, self.prefix = service, prefix

    def set_default_headers(self):
        self.set_header("Content-Security-Policy", PAGE_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")  # the personal links carry a token
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Frame-Options", "DENY")

    def prepare(self):
        """The links and sessions as they are now: ``tokens --revoke``/``--rotate`` while the
        service runs take effect at the next request (serve/signin.py)."""
        if self.service.signin.refresh():  # a new secret: every session cookie so far ends
            self.application.settings["cookie_secret"] = self.service.signin.cookie_secret

    def cookie(self, name: str) -> bytes | None:
        """A session cookie's value, if its signature is the service's and young enough."""
        return self.get_signed_cookie(name, max_age_days=COOKIE_DAYS[name])

    def session_holder(self) -> str | None:
        """Whose valid session this request carries, on the roster or not."""
        return self.service.signin.session_holder(self.cookie(STUDENT_COOKIE))

    def get_current_user(self) -> str | None:
        """The signed-in student, while they are on the roster (asked at every request)."""
        return self.service.signin.student(self.cookie(STUDENT_COOKIE))

    def signed_in(self, why: str) -> str | None:
        """The signed-in student; None, with a page that says ``why``, for anyone else."""
        if self.current_user is None and self.session_holder() is not None:
            self.message("Not on the roster", NOT_ON_ROSTER, status=403)
        elif self.current_user is None and not self.to_hub_sign_in():
            lms = " If you came from your course in the LMS, open the assignment there again." * bool(self.service.lti)
            self.message("Please open your personal link", why + lms, status=403)
        return self.current_user

    def to_hub_sign_in(self) -> bool:
        """With ``serve --hub-login``, someone not signed in goes to JupyterHub's sign-in (True)."""
        if self.settings.get("hub_auth") is None or self.current_user is not None:
            return False
        self.redirect(self.url("/hub/login"), status=303)
        return True

    def is_instructor(self) -> bool:
        return self.service.signin.is_instructor(self.cookie(INSTRUCTOR_COOKIE))

    def url(self, path: str) -> str:
        return self.prefix + path.lstrip("/")

    def page(self, template: str, *, status: int = 200, script: bool = False, **context) -> None:
        """A page of templates/ (pages.render); ``script``: with poll.js, which
        keeps it up to date, and the policy that lets that script run."""
        self.set_status(status)
        if script:
            self.set_header("Content-Security-Policy", POLL_POLICY)
        self.finish(render(template, script=script, **context))

    def message(self, title: str, *paragraphs, status: int = 200, link: tuple[str, str] | None = None) -> None:
        """A page that says one thing: ``paragraphs`` are text (escaped) or Markup."""
        self.page("message.html.j2", title=title, paragraphs=paragraphs, link=link, status=status)

    def write_error(self, status_code: int, **kwargs) -> None:
        self.message("Something went wrong", f"The service could not answer this request (HTTP {status_code}). "
                                             "Go back and try again; if it keeps happening, tell your instructor.",
                     status=status_code)

    def sign_in_student(self, student: str) -> None:
        """The student's session cookie (their generation's), and no instructor's session beside it."""
        self.clear_cookie(INSTRUCTOR_COOKIE, path=self.prefix)
        self.set_signed_cookie(STUDENT_COOKIE, self.service.signin.student_session(student),
                               **cookie_flags(self.application.settings["secure"], self.prefix))

    def sign_in_instructor(self) -> None:
        self.set_signed_cookie(INSTRUCTOR_COOKIE, INSTRUCTOR_SIGNED_IN,
                               **cookie_flags(self.application.settings["secure"], self.prefix))

    def home(self, student: str, refusal: str = "", status: int = 200) -> None:
        """The student's page: the policy, the upload form, their attempts (and why an upload was refused)."""
        self.xsrf_token  # noqa: B018  the CSRF cookie, for a form opened before the deadline too
        self.page("home.html.j2", status=status, refusal=refusal, xsrf=Markup(self.xsrf_form_html()),
                  **home_view(self.service, student, self.url))
