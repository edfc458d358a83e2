"""Nothing a student's notebook shows runs in the instructor's browser.

Hostile submissions (tests/hostile_pages.py) are graded by plain `nbgrader autograde`,
their feedback made by plain `nbgrader generate_feedback`. A real `jupyter server` with
formgrader serves the course, and a real headless Chromium that reaches nothing but
this machine opens every submission's grading page and feedback page. Every payload
tries to set a global and to write a file through the server's contents API with the
instructor's session: neither may happen, no page may load anything from outside, and
the whole course must be byte for byte what it was. A decent submission's Part A keeps
its rendered formulas and its pasted photo.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers import ASSIGNMENT, all_grades, copy_course, nbgrader, sqlite
from hostile_pages import KINDS, build
from pages import Server, instructor_session, offline_page

from maxpool_grader.names import PART_A_CELL

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

# what no page may contain once student content is inert
DANGEROUS = ("script:not([type]), script[type='text/javascript'], script[type='module'], iframe, object, embed, "
             "form, meta[http-equiv], [onerror], [onload], [ontoggle], a[href^='javascript:' i], "
             "a[href^='data:' i], base")


def course_digest(course: Path) -> dict[str, str]:
    return {str(path.relative_to(course)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(course.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("browser") / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    import nbformat
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for kind in KINDS:
        folder = course / "submitted" / kind / ASSIGNMENT
        folder.mkdir(parents=True)
        build(folder, release, kind)
    nbgrader(course, "autograde", ASSIGNMENT)
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    graded = all_grades(sqlite(course))  # every hostile notebook graded: Part A by hand, the rest recorded
    assert {(student, grade) for (student, grade), score in graded.items()
            if score is None and grade != PART_A_CELL} == set()
    assert {student for student, _ in graded} == set(KINDS)
    server = Server(course)
    yield course, server
    server.stop()


def _visit(browser, url: str, within: str, context=None) -> dict:
    """Open ``url`` offline; what ran, what was asked of other hosts, what is left."""
    page = offline_page(browser, context)
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url)
            if not request.url.startswith(("file:", "http://127.0.0.1", "data:", "about:")) else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    found = {
        "url": page.url,
        "pwned": page.evaluate("() => window.__pwned || null"),
        "dangerous": page.evaluate("([within, selector]) => [...document.querySelectorAll(within)].flatMap("
                                   "root => [...root.querySelectorAll(selector)]).map(e => e.outerHTML.slice(0, 120))",
                                   [within, DANGEROUS]),
        "outside": outside,
    }
    page.close()
    return found


def _submission_ids(server: Server) -> dict[str, str]:
    found = server.call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    return {item["student"]: item["id"] for item in found}


def test_no_payload_runs_in_formgrader_or_in_feedback(hostile_class, browser):
    course, server = hostile_class
    ids = _submission_ids(server)
    assert sorted(ids) == sorted(KINDS)
    seen = {}
    before = course_digest(course)
    session = instructor_session(browser, server)
    for student in KINDS:
        seen[student, "formgrader"] = _visit(
            browser, f"{server.base}/formgrader/submissions/{ids[student]}/", "#notebook-container", session)
        feedback = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert feedback.is_file(), f"no feedback for {student}"
        seen[student, "feedback"] = _visit(browser, feedback.as_uri(), "body")
    problems = [f"{student} {where}: ran {found['pwned']}, left {len(found['dangerous'])} dangerous elements "
                f"{[element[:60] for element in found['dangerous'][:3]]}, asked other hosts for {found['outside']}"
                for (student, where), found in seen.items()
                if found["pwned"] or found["dangerous"] or found["outside"]]
    problems += [f"{student} {where}: the page went to {found['url']}" for (student, where), found in seen.items()
                 if not found["url"].split("?")[0].rstrip("/").endswith((str(ids[student]), ".html"))]
    assert not problems, "\n".join(problems)
    assert course_digest(course) == before, "a page changed the course"


def test_a_decent_answer_keeps_its_formulas_and_its_photo(hostile_class, browser):
    course, server = hostile_class
    for url in (f"{server.base}/formgrader/submissions/{_submission_ids(server)['decent']}/?token={server.token}",
                (course / "feedback" / "decent" / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri()):
        page = offline_page(browser)
        page.goto(url)
        page.wait_for_load_state("networkidle")
        answer = page.locator("img[alt='my derivation']")
        assert answer.count() == 1, url
        assert page.evaluate("img => img.complete && img.naturalWidth", answer.element_handle()) == 24
        assert page.locator("math").count() >= 10
        assert "\\frac" not in page.inner_text("body")
        page.close()


def test_formgrader_still_saves_a_grade_typed_on_the_page(hostile_class, browser):
    """The page's Content-Security-Policy stops what comes after it, not formgrader itself."""
    _, server = hostile_class
    submission = _submission_ids(server)["decent"]
    page = offline_page(browser, instructor_session(browser, server))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.base}/formgrader/submissions/{submission}/")
    page.wait_for_load_state("networkidle")
    score = page.locator("input.score#part_a_derivation")
    score.fill("3")
    score.press("Tab")
    page.wait_for_timeout(1000)
    page.close()
    grades = server.call("GET", f"/formgrader/api/grades?submission_id={submission}")
    part_a = next(grade for grade in grades if grade["name"] == "part_a_derivation")
    assert (part_a["manual_score"], errors) == (3, [])


def test_the_graded_notebooks_open_inert_in_jupyterlab(hostile_class, browser):
    """The instructor opens a graded notebook in JupyterLab itself: its outputs and markdown
    render, and nothing of the student's runs."""
    course, server = hostile_class
    before = course_digest(course)
    session = instructor_session(browser, server)
    for student in ("outputs", "markdown", "metadata"):
        page = offline_page(browser, session)
        # ?reset: not the workspace of the notebook opened before, whose hidden tab's cells come
        # first in the page (CI once waited 60 s on one)
        page.goto(f"{server.base}/lab/tree/autograded/{student}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb?reset")
        page.locator(".jp-Notebook .jp-Cell:visible").first.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        assert page.locator(".jp-Notebook .jp-RenderedHTMLCommon, .jp-Notebook .jp-RenderedMarkdown").count() > 0
        assert page.evaluate("() => window.__pwned || null") is None, student
        page.close()
    session.close()
    changed = {path for path, digest in course_digest(course).items() if before.get(path) != digest}
    assert [path for path in changed if ".ipynb_checkpoints" not in path] == []  # JupyterLab's own may appear


def test_every_hostile_feedback_page_meets_wcag_aa(hostile_class, browser):
    """Inert is not enough: each hostile notebook's feedback page (scripts, raw HTML, SVG,
    widget state, hostile metadata, a page that tries to go elsewhere) still passes axe-core's
    WCAG 2.1 AA rules (tests/a11y.py), as a decent one does."""
    from a11y import axe_violations, describe
    course, _ = hostile_class
    found = {}
    for student in KINDS:
        page = offline_page(browser)
        page.goto((course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri())
        page.wait_for_load_state("load")
        found[student] = axe_violations(page)
        page.close()
    assert not any(found.values()), "\n".join(f"{student}:\n{describe(violations)}"
                                              for student, violations in found.items() if violations)
