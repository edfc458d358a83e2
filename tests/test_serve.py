"""``maxpool-grader serve`` run for real: students submit through nbgrader's exchange (their
own ``nbgrader submit`` and ``fetch_feedback``, as other users of this machine) and through
the web page (a token, an upload, their feedback; in headless Chromium, offline, too),
classmates try to act as each other both ways, the service is killed and interrupted
mid-queue and loses nothing, and at the deadline its grades equal ``grade --force``'s.

The tests of this module share one course and run in order (one service at a time)."""

from __future__ import annotations

import csv
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import requests
from bs4 import BeautifulSoup
from helpers import (
    ASSIGNMENT,
    BIN,
    ROOT,
    all_grades,
    as_user,
    cmdline,
    copy_course,
    free_port,
    part_a_answer_in,
    sqlite,
    user_account,
)
from hostile_pages import KINDS

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import LOOP_CORRECT, TIES_ALL_MAXIMA, VECTORIZED_CORRECT, fill  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

ALICE, BOB, EVE = "maxpool-s-alice", "maxpool-s-bob", "maxpool-s-eve"  # students with accounts (the exchange)
WEB = ["carol", "dave", "erin", "frank", "grace", "heidi", "ivan"]  # students of the web page only
HOSTILE = {kind: f"hostile{number}" for number, kind in enumerate(KINDS)}  # one web student per hostile notebook
FORMULA = '=HYPERLINK("http://example.com/x","open me")'
POLICY = "\nc.Serve.attempts_per_hour = 3\nc.Serve.attempts_per_day = 5\nc.Serve.poll_interval = 0.3\n"


class Running:
    """One ``maxpool-grader serve`` process of the course, and its queue."""

    def __init__(self, course: Path, port: int, prefix: str = "/"):
        self.course, self.port = course, port
        self.base = f"http://127.0.0.1:{port}{prefix}"
        self.log = open(course / f"serve-{time.monotonic_ns()}.log", "w+")  # noqa: SIM115
        self.process = subprocess.Popen([str(BIN / "maxpool-grader"), "serve", "--course-dir", str(course),
                                         "--port", str(port), "--workers", "2", "--base-url", self.base],
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while "serve: watching" not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        return (self.course / Path(self.log.name).name).read_text()

    def attempts(self) -> list[dict]:
        with sqlite3.connect(self.course / ".maxpool-grader" / "serve" / "queue.sqlite") as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute("SELECT * FROM attempts ORDER BY id")]

    def wait_idle(self, timeout: float = 180) -> list[dict]:
        """Until nothing is queued or being graded; the attempts then."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.attempts()
            if not any(row["status"] in ("queued", "grading") for row in found):
                return found
            assert time.monotonic() < deadline, (found, self.output())
            time.sleep(0.3)

    def stop(self, how: int = signal.SIGINT, timeout: float = 30) -> int:
        self.process.send_signal(how)
        return self.process.wait(timeout=timeout)


def _descendants_alive(course: Path) -> list[str]:
    """Processes of this machine that still work in the course (workers, zygotes, kernels)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            where = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if where.startswith(str(course)) and int(pid) != os.getpid():
            found.append(f"{pid} {cmdline(pid)}")
    return found


def notebook_of(code: str) -> bytes:
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    return nbformat.writes(fill(release, code)).encode()


def exchange_course(folder: Path, policy: str, roster: list[tuple[str, str]], accounts: list[str]):
    """A course with a shared exchange every student's account reaches, the policy and a roster
    of (id, last name); the accounts' homes as new. Yields the course; removes the exchange."""
    course = copy_course(folder / "course", with_submissions=False)
    exchange = Path(tempfile.mkdtemp(prefix="maxpool-serve-"))  # students must reach it: not under pytest's 0700 tmp
    exchange.chmod(0o755)
    (exchange / "exchange").mkdir(mode=0o777)
    (exchange / "exchange").chmod(0o777)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(policy + f"c.Exchange.root = {str(exchange / 'exchange')!r}\n")
    with open(course / "roster.csv", "w", newline="") as handle:
        rows = csv.writer(handle)
        rows.writerow(["id", "first_name", "last_name", "email"])
        rows.writerows([name, name, last, f"{name}@example.edu"] for name, last in roster)
    for student in accounts:  # their homes as new: no assignment, no nbgrader cache of earlier runs
        home = Path(user_account(student).pw_dir)
        subprocess.run(["rm", "-rf", str(home / ASSIGNMENT), str(home / ".local" / "share" / "jupyter")], check=True)
    yield course
    subprocess.run(["rm", "-rf", str(exchange)], check=False)


