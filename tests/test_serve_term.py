"""``maxpool-grader serve`` over a whole term: the roster decides at every request, links are
revoked per student or all at once while the service runs, and every refusal is a sentence
(an upload of any size, a notebook of thousands of cells, an exchange notebook under another
name). One real service, students through the web page and through nbgrader's exchange as
users of this machine.

The tests of this module share one course and run in order."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import requests
from corpus import ZEROS, notebook_with
from helpers import ASSIGNMENT, BIN, ROOT, all_grades, as_user, copy_course, free_port, sqlite, user_account
from test_serve import (
    LOOP_CORRECT,
    Running,
    _feedback,
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


def tokens(course: Path, service: Running, *options: str, status: int = 0) -> str:
    done = subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", service.base, "--course-dir",
                           str(course), *options], capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stdout + done.stderr
    return done.stdout + done.stderr


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
    assert sent.status_code == 403 and "roster (any more)" in sent.text
    assert any(row["student"] == "ruth" and row["status"] == "refused" and "roster (any more)" in row["message"]
               for row in service.attempts())  # on the live view, as every refusal
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


def test_revoke_takes_only_a_student_of_the_course_and_restore_undoes_it(course, service):
    generations = course / ".maxpool-grader" / "serve" / "generations.json"
    kept = generations.read_bytes() if generations.exists() else None
    said = tokens(course, service, "--revoke", "tes", status=2)  # a typo of tess
    assert "'tes' is not a student of this course" in said and "did you mean tess" in said
    assert "Nothing was changed" in said
    assert (generations.read_bytes() if generations.exists() else None) == kept
    first = links(course)["tess"]
    tess, _ = _session(first)
    tokens(course, service, "--revoke", "tess")  # by mistake: it was someone else's link that leaked
    revoked = links(course)["tess"]
    within(PROMPT, lambda: home_status(service, tess) == 403)
    said = tokens(course, service, "--restore", "tess")
    assert "tess: the last revocation is undone" in said and links(course)["tess"] == first
    within(PROMPT, lambda: requests.get(first, timeout=30).status_code == 200)  # the link she has works again
    assert requests.get(revoked, timeout=30).status_code == 403  # the one given at the revocation does not
    assert "is not revoked" in tokens(course, service, "--restore", "tess", status=2)
    tokens(course, service, "--revoke", "tess")
    assert links(course)["tess"] not in (first, revoked)  # a generation is never given twice


def raw_upload(service: Running, session: requests.Session | None, length: int, sent: bytes) -> tuple[int, str]:
    """A POST to /upload announcing ``length`` bytes of body, of which only ``sent`` is sent:
    the status and page the service answers with before the rest would arrive."""
    cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies) if session else ""
    head = (f"POST /upload HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\nContent-Length: {length}\r\n"
            "Content-Type: multipart/form-data; boundary=XyZ\r\n" + (f"Cookie: {cookies}\r\n" if cookies else "")
            + "\r\n").encode()
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as connection:
        connection.sendall(head + sent)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < int(
                re.search(rb"Content-Length: (\d+)", answer.split(b"\r\n\r\n", 1)[0]).group(1)):
            more = connection.recv(65536)
            assert more, answer[:500]
            answer += more
    return int(answer.split()[1]), answer.split(b"\r\n\r\n", 1)[1].decode()


def test_an_upload_is_decided_before_its_body_is_read(course, service):
    """No session: no body; a Content-Length past the limit, of any size: the service's own
    page, answered before the body (of which only 64 KiB is sent here)."""
    part = b"--XyZ\r\n" + b"x" * 65536
    status, page = raw_upload(service, None, 200 << 20, part)
    assert status == 403 and "Please open your personal link" in page
    uma, _ = _session(links(course)["uma"])
    before = len(service.attempts())
    for size, said in ((3 << 20, "3 MiB"), (5 << 30, "5 GiB")):
        status, page = raw_upload(service, uma, size, part)
        assert status == 413 and f"The file is too large ({said}; the limit is 2048 KiB)" in page, page[:800]
    rows = service.attempts()[before:]
    assert [(row["student"], row["status"]) for row in rows] == [("uma", "refused")] * 2


def test_a_nul_in_a_file_name_and_an_nbformat_3_notebook_are_answered_in_sentences(course, service):
    vic, xsrf = _session(links(course)["vic"])
    body = (f'--XyZ\r\nContent-Disposition: form-data; name="_xsrf"\r\n\r\n{xsrf}\r\n--XyZ\r\n'
            'Content-Disposition: form-data; name="notebook"; filename="max_pool\0backward.ipynb"\r\n'
            'Content-Type: application/octet-stream\r\n\r\n').encode() + notebook_of("") + b"\r\n--XyZ--\r\n"
    answer = vic.post(service.base + "upload", data=body, allow_redirects=False, timeout=30,
                      headers={"Content-Type": "multipart/form-data; boundary=XyZ"})
    assert answer.status_code == 400 and "Your upload could not be read" in answer.text, answer.text[:500]
    junk = json.dumps({"cells": [{"metadata": {"nbgrader": {"grade_id": "max_pool_backward"}}}]}).encode()
    answer = _upload(service, vic, xsrf, junk)  # a file holding only the grade_id: no notebook, not counted
    assert answer.status_code == 400 and "does not follow the notebook format" in answer.text, answer.text[:500]
    assert service.attempts()[-1]["status"] == "refused"
    old = nbformat.convert(nbformat.reads(notebook_of(LOOP_CORRECT).decode(), as_version=4), 3)
    answer = _upload(service, vic, xsrf, nbformat.v3.writes_json(old).encode())  # nbformat 3: graded, counted
    assert answer.status_code == 303, answer.text[:500]
    number = int(answer.headers["Location"].rsplit("/", 1)[1])
    within(180, lambda: next(row for row in service.attempts() if row["id"] == number)["status"] == "graded")
    graded = next(row for row in service.attempts() if row["id"] == number)
    assert json.loads(graded["result"])["score"] > 0


def test_the_exchange_says_a_notebook_s_real_size(course, service):
    inbound = Path(re.search(r"c.Exchange.root = '([^']+)'", (course / "nbgrader_config.py").read_text()).group(1),
                   ASSIGNMENT, "inbound")
    before = len(service.attempts())
    for size, said in (("3M", "3 MiB"), ("5G", "5 GiB")):  # the 5 GiB one is sparse: never read
        folder = inbound / f"{ZOE}+{ASSIGNMENT}+2026-11-26 10:00:0{size[0]}.000000 UTC+big"
        made = subprocess.run(as_user(ZOE, ["sh", "-c", f'mkdir "{folder}" && truncate -s {size} "{folder}/'
                                                        f'{ASSIGNMENT}.ipynb" && echo 0123456789abcdef0123 > '
                                                        f'"{folder}/submission_secret.txt"'], {}), check=False)
        assert made.returncode == 0
        within(PROMPT + 5, lambda folder=folder: any(row["source"] == folder.name for row in service.attempts()))
        row = next(row for row in service.attempts() if row["source"] == folder.name)
        assert row["status"] == "refused" and f"The file is too large ({said}; the limit is 2048 KiB)" in row["message"]
    assert len(service.attempts()) == before + 2


def test_an_attempt_graded_while_its_student_leaves_the_roster_is_not_kept(course, service):
    sam, xsrf = _session(links(course)["sam"])
    slow = LOOP_CORRECT + "\nimport time\ntime.sleep(1)\n"  # a little longer to leave the roster meanwhile
    answer = _upload(service, sam, xsrf, notebook_of(slow))
    assert answer.status_code == 303, answer.text[:500]
    number = int(answer.headers["Location"].rsplit("/", 1)[1])
    roster = (course / "roster.csv").read_text()
    within(120, lambda: next(row for row in service.attempts() if row["id"] == number)["status"] == "grading")
    (course / "roster.csv").write_text("".join(line + "\n" for line in roster.splitlines()
                                              if not line.startswith("sam,")))
    try:
        within(180, lambda: next(row for row in service.attempts() if row["id"] == number)["status"]
               not in ("queued", "grading"))
    finally:
        (course / "roster.csv").write_text(roster)
    row = next(row for row in service.attempts() if row["id"] == number)
    assert row["status"] == "refused" and "roster (any more)" in row["message"], row
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:  # nothing of it reached the gradebook
        assert not gradebook.find_student("sam").submissions
    assert not (course / "submitted" / "sam").exists() or not any((course / "submitted" / "sam").iterdir())
    assert not (course / ".maxpool-grader" / "serve" / "before" / str(number)).exists()


def test_every_shape_of_notebook_is_graded_through_the_service_with_its_reason(course, service):
    """What nbgrader's own steps failed on (a pasted solution cell, 50 copies of it, a deleted
    answer, moved cells, nbformat 3): each upload is graded, counted, and its page says why."""
    from test_faults import NBFORMAT3_REASON, SHAPES
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    uma, xsrf = _session(links(course)["uma"])
    uploads = {name: nbformat.writes(SHAPES[name][0](notebook_with(release, LOOP_CORRECT))).encode()
               for name in ("pasted_solution", "fifty_copies", "deleted_answer", "moved_cells")}
    uploads["nbformat_3"] = nbformat.writes(nbformat.convert(notebook_with(release, LOOP_CORRECT), 3), 3).encode()
    reasons = {name: SHAPES[name][2] for name in SHAPES} | {"nbformat_3": NBFORMAT3_REASON}
    for name, content in uploads.items():
        answer = _upload(service, uma, xsrf, content)
        assert answer.status_code == 303, (name, answer.text[:500])
        page = _feedback(service, uma, answer.headers["Location"])
        number = int(answer.headers["Location"].rsplit("/", 1)[1])
        row = next(row for row in service.attempts() if row["id"] == number)
        assert row["status"] == "graded", (name, row)
        assert reasons[name] in " ".join(page.text.split()), name


def test_an_attempt_nbgrader_fails_on_says_the_exception_and_keeps_each_try_s_whole_log(course, service):
    """Issue 37.6 on the service: an attempt nbgrader itself fails on (the instructor's
    ``autograded/ruth`` is a file, so nbgrader's ``makedirs`` raises), twice, is failed and
    nothing of it recorded; the service's log and the live view say the exception, its message
    and last frame, and where the whole log is; each try's log is in
    ``.maxpool-grader/serve/logs/attempt-<id>-try-<n>.log`` with nbgrader's traceback."""
    from bs4 import BeautifulSoup
    from nbgrader.api import Gradebook
    in_the_way = course / "autograded" / "ruth"
    in_the_way.parent.mkdir(exist_ok=True)
    in_the_way.write_text("a file where nbgrader makes a folder")
    try:
        ruth, xsrf = _session(links(course)["ruth"])
        answer = _upload(service, ruth, xsrf, notebook_of(LOOP_CORRECT))
        assert answer.status_code == 303, answer.text[:500]
        number = int(answer.headers["Location"].rsplit("/", 1)[1])
        within(180, lambda: next(row for row in service.attempts() if row["id"] == number)["status"]
               not in ("queued", "grading"))
    finally:
        in_the_way.unlink()
    row = next(row for row in service.attempts() if row["id"] == number)
    assert row["status"] == "failed" and row["message"].startswith("Grading this submission failed twice"), row
    logs = course / ".maxpool-grader" / "serve" / "logs"
    said = re.search(rf"serve: attempt {number} of ruth FAILED: grading failed twice: (.+) \(whole log: (.+)\)\n",
                     service.output())
    assert said, service.output()[-3000:]
    why = (rf"NotADirectoryError: \[Errno 20\] Not a directory: '{re.escape(str(in_the_way))}/{ASSIGNMENT}' "
           rf"\(at <frozen os>:\d+ in makedirs\)")
    assert re.fullmatch(why, said[1]), said[1]
    assert said[2] == str(logs / f"attempt-{number}-try-2.log")
    for tries in (1, 2):  # each try's whole log: nbgrader's traceback, every frame
        whole = (logs / f"attempt-{number}-try-{tries}.log").read_text()
        assert "Traceback (most recent call last)" in whole and "in init_assignment" in whole, tries
        assert "NotADirectoryError: [Errno 20] Not a directory" in whole, tries
    instructor = requests.Session()  # the live view, through the instructor's link
    instructor.get((course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip(), timeout=30)
    live = " ".join(BeautifulSoup(instructor.get(service.base + "instructor", timeout=30).text,
                                  "html.parser").get_text(" ").split())
    assert re.search(rf"attempt {number} of ruth failed: grading failed twice: {why} \(whole log: "
                     rf"{re.escape(said[2])}\)", live), live[-3000:]
    page = ruth.get(service.base.rstrip("/") + answer.headers["Location"], timeout=30).text
    assert "Grading this submission failed twice" in " ".join(page.split())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:  # nothing of it recorded
        assert not gradebook.find_student("ruth").submissions
    assert not (course / "feedback" / "ruth" / ASSIGNMENT).exists()


def _kill_grading_workers(service: Running) -> int:
    """SIGKILL the service's grading workers (its forked children, not its zygotes): what a
    machine out of memory does to them. How many were killed."""
    import psutil
    serve = psutil.Process(service.process.pid)
    killed = 0
    for child in serve.children():
        try:  # a worker killed a moment ago is a zombie until the service reaps it: not counted
            if child.cmdline() == serve.cmdline():
                child.kill()
                killed += 1
        except psutil.Error:
            pass
    return killed


def test_a_failed_attempt_never_replaces_the_graded_one(course, service):
    """Uploaded correct (15 of Part B), then again; the second attempt's grading fails twice
    (its workers killed each time it is graded: a fault of the grader). The first attempt
    stands everywhere: submitted/ holds its notebook, the gradebook its grades and timestamp,
    the service says why the second failed and where its whole log is, and ``grade --force``
    at the deadline keeps the 15. Runs last: it stops the service."""
    tess, xsrf = _session(links(course)["tess"])
    first = _upload(service, tess, xsrf, notebook_of(LOOP_CORRECT))
    number = int(first.headers["Location"].rsplit("/", 1)[1])
    within(180, lambda: next(row for row in service.attempts() if row["id"] == number)["status"] == "graded")
    submitted = course / "submitted" / "tess" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    graded_notebook, graded = submitted.read_bytes(), all_grades(sqlite(course))
    tess_grades = {cell: score for (student, cell), score in graded.items() if student == "tess"}
    assert sum(score for cell, score in tess_grades.items() if cell != "part_a_derivation") == 15

    second = _upload(service, tess, xsrf, notebook_of(ZEROS))
    again = int(second.headers["Location"].rsplit("/", 1)[1])
    killed = 0
    deadline = time.monotonic() + 300
    while (row := next(row for row in service.attempts() if row["id"] == again))["status"] != "failed":
        assert time.monotonic() < deadline and row["status"] != "graded", row
        if row["status"] == "grading":
            killed += _kill_grading_workers(service)
        time.sleep(0.05)
    assert killed >= 2
    assert submitted.read_bytes() == graded_notebook
    assert {cell: score for (student, cell), score in all_grades(sqlite(course)).items() if student == "tess"} == \
        tess_grades
    said = service.output()
    assert f"attempt {again} of tess FAILED: grading failed twice: a grading worker died while grading it" in said

    service.stop()
    regraded = subprocess.run([str(BIN / "maxpool-grader"), "grade", "--force", "-q", "--course-dir", str(course)],
                              capture_output=True, text=True, timeout=600)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert {cell: score for (student, cell), score in all_grades(sqlite(course)).items() if student == "tess"} == \
        tess_grades


def test_a_port_in_use_is_a_sentence(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        started = subprocess.run([str(BIN / "maxpool-grader"), "serve", "--course-dir", str(course), "--port",
                                  str(port), "--workers", "1", "--no-exchange"], capture_output=True, text=True,
                                 timeout=300)
    assert started.returncode == 1 and "Traceback" not in started.stdout + started.stderr
    assert f"the web page cannot listen on 127.0.0.1:{port}" in started.stderr and "--port" in started.stderr
