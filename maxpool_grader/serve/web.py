"""The web way into ``maxpool-grader serve`` (tornado, which comes with Jupyter).

A student opens their personal link (``maxpool-grader tokens`` writes one per student of the
roster): it sets a signed, HttpOnly session cookie and leads to the upload form. The token
alone decides who the student is (serve/signin.py), never a name inside the upload. Uploads are checked
(size, a notebook, this assignment), then the policy (deadline, attempts), and refused at
once with the reason, or queued; the attempt's page shows the queue position, then the
feedback. The form carries tornado's CSRF token; every page forbids scripts but the service's
own poll.js (by its hash, on the pages that keep themselves up to date: a waiting attempt
and the live view), and the feedback page, made from a student's notebook, is served
sandboxed as well as inert (glue/inert.py). The instructor's view (``/instructor``, from the
link ``serve`` writes) shows the queue, attempts per student, each test's pass rate so far
and the most common mistakes; its counts update every few seconds (announced only when they
change, and the instructor can pause the updates). After the deadline, once the instructor
has released the final feedback, a student reads it at ``/final``, behind their link. The pages are Jinja
templates (templates/serve/, serve/pages.py); what every page does is ``Handler``'s
(serve/handler.py). ``start_web`` starts the server: the command line gives it to the service
core (serve.run), which never imports this layer.
"""

from __future__ import annotations

import errno
import json
import re
import ssl
import time

import tornado.httpserver
import tornado.httputil
import tornado.netutil
import tornado.web

from ..course.directory import say
from ..course.files import replace_file
from ..names import SERVE_DIR
from .handler import Handler
from .lti_web import ROUTES as LTI_ROUTES
from .pages import attempt_progress, brief, final_page, instructor_view, queue_summary, status_text
from .policy import NOT_ON_ROSTER, Refused
from .service import CannotServe, Service
from .signin import INSTRUCTOR_LINK, instructor_link, page_prefix

DRAINED_AT_MOST = 1 << 30  # a body too large is read (and dropped) up to this after its answer; more: closed
FORM_SLACK = 64 * 1024  # the multipart form around the notebook
UNREADABLE_FORM = ("Your upload could not be read: its form is not valid (a file name with a NUL or another control "
                   "character, say). Rename your notebook to max_pool_backward.ipynb and upload it again.")
XSRF_FIELD = re.compile(rb'name="_xsrf"\r\n\r\n([^\r\n]{1,200})\r\n')
FEEDBACK_POLICY = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
                   "frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox")


class StudentLogin(Handler):
    def get(self, token: str):
        kind, student = self.service.signin.link(token)
        if kind not in ("student", "stranger"):  # not valid now, or the instructor's
            return self.message("This link is not valid", "Open the personal link your instructor sent you. "
                                                          "If it does not work either, ask them for a new one.",
                                status=403)
        if kind == "stranger":
            return self.message("Not on the roster", NOT_ON_ROSTER, status=403)
        self.sign_in_student(student)
        self.redirect(self.url("/"), status=303)


class InstructorLogin(Handler):
    def get(self, token: str):
        if self.service.signin.link(token)[0] != "instructor":
            return self.message("This link is not valid", "The instructor's link is in "
                                                          ".maxpool-grader/serve/instructor-link.", status=403)
        self.sign_in_instructor()
        self.redirect(self.url("/instructor"), status=303)


class Home(Handler):
    def get(self):
        student = self.signed_in("This page is reached through the personal link your instructor sent you.")
        if student is not None:
            self.home(student)


