"""The web way into ``maxpool-grader serve`` (tornado, which comes with Jupyter).

A student opens their personal link (``maxpool-grader tokens`` writes one per student of the
roster): it sets a signed, HttpOnly session cookie and leads to the upload form. The token
alone decides who the student is, never a name inside the upload. Uploads are checked
(size, a notebook, this assignment), then the policy (deadline, attempts), and refused at
once with the reason, or queued; the attempt's page shows the queue position, then the
feedback. The form carries tornado's CSRF token; every page forbids scripts but the service's
own poll.js (by its hash, on the pages that keep themselves up to date: a waiting attempt
and the live view), and the feedback page, made from a student's notebook, is served
sandboxed as well as inert (glue/inert.py). The instructor's view (``/instructor``, from the
link ``serve`` writes) shows the queue, attempts per student, each test's pass rate so far
and the most common mistakes; its counts update every few seconds. The pages are Jinja
templates (templates/serve/, serve_pages.py).
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlparse

import tornado.httputil
import tornado.web
from markupsafe import Markup

from .serve import Service
from .serve_pages import (
    PAGE_POLICY,
    POLL_POLICY,
    attempt_progress,
    brief,
    home_view,
    instructor_view,
    queue_summary,
    render,
    status_text,
)
from .serve_policy import INSTRUCTOR, NOT_ON_ROSTER, Refused

STUDENT_COOKIE, INSTRUCTOR_COOKIE = "maxpool_student", "maxpool_instructor"
DROPPED_AT_MOST = 1 << 30  # an upload body read (and dropped past the limit) up to this; more ends the connection
FORM_SLACK = 64 * 1024  # the multipart form around the notebook
XSRF_FIELD = re.compile(rb'name="_xsrf"\r\n\r\n([^\r\n]{1,200})\r\n')
FEEDBACK_POLICY = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                   "frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox")
class _Handler(tornado.web.RequestHandler):
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
        service runs take effect at the next request (serve_tokens.py)."""
        if self.service.credentials.refresh():  # a new secret: every session cookie so far ends
            self.application.settings["cookie_secret"] = self.service.credentials.secret.hex()

    def session_holder(self) -> str | None:
        """Whose valid session this request carries, on the roster or not."""
        value = self.get_signed_cookie(STUDENT_COOKIE, max_age_days=120)
        return self.service.credentials.session_holder(value.decode()) if value else None

    def get_current_user(self) -> str | None:
        """The signed-in student, while they are on the roster (asked at every request)."""
        who = self.session_holder()
        return who if who is not None and self.service.is_student(who) else None

    def signed_in(self, why: str) -> str | None:
        """The signed-in student; None, with a page that says ``why``, for anyone else."""
        if self.current_user is None and self.session_holder() is not None:
            self.message("Not on the roster", NOT_ON_ROSTER, status=403)
        elif self.current_user is None and not self.to_hub_sign_in():
            self.message("Please open your personal link", why, status=403)
        return self.current_user

    def to_hub_sign_in(self) -> bool:
        """With ``serve --hub-login``, someone not signed in goes to JupyterHub's sign-in (True)."""
        if self.settings.get("hub_auth") is None or self.current_user is not None:
            return False
        self.redirect(self.url("/hub/login"), status=303)
        return True

    def is_instructor(self) -> bool:
        return self.get_signed_cookie(INSTRUCTOR_COOKIE, max_age_days=30) == b"yes"

    def url(self, path: str) -> str:
        return self.prefix + path.lstrip("/")

    def page(self, template: str, *, status: int = 200, script: bool = False, **context) -> None:
        """A page of templates/serve (serve_pages.render); ``script``: with poll.js, which
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

    def login(self, cookie: str, value: str) -> None:
        if cookie == STUDENT_COOKIE:  # the session of the student's generation (serve_tokens.py)
            value = self.service.credentials.session(value)
        self.set_signed_cookie(cookie, value, httponly=True, samesite="Lax", secure=self.application.settings["secure"],
                               path=self.prefix, expires_days=None)

    def home(self, student: str, refusal: str = "", status: int = 200) -> None:
        """The student's page: the policy, the upload form, their attempts (and why an upload was refused)."""
        self.xsrf_token  # noqa: B018  the CSRF cookie, for a form opened before the deadline too
        self.page("home.html.j2", status=status, refusal=refusal, xsrf=Markup(self.xsrf_form_html()),
                  **home_view(self.service, student, self.url))


