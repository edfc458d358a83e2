"""``maxpool-grader serve`` over a whole term: the roster decides at every request, links are
revoked per student or all at once while the service runs, and every refusal is a sentence
(an upload of any size, a notebook of thousands of cells, an exchange notebook under another
name). One real service, students through the web page and through nbgrader's exchange as
users of this machine.

The tests of this module share one course and run in order."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import requests
from helpers import ASSIGNMENT, BIN, ROOT, user_account
from test_serve import (
    Running,
    _session,
    _upload,
    exchange_course,
    fetch_and_fill,
    links,
    notebook_of,
    started_service,
    student_nbgrader,
)

from maxpool_grader.names import grade_id

pytestmark = pytest.mark.integration  # a real service, kernels, nbgrader and users

WEB = ["ruth", "sam", "tess", "uma", "vic"]
ZOE = "maxpool-s-zoe"  # a student with an account: the exchange way
POLICY = "\nc.Serve.attempts_per_hour = 10\nc.Serve.attempts_per_day = 20\nc.Serve.poll_interval = 0.3\n"
PROMPT = 5.0  # seconds within which the running service must see a change


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    yield from exchange_course(tmp_path_factory.mktemp("term"), POLICY, [(name, "Student") for name in [*WEB, ZOE]],
                               [ZOE])


@pytest.fixture(scope="module")
def service(course):
    yield from started_service(course)


def tokens(course: Path, service: Running, *options: str) -> str:
    done = subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", service.base, "--course-dir",
                           str(course), *options], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def within(seconds: float, check) -> float:
    """How long until ``check()`` holds (it must within ``seconds``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.2)
    return time.monotonic() - started


def home_status(service: Running, session: requests.Session) -> int:
    return session.get(service.base, timeout=30).status_code


