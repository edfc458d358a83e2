"""LTI 1.3 against a platform nobody here wrote (tests/lti_platform.py, built on the PyPI
library lti1p3platform): ``lti-config``'s registration is what the platform registers; an
instructor's launch lands on the live view; ``roster --from-lti`` fills the roster from Names
and Roles; a student launches in Chromium, uploads, reads their feedback and their score
appears in the platform's gradebook ("PendingManual": Part A waits for a person); every forged or broken launch
is a page with a sentence and an entry on the live view; a failing platform and a ``kill -9``
while a score waits lose nothing; a student who left the LMS's course is removed and their
session ends; revocation, the attempt limit and the deadline hold for LTI students; and once
Part A is graded by hand and the feedback released, the final score is "FullyGraded" with a
link to the feedback page.

Its unit tests, at the end, need no platform: the outbox and the launch store keep what they
hold across a reopen (a restart, a kill), a nonce or a state is taken once, who a checked
launch is (serve/signin.py), the sentence each refusal gets, what ``lti-config`` prints, and
an attempt's score (Part B less the late penalty).

The integration tests share one platform, course and service, and run in order."""

from __future__ import annotations

import csv
import html
import json
import os
import re
import signal
import stat
import subprocess
import time

import pytest
import requests
from a11y import assert_accessible, reflow_problems, tab
from helpers import ASSIGNMENT, BIN, ROOT, free_port, sqlite
from lti_platform import Platform
from nbgrader.api import Gradebook
from test_lti_platform import launch
from test_serve import LOOP_CORRECT, Running, notebook_of

from maxpool_grader.lti.launch import KEY_SET_EVERY
from maxpool_grader.lti.outbox import Outbox
from maxpool_grader.lti.passback import Passback
from maxpool_grader.lti.refusals import refusal_sentence
from maxpool_grader.lti.store import LaunchStore, course_of, other_course, record, records, student_of
from maxpool_grader.lti.tool import (
    Lti,
    LtiSetupError,
    context_roles,
    learning,
    public_jwks,
    registration,
    teaching,
    tool_conf,
)
from maxpool_grader.names import PART_A_CELL
from maxpool_grader.serve.lti_service import attempt_score
from maxpool_grader.serve.signin import SignIn, revoke

INTEGRATION = pytest.mark.integration  # a platform, a service, its workers, Chromium

POLICY = "\nc.Serve.attempts_per_hour = 2\nc.Serve.poll_interval = 0.3\n"
ANA, BO, CY, DI, TEACHER = "s-ana", "s-bo", "s-cy", "s-di", "t-teacher"
MOE, REX = "s-moe", "s-rex"  # under Moodle's timestamp rule; dropped from the course for a while
UMA, FAY = "s-uma", "s-fay"  # a risky change after a full score; a launch in the LMS's frame
PREFIX = "/maxpool/"  # behind a reverse proxy's path, as --base-url puts it: every LTI route and cookie under it
REFUSALS = {  # each attack of the platform, and what the page says
    "wrong_issuer": "not registered with (its issuer",
    "wrong_audience": "made for another tool",
    "unknown_deployment": "deployment of the tool this course does not know",
    "expired": "has expired",
    "alg_none": "signed with none, which this service never accepts",
    "hs256_with_public_key": "signed with HS256, which this service never accepts",
    "unknown_kid": "unknown key id",
    "wrong_state": "state does not match",
    "replay": "used already",
    "forged_instructor": "changed after the LMS signed it",
    "bad_message_type": "message type",
    "bad_version": "not LTI 1.3.0",
    # signed by the platform's own key: what stock pylti1p3 lets through, or words as a bad signature
    "no_exp": "has no expiry time (its exp claim is missing)",
    "iat_future": "the LMS's clock and this service's disagree (clock skew)",
    "deep_linking": "is a Deep Linking request (choosing content to add to the course), which this service does "
                    "not offer: it takes links to the assignment only (LtiResourceLinkRequest)",
    "submission_review": "is a Submission Review request (reviewing a student's submission), which this service",
}


class Served:
    """The course's one service, restarted by the tests that kill or stop it."""

    def __init__(self, course, port):
        self.course, self.port = course, port
        self.running = Running(course, port, PREFIX)
        self.base = self.running.base

    def restart(self):
        self.running = Running(self.course, self.port, PREFIX)


@pytest.fixture(scope="module")
def platform():
    with Platform() as running:
        yield running


def lti_course(folder, platform, policy: str = ""):
    """A copy of the course with LTI on for ``platform`` (and ``policy``'s lines), its roster
    one local student, "dee" (tests/test_lti_network.py makes its course so too)."""
    from helpers import copy_course
    course = copy_course(folder / "course", with_submissions=False)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(policy + f"""
c.Lti.enabled = True
c.Lti.issuer = {platform.issuer!r}
c.Lti.client_id = {platform.client_id!r}
c.Lti.deployment_ids = [{platform.deployment_id!r}]
c.Lti.auth_login_url = {platform.auth_login_url!r}
c.Lti.auth_token_url = {platform.auth_token_url!r}
c.Lti.key_set_url = {platform.jwks_url!r}
""")
    with open(course / "roster.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["id", "first_name", "last_name", "email"], ["dee", "Dee", "Local", ""]])
    return course


@pytest.fixture(scope="module")
def course(tmp_path_factory, platform):
    return lti_course(tmp_path_factory.mktemp("lti"), platform, POLICY)


@pytest.fixture(scope="module")
def service(course, platform):
    port = free_port()
    printed = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", f"http://127.0.0.1:{port}{PREFIX}",
                              "--course-dir", str(course)], capture_output=True, text=True, check=True)
    platform.register(json.loads(printed.stdout)["canvas"])  # Canvas's developer key, as an admin pastes it
    served = Served(course, port)
    yield served
    if served.running.process.poll() is None:
        served.running.stop()


def roster_from_lti(course, *more: str, returncode: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "maxpool-grader"), "roster", "--from-lti", "--course-dir", str(course), *more],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == returncode, done.stdout + done.stderr
    return done


def stored_services(course) -> dict:
    """What the launch store keeps of the LMS's addresses (and the binding), read as the roster reads it."""
    import sqlite3
    with sqlite3.connect(course / ".maxpool-grader" / "serve" / "lti.sqlite") as db:
        return {key: json.loads(value) for key, value in db.execute(
            "SELECT key, value FROM entries WHERE key LIKE 'service:%' OR key LIKE 'lineitem:%' OR key = 'course'")}


