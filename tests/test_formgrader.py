"""The hand-graded part through nbgrader's formgrader, and what a browser shows offline.

A real `jupyter server` serves the graded sample class (names from the committed
roster). Part A is graded through formgrader's own HTTP API, then the class is regraded
with `--force`: the hand grade and its graded state stay in the gradebook, the score
table and the report. A real headless Chromium, every request off this machine refused,
opens formgrader's grading page and a feedback page: the formulas are rendered MathML
(no raw `$\\partial`), the rubric is on the grading page, the model answer in the
feedback, and the figures fit their column.
"""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import ASSIGNMENT, ROOT, copy_course, grade_command
from pages import Server, offline_page

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

STUDENT = "loop_correct"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("formgrader") / "course", students=[STUDENT, "ties_split"])
    shutil.copy(ROOT / "roster.csv", course)
    first = grade_command(course)
    assert first.returncode == 0, first.stderr[-3000:]
    server = Server(course)
    yield course, server, first
    server.stop()


def _submission(server: Server) -> dict:
    found = server.call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    return next(item for item in found if item["student"] == STUDENT)


def test_formgrader_lists_the_roster_s_names(served):
    course, server, _ = served
    students = {student["id"]: student for student in server.call("GET", "/formgrader/api/students")}
    assert (students[STUDENT]["first_name"], students[STUDENT]["last_name"]) == ("Lina", "Haddad")
    assert "Haddad,Lina" in (course / "grades.csv").read_text()
    report = json.loads((course / "report" / "report.json").read_text())
    assert report["names"][STUDENT] == f"Lina Haddad ({STUDENT})"


def test_the_course_as_shipped_has_a_working_exchange(served):
    _, server, _ = served
    page = server.call("GET", f"/formgrader/manage_assignments?token={server.token}")
    assert "Manage Assignments" in page and "does not exist and could not be created" not in page


def test_a_grade_entered_in_formgrader_survives_a_forced_regrade(served):
    course, server, _ = served
    submission = _submission(server)
    grades = server.call("GET", f"/formgrader/api/grades?submission_id={submission['id']}")
    part_a = next(grade for grade in grades if grade["name"] == "part_a_derivation")
    saved = server.call("PUT", f"/formgrader/api/grade/{part_a['id']}", {"manual_score": 4})
    assert (saved["manual_score"], saved["needs_manual_grade"]) == (4, False)

    regraded = grade_command(course, "--force")
    assert regraded.returncode == 0, regraded.stderr[-3000:]
    again = next(grade for grade in server.call("GET", f"/formgrader/api/grades?submission_id={submission['id']}")
                 if grade["name"] == "part_a_derivation")
    assert (again["manual_score"], again["needs_manual_grade"]) == (4, False)
    row = next(line for line in regraded.stdout.splitlines() if line.startswith(STUDENT))
    assert row.split()[1] == "4"  # the score table's column A
    report = json.loads((course / "report" / "report.json").read_text())
    assert report["manual"]["pending"] == 1  # ties_split
    assert "still have parts to grade by hand" in (course / "report" / "index.html").read_text()


def _check_rendered_math(page) -> None:
    assert page.locator("math").count() >= 10
    box = page.locator("math").first.bounding_box()
    assert box and box["width"] > 5 and box["height"] > 5  # laid out, not an unknown tag
    text = page.inner_text("body")
    assert "$\\partial" not in text and "\\frac" not in text and "$$" not in text


def _check_figures_fit(page) -> None:
    too_wide = page.evaluate("""() => [...document.querySelectorAll('img')]
        .filter(img => img.getBoundingClientRect().right > img.parentElement.getBoundingClientRect().right + 1)
        .map(img => img.alt || img.src.slice(0, 40))""")
    assert too_wide == []


def test_the_grading_page_renders_formulas_offline_and_shows_the_rubric(served, browser):
    _, server, _ = served
    page = offline_page(browser)
    page.goto(f"{server.base}/formgrader/submissions/{_submission(server)['id']}/?token={server.token}")
    page.wait_for_load_state("networkidle")
    _check_rendered_math(page)
    assert page.get_by_text("For the grader: Part A's rubric").is_visible()
    assert page.get_by_text("chain rule to", exact=False).first.is_visible()
    _check_figures_fit(page)
    page.close()


def test_a_feedback_page_renders_formulas_offline_with_the_model_answer(served, browser):
    course, _, _ = served
    page = offline_page(browser)
    page.goto((course / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri())
    page.wait_for_load_state("load")
    _check_rendered_math(page)
    assert page.get_by_text("Part A: the model answer").is_visible()
    assert page.get_by_text("receives the sum of their gradients", exact=False).first.is_visible()
    _check_figures_fit(page)
    page.close()


def test_the_feedback_pages_the_report_and_the_rubric_panel_pass_axe(served, browser, tmp_path):
    """WCAG 2.1 AA (axe-core, tests/a11y.py) on what the course adds to nbgrader: the feedback
    page of a correct student and of a failing one (final: with the model answer and Figure 2),
    the class report, and the rubric panel on formgrader's grading page (formgrader's own page
    around it is nbgrader's). The feedback page reflows at 320 CSS px."""
    from a11y import assert_accessible, axe_violations, reflow_problems
    course, server, _ = served
    page = offline_page(browser)
    for student in (STUDENT, "ties_split"):  # 15 of 15; 14 of 15
        page.goto((course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri())
        assert_accessible(page, f"{student}'s feedback page")
    # every formula is MathML a screen reader reads (its content in the accessibility tree), no
    # picture of text; every picture has a text alternative, none of them LaTeX
    formulas = page.locator("math")
    unread = [index for index in range(formulas.count())
              if not formulas.nth(index).aria_snapshot().removeprefix("- math").strip(" :")]
    assert formulas.count() >= 10 and unread == []
    pictures = page.eval_on_selector_all("img", "images => images.map(image => image.alt)")
    assert len(pictures) == 2 and all(len(alt) >= len("Figure 1") and "\\" not in alt and "$" not in alt
                                      for alt in pictures), pictures
    page.set_viewport_size({"width": 320, "height": 640})
    assert reflow_problems(page) == {}
    page.screenshot(path=tmp_path / "feedback-320px.png")
    print(f"the feedback page at 320 CSS px: {tmp_path / 'feedback-320px.png'}")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto((course / "report" / "index.html").as_uri())
    assert_accessible(page, "the class report")
    page.goto(f"{server.base}/formgrader/submissions/{_submission(server)['id']}/?token={server.token}")
    page.wait_for_load_state("networkidle")
    rubric = page.locator(".cell", has_text="For the grader: Part A's rubric").last
    assert_accessible(page, "the rubric panel in formgrader", context=rubric.element_handle())
    # the hand-grading score box, and the extra-credit box, have a name (nbgrader's template gives
    # them none: the course's patch label_score_boxes, docs/instructor.md#formgrader-labels)
    boxes = page.locator("input.score, input.extra-credit")
    names = [boxes.nth(index).evaluate("box => box.getAttribute('aria-label')") for index in range(boxes.count())]
    assert "Score for part_a_derivation" in names and "Extra credit for part_a_derivation" in names, names
    assert all(names), names
    labels = [violation for violation in axe_violations(page) if violation["id"] == "label"]
    assert labels == [], [node["html"][:200] for violation in labels for node in violation["nodes"]]
    page.close()