def test_a_student_taken_off_the_roster_is_refused_everywhere_within_seconds(course, service):
    link = links(course)["ruth"]
    ruth, xsrf = _session(link)
    fetch_and_fill(ZOE, course, "")
    roster = (course / "roster.csv").read_text()
    kept = "".join(line + "\n" for line in roster.splitlines() if not line.startswith(("ruth,", f"{ZOE},")))
    (course / "roster.csv").write_text(kept)  # the instructor removes Ruth and Zoe
    within(PROMPT, lambda: home_status(service, ruth) == 403)  # her cookie
    page = ruth.get(service.base, timeout=30)
    assert "roster (any more)" in page.text
    again = requests.get(link, timeout=30)  # her link
    assert again.status_code == 403 and "roster (any more)" in again.text
    sent = _upload(service, ruth, xsrf, notebook_of(""))
    assert sent.status_code == 403
    submitted = student_nbgrader(ZOE, course, "submit", ASSIGNMENT)  # the exchange way
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    within(PROMPT + 5, lambda: any(row["student"] == ZOE and row["status"] == "refused"
                                   for row in service.attempts()))
    fetched = student_nbgrader(ZOE, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    pages = list((Path(user_account(ZOE).pw_dir) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert pages and "roster (any more)" in pages[0].read_text()
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:  # nobody graded, nobody made
        assert not any(s.submissions for s in gradebook.students if s.id in ("ruth", ZOE))
    (course / "roster.csv").write_text(roster)  # and back: the same link works again
    assert requests.get(link, timeout=30).url.rstrip("/") == service.base.rstrip("/")


def test_revoke_and_rotate_end_links_and_sessions_without_a_restart(course, service):
    old = links(course)
    sam, _ = _session(old["sam"])
    tess, _ = _session(old["tess"])
    out = tokens(course, service, "--revoke", "sam")
    assert "sam: link and session ended" in out
    seen = within(PROMPT, lambda: home_status(service, sam) == 403)
    assert requests.get(old["sam"], timeout=30).status_code == 403  # the old link
    new = links(course)
    assert new["sam"] != old["sam"] and new["tess"] == old["tess"]
    assert _session(new["sam"])[0].get(service.base, timeout=30).status_code == 200  # the new link
    assert home_status(service, tess) == 200  # nobody else is touched
    instructor_link = (course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip()
    tokens(course, service, "--rotate")
    within(PROMPT, lambda: home_status(service, tess) == 403)
    for student in ("sam", "tess"):
        assert requests.get(new[student], timeout=30).status_code == 403
        fresh, _ = _session(links(course)[student])
        assert fresh.get(service.base, timeout=30).status_code == 200
    assert requests.get(instructor_link, timeout=30).status_code == 403
    rotated = (course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip()
    assert rotated != instructor_link and "live" in requests.get(rotated, timeout=30).text
    assert service.process.poll() is None and seen < PROMPT


@pytest.mark.parametrize("megabytes", [5, 200])
def test_an_upload_of_any_size_gets_the_service_s_own_refusal(course, service, megabytes):
    uma, xsrf = _session(links(course)["uma"])
    before = len(service.attempts())
    answer = _upload(service, uma, xsrf, b"{" + b" " * (megabytes << 20) + b"}")
    assert answer.status_code == 413, answer.text[:500]
    assert "The file is too large" in answer.text and "the limit is 2048 KiB" in answer.text
    rows = service.attempts()
    assert len(rows) == before + 1 and rows[-1]["status"] == "refused" and "too large" in rows[-1]["message"]


def test_a_notebook_of_ten_thousand_cells_is_refused_at_once(course, service):
    vic, xsrf = _session(links(course)["vic"])
    notebook = nbformat.reads(notebook_of("").decode(), as_version=4)
    notebook.cells += [nbformat.v4.new_code_cell(f"x = {n}") for n in range(10_000)]
    content = nbformat.writes(notebook).encode()
    assert len(content) < 2048 * 1024  # under the size limit
    started = time.monotonic()
    answer = _upload(service, vic, xsrf, content)
    said = f"Your notebook has {len(notebook.cells)} cells; the service takes at most 300"
    assert answer.status_code == 413 and said in answer.text, answer.text[:800]
    assert time.monotonic() - started < 5 and service.attempts()[-1]["status"] == "refused"


def test_an_exchange_notebook_under_a_copy_name_is_graded_and_any_other_name_says_why(course, service):
    home = Path(user_account(ZOE).pw_dir) / ASSIGNMENT
    fetched = fetch_and_fill(ZOE, course, "")
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    assert any(grade_id(cell) == ASSIGNMENT for cell in release.cells)
    fetched.rename(home / f"{ASSIGNMENT}-Copy1.ipynb")  # JupyterLab's Duplicate
    count = len(service.attempts())
    assert student_nbgrader(ZOE, course, "submit", ASSIGNMENT).returncode == 0
    within(120, lambda: any(row["student"] == ZOE and row["status"] == "graded" and row["id"] > count
                            for row in service.attempts()))
    assert f"graded {ASSIGNMENT}-Copy1.ipynb as {ASSIGNMENT}.ipynb" in service.output()
    fetched = student_nbgrader(ZOE, course, "fetch_feedback", ASSIGNMENT)  # found under the copy's name
    assert fetched.returncode == 0 and "Could not find feedback" not in fetched.stdout + fetched.stderr
    assert "Part B" in sorted((home / "feedback").glob(f"*/{ASSIGNMENT}-Copy1.html"))[-1].read_text()
    (home / f"{ASSIGNMENT}-Copy1.ipynb").rename(home / "Untitled.ipynb")
    count = len(service.attempts())
    assert student_nbgrader(ZOE, course, "submit", ASSIGNMENT).returncode == 0
    within(60, lambda: any(row["student"] == ZOE and row["status"] == "refused" and row["id"] > count
                           for row in service.attempts()))
    fetched = student_nbgrader(ZOE, course, "fetch_feedback", ASSIGNMENT)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    newest = sorted((home / "feedback").glob("*/Untitled.html"))[-1].read_text()
    assert f"no notebook named {ASSIGNMENT}.ipynb (Untitled.ipynb)" in newest and "Rename your notebook" in newest
    assert service.attempts()[-1]["message"].startswith("Your submission has no notebook")