def instructor_view(service) -> str:
    link = (service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip()
    session = requests.Session()
    return html.unescape(session.get(link, timeout=30).text)


def upload(session: requests.Session, base: str, content: bytes) -> requests.Response:
    home = session.get(base, timeout=30)
    form = re.search(r'name="_xsrf" value="([^"]+)"', home.text)  # no form after the deadline: its cookie's token
    xsrf = form[1] if form else session.cookies.get("maxpool_xsrf")
    return session.post(base + "upload", data={"_xsrf": xsrf}, timeout=60,
                        files={"notebook": (f"{ASSIGNMENT}.ipynb", content)})


def wait_for(what, timeout: float = 120, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        found = what()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


@INTEGRATION
def test_the_platform_registered_what_lti_config_printed(service, platform):
    assert platform.tool_config["target_link_uri"] == service.base + "lti/launch"
    assert platform.tool_config["oidc_initiation_url"] == service.base + "lti/login"
    jwks = requests.get(service.base + "lti/jwks", timeout=10).json()
    assert jwks["keys"] == [platform.tool_config["public_jwk"]]


@INTEGRATION
def test_an_instructor_lands_on_the_live_view_and_names_and_roles_fill_the_roster(service, platform):
    """The roster is read over pages of two members, at the addresses the platform gives, capitals
    and all (pylti1p3 lowercases them: lti/tool.py's ServiceConnector keeps them as written)."""
    assert "No course yet: the first instructor launch" in instructor_view(service)
    platform.nrps_page_size = 2  # the launch's Names and Roles address asks for pages of two
    arrived = launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor", name="Tess Teacher"))
    assert arrived.status_code == 200 and arrived.url == service.base + "instructor", arrived.text
    assert "Scores not yet in the LMS" in arrived.text
    says = html.unescape(arrived.text)  # the binding, stated: the course this launch came from
    assert (f"This service serves one course: \u201cMax pooling, backward\u201d, context id 'course-maxpool' of "
            f"{platform.issuer}, deployment 'deployment-1', bound by its instructor's first launch on ") in says, says
    assert stored_services(service.course)["course"]["context_id"] == platform.context_id
    platform.add_member(ANA, "Ana Lovelace", "learner")
    platform.add_member(BO, "Bo Turing", "learner")
    done = roster_from_lti(service.course)
    added = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert added == ["+ s-ana (Ana Lovelace)", "+ s-bo (Bo Turing)"], done.stdout  # no SIS id: the LMS user id
    assert "kept, not in the LMS's course: dee" in done.stdout, done.stdout
    recorded = json.loads((service.course / ".maxpool-grader" / "lti.json").read_text())
    assert {info["sub"] for info in recorded.values()} == {ANA, BO}
    roster = (service.course / "roster.csv").read_text()
    assert "Ana" in roster and "Bo" in roster and "dee" in roster


@INTEGRATION
def test_a_launch_from_another_course_is_refused_before_anything_of_it_is_kept(service, platform):
    """The same platform, client and deployment, another course (its own Names and Roles and line
    items addresses): its instructor and its student are refused with a sentence, and the
    service keeps its own course's addresses, so the next ``roster --from-lti`` reads this course."""
    kept = stored_services(service.course)
    assert kept["service:nrps"]["context_memberships_url"] == f"{platform.nrps_url}?limit={platform.nrps_page_size}"
    for who, roles in (("t-other", "instructor"), (ANA, "learner"), ("s-other", "learner")):
        refused = launch(requests.Session(), platform.launch_url(who, roles=roles, context_id="course-other"))
        says = html.unescape(refused.text)
        assert refused.status_code == 403 and "one service serves one course" in says, (who, says)
        assert "This launch comes from another course (\u201cCourse course-other\u201d, context id 'course-other'" \
            in says, says
        assert platform.launches[-1]["claims"]["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"][
            "context_memberships_url"] == f"{platform.issuer}/courses/course-other/members"  # what it named
    assert stored_services(service.course) == kept  # nothing of those launches kept
    view = instructor_view(service)
    assert view.count("LTI launch refused: This launch comes from another course") >= 3  # one row each
    assert "This service serves one course: \u201cMax pooling, backward\u201d" in view
    done = roster_from_lti(service.course)  # this course's members, as before: nobody added or removed
    assert "0 added, 0 removed" in done.stdout, done.stdout


@INTEGRATION
def test_every_broken_or_forged_launch_is_a_page_and_a_line_on_the_live_view(service, platform, browser):
    first = launch(requests.Session(), platform.launch_url(ANA))  # a valid one first: the replay's original
    assert first.status_code == 200 and "submit for feedback" in first.text, first.text
    pages = {}
    for tamper, says in REFUSALS.items():
        refused = launch(requests.Session(), platform.launch_url(ANA, tamper=tamper))
        assert refused.status_code == 403 and says in html.unescape(refused.text), (tamper, refused.text)
        assert "Traceback" not in refused.text
        pages[tamper] = refused.text
    stranger = launch(requests.Session(), platform.launch_url("s-zed", name="Zed"))
    assert stranger.status_code == 403 and "not on this course's roster" in html.unescape(stranger.text)
    claims_more = launch(requests.Session(), platform.launch_url(ANA, roles="instructor"))
    assert claims_more.status_code == 403 and "claims an instructor's role" in html.unescape(claims_more.text)
    view = instructor_view(service)
    for says in [*REFUSALS.values(), "not on this course's roster", "claims an instructor's role"]:
        assert "LTI launch refused: " in view and says in view, says
    from pages import offline_page
    context = browser.new_context(viewport={"width": 320, "height": 640})  # reflow: 320 CSS px, no scrolling sideways
    page = offline_page(browser, context)
    page.goto(platform.launch_url(ANA, tamper="expired"))  # the platform's auto-posting pages, then ours
    page.wait_for_selector("text=This launch was refused")
    assert_accessible(page, "an LTI launch refused")
    assert reflow_problems(page) == {} and "has expired" in page.inner_text("main")
    context.close()
    platform.rotate_keys()  # the platform's new key: its key set is read again, at most once a minute
    read_lately = time.monotonic() - platform.jwks_read_at < KEY_SET_EVERY - 5  # before the launch reads it
    early = launch(requests.Session(), platform.launch_url(ANA))
    if read_lately:  # read for an earlier launch, moments ago: not read again for this one
        assert early.status_code == 403 and "unknown key id" in html.unescape(early.text), early.text
    time.sleep(max(0.0, KEY_SET_EVERY - (time.monotonic() - platform.jwks_read_at)) + 1)
    rotated = launch(requests.Session(), platform.launch_url(ANA))  # a minute on: read again, and taken
    assert rotated.status_code == 200 and "submit for feedback" in rotated.text, rotated.text


@INTEGRATION
def test_the_course_s_own_roles_decide_with_canvas_s_and_moodle_s_role_sets(service, platform):
    """Canvas's institution roles (an account administrator enrolled as a student, a teacher of
    another course) never make anyone the instructor; Moodle's site administrator, whom Moodle
    gives the course's Instructor role, is; a TA is; an observer is nobody here (CANVAS, MOODLE below)."""
    ana = launch(requests.Session(), platform.launch_url(ANA, roles=CANVAS["account admin enrolled as a student"]))
    assert ana.status_code == 200 and ana.url == service.base and "submit for feedback" in ana.text, ana.text
    for who, roles in (("s-yan", CANVAS["teacher elsewhere, student here"]), ("s-obs", CANVAS["observer"]),
                       ("s-adm", CANVAS["account admin, no course role"])):
        refused = launch(requests.Session(), platform.launch_url(who, roles=roles))
        assert refused.status_code == 403 and "not on this course's roster" in html.unescape(refused.text), who
    for who, roles in (("t-ta", CANVAS["ta"]), ("t-designer", CANVAS["designer"]),
                       ("t-moodle-admin", MOODLE["site administrator"])):
        arrived = launch(requests.Session(), platform.launch_url(who, roles=roles))
        assert arrived.status_code == 200 and arrived.url == service.base + "instructor", (who, arrived.text)


@INTEGRATION
def test_a_student_launches_uploads_and_the_score_reaches_the_lms(service, platform, browser):
    from pages import offline_page
    from playwright.sync_api import expect
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = offline_page(browser, context)
    page.goto(platform.launch_url(ANA))
    page.wait_for_url(service.base)
    assert_accessible(page, "an LTI student's home page")
    notebook = service.course.parent / "ana.ipynb"
    notebook.write_bytes(notebook_of(LOOP_CORRECT))
    page.set_input_files("input[type=file]", str(notebook))
    stops = [tab(page) for _ in range(8)]  # the keyboard alone reaches the upload button, its focus drawn
    button = next(stop for stop in stops if stop["tag"] == "button")
    assert button["outline"], stops
    page.focus("button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/attempt/\d+$"))
    service.running.wait_idle()
    # The waiting page's own script opens the result when it is ready: wait for that navigation
    # (a reload here raced it, and reading the page mid-navigation failed)
    page.wait_for_url(re.compile(r".*/attempt/\d+/feedback$"))
    page.wait_for_load_state("load")
    expect(page.locator("body")).to_contain_text("max_pool_backward")
    context.close()
    score = wait_for(lambda: platform.gradebook().get(ANA))
    graded = [row for row in service.running.attempts() if row["status"] == "graded"][-1]
    tests = json.loads(graded["result"])["tests"]
    part_b = sum(test["score"] for test in tests if not test["manual"])
    assert score["scoreGiven"] == part_b and score["gradingProgress"] == "PendingManual", score
    assert score["scoreMaximum"] == json.loads(graded["result"])["max_score"]
    # as docs/lti.md#grades says: Canvas shows Part B for a grader to finish, Moodle nothing yet
    assert platform.shown("canvas")[ANA] == part_b and platform.shown("moodle")[ANA] is None


@INTEGRATION
def test_a_failing_platform_and_a_kill_lose_no_score(service, platform, browser):
    session = requests.Session()
    assert launch(session, platform.launch_url(BO)).status_code == 200
    platform.fail_next(3, status=500)
    assert upload(session, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
    service.running.wait_idle()
    view = wait_for(lambda: (text := instructor_view(service)) and "HTTP 500" in text and text, every=0.2)
    assert "Scores not yet in the LMS" in view and "the platform answered HTTP 500" in view
    live = browser.new_page()  # the live view with a score waiting, as the instructor reads it
    live.goto((service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip())
    assert_accessible(live, "the live view with a score not yet in the LMS")
    live.close()
    wait_for(lambda: platform.gradebook().get(BO), timeout=60)  # tried again after 2, 4, 8 s: taken
    # the platform goes down; a score waits in the outbox; the service is killed; nothing is lost
    ana = requests.Session()
    assert launch(ana, platform.launch_url(ANA)).status_code == 200
    platform.down()
    before = platform.gradebook()[ANA]
    # the same 15 of 15 again: it counts (of equal scores, the latest: serve/standing.py), so it is posted
    assert upload(ana, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
    service.running.wait_idle()
    outbox = service.course / ".maxpool-grader" / "serve" / "ags-outbox.sqlite"
    wait_for(lambda: _pending(outbox))
    service.running.process.send_signal(signal.SIGKILL)
    service.running.process.wait(timeout=30)
    platform.up()
    service.restart()
    latest = wait_for(lambda: (got := platform.gradebook().get(ANA)) and got["timestamp"] > before["timestamp"]
                      and got, timeout=90)
    assert latest["gradingProgress"] == "PendingManual" and latest["scoreGiven"] == 15
    wait_for(lambda: not _pending(outbox), timeout=30)  # marked posted once the platform's answer is read
    # the attempt limit holds: Ana has used her 2 attempts of the hour
    refused = upload(ana, service.base, notebook_of(LOOP_CORRECT))
    assert refused.status_code == 429 and "graded attempts of the last hour" in refused.text


def _pending(outbox) -> list:
    import sqlite3
    with sqlite3.connect(outbox) as db:
        return db.execute("SELECT id FROM scores WHERE status='pending'").fetchall()


def _scores_of(outbox, student: str) -> list[tuple]:
    """(status, tries, error) of each of ``student``'s scores in the outbox, oldest first."""
    import sqlite3
    with sqlite3.connect(outbox) as db:
        return db.execute("SELECT status, tries, error FROM scores WHERE student=? ORDER BY id", (student,)).fetchall()


@INTEGRATION
def test_a_student_who_left_the_lms_course_is_removed_and_their_session_ends(service, platform):
    bo = requests.Session()
    assert launch(bo, platform.launch_url(BO)).status_code == 200
    platform.remove_member(BO)
    platform.add_member(CY, "Cy Hopper", "learner")
    before = (service.course / "roster.csv").read_text()
    held = roster_from_lti(service.course, returncode=3)  # 1 of 3 (dee, Ana, Bo): more than a fifth, without --yes
    assert "would remove 1 of the class's 3 students, more than 20%; nothing was changed" in held.stdout, held.stdout
    assert "\n- s-bo\n" in held.stdout and "--yes" in held.stdout
    assert (service.course / "roster.csv").read_text() == before and bo.get(service.base, timeout=30).status_code == 200
    done = roster_from_lti(service.course, "--yes")
    removed = [line for line in done.stdout.splitlines() if line.startswith("- ")]
    assert len(removed) == 1 and "left the course in the LMS" in removed[0], done.stdout
    assert "+ s-cy (Cy Hopper)" in done.stdout.splitlines()  # (and Zed, who launched once and so is a member)
    ended = bo.get(service.base, timeout=30)  # at once: off the roster, and the session revoked
    assert ended.status_code == 403 and "open the assignment there again" in ended.text
    again = launch(requests.Session(), platform.launch_url(BO))
    assert again.status_code == 403 and "not on this course's roster" in html.unescape(again.text)
    cy = launch(requests.Session(), platform.launch_url(CY))
    assert cy.status_code == 200 and "submit for feedback" in cy.text


@INTEGRATION
def test_a_kill_in_the_middle_of_a_post_loses_no_score_and_changes_none(service, platform):
    """The platform has recorded Cy's score but not answered yet when the service is killed: after
    the restart the score is posted again, the same score with the same timestamp (AGS keeps the
    newest by timestamp, so a repeat changes nothing), and the outbox marks it posted."""
    cy = requests.Session()
    assert launch(cy, platform.launch_url(CY)).status_code == 200
    outbox = service.course / ".maxpool-grader" / "serve" / "ags-outbox.sqlite"
    platform.stall_scores()
    try:
        assert upload(cy, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
        assert platform.wait_stalled(120), "no score was posted for Cy"
        assert _pending(outbox)  # the post is on its way: not yet marked posted
        service.running.process.send_signal(signal.SIGKILL)
        service.running.process.wait(timeout=30)
    finally:
        platform.release_scores()
    first = [score for score in platform.scores if score["userId"] == CY]
    assert len(first) == 1 and first[0]["scoreGiven"] == 15 and first[0]["gradingProgress"] == "PendingManual"
    service.restart()
    wait_for(lambda: not _pending(outbox), timeout=90)
    posted = [score for score in platform.scores if score["userId"] == CY]
    assert len(posted) >= 2, "the score the kill left unanswered was not posted again"
    assert {(score["scoreGiven"], score["timestamp"], score["gradingProgress"]) for score in posted} == \
        {(15, first[0]["timestamp"], "PendingManual")}
    assert platform.gradebook()[CY]["scoreGiven"] == 15


@INTEGRATION
def test_under_moodle_s_rule_a_repost_after_a_kill_is_answered_409_and_counts_as_posted(service, platform):
    """Moodle takes a score only with a timestamp later than the one it has, and answers 409
    otherwise: the score the kill left unanswered, posted again with its own timestamp, is there
    already, so the 409 marks it posted, and nothing waits behind it."""
    platform.add_member(MOE, "Moe Moodle", "learner")
    launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor", name="Tess Teacher"))  # binds
    roster_from_lti(service.course)
    moe = requests.Session()
    assert launch(moe, platform.launch_url(MOE)).status_code == 200
    outbox = service.course / ".maxpool-grader" / "serve" / "ags-outbox.sqlite"
    platform.timestamps = "later only"
    try:
        platform.stall_scores()
        try:
            assert upload(moe, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
            assert platform.wait_stalled(120), "no score was posted for Moe"
            service.running.process.send_signal(signal.SIGKILL)
            service.running.process.wait(timeout=30)
        finally:
            platform.release_scores()
        service.restart()
        wait_for(lambda: not _pending(outbox), timeout=90)
    finally:
        platform.timestamps = "any"
    answers = [score for score in platform.scores if score["userId"] == MOE]
    assert [score.get("refused") for score in answers] == [None, 409]  # taken, then the repost answered 409
    assert len({score["timestamp"] for score in answers}) == 1 and platform.gradebook()[MOE]["scoreGiven"] == 15
    assert [(status, error) for status, _, error in _scores_of(outbox, MOE)] == [
        ("posted", "the platform had this score or a later one (HTTP 409)")]


@INTEGRATION
def test_a_score_the_lms_refuses_for_good_is_shown_and_blocks_none_of_the_student_s_later_ones(service, platform,
                                                                                               browser):
    """A student dropped from the LMS's course: the platform refuses their score with 422 (as
    Canvas does), which a repost would get again. The live view shows it with the LMS's answer,
    it is not tried again, and the student's next score, once they are back, goes in."""
    platform.add_member(REX, "Rex Dropped", "learner")
    launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor", name="Tess Teacher"))  # binds
    roster_from_lti(service.course)
    rex = requests.Session()
    assert launch(rex, platform.launch_url(REX)).status_code == 200
    platform.remove_member(REX)
    assert upload(rex, service.base, notebook_of(LOOP_CORRECT.replace("+=", "="))).status_code == 200
    service.running.wait_idle()
    view = wait_for(lambda: (text := instructor_view(service)) and "Scores the LMS refused" in text and text)
    assert "the platform answered HTTP 422" in view and "is not a member of the context" in view
    live = browser.new_page()
    live.goto((service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip())
    assert_accessible(live, "the live view with a score the LMS refused")
    live.close()
    platform.add_member(REX, "Rex Back")
    assert upload(rex, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
    wait_for(lambda: (got := platform.gradebook().get(REX)) and got["scoreGiven"] == 15, timeout=90)
    outbox = service.course / ".maxpool-grader" / "serve" / "ags-outbox.sqlite"
    # sent once (a failure would have been tried again after 2 s, while the next attempt was graded)
    wait_for(lambda: _scores_of(outbox, REX)[-1][0] == "posted", timeout=30)  # once the LMS's answer is read
    assert [(status, tries) for status, tries, _ in _scores_of(outbox, REX)] == [("refused", 1), ("posted", 0)]


@INTEGRATION
def test_an_attempt_that_does_not_count_never_reaches_the_lms(service, platform):
    """Under the rule that the best Part B score counts (serve/standing.py), a worse attempt after
    a full score is graded and told, and the LMS keeps the full score: it is never posted."""
    platform.add_member(UMA, "Uma Risk", "learner")
    roster_from_lti(service.course)
    uma = requests.Session()
    assert launch(uma, platform.launch_url(UMA)).status_code == 200
    assert upload(uma, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
    full = wait_for(lambda: platform.gradebook().get(UMA), timeout=120)
    assert full["scoreGiven"] == 15
    worse = upload(uma, service.base, notebook_of(LOOP_CORRECT.replace("+=", "=")))  # overlapping windows overwrite
    assert worse.status_code == 200
    service.running.wait_idle()
    outbox = service.course / ".maxpool-grader" / "serve" / "ags-outbox.sqlite"
    graded = [row for row in service.running.attempts() if row["status"] == "graded" and row["result"]
              and json.loads(row["result"]).get("counts") is False]
    assert graded, service.running.attempts()  # graded, and not the one that counts
    time.sleep(3)  # a post would have been made by now (the outbox is read every second)
    assert len(_scores_of(outbox, next(row["student"] for row in graded))) == 1
    assert [score["scoreGiven"] for score in platform.scores if score["userId"] == UMA] == [15]


@INTEGRATION
def test_a_launch_in_the_lms_s_frame_goes_on_in_a_new_tab(service, platform, browser):
    """Canvas left to load the tool in its iframe: the framed login gets the one page any site
    may frame, whose link (reached with the keyboard) opens the same launch in a new tab, where
    the student lands signed in on their page (serve/lti_frame.py)."""
    from pages import offline_page
    launch(requests.Session(), platform.launch_url(TEACHER, roles="instructor", name="Tess Teacher"))  # binds
    platform.add_member(FAY, "Fay Framed", "learner")
    roster_from_lti(service.course)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = offline_page(browser, context)
    course_page = (f'<!doctype html><html lang="en"><head><title>The course</title></head><body><main>'
                   f'<iframe title="The assignment" src="{platform.launch_url(FAY)}" width="900" height="500">'
                   '</iframe></main></body></html>')  # the LMS's course page, which frames the tool
    course_url = platform.issuer + "/the-course-page"  # on the LMS's origin (answered by Playwright)
    page.route(course_url, lambda route: route.fulfill(body=course_page, content_type="text/html"))
    page.goto(course_url)
    framed = wait_for(lambda: next((frame for frame in page.frames if "/lti/login" in frame.url), None), timeout=60)
    link = framed.get_by_role("link", name="Open the grader (opens in a new tab)")
    link.wait_for(timeout=30_000)
    assert "This grader opens in a tab of its own" in framed.content()
    with context.expect_page(timeout=60_000) as opened:
        link.focus()
        page.keyboard.press("Enter")
    tab = opened.value
    tab.wait_for_url(service.base, timeout=60_000)
    assert "Signed in as" in tab.content() and "This launch was refused" not in tab.content()
    framed_home = requests.get(service.base, timeout=30)  # every other page still refuses any frame
    assert "frame-ancestors 'none'" in framed_home.headers["Content-Security-Policy"]
    context.close()


@INTEGRATION
def test_a_launch_that_names_the_lms_s_own_column_gets_its_score_there(service, platform):
    """Canvas and Moodle make a column for a graded activity and name it in every launch: the score
    goes there, not into a column of the service's own."""
    platform.add_member(DI, "Di Noor", "learner")
    roster_from_lti(service.course)
    column = platform.add_column("Max pooling, backward (the LMS's own column)", 20)
    try:
        di = requests.Session()
        assert launch(di, platform.launch_url(DI)).status_code == 200
        assert upload(di, service.base, notebook_of(LOOP_CORRECT)).status_code == 200
        score = wait_for(lambda: platform.gradebook(column).get(DI), timeout=120)
    finally:
        platform.column = None  # later launches name no column again
    assert score["scoreGiven"] == 15 and score["gradingProgress"] == "PendingManual"
    assert all(got["lineitem"] == column for got in platform.scores if got["userId"] == DI)


@INTEGRATION
def test_a_revocation_ends_an_lti_session(service, platform):
    ana = requests.Session()
    assert launch(ana, platform.launch_url(ANA)).status_code == 200
    student = next(who for who, info in json.loads((service.course / ".maxpool-grader" / "lti.json").read_text())
                   .items() if info["sub"] == ANA)
    subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", service.base, "--revoke", student,
                    "--course-dir", str(service.course)], check=True, capture_output=True)
    ended = ana.get(service.base, timeout=30)
    assert ended.status_code == 403 and "open the assignment there again" in ended.text
    assert launch(ana, platform.launch_url(ANA)).status_code == 200  # the LMS signs her in anew, as a new link would


@INTEGRATION
def test_after_the_deadline_part_a_graded_by_hand_and_released_is_the_final_score(service, platform):
    service.running.stop()
    with open(service.course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.deadline = '2020-01-01 00:00'\n")
    service.restart()
    ana = requests.Session()
    assert launch(ana, platform.launch_url(ANA)).status_code == 200
    assert "The deadline has passed" in ana.get(service.base, timeout=30).text  # no form
    refused = upload(ana, service.base, notebook_of(LOOP_CORRECT))  # and an upload made anyway
    assert refused.status_code == 403 and "The deadline has passed" in refused.text, refused.text
    student = next(who for who, info in json.loads((service.course / ".maxpool-grader" / "lti.json").read_text())
                   .items() if info["sub"] == ANA)
    with Gradebook(sqlite(service.course)) as gradebook:
        grade = gradebook.find_grade(PART_A_CELL, ASSIGNMENT, ASSIGNMENT, student)
        grade.manual_score, grade.needs_manual_grade = 3, False
        gradebook.db.commit()
        total = gradebook.find_submission(ASSIGNMENT, student).score
    for step in ("generate_feedback", "release_feedback"):
        made = subprocess.run([str(BIN / "nbgrader"), step, ASSIGNMENT, *(["--force"] if step.startswith("g") else [])],
                              cwd=service.course, capture_output=True, text=True, timeout=600)
        assert made.returncode == 0, made.stdout + made.stderr
    final = wait_for(lambda: (got := platform.gradebook().get(ANA)) and got["gradingProgress"] == "FullyGraded"
                     and got, timeout=60)
    assert final["scoreGiven"] == total and final["comment"] == f"Your final feedback: {service.base}final"
    assert platform.shown("canvas")[ANA] == platform.shown("moodle")[ANA] == total  # both gradebooks show it
    assert ana.get(service.base + "final", timeout=30).status_code == 200


# ------------------------------------------------------------------ the parts that need no platform (unit)
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"


def test_the_outbox_keeps_every_score_in_order_and_backs_off_after_a_failure(tmp_path):
    box = Outbox(tmp_path)
    assert box.add("ana", "sub-ana", "attempt:1", 5, 15, progress="PendingManual", activity="Submitted")
    assert not box.add("ana", "sub-ana", "attempt:1", 5, 15, progress="PendingManual", activity="Submitted")  # once
    box.add("ben", "sub-ben", "attempt:3", 1, 15, progress="PendingManual", activity="Submitted")
    assert [score.source for score in box.due()] == ["attempt:1", "attempt:3"]  # each student's oldest first
    assert box.failed(box.due()[0].id, "the platform answered HTTP 500") == 2.0
    assert [score.source for score in box.due()] == ["attempt:3"]  # ana's waits
    box.close()
    again = Outbox(tmp_path)  # a restart (or a kill -9: every write is committed before it is acted on)
    assert [score.source for score in again.pending()] == ["attempt:1", "attempt:3"]
    assert again.pending()[0].error == "the platform answered HTTP 500"
    assert [score.source for score in again.due(time.time() + 3)] == ["attempt:1", "attempt:3"]
    assert again.failed(again.pending()[0].id, "x") == 4.0 and again.failed(again.pending()[0].id, "x") == 8.0
    again.posted(again.pending()[0].id)
    assert [score.source for score in again.due(time.time() + 3)] == ["attempt:3"]


def test_the_newest_score_supersedes_the_older_pending_ones_and_a_refusal_blocks_nothing(tmp_path):
    box = Outbox(tmp_path)
    for number, points in ((1, 5), (2, 9), (4, 12)):
        box.add("ana", "sub-ana", f"attempt:{number}", points, 15, progress="PendingManual", activity="Submitted")
    box.add("ben", "sub-ben", "attempt:3", 1, 15, progress="PendingManual", activity="Submitted")
    assert [score.source for score in box.due()] == ["attempt:4", "attempt:3"]  # ana's newest, alone
    assert [score.status for score in box.all() if score.student == "ana"] == ["superseded", "superseded", "pending"]
    box.refused(box.due()[0].id, "the platform answered HTTP 422: userId 'sub-ana' is not a member")
    assert [score.source for score in box.due()] == ["attempt:3"] and box.refusals()[0].source == "attempt:4"
    box.add("ana", "sub-ana", "attempt:5", 15, 15, progress="PendingManual", activity="Submitted")
    assert [score.source for score in box.due()] == ["attempt:3", "attempt:5"]  # the refusal blocks nothing
    assert [score.status for score in box.all() if score.student == "ana"][-2:] == ["refused", "pending"]
    box.posted(box.due()[1].id, "the platform had this score or a later one (HTTP 409)")
    assert box.all()[-1].status == "posted" and "409" in box.all()[-1].error


def test_a_nonce_or_state_is_taken_once_and_still_there_after_a_restart(tmp_path):
    store = LaunchStore(tmp_path)
    store.put("lti1p3-nonce-abc", True, 60)
    store.put("gone", True, -1)
    store.close()
    store = LaunchStore(tmp_path)
    assert store.take("lti1p3-nonce-abc") and not store.take("lti1p3-nonce-abc")
    assert not store.take("gone") and store.get("gone") is None
    store.remember_services({"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice":
                             {"context_memberships_url": "http://127.0.0.1:1/nrps"}})
    assert store.services() == ({"context_memberships_url": "http://127.0.0.1:1/nrps"}, None)


def test_the_column_is_the_one_the_first_launch_named_never_a_later_launch_s(tmp_path):
    store = LaunchStore(tmp_path)
    endpoint = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
    store.remember_services({endpoint: {"lineitems": "https://lms/items", "lineitem": "https://lms/items/1"}})
    store.remember_services({endpoint: {"lineitems": "https://lms/items", "lineitem": "https://lms/items/2"}})
    store.remember_services({endpoint: {"lineitems": "https://lms/items?v=2"}})  # a link that names no column
    assert store.services()[1] == {"lineitems": "https://lms/items?v=2", "lineitem": "https://lms/items/1"}


def test_the_first_binding_holds_and_a_launch_of_another_course_is_a_sentence(tmp_path):
    context, deployment = "https://purl.imsglobal.org/spec/lti/claim/context", \
        "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
    claims = {"iss": "https://canvas.instructure.com", deployment: "42:8865aa05",
              context: {"id": "4dde05e8ca19", "title": "Pooling 101"}}
    ours = course_of(claims, "10000000000042")
    assert other_course(None, ours) is None  # nothing bound yet: taken (the first instructor launch binds it)
    store = LaunchStore(tmp_path)
    assert store.bind(ours) == ours
    assert store.bind(course_of({**claims, context: {"id": "c-2"}}, "10000000000042")) == ours  # the first holds
    store.close()
    store = LaunchStore(tmp_path)
    assert store.binding() == ours  # after a restart too
    assert other_course(ours, course_of(claims, "10000000000042")) is None
    for change in ({context: {"id": "c-2", "title": "Another"}}, {deployment: "43:other"},
                   {"iss": "https://other.instructure.com"}):
        why = other_course(ours, course_of({**claims, **change}, "10000000000042"))
        assert why.startswith("This launch comes from another course (") and "one service serves one course" in why
        assert "(\u201cPooling 101\u201d, context id '4dde05e8ca19' of https://canvas.instructure.com, deployment " \
               "'42:8865aa05', bound by its instructor's first launch on " in why, why
    assert other_course(ours, course_of({**claims, "aud": "x"}, "other-client")).startswith("This launch comes from")
    assert "names no course" in other_course(ours, course_of({**claims, context: {"title": "No id"}}, "1"))
    assert "names no course" in other_course(None, course_of({"iss": "x"}, "1"))


def test_roster_from_lti_removes_no_more_than_a_fifth_of_the_class_without_yes(tmp_path, monkeypatch):
    """An LMS answering for another course, or with an empty page, would empty the class: a sync
    that removes more than a fifth of it changes nothing without ``yes`` and says whom."""
    from maxpool_grader.lti.roster import MOST_REMOVED, TooManyLeaving, sync
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")  # nbgrader runs alembic to make the gradebook
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"

    def members(count):
        return [{"user_id": f"u{i}", "status": "Active", "name": f"U {i}", "roles": [MEMBERSHIP + "Learner"]}
                for i in range(count)]
    assert MOST_REMOVED == 0.2
    assert len(sync(tmp_path, db, members(10), revoke=revoke)) == 10
    kept = (tmp_path / "roster.csv").read_text(), records(tmp_path)
    with pytest.raises(TooManyLeaving) as held:
        sync(tmp_path, db, members(7), revoke=revoke)  # 3 of 10 leave: more than a fifth
    assert (held.value.leaving, held.value.of) == (["u7", "u8", "u9"], 10)
    assert ((tmp_path / "roster.csv").read_text(), records(tmp_path)) == kept  # nothing changed
    removed = [line for line in sync(tmp_path, db, members(8), revoke=revoke) if line.startswith("- ")]
    assert [line.split(":")[0] for line in removed] == ["- u8", "- u9"]  # 2 of 10: a fifth, not more
    with pytest.raises(TooManyLeaving) as held:
        sync(tmp_path, db, [], revoke=revoke)  # an empty page: everyone
    assert len(held.value.leaving) == 8 and len(records(tmp_path)) == 8
    assert len([line for line in sync(tmp_path, db, [], revoke=revoke, yes=True) if line.startswith("- ")]) == 8
    assert records(tmp_path) == {}


def test_the_lms_user_is_who_names_and_roles_recorded_never_a_name(tmp_path):
    on_roster = {"ana", "ben"}
    signin = SignIn(tmp_path / "serve", is_student=on_roster.__contains__)
    record(tmp_path, "ana", {"sub": "u-1", "name": "Ben"})  # a display name that is someone else's
    assert student_of(tmp_path, "u-1") == "ana" and student_of(tmp_path, "Ben") is None
    assert signin.lti_user("u-1", teaching=False, recorded_as="ana") == ("student", "ana")
    assert signin.lti_user("u-9", teaching=False, recorded_as=None) == ("stranger", "")
    assert signin.lti_user("u-1", teaching=True, recorded_as="ana") == ("forged", "ana")
    assert signin.lti_user("u-7", teaching=True, recorded_as=None) == ("instructor", "")
    on_roster.discard("ana")  # taken off the roster: the recorded user gets nothing
    assert signin.lti_user("u-1", teaching=False, recorded_as="ana") == ("stranger", "ana")
    assert records(tmp_path)["ana"]["sub"] == "u-1"
    assert teaching({ROLES: [MEMBERSHIP + "Instructor"]}) and not teaching({ROLES: [MEMBERSHIP + "Learner"]})


# Canvas's and Moodle's role sets, as they send them. Where each was found: Canvas's teacher,
# hypothesis/lms#4373 (a Canvas launch's claim); its role map (TA, designer, observer, student,
# the institution and system roles), quoted from Canvas's source in
# Izumi-kun/LTI-Tool-Provider-Library-PHP#3; its designer, PrairieLearn/PrairieLearn#11040; an
# account administrator enrolled as a student, dmitry-viskov/pylti1.3#150 and
# numbas/numbas-lti-provider#341 (the institution roles come in every course); Moodle's site
# administrator (Moodle 3.7, LTI 1.3), celtic-project/LTI-PHP#10; Moodle's teacher and student,
# Moodle's lti_get_ims_role ("Instructor" for who may manage the activity, else "Learner") and
# its Names and Roles service's CONTEXT_ROLE_INSTRUCTOR and CONTEXT_ROLE_LEARNER.
INSTITUTION = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
SYSTEM = "http://purl.imsglobal.org/vocab/lis/v2/system/person#"
CANVAS = {
    "teacher": [INSTITUTION + "Instructor", INSTITUTION + "Student", MEMBERSHIP + "Instructor", SYSTEM + "User"],
    "ta": [INSTITUTION + "Student", "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
           MEMBERSHIP + "Instructor", SYSTEM + "User"],
    "ta, as Canvas's role map spells it": ["http://purl.imsglobal.org/vocab/lis/v2/membership/instructor#TeachingAssistant",
                                          MEMBERSHIP + "Instructor"],
    "designer": [INSTITUTION + "Instructor", MEMBERSHIP + "ContentDeveloper", SYSTEM + "User"],
    "student": [INSTITUTION + "Student", MEMBERSHIP + "Learner", SYSTEM + "User"],
    "teacher elsewhere, student here": [INSTITUTION + "Instructor", INSTITUTION + "Student", MEMBERSHIP + "Learner",
                                        SYSTEM + "User"],
    "account admin enrolled as a student": [INSTITUTION + "Administrator", INSTITUTION + "Instructor",
                                            INSTITUTION + "Student", MEMBERSHIP + "Learner", SYSTEM + "User"],
    "account admin, no course role": [INSTITUTION + "Administrator", INSTITUTION + "Instructor",
                                      INSTITUTION + "Student", SYSTEM + "User"],
    "observer": [INSTITUTION + "Student", MEMBERSHIP + "Mentor", SYSTEM + "User"],
    "site admin (system)": [SYSTEM + "SysAdmin", SYSTEM + "User", MEMBERSHIP + "Learner"],
}
MOODLE = {
    "teacher": [MEMBERSHIP + "Instructor"],
    "student": [MEMBERSHIP + "Learner"],
    "site administrator": [INSTITUTION + "Administrator", SYSTEM + "Administrator", MEMBERSHIP + "Instructor"],
}
TEACHES = {("canvas", "teacher"), ("canvas", "ta"), ("canvas", "ta, as Canvas's role map spells it"),
           ("canvas", "designer"), ("moodle", "teacher"), ("moodle", "site administrator")}
LEARNS = {("canvas", "student"), ("canvas", "teacher elsewhere, student here"),
          ("canvas", "account admin enrolled as a student"), ("canvas", "site admin (system)"), ("moodle", "student")}


@pytest.mark.parametrize(("lms", "who"), [("canvas", who) for who in CANVAS] + [("moodle", who) for who in MOODLE])
def test_only_the_course_s_own_roles_decide_as_canvas_and_moodle_send_them(lms, who, tmp_path):
    roles = (CANVAS if lms == "canvas" else MOODLE)[who]
    assert teaching({ROLES: roles}) == ((lms, who) in TEACHES), roles
    assert learning(roles) == ((lms, who) in LEARNS), roles
    # and the launch decides as its course roles say: a recorded student with a teacher's
    # institution role is that student; an unrecorded Learner is a stranger, never the instructor
    signin = SignIn(tmp_path / "serve", is_student={"ana"}.__contains__)
    expected = {(True, None): ("instructor", ""), (True, "ana"): ("forged", "ana"),
                (False, None): ("stranger", ""), (False, "ana"): ("student", "ana")}
    for recorded in (None, "ana"):
        assert signin.lti_user("u-1", teaching=teaching({ROLES: roles}), recorded_as=recorded) == \
            expected[((lms, who) in TEACHES, recorded)]


def test_the_short_forms_and_sub_roles_are_read_as_lti_means_them():
    assert context_roles(["Instructor", "Learner", "TeachingAssistant"]) == {"Instructor", "Learner",
                                                                              "TeachingAssistant"}
    assert teaching({ROLES: ["TeachingAssistant"]}) and teaching({ROLES: [MEMBERSHIP + "Administrator"]})
    assert teaching({ROLES: [MEMBERSHIP + "TeachingAssistant"]})  # a platform's spelling of the TA
    learner_instructor = "http://purl.imsglobal.org/vocab/lis/v2/membership/Learner#Instructor"
    assert context_roles([learner_instructor]) == {"Learner"} and not teaching({ROLES: [learner_instructor]})
    assert context_roles([CANVAS["ta, as Canvas's role map spells it"][0]]) == {"Instructor"}  # lower-case principal
    for other in ("urn:lti:instrole:ims/lis/Instructor", INSTITUTION + "Instructor", SYSTEM + "Administrator",
                  "http://purl.imsglobal.org/vocab/lis/v2/person#Administrator", "", 7, None):
        assert not teaching({ROLES: [other]}) and not learning([other]), other
    assert not teaching({ROLES: "Instructor"}) and not teaching({})  # not a list: no roles


@pytest.mark.parametrize(("reason", "header", "says"), [
    ("State not found", {}, "state does not match"),
    ("Invalid Nonce", {}, "used already"),
    ("Registration not found.", {}, "not registered"),
    ("Client id not registered for this issuer", {}, "audience"),
    ("azp is not this tool's client id", {}, "audience"),
    ("Unable to find deployment", {}, "deployment"),
    ("Unable to find public key", {"alg": "none"}, "signed with none"),
    ("Unable to find public key", {"alg": "HS256"}, "signed with HS256"),
    ("Unable to find public key", {"alg": "RS256"}, "unknown key id"),
    ("Can't decode id_token: Signature has expired", {}, "expired"),
    ("Can't decode id_token: Signature verification failed", {}, "changed after the LMS signed it"),
    ("Incorrect version, expected 1.3.0", {}, "not LTI 1.3.0"),
    ("Unrecognized message type", {}, "message type"),
    ("Message type not taken: LtiNotARealRequest", {}, "its message type or claims are not"),
    ("Message type not taken: LtiDeepLinkingRequest", {}, "is a Deep Linking request"),
    ("Message type not taken: LtiSubmissionReviewRequest", {}, "is a Submission Review request"),
    ("No exp claim", {}, "has no expiry time"),
    ("Can't decode id_token: The token is not yet valid (iat)", {}, "clock skew"),
    ("Can't decode id_token: The token is not yet valid (nbf)", {}, "clock skew"),
    ("something new", {}, "could not be checked (something new)"),
])
def test_each_refusal_is_a_sentence(reason, header, says):
    sentence = refusal_sentence(Exception(reason), header)
    assert says in sentence and sentence.endswith((".", ")")) and "Traceback" not in sentence
    assert "clock skew" not in sentence or "changed after the LMS signed it" not in sentence


def test_lti_config_prints_the_key_set_and_the_registration_and_keeps_the_key_private(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lti.client_id = 'c1'\n")
    printed = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", "https://g.example.edu/m/",
                              "--course-dir", str(tmp_path)], capture_output=True, text=True, check=True)
    found = json.loads(printed.stdout)
    key = tmp_path / ".maxpool-grader" / "lti" / "tool-key.pem"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and stat.S_IMODE(os.stat(key.parent).st_mode) == 0o700
    assert "PRIVATE" not in printed.stdout and found["jwks"] == public_jwks(tmp_path, Lti())
    canvas = found["canvas"]
    assert canvas["oidc_initiation_url"] == "https://g.example.edu/m/lti/login"
    assert canvas["target_link_uri"] == "https://g.example.edu/m/lti/launch"
    assert canvas["public_jwk_url"] == "https://g.example.edu/m/lti/jwks" and canvas["public_jwk"]["kty"] == "RSA"
    assert found["moodle"]["Initiate login URL"] == canvas["oidc_initiation_url"]
    placements = canvas["extensions"][0]["settings"]["placements"]
    assert [place["windowTarget"] for place in placements] == ["_blank", "_blank"]  # a new tab, never a frame
    assert registration(tmp_path, Lti(), "https://g.example.edu/m") == found  # the same with or without the /
    settings = Lti(issuer="https://lms", client_id="c1", deployment_ids=["d"], auth_login_url="https://lms/a",
                   auth_token_url="https://lms/t", key_set_url="https://lms/k")
    registered = tool_conf(tmp_path, settings).find_registration("https://lms")
    assert registered.get_kid() == found["jwks"]["keys"][0]["kid"]  # what the tool signs with is what it publishes


def test_an_incomplete_registration_is_a_sentence(tmp_path):
    with pytest.raises(LtiSetupError, match=r"c.Lti.issuer, c.Lti.client_id.* not set in nbgrader_config.py"):
        tool_conf(tmp_path, Lti())
    assert (ROOT / "docs" / "lti.md").is_file()


def test_an_attempt_s_score_is_part_b_less_the_late_penalty_and_waits_for_part_a(tmp_path):
    store = LaunchStore(tmp_path / "serve")
    passback = Passback(tmp_path, Lti(), store, assignment="a", folder=tmp_path / "serve",
                        final_of=lambda student: None, final_score=lambda student: (0.0, 0.0),
                        base_url="https://g.example.edu/m/")
    record(tmp_path, "ana", {"sub": "u-1"})
    tests = [{"manual": False, "score": 10.0, "points": 12.0}, {"manual": False, "score": 3.0, "points": 3.0},
             {"manual": True, "score": 0.0, "points": 5.0}]
    passback.graded("ana", 7, *attempt_score({"tests": tests, "max_score": 20.0, "late_penalty": 4.0}))
    passback.graded("nobody-from-the-lms", 8, *attempt_score({"tests": tests, "max_score": 20.0}))  # no sub: none
    [score] = passback.outbox.pending()
    assert (score.sub, score.source, score.score, score.maximum, score.progress, score.activity) == (
        "u-1", "attempt:7", 9.0, 20.0, "PendingManual", "Submitted")
    passback.graded("ana", 9, *attempt_score({"tests": tests[:2], "max_score": 15.0, "late_penalty": 20.0}))  # >= 0
    assert passback.outbox.pending()[-1].score == 0.0 and passback.outbox.pending()[-1].progress == "FullyGraded"


def test_lti_config_refuses_a_base_url_that_is_no_address_with_a_sentence(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Lti.client_id = 42\n")
    for base, says in (("grader.example.edu", "is not an address"), ("https://g.example.edu/", "c.Lti")):
        done = subprocess.run([str(BIN / "maxpool-grader"), "lti-config", "--base-url", base, "--course-dir",
                               str(tmp_path)], capture_output=True, text=True)
        assert done.returncode == 2 and says in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_a_hostile_lms_name_reaches_neither_the_terminal_nor_a_spreadsheet_as_written(tmp_path, monkeypatch):
    """Names come from the LMS, as its users typed them: an ANSI escape, a right-to-left override
    and a formula in a member's name are printed as escapes by ``roster --from-lti``, and stored in
    roster.csv without the controls and with the formula neutralised."""
    from maxpool_grader.lti.roster import sync
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")  # nbgrader runs alembic to make the gradebook
    hostile = {"user_id": "sub-mal", "status": "Active", "name": "Mal\x1b[2J\u202eroy",
               "given_name": "=HYPERLINK(\"http://x\")\x1b]0;owned\x07", "family_name": "Doe\u009b31m",
               "email": "+mal@example.edu", "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]}
    lines = sync(tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}", [hostile], revoke=revoke)
    printed = "\n".join(lines)
    assert printed and all(ch.isprintable() for ch in printed), repr(printed)
    assert '+ sub-mal (=HYPERLINK("http://x") ]0;owned Doe 31m)' in lines  # as roster.csv keeps it
    cells = [cell for row in csv.reader(open(tmp_path / "roster.csv")) for cell in row]
    assert not any(ch in cell for cell in cells for ch in "\x1b\x07\u202e\u009b"), cells
    assert "'=HYPERLINK(\"http://x\") ]0;owned" in cells and "'+mal@example.edu" in cells, cells
