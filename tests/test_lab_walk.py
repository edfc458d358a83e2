"""The student's whole path, walked in a real JupyterLab in headless Chromium, as a Unix
account of the student's own (docs/students.md#exchange): the hub set up as
docs/operations.md#exchange, #students and #student-extensions give it (each block run as
written, its /srv and /etc paths moved into a scratch folder), ``maxpool-grader serve``
watching the exchange, and in the browser the Nbgrader menu's Assignment List: Fetch, the
notebook opened and the answers typed into its cells, the toolbar's Validate, Submit, Fetch
Feedback, and the feedback page opened from the file browser (Open in New Browser Tab), which
must state the attempt, that it counts, the attempts used and the deadline, and pass axe."""

from __future__ import annotations

import contextlib
import csv
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
from pathlib import Path

import nbformat
import pytest
from helpers import ASSIGNMENT, BIN, ROOT, as_user, cmdline, copy_course, flat, free_port, user_account
from test_exchange_route import documented
from test_serve import Running, _descendants_alive

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import PART_A, VECTORIZED_CORRECT  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

STUDENT = "maxpool-s-lab"  # a student account: neither root nor the instructor
DEADLINE = "2099-06-30 23:59"  # c.Serve.deadline: far off, so every attempt is on time
POLICY = f"c.Serve.attempts_per_hour = 3\nc.Serve.attempts_per_day = 10\nc.Serve.poll_interval = 0.3\n" \
         f"c.Serve.deadline = {DEADLINE!r}\n"
WAIT = 120_000  # ms: the longest any one step of the walk may take on a busy machine


@pytest.fixture
def hub(tmp_path):
    """The hub as docs/operations.md makes it, in a scratch folder every user reaches: the
    exchange, the system-wide nbgrader config, the students' config folder, the course (its
    ``c.Exchange.root`` naming that exchange, a roster of the one student) and the student's
    home as new. Yields (course, the student's JUPYTER_CONFIG_PATH, home, exchange)."""
    if os.geteuid() != 0:
        pytest.skip("a student account of its own needs root to make it")
    base = Path(tempfile.mkdtemp(prefix="maxpool-lab-", dir="/tmp"))
    base.chmod(0o755)
    srv, etc = f"{base}/srv/nbgrader", base / "etc" / "jupyter"
    subprocess.run(["sh", "-e", "-c", documented("mkdir -p /srv/nbgrader/exchange").replace("/srv/nbgrader", srv)],
                   check=True)
    etc.mkdir(parents=True)
    (etc / "nbgrader_config.py").write_text(
        documented("# /etc/jupyter/nbgrader_config.py").replace("/srv/nbgrader", srv))
    students = documented("mkdir -p /etc/jupyter/students").replace("/etc/jupyter", str(etc))
    subprocess.run(["bash", "-e", "-c", students], check=True, capture_output=True,
                   env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"))
    course = copy_course(base / "course", with_submissions=False)
    with open(course / "nbgrader_config.py", "a") as config:  # the course's own c.Exchange.root line, changed
        config.write(f"\nc.Exchange.root = {srv + '/exchange'!r}\n{POLICY}")
    with open(course / "roster.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["id", "first_name", "last_name", "email"],
                                      [STUDENT, "Lab", "Student", f"{STUDENT}@example.edu"]])
    home = user_account(STUDENT).pw_dir
    subprocess.run(["rm", "-rf", f"{home}/{ASSIGNMENT}", f"{home}/.jupyter", f"{home}/.local/share/jupyter"],
                   check=True)
    # the hub starts a student's server with JUPYTER_CONFIG_PATH=/etc/jupyter/students, and
    # /etc/jupyter is on every user's config path; moved here, both are named
    yield course, f"{etc}/students{os.pathsep}{etc}", home, Path(srv) / "exchange"
    shutil.rmtree(base, ignore_errors=True)


def processes_of(uid: int) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(f"{pid} {cmdline(pid)}")
    return found