class StudentLogin(_Handler):



    def get(self, token: str):
        student = self.service.credentials.holder(token)
        if student is None or student == INSTRUCTOR:
            return self.message("This link is not valid", "Open the personal link your instructor sent you. "
                                                          "If it does not work either, ask them for a new one.",
                                status=403)
        if not self.service.is_student(student):
            return self.message("Not on the roster", NOT_ON_ROSTER, status=403)
        self.clear_cookie(INSTRUCTOR_COOKIE, path=self.prefix)
        self.login(STUDENT_COOKIE, student)
        self.redirect(self.url("/"), status=303)


class InstructorLogin(_Handler):
    def get(self, token: str):
        if self.service.credentials.holder(token) != INSTRUCTOR:
            return self.message("This link is not valid", "The instructor's link is in "
                                                          ".maxpool-grader/serve/instructor-link.", status=403)
        self.login(INSTRUCTOR_COOKIE, "yes")
        self.redirect(self.url("/instructor"), status=303)


class Home(_Handler):
    def get(self):
        student = self.signed_in("This page is reached through the personal link your instructor sent you.")
        if student is not None:
            self.home(student)


@tornado.web.stream_request_body
class Upload(_Handler):
    """The upload, read as it arrives: a body past the service's limit is counted and dropped,
    so a file of any size up to ``DROPPED_AT_MOST`` gets the service's own "too large" page,
    never tornado's bare 400. The CSRF check waits for the form's fields in the body."""

    def prepare(self):
        super().prepare()
        self.request.connection.set_max_body_size(DROPPED_AT_MOST)
        self.kept, self.size = [], 0

    def check_xsrf_cookie(self):
        """Checked in ``post``, once the body (which holds the form's token) has arrived."""

    def data_received(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size <= self.service.settings.max_upload * 1024 + FORM_SLACK:
            self.kept.append(chunk)

    def post(self):
        if self.size <= self.service.settings.max_upload * 1024 + FORM_SLACK:
            tornado.httputil.parse_body_arguments(self.request.headers.get("Content-Type", ""), b"".join(self.kept),
                                                  self.request.body_arguments, self.request.files, self.request.headers)
        elif found := XSRF_FIELD.search(b"".join(self.kept)[:FORM_SLACK]):  # the form's first field, kept
            self.request.body_arguments["_xsrf"] = [found[1]]
        for name, values in self.request.body_arguments.items():
            self.request.arguments.setdefault(name, []).extend(values)
        super().check_xsrf_cookie()
        student = self.signed_in("Your session has ended: open your personal link again, then upload.")
        if student is None:
            return
        files = self.request.files.get("notebook") or []
        try:
            if self.size > self.service.settings.max_upload * 1024 + FORM_SLACK:
                raise self.service.refuse(student, self.service.too_large(self.size))
            if not files:
                raise Refused("Choose your notebook file first.", 400)
            attempt_id = self.service.submit(student, files[0]["body"])
        except Refused as refusal:
            return self.home(student, str(refusal), status=refusal.status)
        self.redirect(self.url(f"/attempt/{attempt_id}"), status=303)


class AttemptPage(_Handler):
    def get(self, number: str):
        attempt = self._own(int(number))
        if attempt is None:
            return
        title, back = f"Attempt {attempt.id}", self.url("/")
        if attempt.status in ("queued", "grading"):
            return self.page("waiting.html.j2", script=True, title=title, progress=self.progress(attempt)["text"],
                             status_url=self.url(f"/attempt/{attempt.id}/status"), every=1000, number=attempt.id,
                             here=self.url(f"/attempt/{attempt.id}"), back=back)
        if attempt.status != "graded":
            return self.message(title, status_text(attempt), link=(back, "Back to your attempts"))
        level = self.service.feedback_level()
        if level == "everything" and self.service.queue.feedback_path(attempt.id).exists():
            return self.redirect(self.url(f"/attempt/{attempt.id}/feedback"), status=303)
        self.page("result.html.j2", title=title, brief=brief(attempt.result, level), back=back)

    def progress(self, attempt) -> dict:
        return attempt_progress(self.service, attempt, self.url(f"/attempt/{attempt.id}"))

    def _own(self, attempt_id: int):
        """The attempt, when it is the signed-in student's (else a 404 page, for the attempts
        of others too: whether one exists is not told)."""
        student = self.current_user
        attempt = self.service.queue.get(attempt_id)
        if student is None or attempt is None or attempt.student != student:
            self.message("Not found", "There is no such attempt of yours.", status=404)
            return None
        return attempt


class FeedbackPage(AttemptPage):
    def get(self, number: str):
        attempt = self._own(int(number))
        if attempt is None:
            return
        path = self.service.queue.feedback_path(attempt.id)
        if attempt.status != "graded" or not path.exists() or self.service.feedback_level() != "everything":
            return self.redirect(self.url(f"/attempt/{attempt.id}"), status=303)
        self.set_header("Content-Security-Policy", FEEDBACK_POLICY)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(path.read_bytes())


class AttemptStatus(AttemptPage):
    """The waiting page's question (poll.js): the attempt's status, as JSON."""

    def get(self, number: str):
        attempt = self._own(int(number))
        if attempt is not None:
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(self.progress(attempt)))