@tornado.web.stream_request_body
class Upload(Handler):
    """The upload, decided before its body is read (``prepare``): a request of nobody signed
    in, or one whose Content-Length is over the service's limit, is answered at once with the
    service's own page (and its refusal recorded, for a student off the roster or a file too
    large). The body is then read only to be dropped: as far as the limit when nobody is
    signed in, up to ``DRAINED_AT_MOST`` for a file too large (a browser shows an answer only
    once it has sent its request); past that the connection is closed after the page. A body
    without a Content-Length (chunked) is counted as it arrives and dropped past the limit.
    The CSRF check waits for the form's fields in the body."""

    def prepare(self):
        super().prepare()
        self.kept, self.size = [], 0
        self.limit = self.service.settings.max_upload * 1024 + FORM_SLACK
        student = self.current_user
        if student is None:
            self.request.connection.set_max_body_size(self.limit)
            holder = self.session_holder()
            if holder is not None:  # signed in, then taken off the roster: the live view lists it
                self.service.policy.refuse(holder, Refused(NOT_ON_ROSTER, 403))
            self.signed_in("Your session has ended: open your personal link again, then upload.")
            return
        self.request.connection.set_max_body_size(DRAINED_AT_MOST)
        length = int(self.request.headers.get("Content-Length") or 0)
        if length > self.limit:
            refusal = self.service.policy.refuse(student, self.service.policy.too_large(length))
            self.home(student, str(refusal), status=refusal.status)

    def check_xsrf_cookie(self):
        """Checked in ``post``, once the body (which holds the form's token) has arrived."""

    def data_received(self, chunk: bytes) -> None:
        if self._finished:  # answered in prepare: the body is dropped
            return
        self.size += len(chunk)
        if self.size <= self.limit:
            self.kept.append(chunk)

    def post(self):
        body, unreadable = b"".join(self.kept), False
        try:
            if self.size > self.limit:
                raise tornado.httputil.HTTPInputError("too large: only the form's first field is kept")
            tornado.httputil.parse_body_arguments(self.request.headers.get("Content-Type", ""), body,
                                                  self.request.body_arguments, self.request.files, self.request.headers)
        except tornado.httputil.HTTPInputError:
            unreadable = self.size <= self.limit  # a form that cannot be parsed (a NUL in a file's name, say)
            if found := XSRF_FIELD.search(body[:FORM_SLACK]):  # the form's first field
                self.request.body_arguments["_xsrf"] = [found[1]]
        for name, values in self.request.body_arguments.items():
            self.request.arguments.setdefault(name, []).extend(values)
        super().check_xsrf_cookie()
        student = self.signed_in("Your session has ended: open your personal link again, then upload.")
        if student is None:
            return
        files = self.request.files.get("notebook") or []
        try:
            if self.size > self.limit:
                raise self.service.policy.refuse(student, self.service.policy.too_large(self.size))
            if unreadable:
                raise self.service.policy.refuse(student, Refused(UNREADABLE_FORM, 400))
            if not files:
                raise Refused("Choose your notebook file first.", 400)
            attempt_id = self.service.policy.submit(student, files[0]["body"])
        except Refused as refusal:
            return self.home(student, str(refusal), status=refusal.status)
        self.redirect(self.url(f"/attempt/{attempt_id}"), status=303)


class AttemptPage(Handler):
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
        level = self.service.policy.feedback_level()
        if level == "reports" and self.service.queue.feedback_path(attempt.id).exists():
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
        if attempt.status != "graded" or not path.exists() or self.service.policy.feedback_level() != "reports":
            return self.redirect(self.url(f"/attempt/{attempt.id}"), status=303)
        self.set_header("Content-Security-Policy", FEEDBACK_POLICY)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(path.read_bytes())


class FinalPage(Handler):
    """The final feedback the instructor released (pages.final_page), served as the attempt's
    feedback page is: sandboxed, no script."""

    def get(self):
        student = self.signed_in("Your final feedback is reached through the personal link your instructor sent you.")
        if student is None:
            return
        page = final_page(self.service, student, self.url("/"))
        if page is None:
            return self.message("Not released yet", "Your final feedback has not been released yet. "
                                "Your instructor releases it after the deadline, once Part A is graded.",
                                status=404, link=(self.url("/"), "Back to your attempts"))
        self.set_header("Content-Security-Policy", FEEDBACK_POLICY)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page)


class AttemptStatus(AttemptPage):
    """The waiting page's question (poll.js): the attempt's status, as JSON."""

    def get(self, number: str):
        attempt = self._own(int(number))
        if attempt is not None:
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(self.progress(attempt)))


class InstructorView(Handler):
    def get(self):
        if not self.is_instructor():
            if self.to_hub_sign_in():  # c.Serve.hub_instructors sign in there
                return
            return self.message("Instructors only", "Open the instructor's link (in "
                                                    ".maxpool-grader/serve/instructor-link).", status=403)
        self.page("instructor.html.j2", script=True, title=f"{self.service.assignment}: live", every=5000,
                  status_url=self.url("/instructor/status"), here=self.url("/instructor"),
                  **instructor_view(self.service))