@contextlib.contextmanager
def student_lab(home: str, config_path: str, log: Path):
    """``jupyter lab`` as the student, in their home, as the hub's spawner starts it (token
    auth, a free loopback port); yields (its URL, its token). Stopped, kernels too, after."""
    token, port = secrets.token_hex(12), free_port()
    env = {"HOME": home, "PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "JUPYTER_CONFIG_PATH": config_path}
    argv = [str(BIN / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}"]
    server = subprocess.Popen(as_user(STUDENT, ["sh", "-c", 'cd "$HOME" && exec "$@"', "sh", *argv], env),
                              stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)  # noqa: SIM115
    uid = user_account(STUDENT).pw_uid
    try:
        deadline = time.monotonic() + 90
        while True:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                             headers={"Authorization": f"token {token}"})
            try:
                urllib.request.urlopen(request, timeout=10).close()
                break
            except (OSError, urllib.error.URLError):
                assert time.monotonic() < deadline and server.poll() is None, log.read_text()[-3000:]
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}", token
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)  # the server shuts its kernels down first
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
        deadline = time.monotonic() + 30
        while processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_of(uid)
        for line in left:  # the test's own student account: nothing of it may outlive the walk
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        assert left == [], left


STEPS = flat(re.search(r"\{#exchange\}(.*?)\n## ", (ROOT / "docs" / "students.md").read_text(), re.S)[1])
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in front


def said(label: str) -> str:
    """``label``, what the walk clicks or reads, as docs/students.md#exchange names it."""
    assert label in STEPS, f"docs/students.md#exchange does not name {label!r}, which a student clicks or reads"
    return label


def typed_into(page, index: int, text: str) -> None:
    """``text`` typed into the editor of the notebook's cell ``index``, replacing what it holds
    (a Markdown cell is opened for editing first): the browser's own text input, as a paste."""
    cell = page.locator(f"{PANEL} .jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    if "jp-MarkdownCell" in (cell.get_attribute("class") or ""):
        cell.dblclick()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def fetch_and_open(page, home: str):
    """Steps 1 to 3 up to the typing: the Nbgrader menu's Assignment List (no instructor's tool
    in that menu), Fetch, the notebook opened from the list, its kernel idle. The list's row of
    the fetched assignment."""
    from playwright.sync_api import expect
    page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text=said("Nbgrader")).click()
    assignment_list = page.locator('li[data-command="nbgrader:open-assignment-list"]', has_text=said("Assignment List"))
    expect(assignment_list).to_be_visible(timeout=WAIT)  # the menu is open
    for tool in ("open-formgrader", "open-formgrader-local", "open-course-list"):  # the instructor's: off
        expect(page.locator(f'li[data-command="nbgrader:{tool}"]:visible')).to_have_count(0)
    assignment_list.click()
    expect(page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")).to_have_text("Assignments", timeout=WAIT)
    expect(page.locator("#nbgrader-assignment-list")).to_contain_text(said("Released assignments"), timeout=WAIT)
    released = page.locator("#released_assignments_list > .list_item")
    expect(released).to_have_count(1, timeout=WAIT)
    expect(released.locator(".item_name")).to_have_text(ASSIGNMENT, timeout=WAIT)
    released.locator(f'.item_status button:text-is("{said("Fetch")}")').click()
    expect(page.locator("#nbgrader-assignment-list")).to_contain_text(said("Downloaded assignments"), timeout=WAIT)
    fetched = page.locator("#fetched_assignments_list > .list_item")
    expect(fetched).to_have_count(1, timeout=WAIT)
    notebook = Path(home) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert notebook.stat().st_uid == user_account(STUDENT).pw_uid  # fetched by the student's own server
    fetched.locator("a.assignment-notebooks-link").click()
    fetched.locator(f'.list_item a:text-is("{ASSIGNMENT}")').click()
    page.wait_for_selector(f"{PANEL} .jp-Notebook .jp-Cell")
    expect(page.locator(f"{PANEL} .jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle",
                                                                                       timeout=WAIT)
    return fetched


def answer_and_validate(page, notebook: Path) -> None:
    """Step 3's answers typed into Part A's cell and the solution cell, and step 4: the
    toolbar's Validate, which saves the notebook first and says "Success!"."""
    from playwright.sync_api import expect
    where = {cell.metadata.get("nbgrader", {}).get("grade_id"): number
             for number, cell in enumerate(nbformat.read(notebook, as_version=4).cells)}
    solution = VECTORIZED_CORRECT.strip("\n")
    typed_into(page, where["part_a_derivation"], PART_A)
    typed_into(page, where[ASSIGNMENT], solution)
    page.locator(f"{PANEL} .jp-NotebookPanel-toolbar .validate-button", has_text=said("Validate")).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.locator("#validation-message")).to_contain_text(
        said("Success!") + " Your notebook passes all the tests.", timeout=WAIT)
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    saved = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell.source
             for cell in nbformat.read(notebook, as_version=4).cells}
    assert saved[ASSIGNMENT] == solution and saved["part_a_derivation"] == PART_A  # typed, and saved as typed


