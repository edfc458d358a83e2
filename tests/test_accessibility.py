"""Every page of ``maxpool-grader serve`` meets WCAG 2.1 AA, checked by axe-core (tests/a11y.py)
in a real headless Chromium, offline, against a real service: the sign-in and its refusals,
the home page with the upload form, an upload refused, the attempt limit, an attempt being
graded and one waiting in the queue, the feedback page, the brief page (at 'mistakes'), the
exchange's pages, the instructor's live view, "not found".

A student signs in, uploads, waits and reads their feedback with the keyboard alone, with
the focus always visible; the waiting page tells its changes through a live region without
reloading or moving the focus. The home page and the feedback page reflow at 320 CSS px and
at 200% zoom (screenshots in the test's folder). And the checker is shown to catch what it
is for: a low-contrast colour put back on a page is reported.

The tests of this module share one service and run in order."""

from __future__ import annotations

import csv
import re

import pytest
from a11y import assert_accessible, axe_violations, describe, reflow_problems, tab, unsandboxed
from helpers import ASSIGNMENT, free_port
from test_serve import LOOP_CORRECT, Running, links, notebook_of, started_service

pytestmark = pytest.mark.integration  # a real service, its workers, Chromium

STUDENTS = ["kim", "lee", "max", "nia"]
POLICY = "\nc.Serve.attempts_per_hour = 2\nc.Serve.poll_interval = 0.3\n"
SLOW = "import time\ntime.sleep(6)  # graded slowly: the waiting page stays up\n"  # a cell of its own, first


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from helpers import copy_course
    course = copy_course(tmp_path_factory.mktemp("a11y") / "course", with_submissions=False)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(POLICY)
    with open(course / "roster.csv", "w", newline="") as handle:
        rows = csv.writer(handle)
        rows.writerow(["id", "first_name", "last_name", "email"])
        rows.writerows([name, name.title(), "Student", f"{name}@example.edu"] for name in STUDENTS)
    return course


@pytest.fixture(scope="module")
def service(course):
    yield from started_service(course, exchange=False)


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebooks")
    found = {"ok": LOOP_CORRECT, "slow": SLOW + LOOP_CORRECT, "slow_wrong": SLOW + LOOP_CORRECT.replace("+=", "=")}
    for name, code in found.items():
        (folder / f"{name}.ipynb").write_bytes(notebook_of(code))
    (folder / "notes.txt").write_text("not a notebook")
    return {name: str(folder / f"{name}.ipynb") for name in found} | {"text": str(folder / "notes.txt")}


def _new_page(browser, width: int = 1280, height: int = 900, zoom: float = 1):
    from pages import offline_page
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=zoom)
    return offline_page(browser, context)


def _upload(page, base: str, notebook: str) -> None:
    page.goto(base)
    page.set_input_files("input[type=file]", notebook)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")


def test_every_page_a_student_meets_passes_axe(service, browser, notebooks):
    checked = []

    def check(page, what):
        assert_accessible(page, what)
        checked.append(what)
    page = _new_page(browser)
    page.goto(service.base + "login/not-a-token")
    check(page, "an invalid personal link")
    page.goto(service.base)
    check(page, "the home page without a session")
    page.goto(links(service.course)["kim"])
    assert page.locator("input[type=file]").count() == 1
    check(page, "the home page with the upload form")
    _upload(page, service.base, notebooks["text"])
    assert "not a Jupyter notebook" in page.locator("[role=alert]").inner_text()
    check(page, "an upload refused")
    _upload(page, service.base, notebooks["slow"])
    grading = page.url
    page.locator("#progress", has_text="Being graded now").wait_for()
    check(page, "an attempt being graded")
    second = _new_page(browser)
    second.context.add_cookies(page.context.cookies())
    _upload(second, service.base, notebooks["ok"])
    assert "Waiting to be graded: 0 submissions ahead of yours" in second.inner_text("#progress"), second.url
    check(second, "an attempt waiting in the queue")
    _upload(second, service.base, notebooks["ok"])
    assert "Your next attempt is possible at" in second.locator("[role=alert]").inner_text()
    check(second, "the attempt limit")
    page.wait_for_url(re.compile(r".*/attempt/[0-9]+/feedback$"), timeout=120_000)  # opened when graded
    unsandboxed(page, "**/feedback")  # a route sees no redirected request: the page itself
    page.goto(grading + "/feedback")
    check(page, "the feedback page, as served")
    # it says which attempt it is, and when (issue 49: every page was titled max_pool_backward),
    # and leads back to the student's attempts, where that number is listed
    number = re.search(r"/attempt/([0-9]+)$", grading)[1]
    title = page.title()
    assert re.fullmatch(rf"Feedback on {ASSIGNMENT}, attempt {number}, submitted \d{{4}}-\d\d-\d\d \d\d:\d\d UTC",
                        title), title
    assert page.inner_text("h1").startswith(title + " (Score: ")
    page.get_by_role("link", name="Back to your attempts").click()
    page.wait_for_load_state("load")
    assert page.url == service.base and f"Attempt {number}, received" in page.inner_text("main"), page.url
    refused = next(row["id"] for row in service.attempts() if row["student"] == "kim" and row["status"] == "refused")
    page.goto(service.base + f"attempt/{refused}")  # the text kim sent first
    assert "refused" in page.inner_text("main")
    check(page, "a refused attempt's page")
    page.goto(service.base + "attempt/999")
    check(page, "not found")
    for opened in (page, second):
        opened.context.close()
    print("checked with axe-core:", "; ".join(checked))


