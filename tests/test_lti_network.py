"""LTI's calls of the platform when the platform is slow or hangs (tests/lti_platform.py):
the key set is read again at most once a minute, and only for a launch whose state and nonce
the service gave out, however many launches name a key it does not know; a key set that hangs
holds no page of the service (the launch's checks run off its event loop) and its launch is
refused with a sentence once lti/tool.py's ``NETWORK_TIMEOUT`` has passed; every request LTI
makes of the platform carries that timeout; a score post that hangs holds no page, no upload
and no other student's score. One platform, course and service, in order."""

from __future__ import annotations

import html
import json
import socket
import subprocess
import threading
import time

import pytest
import requests
from helpers import BIN, free_port
from lti_platform import Platform
from test_lti import LOOP_CORRECT, lti_course, notebook_of, roster_from_lti, upload
from test_lti_platform import form_of, launch, submit
from test_serve import Running

from maxpool_grader.lti.launch import KEY_SET_EVERY
from maxpool_grader.lti.tool import NETWORK_TIMEOUT, TimedSession, timed_session

PREFIX = "/maxpool/"
TEACHER, ANA, BO = "t-teacher", "s-ana", "s-bo"


@pytest.fixture(scope="module")
def platform():
    with Platform() as running:
        yield running


@pytest.fixture(scope="module")
def service(tmp_path_factory, platform):
    course = lti_course(tmp_path_factory.mktemp("lti-network"), platform)
    port = free_port()
    printed = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", f"http://127.0.0.1:{port}{PREFIX}",
                              "--course-dir", str(course)], capture_output=True, text=True, check=True)
    platform.register(json.loads(printed.stdout)["canvas"])
    running = Running(course, port, PREFIX)
    yield running
    platform.stall_jwks(0)
    running.stop()


def patient_launch(browser: requests.Session, url: str) -> requests.Response:
    """``launch``, waiting for the service's answer to the launch itself as long as it may take."""
    auth_page = submit(browser, browser.get(url, timeout=10).text)
    form = form_of(auth_page.text)
    return browser.post(form.action, data=form.fields, timeout=NETWORK_TIMEOUT + 30)


def key_set_reads(platform) -> int:
    return sum(hit.path == "/jwks" for hit in platform.requests)


@pytest.mark.integration
def test_a_score_post_that_hangs_holds_no_page_no_upload_and_no_other_student_s_score(service, platform):
    """The platform takes Ana's score and never answers: meanwhile every page answers, Bo's
    upload is graded and his score reaches the LMS (each post has NETWORK_TIMEOUT, off the
    event loop; Ana's is tried again), and once the platform answers again Ana's is there."""
    assert launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor")).status_code == 200  # binds
    for sub, name in ((ANA, "Ana Hang"), (BO, "Bo Next")):
        platform.add_member(sub, name, "learner")
    roster_from_lti(service.course)
    ana, bo = requests.Session(), requests.Session()
    for session, sub in ((ana, ANA), (bo, BO)):
        assert launch(session, platform.launch_url(sub)).status_code == 200
    platform.stall_scores(of=ANA)
    try:
        assert upload(ana, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
        assert platform.wait_stalled(180), "no score was posted for Ana"
        link = (service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip()
        for url in (link, service.base + "lti/jwks"):  # answered at once (timeout=5: a held page raises)
            assert requests.get(url, timeout=5).status_code == 200, url
        assert bo.get(service.base, timeout=5).status_code == 200
        assert upload(bo, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
        deadline = time.monotonic() + 180
        while not (platform.gradebook().get(BO) or {}).get("scoreGiven") == 15:  # his goes in meanwhile
            assert time.monotonic() < deadline, "Bo's score waited behind Ana's"
            time.sleep(0.5)
    finally:
        platform.release_scores()
    deadline = time.monotonic() + 120
    while not (platform.gradebook().get(ANA) or {}).get("scoreGiven") == 15:
        assert time.monotonic() < deadline, "Ana's score was lost"
        time.sleep(0.5)


@pytest.mark.integration
def test_the_key_set_is_read_again_at_most_once_a_minute_and_only_for_a_launch_the_service_began(service, platform):
    arrived = launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor"))
    assert arrived.status_code == 200 and arrived.url == service.base + "instructor", arrived.text
    assert key_set_reads(platform) == 1 and KEY_SET_EVERY == 60
    platform.rotate_keys()  # a key the service does not know: the 5 launches made 5 reads
    for _ in range(5):
        refused = launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor"))
        assert refused.status_code == 403 and "unknown key id" in html.unescape(refused.text), refused.text
    for _ in range(3):  # a state this service never gave out: refused before any key is looked for
        refused = launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor", tamper="wrong_state"))
        assert refused.status_code == 403 and "state does not match" in html.unescape(refused.text)
    assert key_set_reads(platform) == 1  # read once, for the first launch; not again within the minute


@pytest.mark.integration
def test_a_key_set_that_hangs_holds_no_page_and_its_launch_is_refused_in_time(service, platform):
    service.stop()
    service.__init__(service.course, int(service.base.split(":")[2].split("/")[0]), PREFIX)  # nothing cached
    platform.stall_jwks(120)
    done: dict = {}

    def launching():
        began = time.monotonic()
        done["answer"] = patient_launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor"))
        done["took"] = time.monotonic() - began

    thread = threading.Thread(target=launching)
    thread.start()
    time.sleep(2)  # the launch is waiting for the key set now
    link = (service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip()
    for url in (service.base + "lti/jwks", link, service.base):
        began = time.monotonic()
        page = requests.get(url, timeout=5)
        assert page.status_code in (200, 403) and time.monotonic() - began < 2, (url, page.status_code)
    assert thread.is_alive(), "the launch did not wait for the key set"
    thread.join(NETWORK_TIMEOUT + 30)
    answer = html.unescape(done["answer"].text)
    assert done["answer"].status_code == 403 and "The LMS's key set could not be read" in answer, answer
    assert NETWORK_TIMEOUT <= done["took"] < NETWORK_TIMEOUT + 15, done["took"]
    platform.stall_jwks(0)  # answering again; but the failed read was less than a minute ago
    again = launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor"))
    assert again.status_code == 403 and "read again at most once a minute" in html.unescape(again.text)


def test_every_request_of_the_platform_has_the_timeout(tmp_path):
    """pylti1p3 makes its requests without a timeout: through timed_session() (the launch's and
    the services' connector), a platform that takes the connection and never answers is given
    up after NETWORK_TIMEOUT."""
    from maxpool_grader.lti.passback import connector
    from maxpool_grader.lti.tool import Lti
    silent = socket.create_server(("127.0.0.1", 0))  # listens, never answers
    try:
        began = time.monotonic()
        with pytest.raises(requests.exceptions.ReadTimeout):
            timed_session().get(f"http://127.0.0.1:{silent.getsockname()[1]}/jwks")
        assert NETWORK_TIMEOUT <= time.monotonic() - began < NETWORK_TIMEOUT + 5
    finally:
        silent.close()
    assert NETWORK_TIMEOUT == 10.0
    settings = Lti(issuer="https://lms", client_id="c1", deployment_ids=["d"], auth_login_url="https://lms/a",
                   auth_token_url="https://lms/t", key_set_url="https://lms/k")
    assert isinstance(connector(tmp_path, settings)._requests_session, TimedSession)  # tokens, members, scores
