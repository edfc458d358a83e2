"""The students' own route, once, through a local exchange directory:
release_assignment -> fetch_assignment -> submit -> collect -> autograde ->
release_feedback -> fetch_feedback, all with nbgrader's real commands; and once as the hub
runs it (docs/operations.md#students, docs/students.md#exchange): the student a Unix account of
their own, their nbgrader told of the exchange only by the system-wide config the docs give,
and JupyterLab with only the students' extensions."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from helpers import (
    BIN,
    ROOT,
    as_user,
    copy_course,
    digests,
    flat,
    free_port,
    grade_command,
    nbgrader,
    user_account,
)
from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from maxpool_grader.glue.collecttime import SetAside
from maxpool_grader.names import ASSIGNMENT

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import VECTORIZED_CORRECT, fill  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


def submitted_through_an_exchange(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """A course released through a local exchange, and one student's correct notebook fetched
    and submitted into it: (course, exchange, the student's home, the exchange options)."""
    course = copy_course(tmp_path / "course", with_submissions=False)
    exchange = tmp_path / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)  # nbgrader's exchange must be writable by every student
    student_home = tmp_path / "student"
    student_home.mkdir()
    shared = [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=max_pool_backward"]
    nbgrader(course, "generate_assignment", "max_pool_backward", "--force")
    nbgrader(course, "release_assignment", "max_pool_backward", *shared)
    nbgrader(student_home, "fetch_assignment", "max_pool_backward", *shared)
    fetched = student_home / "max_pool_backward" / "max_pool_backward.ipynb"
    nbformat.write(fill(nbformat.read(fetched, as_version=4), VECTORIZED_CORRECT), fetched)
    nbgrader(student_home, "submit", "max_pool_backward", *shared)
    return course, exchange, student_home, shared


def test_student_round_trip_through_a_local_exchange(tmp_path):
    course, _, student_home, shared = submitted_through_an_exchange(tmp_path)
    nbgrader(course, "collect", "max_pool_backward", *shared)
    student = getpass.getuser()
    assert (course / "submitted" / student / "max_pool_backward" / "max_pool_backward.ipynb").is_file()
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("max_pool_backward", student)
        assert submission.code_score == 15 and submission.max_code_score == 15

    nbgrader(course, "generate_feedback", "max_pool_backward")
    nbgrader(course, "release_feedback", "max_pool_backward", *shared)
    nbgrader(student_home, "fetch_feedback", "max_pool_backward", *shared)
    feedback = list((student_home / "max_pool_backward" / "feedback").glob("*/max_pool_backward.html"))
    assert len(feedback) == 1
    html = feedback[0].read_text()
    assert "Passed: Ties: PyTorch's convention (the first maximum in row-major order)" in html
    assert "Score: 15 of 15 so far; Part A (5 points) is not graded yet" in html  # Part A is not counted as 0


def test_collect_counts_the_time_a_student_cannot_set_back(tmp_path):
    """After the deadline a student rewrites their inbound folder: an earlier time in its name
    and in timestamp.txt, a changed notebook, a link to the instructor's file and a FIFO.
    collect counts the time of the folder's last change (late, with the course's penalty), never
    follows the link, skips the FIFO; a classmate's folder whose name holds no time does not
    stop the collect. A folder left alone keeps the time it states."""
    course, exchange, student_home, shared = submitted_through_an_exchange(tmp_path)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:  # due three days ago
        gradebook.update_or_create_assignment("max_pool_backward", duedate=datetime.utcnow() - timedelta(days=3))
    inbound = exchange / "max_pool_backward" / "inbound"
    [honest] = list(inbound.iterdir())
    stated = parse_utc((honest / "timestamp.txt").read_text())

    nbgrader(course, "collect", "max_pool_backward", *shared)  # left alone: the time it states
    student = getpass.getuser()
    submitted = course / "submitted" / student / "max_pool_backward"
    assert parse_utc((submitted / "timestamp.txt").read_text()) == stated

    secret = tmp_path / "instructor-only.txt"
    secret.write_text("INSTRUCTOR-SECRET")
    forged_at = datetime.utcnow()
    early = "2000-01-01 00:00:00.000000 UTC"
    for name in ("timestamp.txt", "max_pool_backward.ipynb"):
        (honest / name).chmod(0o644)
    (honest / "timestamp.txt").write_text(early)
    with open(honest / "max_pool_backward.ipynb", "a") as notebook:
        notebook.write(" ")
    (honest / "notes.txt").symlink_to(secret)
    (honest / "folder").symlink_to(tmp_path)
    os.mkfifo(honest / "pipe")
    forged = honest.with_name(f"{student}+max_pool_backward+{early}+{honest.name.rsplit('+', 1)[1]}")
    honest.rename(forged)
    junk = inbound / "mallory+max_pool_backward+not a time+x1"
    junk.mkdir()
    shutil.copy(forged / "max_pool_backward.ipynb", junk)
    huge = inbound / f"aaron+max_pool_backward+{early}+x2"  # nbgrader stopped the whole collect on it
    huge.mkdir()
    (huge / "max_pool_backward.ipynb").write_bytes(b" " * 400_000)

    shutil.rmtree(course / "submitted")  # the instructor's first collect is after the deadline
    untouched = digests(course, student_home, skip=("submitted",))
    collected = nbgrader(course, "collect", "max_pool_backward", "--CourseDirectory.max_dir_size=300", *shared,
                         check=False)
    assert collected.returncode == 1 and "1 submission folder(s) NOT collected (see above)" in collected.stdout
    assert digests(course, student_home, skip=("submitted",)) == untouched  # collect wrote submitted/ only
    assert secret.read_text() == "INSTRUCTOR-SECRET"
    assert not list((course / "submitted").rglob(".collecting-*"))
    stamp = parse_utc((submitted / "timestamp.txt").read_text())
    assert stamp >= forged_at - timedelta(seconds=1), (stamp, forged_at)
    assert "last changed" in collected.stdout
    assert sorted(p.name for p in submitted.iterdir()) == ["max_pool_backward.ipynb", "submission_secret.txt",
                                                          "timestamp.txt"]
    assert not any("INSTRUCTOR-SECRET" in path.read_text(errors="replace")
                   for path in (course / "submitted").rglob("*") if path.is_file())
    assert (course / "submitted" / "mallory" / "max_pool_backward" / "max_pool_backward.ipynb").is_file()
    assert f"{huge} was NOT collected" in collected.stdout and (huge / "max_pool_backward.ipynb").is_file()
    assert not (course / "submitted" / "aaron").exists() or not any((course / "submitted" / "aaron").rglob("*.ipynb"))
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("max_pool_backward", student)
        assert submission.timestamp >= forged_at - timedelta(seconds=1)
        assert submission.total_seconds_late > 3 * 86400 - 60
        assert submission.code_score == 15 and submission.late_submission_penalty > 0


def test_a_newer_submission_too_large_to_collect_never_costs_the_one_collected(tmp_path):
    """nbgrader's ``collect --update`` deleted a student's collected submission before copying
    their newer one; when the newer folder is too large to collect, the collected one stays as
    it was, the error names the folder, and collect exits non-zero (the rest is collected)."""
    course, exchange, student_home, shared = submitted_through_an_exchange(tmp_path)
    limit = "--CourseDirectory.max_dir_size=300"  # the instructor's, at collect
    nbgrader(course, "collect", "max_pool_backward", limit, *shared)
    submitted = course / "submitted" / getpass.getuser() / "max_pool_backward"
    kept = digests(submitted)
    assert "max_pool_backward.ipynb" in " ".join(kept)

    (student_home / "max_pool_backward" / "data.bin").write_bytes(b"x" * 400_000)  # the newer one: too large
    nbgrader(student_home, "submit", "max_pool_backward", *shared)
    newer = max((exchange / "max_pool_backward" / "inbound").iterdir(), key=lambda path: path.name)
    updated = nbgrader(course, "collect", "--update", "max_pool_backward", limit, *shared,
                       check=False)
    assert updated.returncode != 0, updated.stdout
    assert f"{newer} was NOT collected" in updated.stdout
    assert digests(submitted) == kept, updated.stdout  # the collected submission, as it was
    assert not [path for path in submitted.parent.iterdir() if path.name != "max_pool_backward"]
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("max_pool_backward", getpass.getuser()).code_score == 15

    SetAside.rmtree(str(submitted))  # a collect --update killed right after it set the submission aside
    graded = grade_command(course, "--force")
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    assert f"{submitted}: a collect was stopped while it replaced this submission" in graded.stderr
    assert digests(submitted) == kept
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("max_pool_backward", getpass.getuser()).code_score == 15



def test_a_folder_name_in_the_exchange_cannot_write_escapes_to_the_instructor_s_terminal(tmp_path):
    """A student names an inbound folder with ANSI and OSC escapes (clear the screen, set the
    terminal's title) and a line break that forges a log line: collect prints it escaped."""
    course, exchange, _, shared = submitted_through_an_exchange(tmp_path)
    inbound = exchange / "max_pool_backward" / "inbound"
    [honest] = list(inbound.iterdir())
    forged = inbound / "mallory\x1b[2J\x1b]0;pwned\x07\n[CollectApp | INFO] all fine+max_pool_backward+not a time+x9"
    shutil.copytree(honest, forged)
    collected = nbgrader(course, "collect", "max_pool_backward", *shared)
    assert "\x1b" not in collected.stdout and "\x07" not in collected.stdout, collected.stdout
    assert "\n[CollectApp | INFO] all fine" not in collected.stdout
    assert "mallory\\x1b[2J" in collected.stdout


STUDENT = "maxpool-s-route"  # a student account: neither root nor the instructor
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def documented(first_line: str) -> str:
    """The code block of docs/operations.md whose first line is ``first_line``, as written."""
    blocks = re.findall(r"```(?:bash|python)\n(.*?)```", OPERATIONS, re.S)
    [block] = [block for block in blocks if block.startswith(first_line)]
    return block


def as_student(home: str, config: Path | None, *argv: str) -> subprocess.CompletedProcess:
    """``argv`` as the student, in their home, with ``config`` standing for /etc/jupyter."""
    env = {"HOME": home, "PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "JUPYTER_CONFIG_DIR": f"{home}/.jupyter"}
    if config is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config)
    command = as_user(STUDENT, ["sh", "-c", 'cd "$HOME" && exec "$@"', "sh", *argv], env)
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture
def hub_like(tmp_path):
    """A course whose exchange is made as docs/operations.md says, under a folder every user
    reaches (``/srv/nbgrader`` there), and the docs' system-wide nbgrader_config.py."""
    if os.geteuid() != 0:
        pytest.skip("a student account of its own needs root to make it")
    base = Path(tempfile.mkdtemp(prefix="maxpool-route-", dir="/tmp"))
    base.chmod(0o755)
    srv = f"{base}/srv/nbgrader"
    subprocess.run(["sh", "-e", "-c", documented("mkdir -p /srv/nbgrader/exchange").replace("/srv/nbgrader", srv)],
                   check=True)
    etc = base / "etc" / "jupyter"
    etc.mkdir(parents=True)
    (etc / "nbgrader_config.py").write_text(documented("# /etc/jupyter/nbgrader_config.py").replace("/srv/nbgrader",
                                                                                                        srv))
    course = copy_course(base / "course", with_submissions=False)
    with open(course / "nbgrader_config.py", "a") as config:  # the course's own c.Exchange.root line, changed
        config.write(f"\nc.Exchange.root = {srv + '/exchange'!r}\n")
    home = user_account(STUDENT).pw_dir
    subprocess.run(["rm", "-rf", f"{home}/{ASSIGNMENT}", f"{home}/.jupyter", f"{home}/.local/share/jupyter"],
                   check=True)
    yield course, etc, home, Path(srv) / "exchange"
    shutil.rmtree(base, ignore_errors=True)


def test_a_student_account_follows_the_students_page_with_only_the_system_wide_config(hub_like):
    course, etc, home, exchange = hub_like
    lost = as_student(home, None, str(BIN / "nbgrader"), "list")  # what the walk-through met
    assert lost.returncode != 0 and "Unwritable directory, please contact your instructor" in lost.stdout + lost.stderr

    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    nbgrader(course, "release_assignment", ASSIGNMENT)  # the instructor: the course's config only
    listed = as_student(home, etc, str(BIN / "nbgrader"), "list")
    assert listed.returncode == 0 and f"{ASSIGNMENT} {ASSIGNMENT}" in listed.stdout + listed.stderr, listed
    fetched = as_student(home, etc, str(BIN / "nbgrader"), "fetch_assignment", ASSIGNMENT)
    assert fetched.returncode == 0, fetched
    notebook = Path(home) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert notebook.stat().st_uid == user_account(STUDENT).pw_uid
    answered = fill(nbformat.read(notebook, as_version=4), VECTORIZED_CORRECT)
    save = "import sys; open(sys.argv[1], 'w').write(sys.stdin.read())"  # the student's own save of their answer
    subprocess.run(as_user(STUDENT, [str(BIN / "python"), "-c", save, str(notebook)], {"LANG": "C.UTF-8"}),
                   input=nbformat.writes(answered), text=True, check=True)
    submitted = as_student(home, etc, str(BIN / "nbgrader"), "submit", ASSIGNMENT)
    assert submitted.returncode == 0, submitted
    inbound = exchange / "max_pool_backward" / "inbound"
    peek = as_student(home, etc, "ls", str(inbound))
    assert peek.returncode != 0  # no student lists the submissions (nbgrader's 2733)

    doctor = subprocess.run([str(BIN / "maxpool-grader"), "doctor", "--json", "--student", STUDENT],
                            cwd=course, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, JUPYTER_CONFIG_PATH=str(etc)))
    found = {finding["name"]: finding for finding in json.loads(doctor.stdout)}
    assert found["exchange"]["holds"] and f"checked as {STUDENT}" in found["exchange"]["seen"], found["exchange"]
    assert found["students"]["holds"], found["students"]

    nbgrader(course, "collect", ASSIGNMENT)
    nbgrader(course, "autograde", ASSIGNMENT, "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(ASSIGNMENT, STUDENT).code_score == 15
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    nbgrader(course, "release_feedback", ASSIGNMENT)
    back = as_student(home, etc, str(BIN / "nbgrader"), "fetch_feedback", ASSIGNMENT)
    assert back.returncode == 0, back
    [page] = list((Path(home) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    read = as_student(home, etc, "cat", str(page))
    assert read.returncode == 0 and "Score: 15 of 15 so far; Part A (5 points) is not graded yet" in flat(read.stdout)


INSTRUCTOR_PLUGINS = {f"@jupyter/nbgrader:{name}" for name in ("formgrader", "create-assignment", "course-list")}


@contextlib.contextmanager
def running_lab(tmp_path: Path, students: Path | None):
    """A real ``jupyter lab`` in ``tmp_path`` with (a student's) or without (the instructor's)
    the students' config folder; yields (its URL, its token, ``status(path)``)."""
    token, port = secrets.token_hex(8), free_port()
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", JUPYTER_CONFIG_DIR=str(tmp_path / "user"))
    env.pop("JUPYTER_CONFIG_PATH", None)
    if students is not None:
        env["JUPYTER_CONFIG_PATH"] = str(students)
    log = tmp_path / f"lab-{port}.log"
    server = subprocess.Popen([str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}", "--allow-root"],
                              env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
                              start_new_session=True)

    def status(path: str) -> tuple[int, str]:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, ""
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status("/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, log.read_text()[-3000:]
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}", token, status
    finally:
        server.terminate()  # the server shuts its kernels down first: slow on a busy machine
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)  # its own session: the server and its kernels
            server.wait(timeout=30)


def lab_as_seen(tmp_path: Path, students: Path | None) -> dict:
    """What JupyterLab serves with or without the students' folder: the status of formgrader's
    and the course list's pages and of the Assignment List's, and the plugins turned off."""
    with running_lab(tmp_path, students) as (_, _, status):
        _, lab = status("/lab")
        page = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', lab, re.S)[1])
        return {"formgrader": status("/formgrader")[0], "courses": status("/formgraders")[0],
                "assignments": status("/assignments?course_id=max_pool_backward")[0],
                "disabled": set(page["disabledExtensions"])}


def test_students_get_the_assignment_list_and_the_instructor_formgrader_as_the_docs_set_it_up(tmp_path):
    """docs/operations.md#student-extensions: its commands make the students' config folder;
    JupyterLab with it serves no formgrader and no course list and turns off the three
    instructor plugins, and without it (the instructor's) serves both, as installed."""
    students = tmp_path / "students"
    setup = documented("mkdir -p /etc/jupyter/students").replace("/etc/jupyter/students", str(students))
    subprocess.run(["bash", "-e", "-c", setup], check=True, env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"),
                   capture_output=True)
    student, instructor = lab_as_seen(tmp_path, students), lab_as_seen(tmp_path, None)
    assert student["formgrader"] == 404 and student["courses"] == 404, student
    assert INSTRUCTOR_PLUGINS <= student["disabled"], student
    assert not student["disabled"] & {"@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:validate-assignment",
                                      "@jupyter/nbgrader:menu"}, student
    assert student["assignments"] == instructor["assignments"] != 404, (student, instructor)  # the Assignment List's
    assert instructor["formgrader"] in (200, 302) and instructor["courses"] == 200, instructor
    assert not instructor["disabled"] & INSTRUCTOR_PLUGINS, instructor


def test_opening_the_release_in_jupyterlab_rewrites_only_its_language_info(tmp_path, browser):
    """The tab of a fetched notebook shows unsaved changes once its kernel starts: JupyterLab
    writes the kernel's language_info (the release keeps its name only: the rest changes from
    machine to machine). A save right after rewrites that and nothing else of the release
    (docs/students.md#exchange)."""
    from pages import offline_page
    shutil.copy(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", tmp_path / "fetched.ipynb")
    before = nbformat.read(tmp_path / "fetched.ipynb", as_version=4)
    with running_lab(tmp_path, None) as (base, token, _):
        page = offline_page(browser)
        page.goto(f"{base}/lab/workspaces/fresh/tree/fetched.ipynb?reset&token={token}")
        page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook", timeout=90_000)
        page.wait_for_selector(".lm-TabBar-tab.jp-mod-dirty", timeout=60_000)  # the kernel connected
        deadline = time.monotonic() + 60
        while nbformat.read(tmp_path / "fetched.ipynb", as_version=4) == before:  # saved once it differs
            assert time.monotonic() < deadline, "JupyterLab did not save the notebook"
            page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click()
            page.keyboard.press("Control+s")
            time.sleep(2)
        page.close()
    after = nbformat.read(tmp_path / "fetched.ipynb", as_version=4)
    assert after.metadata.language_info["name"] == before.metadata.language_info["name"] == "python"
    assert after.metadata.language_info != before.metadata.language_info  # what made the tab dirty
    after.metadata.language_info = before.metadata.language_info
    assert after == before