class InstructorView(_Handler):
    def get(self):
        if not self.is_instructor():
            if self.to_hub_sign_in():  # c.Serve.hub_instructors sign in there
                return
            return self.message("Instructors only", "Open the instructor's link (in "
                                                    ".maxpool-grader/serve/instructor-link).", status=403)
        self.page("instructor.html.j2", script=True, title=f"{self.service.assignment}: live", every=5000,
                  status_url=self.url("/instructor/status"), here=self.url("/instructor"),
                  **instructor_view(self.service))


class InstructorStatus(_Handler):
    """The live view's question (poll.js): the counts of its first line, as JSON."""

    def get(self):
        if not self.is_instructor():
            return self.message("Instructors only", "Open the instructor's link.", status=403)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"text": queue_summary(self.service), "done": False}))


def page_prefix(base_url: str) -> str:
    """The path every page of the service is under: --base-url's, ending in '/'."""
    prefix = urlparse(base_url).path or "/"
    return prefix if prefix.endswith("/") else prefix + "/"


def make_app(service: Service, *, base_url: str, secure_cookies: bool, hub_auth=None) -> tornado.web.Application:
    """The service's pages; with ``hub_auth`` (serve_hub.py's HubOAuth), students sign in with
    JupyterHub as well as with their personal links."""
    prefix = page_prefix(base_url)
    arguments = {"service": service, "prefix": prefix}
    routes = [(r"login/([A-Za-z0-9_.=-]+)", StudentLogin), (r"instructor/login/([A-Za-z0-9_.=-]+)", InstructorLogin),
              (r"", Home), (r"upload", Upload), (r"attempt/([0-9]{1,12})", AttemptPage),
              (r"attempt/([0-9]{1,12})/feedback", FeedbackPage), (r"attempt/([0-9]{1,12})/status", AttemptStatus),
              (r"instructor", InstructorView), (r"instructor/status", InstructorStatus)]
    if hub_auth is not None:
        from .serve_hub import ROUTES
        routes += ROUTES
    return tornado.web.Application(
        [(prefix + pattern, handler, arguments) for pattern, handler in routes],
        cookie_secret=service.secret.hex(), xsrf_cookies=True, secure=secure_cookies, hub_auth=hub_auth,
        xsrf_cookie_name="maxpool_xsrf",  # not JupyterHub's "_xsrf", which its sign-in sets on the same path
        xsrf_cookie_kwargs={"httponly": True, "samesite": "Strict", "secure": secure_cookies, "path": prefix},
        default_handler_class=_NotFound, default_handler_args=arguments)


class _NotFound(_Handler):
    def prepare(self):
        super().prepare()
        self.message("Not found", "There is no such page.", status=404)