def test_the_instructors_live_view_passes_axe_and_updates_its_counts_in_place(service, browser):
    service.wait_idle()  # no count changes while the page is watched
    page = _new_page(browser)
    page.goto((service.course / ".maxpool-grader" / "serve" / "instructor-link").read_text().strip())
    assert page.locator("h1").inner_text() == f"{ASSIGNMENT}: live"
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    assert_accessible(page, "the instructor's live view")
    page.evaluate("""() => { window.__same = true; window.__announced = 0;
        new MutationObserver(() => { window.__announced += 1; }).observe(document.getElementById('progress'),
            {childList: true, characterData: true, subtree: true}); }""")
    before = page.inner_text("#progress")
    for _ in range(2):  # read twice: the time beside the counts changes, the live region does not (WCAG 2.2.2)
        as_of = page.inner_text("#as-of")
        page.wait_for_function("text => document.getElementById('as-of').textContent !== text", arg=as_of,
                               timeout=20_000)
    assert page.evaluate("() => [window.__same, window.__announced]") == [True, 0]  # no reload, nothing said
    assert page.inner_text("#progress") == before and "as of" not in before
    assert page.locator("#progress #as-of").count() == 0  # the time is outside the live region
    # the updates pause, with the keyboard alone, and resume
    _tab_to(page, "#pause")
    page.keyboard.press("Space")
    assert page.get_attribute("#pause", "aria-pressed") == "true"
    as_of = page.inner_text("#as-of")
    page.wait_for_timeout(11_000)  # two rounds of updates
    assert page.inner_text("#as-of") == as_of
    page.keyboard.press("Space")
    assert page.get_attribute("#pause", "aria-pressed") == "false"
    page.wait_for_function("text => document.getElementById('as-of').textContent !== text", arg=as_of,
                           timeout=20_000)
    assert_accessible(page, "the instructor's live view, its updates paused and resumed")
    page.context.close()


def _tab_to(page, matches: str, most: int = 300) -> list[dict]:
    """Press Tab until the focused element matches the selector ``matches``; every stop on the
    way, each with whether its focus ring is drawn."""
    stops = []
    while len(stops) < most:
        stops.append(tab(page))
        if page.evaluate("selector => document.activeElement.matches(selector)", matches):
            return stops
    raise AssertionError(f"{matches} never had the focus after {most} presses of Tab: {stops[-5:]}")


def test_a_student_signs_in_uploads_waits_and_reads_the_feedback_with_the_keyboard_alone(
        service, browser, notebooks):
    page = _new_page(browser, 800, 700)
    page.goto(links(service.course)["lee"])  # the personal link signs in
    stops = _tab_to(page, "input[type=file]")
    chooser = page.locator(":focus")  # the file dialog itself is the system's: the focused input gets the file
    assert chooser.get_attribute("id") == "notebook" and page.locator("label[for=notebook]").count() == 1
    chooser.set_input_files(notebooks["slow_wrong"])
    stops += _tab_to(page, "button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/attempt/[0-9]+$"))
    page.evaluate("() => { window.__same = true; }")  # gone if the page reloads
    stops += _tab_to(page, "#open-when-ready")
    page.keyboard.press("Space")  # stay here: open the feedback by hand
    assert not page.is_checked("#open-when-ready")
    page.locator("#ready").wait_for(state="visible", timeout=120_000)
    assert "Your feedback is ready" in page.inner_text("#progress")  # said in the live region
    assert page.evaluate("() => [window.__same, document.activeElement.id]") == [True, "open-when-ready"]
    stops += _tab_to(page, "#ready")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/attempt/[0-9]+/feedback$"))
    hidden = [stop for stop in stops if not stop["outline"] or not stop["inView"]]
    assert hidden == [], hidden  # the focus always visible, on every page on the way
    # the summary's inline code is code, not backticks (issue 49), and the page still passes axe
    code = page.locator("#summary strong code")
    assert "dx[...] = ..." in code.all_inner_texts(), page.inner_text("#summary")
    assert "`" not in page.inner_text("#summary")
    feedback = page.url
    page.get_by_role("link", name="Back to your attempts").click()  # a link works in the sandboxed page
    page.wait_for_load_state("load")
    assert page.url == service.base and "Your attempts" in page.inner_text("main"), page.url
    unsandboxed(page, "**/feedback")
    page.goto(feedback)
    assert_accessible(page, "the feedback page with inline code in its summary")

    stops = _tab_to(page, "#toc a")
    page.keyboard.press("Enter")  # the contents lead to the test
    assert re.search(r"#part_a_derivation$", page.url), page.url
    page.set_viewport_size({"width": 320, "height": 640})
    box = page.evaluate("() => [...document.querySelectorAll('.output_area')].findIndex(e => e.scrollWidth > "
                        "e.clientWidth + 1)")
    assert box >= 0  # a failed test's arrays are wider than a phone
    stops += _tab_to(page, "div.output_area", most=400)
    while not page.evaluate("() => document.activeElement.scrollWidth > document.activeElement.clientWidth + 1"):
        stops.append(tab(page))
        assert len(stops) < 600, stops[-3:]
    for _ in range(12):
        page.keyboard.press("ArrowRight")
    page.wait_for_timeout(600)  # the browser scrolls smoothly
    assert page.evaluate("() => document.activeElement.scrollLeft") > 0  # scrolled by the keyboard
    hidden = [stop for stop in stops if not stop["outline"]]
    assert hidden == [], hidden
    page.context.close()