class InstructorStatus(Handler):
    """The live view's question (poll.js): the counts of its first line, as JSON."""

    def get(self):
        if not self.is_instructor():
            return self.message("Instructors only", "Open the instructor's link.", status=403)
        self.set_header("Content-Type", "application/json")
        # the counts are the live region's text; the time they were read is shown apart, unannounced
        self.finish(json.dumps({"text": queue_summary(self.service), "done": False,
                                "as_of": time.strftime("%H:%M:%S")}))


def make_app(service: Service, *, base_url: str, secure_cookies: bool, hub_auth=None) -> tornado.web.Application:
    """The service's pages; with ``hub_auth`` (serve/signin.py's HubOAuth), students sign in with
    JupyterHub as well as with their personal links."""
    prefix = page_prefix(base_url)
    arguments = {"service": service, "prefix": prefix}
    routes = [(r"login/([A-Za-z0-9_.=-]+)", StudentLogin), (r"instructor/login/([A-Za-z0-9_.=-]+)", InstructorLogin),
              (r"", Home), (r"upload", Upload), (r"attempt/([0-9]{1,12})", AttemptPage),
              (r"attempt/([0-9]{1,12})/feedback", FeedbackPage), (r"attempt/([0-9]{1,12})/status", AttemptStatus),
              (r"final", FinalPage),
              (r"instructor", InstructorView), (r"instructor/status", InstructorStatus)]
    routes += LTI_ROUTES if service.lti is not None else []  # with c.Lti.enabled: launches from the LMS
    if hub_auth is not None:
        from .hub import ROUTES  # hub.py imports jupyterhub (0.5 s): only for --hub-login
        routes += ROUTES
    return tornado.web.Application(
        [(prefix + pattern, handler, arguments) for pattern, handler in routes],
        cookie_secret=service.signin.cookie_secret, xsrf_cookies=True, secure=secure_cookies, hub_auth=hub_auth,
        xsrf_cookie_name="maxpool_xsrf",  # not JupyterHub's "_xsrf", which its sign-in sets on the same path
        xsrf_cookie_kwargs={"httponly": True, "samesite": "Strict", "secure": secure_cookies, "path": prefix},
        default_handler_class=_NotFound, default_handler_args=arguments)


class _NotFound(Handler):
    def prepare(self):
        super().prepare()
        self.message("Not found", "There is no such page.", status=404)


def start_web(service: Service, *, address: str, port: int, base_url: str, certfile: str | None,
               keyfile: str | None, secure_cookies: bool, hub_auth=None):
    """The web page listening (in the running event loop); the instructor's link written."""
    ssl_options = None
    if certfile:
        ssl_options = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_options.load_cert_chain(certfile, keyfile)
    app = make_app(service, base_url=base_url, secure_cookies=secure_cookies or bool(certfile), hub_auth=hub_auth)
    server = tornado.httpserver.HTTPServer(app, ssl_options=ssl_options, xheaders=True,
                                           max_body_size=service.settings.max_upload * 1024 * 2 + 65536)
    try:
        sockets = tornado.netutil.bind_sockets(port, address=address)
    except OSError as problem:  # a port in use, an address not of this machine: a sentence, not a traceback
        raise CannotServe(f"the web page cannot listen on {address}:{port} ({problem.strerror or problem}): "
                          + ("another program (another serve?) uses that port; stop it, or choose another "
                             "with --port" if problem.errno == errno.EADDRINUSE else
                             "choose another --address or --port")) from None
    server.add_sockets(sockets)
    bound = sockets[0].getsockname()[1]
    link = instructor_link(service.signin.credentials.secret, base_url)
    replace_file(service.course / SERVE_DIR / INSTRUCTOR_LINK, link.replace("{port}", str(bound)) + "\n",
                 sync=False)  # owner-only: the link signs its holder in as the instructor
    say(f"serve: web page on {'https' if certfile else 'http'}://{address}:{bound}/ "
        f"(instructor's view: .maxpool-grader/serve/instructor-link)")
    return server
