"""``maxpool-grader serve --hub-login`` run by a real JupyterHub on loopback, as a managed
service behind the Hub's proxy: students sign in with their Hub accounts (OAuth, in headless
Chromium, offline), upload and read their feedback; the Hub identity decides who they are
(a classmate's attempt is not found, a name in the upload decides nothing); a Hub user off
the roster, and one the Hub does not let reach the service, get nothing; the instructor
named in ``c.Serve.hub_instructors`` gets the live view. Each page of the service met on the way
meets WCAG 2.1 AA (axe-core, tests/a11y.py)."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import requests
from a11y import assert_accessible
from helpers import ASSIGNMENT, BIN, copy_course, free_port
from test_serve import notebook_of

pytestmark = pytest.mark.integration  # a real JupyterHub, its proxy, the service, Chromium

STUDENTS = ["hubalice", "hubbob"]
HOSTILE_NAME = "<img src=x onerror=window.__pwned=1>"  # a Hub user name is student text too
PASSWORD = "classroom-2026"  # the Hub's shared password (SharedPasswordAuthenticator)


class Hub:
    """JupyterHub on loopback with the course's service registered and managed by it."""

    def __init__(self, folder: Path, course: Path):
        self.folder, self.course = folder, course
        self.port, hub_port, proxy_api, service_port = (free_port() for _ in range(4))
        self.base = f"http://127.0.0.1:{self.port}"
        (folder / "jupyterhub_config.py").write_text(f"""
c.JupyterHub.bind_url = "http://127.0.0.1:{self.port}/"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{str(BIN / "configurable-http-proxy")!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {PASSWORD!r}
c.Authenticator.allowed_users = {{"hubalice", "hubbob", "outsider", "nosy", "teacher", {HOSTILE_NAME!r}}}
c.JupyterHub.load_roles = [{{"name": "maxpool-course", "scopes": ["access:services!service=maxpool"],
                            "users": ["hubalice", "hubbob", "outsider", "teacher", {HOSTILE_NAME!r}]}}]
c.JupyterHub.services = [{{
    "name": "maxpool",
    "url": "http://127.0.0.1:{service_port}",
    "command": [{str(BIN / "maxpool-grader")!r}, "serve", "--course-dir", {str(course)!r}, "--hub-login",
                "--no-exchange", "--workers", "1"],
    "cwd": {str(course)!r},
    "oauth_no_confirm": True,
}}]
""")
        self.log = open(folder / "jupyterhub.log", "w")  # noqa: SIM115
        env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
        self.process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(folder / "jupyterhub_config.py")],
                                        cwd=folder, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 180
        while True:  # the service answers through the Hub's proxy once it is ready
            try:
                answer = requests.get(f"{self.base}/services/maxpool/", allow_redirects=False, timeout=10)
                if answer.status_code == 303:
                    return
            except requests.ConnectionError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, self.output()
            time.sleep(0.3)

    def output(self) -> str:
        self.log.flush()
        return (self.folder / "jupyterhub.log").read_text()[-6000:]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub")
    course = copy_course(folder / "course", with_submissions=False)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("\nc.Serve.hub_instructors = ['teacher']\n")
    with open(course / "roster.csv", "w", newline="") as roster:
        rows = csv.writer(roster)
        rows.writerow(["id", "first_name", "last_name", "email"])
        for name in STUDENTS:
            rows.writerow([name, name, "Student", f"{name}@example.edu"])
    running = Hub(folder, course)
    yield running
    running.stop()


def sign_in(browser, hub: Hub, user: str):
    """A browser of its own, signed in to the Hub as ``user`` on the way to the service."""
    from pages import offline_page
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = offline_page(browser, context)
    page.goto(f"{hub.base}/services/maxpool/")
    page.wait_for_url(re.compile(r".*/hub/login.*"))
    page.fill("#username_input", user)
    page.fill("#password_input", PASSWORD)
    page.click("#login_submit")
    page.wait_for_load_state("load")
    return context, page


def test_a_student_signs_in_with_the_hub_and_reads_their_feedback_and_only_theirs(hub, browser, tmp_path):
    from test_serve import LOOP_CORRECT
    alice, page = sign_in(browser, hub, "hubalice")
    assert page.url == f"{hub.base}/services/maxpool/", page.url  # back at the service, signed in
    assert "Signed in as hubalice" in page.inner_text("body")
    assert_accessible(page, "the home page after the Hub's sign-in")
    assert not [cookie for cookie in alice.cookies() if cookie["name"] == "service-maxpool"]  # the Hub's token not kept
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    claimed = nbformat.reads(notebook_of(LOOP_CORRECT).decode(), as_version=4)
    claimed.metadata["nbgrader_student"] = "hubbob"  # a name inside the upload decides nothing
    nbformat.write(claimed, notebook)
    page.set_input_files("input[type=file]", str(notebook))
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/attempt/[0-9]+/feedback$"), timeout=180_000)
    assert page.locator("text=Every test passed.").count() == 1
    feedback = page.url
    assert (hub.course / "submitted" / "hubalice").is_dir() and not (hub.course / "submitted" / "hubbob").exists()

    bob, bobs = sign_in(browser, hub, "hubbob")
    assert "Signed in as hubbob" in bobs.inner_text("body")
    assert bobs.goto(feedback).status == 404  # a classmate's feedback: not found
    for context in (alice, bob):
        context.close()


def test_the_hub_decides_who_may_come_in_and_the_instructor_sees_the_live_view(hub, browser):
    outsider, page = sign_in(browser, hub, "outsider")  # a Hub user with access, not on the roster
    assert "not on the roster" in page.inner_text("body")
    assert_accessible(page, "the page of a Hub user not on the roster")
    assert not [cookie for cookie in outsider.cookies() if cookie["name"] == "maxpool_student"]  # no session
    marked, page = sign_in(browser, hub, HOSTILE_NAME)  # a name made of markup: shown as text, never run
    assert page.url.endswith("/services/maxpool/hub/signed-in"), page.url
    assert HOSTILE_NAME in page.inner_text("body") and page.locator("img").count() == 0
    assert page.evaluate("() => window.__pwned || null") is None
    assert_accessible(page, "the page of a Hub user named in markup")
    nosy, page = sign_in(browser, hub, "nosy")  # a Hub user the Hub does not let reach the service
    assert "Signed in as" not in page.inner_text("body") and "/services/maxpool/" not in page.url
    teacher, page = sign_in(browser, hub, "teacher")
    page.wait_for_url(re.compile(r".*/services/maxpool/instructor$"))
    assert page.locator("h1").inner_text() == f"{ASSIGNMENT}: live" and "Each test so far" in page.inner_text("body")
    assert_accessible(page, "the live view after the Hub's sign-in")
    page.goto(f"{hub.base}/services/maxpool/hub/signed-in")  # the instructor's session, but no Hub token
    assert "did not finish" in page.inner_text("body")
    assert_accessible(page, "the page of a sign-in that did not finish")
    unfinished = requests.get(f"{hub.base}/services/maxpool/hub/signed-in", allow_redirects=False, timeout=30)
    assert unfinished.status_code == 403 and "did not finish" in unfinished.text  # no Hub token: no session
    anonymous = requests.get(f"{hub.base}/services/maxpool/instructor", allow_redirects=False, timeout=30)
    assert anonymous.status_code == 303 and anonymous.headers["Location"].endswith("/hub/login")
    bob, page = sign_in(browser, hub, "hubbob")  # a student who signed in is no instructor
    assert page.goto(f"{hub.base}/services/maxpool/instructor").status == 403
    for context in (outsider, marked, nosy, teacher, bob):
        context.close()