def started_service(course: Path, *, exchange: bool = True):
    """``serve`` on the course, tokens.csv written (and the assignment released to the
    exchange); stopped after."""
    running = Running(course, free_port())
    if exchange:
        subprocess.run([str(BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force"], cwd=course, check=True,
                       capture_output=True)
    subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", running.base, "--course-dir", str(course)],
                   check=True, capture_output=True)
    yield running
    if running.process.poll() is None:
        running.stop()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    roster = [(name, FORMULA if name == "carol" else "Student")  # a name a spreadsheet would run, too
              for name in [ALICE, BOB, EVE, *WEB, *HOSTILE.values()]]
    yield from exchange_course(tmp_path_factory.mktemp("serve"), POLICY, roster, [ALICE, BOB, EVE])


@pytest.fixture(scope="module")
def service(course):
    yield from started_service(course)


def links(course: Path) -> dict[str, str]:
    with open(course / "tokens.csv") as handle:
        return {row["student_id"]: row["link"] for row in csv.DictReader(handle)}


def student_nbgrader(student: str, course: Path, *args: str) -> subprocess.CompletedProcess:
    """nbgrader run by the student, in their home, as their own user."""
    home = user_account(student).pw_dir
    exchange = re.search(r"c.Exchange.root = '([^']+)'", (course / "nbgrader_config.py").read_text()).group(1)
    argv = [str(BIN / "nbgrader"), *args, f"--Exchange.root={exchange}", f"--CourseDirectory.course_id={ASSIGNMENT}"]
    command = as_user(student, ["sh", "-c", f'cd "{home}" && exec "$@"', "sh", *argv],
                      {"HOME": home, "PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8"})
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def fetch_and_fill(student: str, course: Path, code: str) -> Path:
    home = Path(user_account(student).pw_dir)
    fetched = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    if not fetched.exists():
        result = student_nbgrader(student, course, "fetch_assignment", ASSIGNMENT)
        assert result.returncode == 0, result.stdout + result.stderr
    nbformat.write(fill(nbformat.read(fetched, as_version=4), code), fetched)
    return fetched


def test_the_exchange_way_grades_a_submission_and_refuses_one_made_in_a_classmates_name(course, service):
    fetch_and_fill(ALICE, course, VECTORIZED_CORRECT)
    submitted = student_nbgrader(ALICE, course, "submit", ASSIGNMENT)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    # Eve, with a broken solution, submits in Alice's name with nbgrader's own option
    fetch_and_fill(EVE, course, LOOP_CORRECT.replace("+=", "="))
    forged = student_nbgrader(EVE, course, "submit", ASSIGNMENT, f"--student={ALICE}")
    assert forged.returncode == 0, forged.stdout + forged.stderr  # nbgrader itself lets it through
    # and plants, in her own name, a link to the instructor's source notebook (the solutions)
    inbound = Path(re.search(r"c.Exchange.root = '([^']+)'", (course / "nbgrader_config.py").read_text()).group(1),
                   ASSIGNMENT, "inbound")
    planted = inbound / f"{EVE}+{ASSIGNMENT}+2026-11-24 10:00:00.000000 UTC+link"
    subprocess.run(as_user(EVE, ["sh", "-c", f'mkdir "{planted}" && ln -s "$0" "{planted}/{ASSIGNMENT}.ipynb" && '
                                             f'echo 0123456789abcdef0123 > "{planted}/submission_secret.txt"',
                                 str(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")], {}), check=True)

    deadline = time.monotonic() + 120
    while len([row for row in service.attempts() if row["way"] == "exchange"]) < 3:
        assert time.monotonic() < deadline, (service.attempts(), service.output())
        time.sleep(0.3)
    rows = [row for row in service.wait_idle() if row["way"] == "exchange"]
    graded = [row for row in rows if row["status"] == "graded"]
    forged = [row for row in rows if row["status"] == "forged"]
    refused = [row for row in rows if row["status"] == "refused"]
    assert [row["student"] for row in graded] == [ALICE], rows
    # the forgery is Eve's record, naming whom it claimed; the link she planted in her own name is hers too
    assert [(row["student"], row["claimed"]) for row in forged] == [(EVE, ALICE)], rows
    assert forged[0]["message"].startswith(f"forged by {EVE}, claiming {ALICE}: its folder belongs to {EVE}")
    assert "cheating attempt" in forged[0]["message"]
    assert [row["student"] for row in refused] == [EVE] and "link" in refused[0]["message"], rows
    assert "cheating attempt" in service.output()  # named to the instructor where the service reports
    alice, _ = _session(links(course)[ALICE])
    assert "forged" not in alice.get(service.base, timeout=30).text  # never on the victim's page
    eve, _ = _session(links(course)[EVE])
    assert f"forged by {EVE}, claiming {ALICE}" in eve.get(service.base, timeout=30).text
    for _ in range(3):  # three more forgeries: the account's limit is 3 an hour, the last is not even read
        again = student_nbgrader(EVE, course, "submit", ASSIGNMENT, f"--student={ALICE}")
        assert again.returncode == 0, again.stdout + again.stderr
    instructor = requests.Session()
    instructor.get((course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip(), timeout=30)
    deadline = time.monotonic() + 60
    while "made more than 3 forged submissions in an hour" not in (view := instructor.get(
            service.base + "instructor", timeout=30).text):
        assert time.monotonic() < deadline, (service.attempts(), view)
        time.sleep(0.3)
    assert view.count(f"forged by {EVE}, claiming {ALICE}") >= 3  # the table, and the events
    assert [row["student"] for row in service.attempts() if row["status"] == "forged"] == [EVE] * 3
    assert not [row for row in service.attempts() if row["student"] == ALICE and row["status"] != "graded"]

    fetched = student_nbgrader(ALICE, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    pages = list((Path(user_account(ALICE).pw_dir) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(pages) == 1, fetched.stdout + fetched.stderr
    page = pages[0].read_text()
    assert "Every test passed." in page and "not graded yet" in page  # Part A: never shown as graded
    assert part_a_answer_in(page) == []  # before the deadline, nothing of Part A's answer
    grades = all_grades(sqlite(course))
    assert grades[ALICE, "hidden_overlapping_windows"] > 0  # Alice's own correct work, not Eve's broken one
    assert not any(student == EVE for student, _ in grades)


def _session(link: str) -> tuple[requests.Session, str]:
    session = requests.Session()
    home = session.get(link, timeout=30)
    assert home.status_code == 200, home.text
    return session, re.search(r'name="_xsrf" value="([^"]+)"', home.text).group(1)


def _upload(service: Running, session: requests.Session, xsrf: str, content: bytes) -> requests.Response:
    return session.post(service.base + "upload", data={"_xsrf": xsrf}, allow_redirects=False, timeout=30,
                        files={"notebook": (f"{ASSIGNMENT}.ipynb", content)})


def _feedback(service: Running, session: requests.Session, location: str, timeout: float = 120) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        page = session.get(service.base.rstrip("/") + location, timeout=30)
        if 'id="progress"' not in page.text:  # no longer the page that waits (serve's poll.js keeps it current)
            return page
        assert time.monotonic() < deadline, page.text
        time.sleep(0.2)


def test_the_web_way_the_token_decides_who_and_the_policy_refuses_at_once(course, service):
    with open(course / "tokens.csv") as handle:  # the LMS's mail merge opens it in a spreadsheet
        row = next(row for row in csv.DictReader(handle) if row["student_id"] == "carol")
    assert row["last_name"] == "'" + FORMULA  # shown as text, never run
    carol, xsrf = _session(links(course)["carol"])
    # a name inside the upload decides nothing: the token does
    claimed = nbformat.reads(notebook_of(LOOP_CORRECT).decode(), as_version=4)
    claimed.metadata["nbgrader_student"] = "dave"
    sent = _upload(service, carol, xsrf, nbformat.writes(claimed).encode())
    assert sent.status_code == 303, sent.text
    page = _feedback(service, carol, sent.headers["Location"])
    assert page.url.endswith("/feedback") and "Every test passed." in page.text
    assert part_a_answer_in(page.text) == []  # a correct notebook, before the deadline: nothing of Part A's answer
    assert "script-src" not in page.headers["Content-Security-Policy"] or "sandbox" in page.headers[
        "Content-Security-Policy"]
    assert (course / "submitted" / "carol").is_dir() and not (course / "submitted" / "dave").exists()

    dave, dave_xsrf = _session(links(course)["dave"])
    assert dave.get(page.url, timeout=30).status_code == 404  # a classmate's feedback is not found
    assert dave.get(service.base + sent.headers["Location"].lstrip("/"), timeout=30).status_code == 404
    forged = links(course)["carol"][:-4] + "0000"
    assert requests.get(forged, timeout=30).status_code == 403
    no_csrf = dave.post(service.base + "upload", files={"notebook": ("x.ipynb", notebook_of(LOOP_CORRECT))},
                        allow_redirects=False, timeout=30)
    assert no_csrf.status_code == 403
    refusals = {
        "not a notebook": (b"print('hello')", 400, "not a Jupyter notebook"),
        "another assignment": (nbformat.writes(nbformat.v4.new_notebook()).encode(), 400, "is not the max_pool"),
        "too large": (b"{" + b" " * (2048 * 1024 + 10) + b"}", 413, "too large"),
    }
    for what, (content, status, says) in refusals.items():
        answer = _upload(service, dave, dave_xsrf, content)
        assert answer.status_code == status and says in answer.text, (what, answer.status_code, answer.text[:500])
    for _ in range(2):  # carol's 2nd and 3rd attempts of this hour; the 4th is refused at once, never queued
        assert _upload(service, carol, xsrf, notebook_of(LOOP_CORRECT)).status_code == 303
    before = len(service.attempts())
    over = _upload(service, carol, xsrf, notebook_of(LOOP_CORRECT))
    assert over.status_code == 429 and "Your next attempt is possible at" in over.text, over.text
    rows = service.attempts()
    assert len(rows) == before + 1 and rows[-1]["status"] == "refused"
    done = service.wait_idle()
    carols = [row for row in done if row["student"] == "carol" and row["status"] != "refused"]
    assert {row["status"] for row in carols} <= {"graded", "superseded"} and carols[-1]["status"] == "graded"


def _newest_feedback(student: str, course: Path, which: int = -1) -> str:
    """The page Fetch Feedback put in the folder of the student's submission ``which`` (by time)."""
    fetched = student_nbgrader(student, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    pages = sorted((Path(user_account(student).pw_dir) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert pages, fetched.stdout + fetched.stderr
    return pages[which].read_text()  # the folders are named by submission time


def test_before_the_deadline_the_blank_notebook_shows_nothing_of_part_a_either_way(course, service):
    """The untouched release notebook, at the default level ('reports'), through the web
    page and through the exchange: the pages as sent hold no model answer, rubric, Figure 2
    or explanation of the derivation, and an unanswered Part A is not answered, not 0."""
    blank = (ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
    ivan, xsrf = _session(links(course)["ivan"])
    sent = _upload(service, ivan, xsrf, blank)
    assert sent.status_code == 303, sent.text
    page = _feedback(service, ivan, sent.headers["Location"])
    assert page.url.endswith("/feedback") and "Part B" in page.text, page.text[:2000]
    fetched = fetch_and_fill(EVE, course, "")  # Eve's fetched copy, then as released: untouched
    fetched.write_bytes(blank)
    submitted = student_nbgrader(EVE, course, "submit", ASSIGNMENT)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    deadline = time.monotonic() + 120
    while not any(row["student"] == EVE and row["status"] == "graded" for row in service.attempts()):
        assert time.monotonic() < deadline, (service.attempts(), service.output())
        time.sleep(0.3)
    for sent_page in (page.text, _newest_feedback(EVE, course)):
        assert part_a_answer_in(sent_page) == []
        text = " ".join(BeautifulSoup(sent_page, "html.parser").get_text(" ").split())
        assert "Part A is graded by a person after the deadline" in text
        assert "not answered yet, of 5" in text and "0 of 5" not in text and "0 / 20" not in text
        assert "0 of 15 so far; Part A (5 points) is not answered yet" in text  # the heading counts no 0


def test_a_student_sees_their_feedback_offline_in_chromium_and_a_hostile_notebook_stays_inert(
        course, service, browser, tmp_path):
    from hostile_pages import build
    from pages import offline_page
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    build(tmp_path, release, "markdown")  # scripts and event handlers in markdown and LaTeX
    page = offline_page(browser)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(links(course)["erin"])
    page.set_input_files("input[type=file]", str(tmp_path / f"{ASSIGNMENT}.ipynb"))
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/attempt/[0-9]+/feedback$"), timeout=120_000)
    page.wait_for_load_state("load")
    assert page.locator("text=Every test passed.").count() == 1
    assert page.locator("math").count() > 0  # the formulas, rendered as MathML without a network
    assert page.evaluate("() => window.__pwned || null") is None and dialogs == []
    # the limit, as the student meets it on the page
    for _ in range(3):
        page.goto(links(course)["erin"])
        page.set_input_files("input[type=file]", str(tmp_path / f"{ASSIGNMENT}.ipynb"))
        page.click("button[type=submit]")
        page.wait_for_load_state("load")
    assert "Your next attempt is possible at" in page.locator("[role=alert]").inner_text()
    page.close()


def _volatile(name: str) -> bool:
    """What the running service and this module write while nobody submits: its log, SQLite's
    shared-memory files, and the queue database a page's read may checkpoint."""
    return re.fullmatch(r"serve-\d+\.log|.*\.sqlite(-shm|-wal)?", Path(name).name) is not None


def test_no_hostile_notebook_runs_anything_through_the_service_in_the_instructors_browser(
        course, service, browser, tmp_path):
    from hostile_pages import build
    from pages import Server, instructor_session
    from test_browser_safety import _visit, course_digest
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    attempts = {}
    for kind, student in HOSTILE.items():  # every hostile notebook, uploaded as its student
        (tmp_path / kind).mkdir()
        build(tmp_path / kind, release, kind)
        session, xsrf = _session(links(course)[student])
        answer = _upload(service, session, xsrf, (tmp_path / kind / f"{ASSIGNMENT}.ipynb").read_bytes())
        assert answer.status_code == 303, (kind, answer.text)
        attempts[kind] = int(answer.headers["Location"].rsplit("/", 1)[1])
    rows = {row["id"]: row for row in service.wait_idle()}
    assert {kind: rows[number]["status"] for kind, number in attempts.items()} == dict.fromkeys(KINDS, "graded")
    server = Server(course)  # the instructor's Jupyter, on this machine, signed in in the same browser
    try:
        context = instructor_session(browser, server)
        before = {name: digest for name, digest in course_digest(course).items() if not _volatile(name)}
        seen = {}
        for kind, student in HOSTILE.items():
            page = context.new_page()
            page.goto(links(course)[student])  # the student's session, beside the instructor's
            page.close()
            seen[kind] = _visit(browser, f"{service.base}attempt/{attempts[kind]}/feedback", "body", context)
        after = {name: digest for name, digest in course_digest(course).items() if not _volatile(name)}
    finally:
        server.stop()
    problems = {kind: found for kind, found in seen.items()
                if found["pwned"] or found["dangerous"] or found["outside"] or not found["url"].endswith("/feedback")}
    assert problems == {}
    assert after == before  # nothing written through the Jupyter server's API, nor anywhere else


def test_a_killed_service_leaves_nothing_running_and_a_restart_loses_nothing(course, service):
    sessions = {student: _session(links(course)[student]) for student in ("frank", "grace", "heidi")}
    accepted = []
    for session, xsrf in sessions.values():
        for code in (LOOP_CORRECT, VECTORIZED_CORRECT):
            answer = _upload(service, session, xsrf, notebook_of(code))
            assert answer.status_code == 303, answer.text
            accepted.append(int(answer.headers["Location"].rsplit("/", 1)[1]))
    deadline = time.monotonic() + 60
    while not any(row["status"] == "grading" for row in service.attempts()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    service.process.kill()  # SIGKILL in the middle of a run
    service.process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _descendants_alive(course) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _descendants_alive(course) == []  # workers and zygotes died with it

    again = Running(course, service.port)
    try:
        deadline = time.monotonic() + 60
        while not any(row["status"] == "grading" for row in again.attempts()):
            assert time.monotonic() < deadline, again.output()
            time.sleep(0.05)
        again.process.send_signal(signal.SIGINT)  # Ctrl-C stops it the first time, under load,
        time.sleep(0.5)
        assert again.stop(signal.SIGINT, timeout=30) == 130  # and a second one breaks nothing
        assert "Traceback" not in again.output()
        third = Running(course, service.port)
        rows = {row["id"]: row for row in third.wait_idle()}
        third.stop()
    finally:
        for running in (again,):
            if running.process.poll() is None:
                running.process.kill()
    assert {rows[number]["status"] for number in accepted} <= {"graded", "superseded"}
    for student in sessions:  # only the latest counts: each student's last upload is graded
        last = max(number for number in accepted if rows[number]["student"] == student)
        assert rows[last]["status"] == "graded", rows[last]
    service.process = third.process  # the module's service is stopped


def test_through_the_exchange_the_policy_decides_what_feedback_shows_before_the_deadline(course, service):
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.before_deadline = 'mistakes'\n")
    if service.process.poll() is None:  # one service at a time watches the exchange
        service.stop()
    running = Running(course, free_port())
    try:
        overwriting = LOOP_CORRECT.replace("+=", "=")
        fetch_and_fill(BOB, course, overwriting)
        submitted = student_nbgrader(BOB, course, "submit", ASSIGNMENT)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        deadline = time.monotonic() + 120
        while not any(row["student"] == BOB and row["status"] == "graded" for row in running.attempts()):
            assert time.monotonic() < deadline, (running.attempts(), running.output())
            time.sleep(0.3)
        # the blank notebook on the web page at 'mistakes': Part A not answered, not 0 of 5
        ivan, xsrf = _session(links(course)["ivan"].replace(service.base, running.base))
        sent = _upload(running, ivan, xsrf, (ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes())
        brief = _feedback(running, ivan, sent.headers["Location"]).text
        assert "Autograded so far: <strong>0 of 15</strong>" in brief and "not answered yet (of 5" in brief, brief
        assert part_a_answer_in(brief) == []
    finally:
        assert running.stop() == 130
    fetched = student_nbgrader(BOB, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    pages = list((Path(user_account(BOB).pw_dir) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(pages) == 1, fetched.stdout + fetched.stderr
    page = pages[0].read_text()
    assert "your feedback so far" in page and "Likely mistake:" in page  # the titles and the named mistakes
    assert "def max_pool_backward" not in page and "Every test passed" not in page  # not nbgrader's whole page
    assert part_a_answer_in(page) == []


def _part_b(course: Path, student: str) -> float:
    return sum(score or 0 for (who, cell), score in all_grades(sqlite(course)).items() if who == student)


def test_a_worse_attempt_after_a_full_score_is_graded_and_told_but_the_full_score_counts(course, service):
    """The rule ``c.Serve.counts = 'best'`` (serve/standing.py), both ways: a 12/15 attempt after a
    15/15 one gets its feedback, which says it does not count and which does; the gradebook
    keeps the 15 (and grade --force at the deadline, the next test, gives what it holds)."""
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.before_deadline = 'reports'\n")  # nbgrader's feedback page, through both ways
    running = Running(course, free_port())
    try:
        dave, xsrf = _session(links(course)["dave"].replace(service.base, running.base))
        first = _upload(running, dave, xsrf, notebook_of(LOOP_CORRECT))
        _feedback(running, dave, first.headers["Location"], timeout=300)
        second = _upload(running, dave, xsrf, notebook_of(TIES_ALL_MAXIMA))
        worse = " ".join(BeautifulSoup(_feedback(running, dave, second.headers["Location"], timeout=300).text,
                                       "html.parser").get_text(" ").split())
        number = int(first.headers["Location"].rsplit("/", 1)[1])
        assert (f"This attempt does not count: attempt {number} (Part B 15 of 15) stays the one that counts, "
                "because your best Part B score counts") in worse, worse[:3000]
        assert "Attempts used: 2 of 3 in the last hour" in worse and "This assignment has no deadline." in worse
        home = " ".join(BeautifulSoup(dave.get(running.base, timeout=30).text, "html.parser").get_text(" ").split())
        assert re.search(rf"Attempt {number} , received [^;]+ UTC: graded: Part B 15 of 15; Part A [a-z ]+ "
                         r"\(counts\)", home), home
        assert home.count("(counts)") == 1 and "Which attempt counts: your best Part B score" in home
        assert _part_b(course, "dave") == 15  # the course holds the attempt that counts

        fetch_and_fill(ALICE, course, TIES_ALL_MAXIMA)  # Alice's first attempt scored 15 of 15
        submitted = student_nbgrader(ALICE, course, "submit", ASSIGNMENT)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        deadline = time.monotonic() + 300
        while sum(row["student"] == ALICE and row["status"] == "graded" for row in running.attempts()) < 2:
            assert time.monotonic() < deadline, (running.attempts(), running.output())
            time.sleep(0.3)
    finally:
        assert running.stop() == 130
    assert _part_b(course, ALICE) == 15
    fetched = student_nbgrader(ALICE, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    pages = [" ".join(BeautifulSoup(path.read_text(), "html.parser").get_text(" ").split()) for path in
             (Path(user_account(ALICE).pw_dir) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html")]
    assert any("This attempt does not count: attempt" in page and "Part B 12 of 15" in page for page in pages), pages


def test_at_the_deadline_the_grade_is_grade_force_and_later_uploads_are_refused(course, service):
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.deadline = '2020-01-01 00:00'\n")
    running = Running(course, free_port())
    try:
        late = requests.Session()
        home = late.get(links(course)["heidi"].replace(service.base, running.base), timeout=30)
        assert "The deadline has passed" in home.text and 'type="file"' not in home.text
        xsrf = late.cookies["maxpool_xsrf"]  # a form kept open from before the deadline
        answer = _upload(running, late, xsrf, notebook_of(LOOP_CORRECT))
        assert answer.status_code == 403 and "The deadline has passed" in answer.text
    finally:
        running.stop()
    served = all_grades(sqlite(course))
    regraded = subprocess.run([str(BIN / "maxpool-grader"), "grade", "--force", "-q", "--course-dir", str(course)],
                              capture_output=True, text=True, timeout=600)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert all_grades(sqlite(course)) == served  # cell for cell
    # the instructor releases the final feedback: now it has Part A's answer, figure and rubric
    # for the whole class, web students too (the service gave them a submission secret of their own)
    released = subprocess.run([str(BIN / "nbgrader"), "release_feedback", ASSIGNMENT], cwd=course,
                              capture_output=True, text=True, timeout=300)
    assert released.returncode == 0, released.stdout + released.stderr
    final = _newest_feedback(ALICE, course, 0)  # her first: her later 12 of 15 did not count
    assert {"Part A: the model answer", "How your Part A answer is graded", "Figure 2's image"} <= set(
        part_a_answer_in(final))
    assert "Part A is graded by a person after the deadline" not in final
    assert {student for student, _ in served} == {ALICE, BOB, EVE, *WEB, *HOSTILE.values()}