@pytest.mark.parametrize("width, zoom", [(320, 1), (640, 2)], ids=["320px", "200%"])
def test_the_home_page_and_the_feedback_page_reflow(service, browser, width, zoom, tmp_path):
    """At 320 CSS px (WCAG 1.4.10), and at 200% zoom of a 1280-px window (640 CSS px at twice
    the pixels): no page scrolls sideways; only code, outputs and formulas scroll, each in a
    box the keyboard reaches."""
    page = _new_page(browser, width, 640 if zoom == 1 else 450, zoom)
    page.goto(links(service.course)["kim"])
    shots = {"home": page.url}
    feedback = next(row["id"] for row in service.attempts() if row["student"] == "kim" and row["status"] == "graded")
    shots["feedback"] = service.base + f"attempt/{feedback}/feedback"
    problems = {}
    for name, url in shots.items():
        page.goto(url)
        page.screenshot(path=tmp_path / f"{name}.png", full_page=name == "home")
        problems[name] = reflow_problems(page)
    print(f"screenshots at {width} CSS px, zoom {zoom:g}: {tmp_path}")
    assert problems == {"home": {}, "feedback": {}}
    page.context.close()


def test_a_low_contrast_colour_put_back_is_reported(service, browser):
    """The checker catches what it is for: the home page's text in a light grey fails."""
    page = _new_page(browser)
    page.goto(links(service.course)["kim"])
    assert_accessible(page, "the home page as served")
    page.evaluate("() => document.querySelectorAll('li').forEach(item => { item.style.color = '#aaaaaa'; })")
    violations = axe_violations(page)
    assert [violation["id"] for violation in violations] == ["color-contrast"]
    # every item, and the marked text in one (the attempt that counts): each element with its own text
    assert page.locator("li").count() <= len(violations[0]["nodes"]) <= page.locator("li, li *").count()
    with pytest.raises(AssertionError) as failed:
        assert_accessible(page, "the home page in light grey")
    assert "color-contrast" in str(failed.value) and "dequeuniversity.com/rules/axe" in str(failed.value)
    print(describe(violations, most=1))
    page.context.close()


def test_the_brief_page_and_the_exchanges_pages_pass_axe(service, browser, notebooks, tmp_path):
    """At 'mistakes' the web page shows the brief feedback; through the exchange, a student
    finds the same page, or why a submission was not graded, as a file of its own."""
    from maxpool_grader.serve.pages import brief_page, refusal_page
    with open(service.course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.before_deadline = 'mistakes'\n")
    service.stop()
    running = Running(service.course, free_port())
    try:
        page = _new_page(browser)
        page.goto(links(service.course)["nia"].replace(service.base, running.base))
        _upload(page, running.base, notebooks["slow_wrong"])
        page.locator("main table").wait_for(timeout=120_000)  # the brief page, opened when graded
        assert "Likely mistake:" in page.inner_text("main")
        assert_accessible(page, "the brief page at 'mistakes'")
        result = next(row for row in running.attempts() if row["student"] == "nia" and row["status"] == "graded")
    finally:
        running.stop()
    import json
    for name, made in (("brief", brief_page(ASSIGNMENT, json.loads(result["result"]), "mistakes")),
                       ("refusal", refusal_page(ASSIGNMENT, "The deadline has passed: <not graded>."))):
        (tmp_path / f"{name}.html").write_text(made)
        page.goto((tmp_path / f"{name}.html").as_uri())
        assert_accessible(page, f"the exchange's {name} page")
    page.context.close()