def submit_and_wait(page, fetched, service: Running) -> tuple[object, dict]:
    """Step 5, Submit in the Assignment List, and step 6: the service grades it, and the list's
    refresh button shows the feedback is ready. (The submitted row, the service's attempt.)"""
    from playwright.sync_api import expect
    page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="Assignments").click()
    fetched.locator(f'.item_status button:text-is("{said("Submit")}")').click()
    expect(page.locator("#nbgrader-assignment-list")).to_contain_text(said("Submitted assignments"), timeout=WAIT)
    submitted = page.locator("#submitted_assignments_list > .list_item")
    expect(submitted).to_have_count(1, timeout=WAIT)
    deadline = time.monotonic() + 180
    while not any(row["student"] == STUDENT and row["status"] == "graded" for row in service.attempts()):
        assert time.monotonic() < deadline, (service.attempts(), service.output()[-3000:])
        time.sleep(0.3)
    [attempt] = [row for row in service.attempts() if row["student"] == STUDENT]
    page.locator(f'#refresh_assignments_list[title="{said("Refresh assignments list")}"]').click()
    expect(submitted.locator(f'text={said("(feedback available to fetch)")}')).to_have_count(1, timeout=WAIT)
    return submitted, attempt


def fetch_feedback_and_open(page, context, submitted, base: str):
    """Step 7: Fetch Feedback, "(view feedback)" (the file browser moves to the page's folder),
    and the page's context menu's Open in New Browser Tab. The page opened."""
    from playwright.sync_api import expect
    submitted.locator(f'.item_status button:text-is("{said("Fetch Feedback")}")').click()
    view = submitted.locator("a", has_text=said("(view feedback)"))
    expect(view).to_have_count(1, timeout=WAIT)
    view.click()
    item = page.locator(".jp-DirListing-item", has_text=f"{ASSIGNMENT}.html")
    expect(item).to_be_visible(timeout=WAIT)
    item.click(button="right")
    with context.expect_page() as opened:
        page.locator('.lm-Menu-item[data-command="filebrowser:open-browser-tab"]',
                     has_text=said("Open in New Browser Tab")).click()
    feedback = opened.value
    # the tab opens blank, then goes to the page, which the student's Jupyter serves
    feedback.wait_for_url(re.compile(rf"^{re.escape(base)}/files/{ASSIGNMENT}/feedback/[^/]+/{ASSIGNMENT}\.html"),
                          wait_until="load", timeout=WAIT)
    return feedback


def test_a_student_walks_fetch_validate_submit_and_fetch_feedback_in_jupyterlab(hub, browser, tmp_path):
    from a11y import assert_accessible
    course, config_path, home, _ = hub
    started = time.monotonic()
    service = Running(course, free_port())
    try:
        subprocess.run([str(BIN / "nbgrader"), "release_assignment", ASSIGNMENT, "--force"], cwd=course,
                       check=True, capture_output=True)
        with student_lab(home, config_path, tmp_path / "lab.log") as (base, token):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
                ("http://127.0.0.1", "data:", "blob:")) else route.abort())  # a campus lab without internet
            page = context.new_page()
            page.set_default_timeout(WAIT)
            page.goto(f"{base}/lab?token={token}")  # a new home: no workspace of an earlier run
            fetched = fetch_and_open(page, home)
            answer_and_validate(page, Path(home) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
            submitted, attempt = submit_and_wait(page, fetched, service)
            feedback = fetch_feedback_and_open(page, context, submitted, base)
            text, title = flat(feedback.locator("body").inner_text()), feedback.title()
            received = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(attempt["received"]))
            assert f"Attempt {attempt['id']}, received {received}: Part B 15 of 15." in text, text[:3000]
            assert "This attempt is the one that counts now: your best Part B score counts at the deadline" in text
            assert re.search(r"Attempts used: 1 of 3 in the last hour, 1 of 10 in the last [^;]+; your next "
                             r"attempt is possible now", text), text[:3000]
            assert f"Deadline: {DEADLINE} UTC." in text, text[:3000]
            assert f"{ASSIGNMENT}, attempt {attempt['id']}, submitted" in title, title
            assert "Part A (5 points) is not graded yet" in text
            assert_accessible(feedback, "the feedback page Fetch Feedback brought, opened from JupyterLab")
            context.close()
    finally:
        if service.process.poll() is None:
            service.stop()
        print(f"the walk took {time.monotonic() - started:.1f} s")
    deadline = time.monotonic() + 10
    while _descendants_alive(course) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _descendants_alive(course) == []  # the service's workers, zygotes and kernels
