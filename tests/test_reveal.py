"""Before the release, Part B's feedback speaks about the student's code and data, never the
derivation Part A asks for; after it, the full explanations come back (exercise/reveal.py).

The unit tests read every report the grader writes (every catalogue mistake and every check,
and a function not implemented yet) against the rubric's own phrases, and check what comes back
after the release; the integration test renders every catalogue mistake and the blank notebook
through ``maxpool-grader serve``'s web page (a fifth of them through the exchange as well: each
student's own ``nbgrader submit`` and ``fetch_feedback``), before the deadline, and their final
feedback after it."""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup
from helpers import BIN, EXERCISE, ROOT, flat, hidden_messages, part_a_answer_in, user_account
from nbgrader.utils import notebook_hash
from test_serve import (
    Running,
    _feedback,
    _session,
    _upload,
    exchange_course,
    links,
    notebook_of,
    started_service,
)

from maxpool_grader.exercise import bugs
from maxpool_grader.exercise.catalogue import BUGS
from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from maxpool_grader.exercise.explain import mistake_text, wrap_prose
from maxpool_grader.exercise.geometry import as_pair
from maxpool_grader.exercise.grading import evaluate
from maxpool_grader.exercise.part_a import EXPLANATION, MODEL_ANSWER, RUBRIC, RUBRIC_ITEMS
from maxpool_grader.exercise.reveal import after_release, guarded, rubric_phrases, rubric_phrases_in, words
from maxpool_grader.glue.feedbacksummary import PART_A_TITLE, PART_B_TITLE, mistakes_named
from maxpool_grader.glue.modelanswer import NOT_YET
from maxpool_grader.serve.pages import FINAL_COMES, LEVEL_TEXT, PART_A_WAITS

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import LOOP_CORRECT, TIES_ALL_MAXIMA  # noqa: E402

# what the issue found on the page a blank notebook got before the deadline
LEAKED = ["With stride < pool_size, an element that is the maximum of several windows must receive the sum of "
          "their gradients.",
          "Splitting a window's gradient equally among tied maxima is a valid subgradient, but PyTorch sends all of "
          "it to the first maximum."]
NOT_IMPLEMENTED = {
    "raises": "raise NotImplementedError()",
    "returns None": "return None",
    "returns zeros": "return np.zeros(x.shape)",
    "returns zeros of another shape": "return np.zeros(4 << 20, np.int8)",
}


def _function(body: str):
    namespace = {"np": np}
    exec(f"def max_pool_backward(d_output, x, pool_size, stride=None):\n    {body}\n", namespace)
    return namespace["max_pool_backward"]


@pytest.mark.unit
def test_the_guard_is_the_rubrics_own_text():
    """Every phrase is a run of the rubric's words (or one of its long words); the question's
    own words are not; what the issue found on the pages is caught."""
    rubric = [" ".join(clause) for clause in words(RUBRIC)]
    for phrase in rubric_phrases():
        assert any(" ".join(phrase) in clause for clause in rubric), phrase
    assert rubric_phrases_in("Say what happens when the maximum of a window is not unique") == []
    for text in LEAKED:
        assert rubric_phrases_in(text), text
    for label, _, _, item in RUBRIC_ITEMS:  # each item of the rubric holds phrases of its own
        assert rubric_phrases_in(item), label
    # the model answer and the explanation the final feedback adds say what the rubric grades
    assert rubric_phrases_in(MODEL_ANSWER) and rubric_phrases_in(EXPLANATION)


@pytest.mark.unit
def test_no_report_of_the_grader_holds_a_rubric_phrase_before_the_release():
    """Every hidden check on every catalogue mistake, the visible checks, a function not
    implemented yet, and every text the pages add: none says what the rubric grades."""
    found = {key: rubric_phrases_in(message) for key, message in hidden_messages().items() if message}
    with contextlib.redirect_stdout(io.StringIO()):
        for name, bug in BUGS.items():
            for grade_id, check in GRADED_CHECKS.items():
                if not check.hidden and (message := evaluate(grade_id, bug.function)):
                    found[name, grade_id] = rubric_phrases_in(message)
        for what, body in NOT_IMPLEMENTED.items():
            for grade_id in GRADED_CHECKS:
                found[what, grade_id] = rubric_phrases_in(evaluate(grade_id, _function(body)))
    texts = [bug.title for bug in BUGS.values()] + [bug.before_release for bug in BUGS.values()]
    texts += [check.what for check in GRADED_CHECKS.values()] + [check.title for check in GRADED_CHECKS.values()]
    texts += [NOT_YET, PART_A_WAITS, FINAL_COMES, PART_A_TITLE, PART_B_TITLE, *LEVEL_TEXT.values()]
    found |= {text: rubric_phrases_in(text) for text in texts}
    assert {key: phrases for key, phrases in found.items() if phrases} == {}


@pytest.mark.unit
def test_after_the_release_the_full_explanations_come_back():
    check = HIDDEN_CHECKS["hidden_overlapping_windows"]
    message = evaluate(check.grade_id, BUGS["overwrite_overlaps"].function, inspect.getsource(bugs))
    assert flat(BUGS["overwrite_overlaps"].pattern) in flat(message) and "sum of their" not in message
    final = after_release(message, check)
    assert flat(BUGS["overwrite_overlaps"].explanation) in flat(final)
    assert flat(f"What it checks: {check.what} {check.rule}") in flat(final)
    assert "sum of their gradients" in flat(final) and rubric_phrases_in(final)
    assert after_release(final, check) == final  # made again from a final page: the same
    assert guarded(message) == (message, [])  # nothing of ours is left out before it


@pytest.mark.unit
def test_before_the_release_a_sentence_with_a_rubric_phrase_is_left_out():
    """A student's own words can hold one (their exception's message): that sentence alone goes."""
    check = HIDDEN_CHECKS["hidden_overlapping_windows"]
    message = evaluate(check.grade_id, _function(
        "raise ValueError('the maximum of several windows must receive the sum of their gradients')"))
    shown, phrases = guarded(message)
    assert "sum of their" in message and "sum of their" not in shown and "sum of their" in " ".join(phrases)
    assert "Smallest input where your function goes wrong" in shown and "x = np.array" in shown


@pytest.mark.unit
@pytest.mark.parametrize("what", NOT_IMPLEMENTED)
def test_a_function_not_implemented_yet_is_told_so_and_nothing_else(what):
    for grade_id in GRADED_CHECKS:
        message = evaluate(grade_id, _function(NOT_IMPLEMENTED[what]))
        assert "max_pool_backward is not implemented yet" in message, message
        assert "mistake" not in message and "What it checks" not in message and "Expected dx" not in message
        assert len(message) < 400, message


@pytest.mark.unit
def test_a_tie_split_written_another_way_is_named_within_the_tests_tolerance():
    """``mask * d / mask.sum()`` differs from the catalogue's equal split in the last bit: it is
    the same mistake, named as such, and the summary says what the test says."""
    code = TIES_ALL_MAXIMA.replace("mask * d_output[..., i, j, None, None]",
                                   "mask * d_output[..., i, j, None, None] / mask.sum(axis=(-2, -1), keepdims=True)")
    assert code != TIES_ALL_MAXIMA
    namespace = {"np": np}
    exec(code, namespace)
    message = evaluate("hidden_ties_first_maximum", namespace["max_pool_backward"], code)
    assert flat(f"Likely mistake: {BUGS['ties_shared'].title}.") in flat(message), message
    assert "not in our catalogue" not in message and "differs from it too" not in message
    assert mistakes_named(message) == [f"Likely mistake: {BUGS['ties_shared'].title}."]


@pytest.mark.unit
def test_a_mistake_that_fails_an_input_the_student_passed_is_not_named():
    """A float32 dx for integer x gives what a float32 accumulator gives on integer x; but the
    student's float64 x passed, where the accumulator fails: only the one mistake is named."""
    message = evaluate("hidden_dtype_of_x", BUGS["float32_for_integer_input"].function)
    assert flat(f"Likely mistake: {BUGS['float32_for_integer_input'].title}.") in flat(message), message
    assert BUGS["float32_accumulator"].title not in flat(message)


@pytest.mark.unit
def test_the_summary_names_the_causes_as_the_report_below_it():
    look_alikes = [BUGS["overwrite_overlaps"], BUGS["fancy_index_accumulate"]]
    message = "\n".join(wrap_prose(mistake_text(bug, "Possible")) for bug in look_alikes)
    assert mistakes_named(message) == [f"One of 2 possible mistakes: {look_alikes[0].title}; {look_alikes[1].title}."]
    assert mistakes_named(wrap_prose(mistake_text(look_alikes[0], "Likely", True))) == [
        f"Likely mistake: {look_alikes[0].title}."]


@pytest.mark.unit
def test_the_students_own_line_is_quoted_as_the_pattern_in_their_code():
    """The overwriting student stores into a view of dx (``flat_dx = dx.reshape(...)``): their
    code shows the mistake, so it alone is named, with their line."""
    overwriting = LOOP_CORRECT.replace("+=", "=")
    namespace = {"np": np}
    exec(overwriting, namespace)
    message = evaluate("hidden_overlapping_windows", namespace["max_pool_backward"], overwriting)
    assert flat(f"Likely mistake: {BUGS['overwrite_overlaps'].title}.") in flat(message), message
    assert "In your code: flat_dx[n, i * sh + r, j * sw + c] = flat_d[n, i, j]" in message
    assert BUGS["fancy_index_accumulate"].title not in flat(message)
    namespace = {"np": np}
    exec(TIES_ALL_MAXIMA, namespace)
    message = evaluate("hidden_ties_first_maximum", namespace["max_pool_backward"], TIES_ALL_MAXIMA)
    assert "In your code: mask = window == window.max(axis=(-2, -1), keepdims=True)  # every maximum" in message


@pytest.mark.unit
def test_a_huge_wrong_dx_is_cut_and_says_so_and_small_reproducers_stay_exact():
    """A function returning millions of numbers makes a report of a few kilobytes, never a page
    of 88 MB; the reproducer of a small input is still exact code to paste."""
    huge = _function("return (np.arange(4 << 20) % 7).astype(np.int8) + int(np.sum(x)) % 3")
    for grade_id in GRADED_CHECKS:
        message = evaluate(grade_id, huge)
        assert len(message) < 4000, (grade_id, len(message))
        assert "Your dx (cut: it has shape (4194304,) and 4194304 elements" in flat(message), message
        assert re.search(r"\u2026 4194298 more elements\], dtype=np\.int8\)", message), message
    wide = _function("return np.arange(float(np.size(x) * 1000)).reshape(x.shape[:-1] + (-1,))")
    message = evaluate("hidden_overlapping_windows", wide)
    assert "more row" in message or "more element" in message
    assert len(message) < 6000
    # the small input, the expected dx and a small wrong dx: exact literals
    message = evaluate("hidden_overlapping_windows", BUGS["overwrite_overlaps"].function)
    code = message.split("try it):\n", 1)[1].split("Expected dx:", 1)[0]
    namespace = {"np": np, "max_pool_backward": BUGS["overwrite_overlaps"].function}
    exec("\n".join(line[4:] for line in code.splitlines()), namespace)
    shown = message.split("Your dx:\n", 1)[1].split("\nWhere", 1)[0]
    np.testing.assert_array_equal(eval(shown.strip(), {"np": np}), namespace["dx"])
    assert "\u2026" not in message


@pytest.mark.unit
def test_the_page_texts_say_part_a_is_not_graded_yet_never_zero():
    from maxpool_grader.serve.pages import brief_page, status_text
    from maxpool_grader.serve.queue import Attempt
    tests = [{"id": "part_a_derivation", "title": "Part A", "points": 5.0, "score": 0.0, "manual": True,
              "answered": True, "mistakes": []},
             {"id": "hidden_overlapping_windows", "title": "Overlap", "points": 2.0, "score": 0.0, "manual": False,
              "answered": True, "mistakes": []},
             {"id": "visible_2x2_stride_2", "title": "V", "points": 13.0, "score": 13.0, "manual": False,
              "answered": True, "mistakes": []}]
    result = {"tests": tests, "score": 13.0, "max_score": 20.0}
    attempt = Attempt(1, "kim", "max_pool_backward", "web", "", 0.0, "graded", 1, "", result, 1.0)
    assert status_text(attempt) == "graded: Part B 13 of 15; Part A not graded yet"
    tests[0]["answered"] = False
    assert status_text(attempt) == "graded: Part B 13 of 15; Part A not answered yet"
    page = " ".join(BeautifulSoup(brief_page("a", result, "mistakes"), "html.parser").get_text(" ").split())
    assert "not answered yet (of 5" in page and "0 of 5" not in page and "13 of 15" in page
    tests[0].update(manual=False, score=4.0)
    assert status_text(attempt) == "graded: 13 of 20"  # a person graded it: the whole score


# ------------------------------------------------------------------ through maxpool-grader serve
def standalone(name: str) -> str:
    """A catalogue mistake as a student's solution cell: the catalogue's bugs module, with what it
    imports from the grader written out (a notebook may not import the grader), its function
    named max_pool_backward; without the grader's docstrings and comments, which a student's
    code would not have either."""
    module = ast.parse(inspect.getsource(bugs).replace("from .geometry import as_pair\n", inspect.getsource(as_pair)))
    for node in ast.walk(module):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(module) + (f"\n\n\ndef max_pool_backward(d_output, x, pool_size, stride=None):\n"
                                  f"    return {BUGS[name].function.__name__}(d_output, x, pool_size, stride)\n")


BLANK = "the release, untouched"
STUDENTS = {f"maxpool-r{number:02d}": name for number, name in enumerate([BLANK, *BUGS])}  # accounts: the exchange
# The exchange route's page is made by the same brief_page from the same result as the web one:
# every mistake goes through the web route, and these through the exchange too (the blank
# notebook and every fifth mistake: the route, not the catalogue, is what they check).
THROUGH_EXCHANGE = [student for number, student in enumerate(STUDENTS) if number % 5 == 0]
POLICY = ("\nc.Serve.attempts_per_hour = 5\nc.Serve.poll_interval = 0.3\n"
          "c.Serve.deadline = '2099-01-01 00:00'\n")  # open, with a deadline: every page is made before it


def _text(page: str) -> str:
    return " ".join(BeautifulSoup(page, "html.parser").get_text(" ").split())


def _notebook(name: str) -> bytes:
    return (ROOT / "release" / "max_pool_backward" / "max_pool_backward.ipynb").read_bytes() if name == BLANK \
        else notebook_of(standalone(name))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    roster = [(student, "Student") for student in STUDENTS]
    yield from exchange_course(tmp_path_factory.mktemp("reveal"), POLICY, roster, list(STUDENTS))


def _submit(course, student: str, content: bytes) -> str:
    """What ``nbgrader submit`` leaves in the exchange's inbound folder, made as the student (their
    folder, notebook and secret, owned by them: the service takes nothing else); its secret."""
    inbound = re.search(r"c.Exchange.root = '([^']+)'", (course / "nbgrader_config.py").read_text())[1]
    folder = Path(inbound, "max_pool_backward", "inbound",
                  f"{student}+max_pool_backward+2026-11-26 10:00:00.000000 UTC+{secrets.token_hex(4)}")
    secret = secrets.token_hex(16)
    folder.mkdir()
    (folder / "max_pool_backward.ipynb").write_bytes(content)
    (folder / "timestamp.txt").write_text("2026-11-26 10:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text(secret)
    account = user_account(student)
    for path in (folder, *folder.iterdir()):
        os.chown(path, account.pw_uid, account.pw_gid)
    return secret


def _released(course, secret: str) -> str:
    """The page released through the exchange for the submission with this secret, where the
    student's Fetch Feedback finds it."""
    root = re.search(r"c.Exchange.root = '([^']+)'", (course / "nbgrader_config.py").read_text())[1]
    return Path(root, "max_pool_backward", "feedback",
                f"{notebook_hash(secret=secret, notebook_id='max_pool_backward')}.html").read_text()


def _read_the_final_page_with_the_keyboard(browser, link: str) -> None:
    """A web student opens their link, reaches "Read your final feedback" with the Tab key and
    opens it: both pages pass axe, the final page reflows at 320 CSS px (its formulas, inline ones
    too, scroll in boxes the keyboard reaches)."""
    from a11y import assert_accessible, reflow_problems, unsandboxed
    from pages import offline_page
    page = offline_page(browser)
    unsandboxed(page, "**/final")  # a sandboxed page runs no script, not even axe's
    page.goto(link)
    assert_accessible(page, "the home page with the final feedback's link")
    _follow_with_the_keyboard(page, "Read your final feedback", 30)
    page.wait_for_url("**/final")
    page.wait_for_load_state("load")
    assert page.locator("text=Part A: the model answer").count() >= 1
    assert_accessible(page, "the final feedback on the service")
    page.set_viewport_size({"width": 320, "height": 640})
    assert reflow_problems(page) == {}
    assert page.evaluate("() => [...document.querySelectorAll('math')].every(m => m.getAttribute('alttext'))")
    page.set_viewport_size({"width": 1280, "height": 900})
    said = page.locator(".maxpool-standing").inner_text()  # nbgrader's release knows no attempt: the service says it
    assert re.fullmatch(r"This is the final feedback on attempt \d+, received .+ UTC: the attempt that counts, "
                        r"because .+\.", said.strip()), said
    page.reload()
    _follow_with_the_keyboard(page, "Back to your attempts", 10)  # among the page's first stops
    page.wait_for_url(re.compile(r".*/$"))
    assert page.locator("text=Read your final feedback").count() == 1
    page.close()


def _follow_with_the_keyboard(page, link: str, most: int) -> None:
    """Tab to the link named ``link`` (within ``most`` stops), see its focus drawn, press Enter."""
    from a11y import tab
    for _ in range(most):
        stop = tab(page)
        if page.evaluate("() => document.activeElement.textContent") == link:
            break
    else:
        raise AssertionError(f"{link!r} is not reached within {most} stops of the Tab key")
    assert stop["outline"], stop
    page.keyboard.press("Enter")


@pytest.fixture(scope="module")
def service(course):
    yield from started_service(course)


@pytest.mark.integration
def test_no_page_before_the_deadline_holds_a_rubric_phrase_and_the_final_page_explains_in_full(course, service,
                                                                                                 browser):
    """Every catalogue mistake and the blank notebook, uploaded on the web page, and a fifth of
    them submitted through the exchange too (as its student, as nbgrader submit leaves it:
    tests/test_serve.py runs the students' own nbgrader), before the deadline, at 'reports': no page as sent or released
    holds a phrase of the rubric or anything of Part A's answer, each names its mistake, and the
    blank one says 'not implemented yet' and nothing else. After the deadline (generate_feedback,
    release_feedback) each student's final page, on the service behind their link and where
    Fetch Feedback finds it, has Part A's answer and the full explanation of its mistakes."""
    sessions = {student: _session(links(course)[student]) for student in STUDENTS}
    sent = {student: _upload(service, *sessions[student], _notebook(name)) for student, name in STUDENTS.items()}
    assert {student: answer.status_code for student, answer in sent.items()} == dict.fromkeys(STUDENTS, 303)
    service.wait_idle(timeout=600)
    pages = {("web", student): _feedback(service, sessions[student][0], sent[student].headers["Location"]).text
             for student in STUDENTS}
    secret_of = {student: _submit(course, student, _notebook(STUDENTS[student])) for student in THROUGH_EXCHANGE}
    deadline = time.monotonic() + 600
    while sum(row["way"] == "exchange" and row["status"] == "graded" for row in service.attempts()) < len(secret_of):
        assert time.monotonic() < deadline, service.output()[-3000:]
        time.sleep(0.5)
    pages |= {("exchange", student): _released(course, secret) for student, secret in secret_of.items()}
    pages |= {("home", student): sessions[student][0].get(service.base, timeout=30).text for student in STUDENTS}
    service.stop()
    leaks = {key: found for key, page in pages.items() if (found := rubric_phrases_in(_text(page)))}
    assert leaks == {}
    assert {key: found for key, page in pages.items() if (found := part_a_answer_in(page))} == {}
    for way in ("web", "exchange"):
        blank = _text(pages[way, "maxpool-r00"])
        assert "max_pool_backward is not implemented yet (it raises NotImplementedError)." in blank
        assert "mistake:" not in blank and "Expected dx" not in blank and "What it checks" not in blank
    for (way, student), page in pages.items():  # each mistake is named, both ways
        name = STUDENTS[student]
        assert way == "home" or name == BLANK or f"mistake: {flat(BUGS[name].title)}" in _text(page), (way, name)
    # Part A is never a 0 before a person grades it: the blank notebook's is not answered, the others' wait
    assert "graded: Part B 0 of 15; Part A not answered yet" in pages["home", "maxpool-r00"]
    assert re.search(r"graded: Part B \d+ of 15; Part A not graded yet", pages["home", "maxpool-r01"])

    # the deadline passes: the instructor makes the final feedback and releases it (nbgrader's own commands)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("c.Serve.deadline = '2020-01-01 00:00'\n")
    made = subprocess.run([str(BIN / "nbgrader"), "generate_feedback", "max_pool_backward", "--force"], cwd=course,
                          capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stdout + made.stderr
    released = subprocess.run([str(BIN / "nbgrader"), "release_feedback", "max_pool_backward"], cwd=course,
                              capture_output=True, text=True, timeout=300)
    assert released.returncode == 0, released.stdout + released.stderr
    final = {("exchange", student): _released(course, secret) for student, secret in secret_of.items()}
    running = Running(course, service.port)
    try:
        for student in STUDENTS:
            page = sessions[student][0].get(running.base + "final", timeout=30)
            assert page.status_code == 200 and "sandbox" in page.headers["Content-Security-Policy"], student
            final["web", student] = page.text
            assert "Read your final feedback" in sessions[student][0].get(running.base, timeout=30).text
        _read_the_final_page_with_the_keyboard(browser, links(course)["maxpool-r01"].replace(service.base,
                                                                                             running.base))
    finally:
        running.stop()
    for (way, student), page in final.items():
        name, text = STUDENTS[student], _text(page)
        assert {"Part A: the model answer", "How your Part A answer is graded"} <= set(part_a_answer_in(page)), way
        assert rubric_phrases_in(text), (way, name)
        if name != BLANK and BUGS[name].pattern and f"mistake: {flat(BUGS[name].title)}." in text:
            assert flat(BUGS[name].explanation) in text, (way, name)
            assert flat(BUGS[name].pattern) not in text, (way, name)
    said = re.compile(r'<ul class="maxpool-standing"><li>This is the final feedback on attempt \d+,[^<]*</li></ul>'
                      r'<p class="maxpool-back"><a href="[^"]*">Back to your attempts</a></p>')
    for student in secret_of:  # one page, both ways: the web way's says its attempt too
        web, found = said.subn("", final["web", student], count=1)
        assert found == 1 and web == final["exchange", student], student


@pytest.mark.unit
def test_output_positions_are_k_l_in_part_b_the_catalogue_and_the_explanations():
    """Part A names an output position (k, l): so do the forward pass students read, the
    catalogue's code and texts, and the explanation the final feedback adds; a flat index into a
    window is never called k."""
    import json

    from maxpool_grader.exercise import controls
    from maxpool_grader.exercise.catalogue import CONTROLS
    helpers = next("".join(cell["source"]) for cell in json.loads((ROOT / "release" / "max_pool_backward" /
                                                                    "max_pool_backward.ipynb").read_text())["cells"]
                   if cell["metadata"].get("nbgrader", {}).get("grade_id") == "provided_helpers")
    assert "out[..., k, l]" in helpers and "for i in" not in helpers and "for j in" not in helpers
    for code in (inspect.getsource(bugs), inspect.getsource(controls)):
        assert not re.search(r"for [ij] in range\(", code)
        assert not re.search(r"\bk = (np\.)?argmax|\bk // |\bk % ", code)
    texts = [EXPLANATION] + [f"{bug.title} {bug.explanation} {bug.pattern}" for bug in BUGS.values()]
    texts += [control.description for control in CONTROLS.values()]
    for text in texts:
        assert not re.search(r"\[\.\.\., i, j\]|\bi \* |\bk // |unravel_index\(k,", text), text


@pytest.mark.unit
@pytest.mark.parametrize("name", ["integer_truncation", "float32_accumulator", "dx_always_float64",
                                  "float32_for_integer_input"])
def test_a_dtype_mistake_s_report_states_the_dtype_rule_once(name):
    """What it checks names the inputs, the line under the student's dx says what their dtype is,
    and the named mistake states Part B's rule and its fix: once."""
    messages = [message for message in (evaluate(grade_id, BUGS[name].function) for grade_id in HIDDEN_CHECKS)
                if message]
    assert len(messages) == (2 if name == "integer_truncation" else 1)  # an integer dx: the fractions' test too
    for message in messages:
        assert flat(message).count("Part B's rule") == 1 and flat(message).count("float64 when x is an integer") == 1
        assert "must have x's dtype" not in message and "must be floating point" not in message


# ------------------------------------------------------------------ one explanation per cause per page
RENDERED = ("overwrite_overlaps", "integer_truncation")  # pages also made into HTML: one with a pattern, one dtype


def _student_page(name: str, messages: dict[str, str | None], final: bool) -> tuple[str, str | None]:
    """The feedback page of a student whose solution is the catalogue mistake ``name``: the
    release notebook with each test's report as the grader wrote it (``messages``), through the
    course's feedback steps (FeedbackExplanations, then FeedbackSummary), before the release or
    in the final feedback. Its text (the summary, the notebook's prose, every report) and, for
    ``RENDERED`` mistakes, the text of the HTML page the course's exporter makes of it (about
    half a second a page: the others are read as text, which the HTML shows as it is)."""
    import nbformat
    from nbformat.v4 import new_output

    from maxpool_grader.glue.feedbackexplanations import FeedbackExplanations
    from maxpool_grader.glue.feedbackexporter import FeedbackExporter
    from maxpool_grader.glue.feedbacksummary import FeedbackSummary
    from maxpool_grader.names import RESOURCES_KEY, grade_id
    nb = nbformat.read(ROOT / "release" / "max_pool_backward" / "max_pool_backward.ipynb", as_version=4)
    for cell in nb.cells:
        if (check := GRADED_CHECKS.get(grade_id(cell))) is not None and cell.cell_type == "code":
            message = messages[check.grade_id]
            cell.metadata["nbgrader"]["score"] = 0 if message else check.points
            cell.outputs = [new_output("error", ename="CheckFailed", evalue=message,
                                       traceback=message.split("\n"))] if message else []
    resources = {RESOURCES_KEY: {"final": final}, "nbgrader": {"score": 0, "max_score": 20, **EXERCISE}}
    for step in (FeedbackExplanations, FeedbackSummary):
        nb, resources = step().preprocess(nb, resources)
    text = " ".join(_text(cell.source) if cell.cell_type == "markdown" else " ".join(
        str(output.get("evalue", "")) for output in cell.get("outputs", [])) for cell in nb.cells)
    html = FeedbackExporter().from_notebook_node(nb, resources)[0] if name in RENDERED else None
    return flat(text), (_text(html) if html is not None else None)


@pytest.mark.unit
@pytest.mark.parametrize("name", BUGS)
def test_each_named_mistake_and_each_rule_is_explained_once_per_page(name):
    """A student whose code is a catalogue mistake fails several tests with it: their page,
    before the release and in the final feedback, explains each mistake it names once (what
    the code does before, the full explanation after, never both), states each failed test's
    rule once in the final feedback and never before, and Part B's dtype rule at most once,
    exactly once where the mistake is a dtype one. The HTML page says the same as its text."""
    from maxpool_grader.exercise.catalogue import DTYPE_RULE
    with contextlib.redirect_stdout(io.StringIO()):
        messages = {grade_id: evaluate(grade_id, BUGS[name].function, standalone(name)) for grade_id in GRADED_CHECKS}
    failed = [GRADED_CHECKS[grade_id] for grade_id, message in messages.items() if message]
    assert failed, f"{name} fails no test"
    for final in (False, True):
        text, html = _student_page(name, messages, final)
        counted: dict[str, tuple[int, int]] = {}  # what the page must say -> (times on it, times required)
        named = [bug for bug in BUGS.values() if f"mistake: {flat(bug.title)}" in text]
        assert BUGS[name] in named, (name, final)
        for bug in named:
            shown, hidden = (bug.explanation, bug.pattern) if final else (bug.before_release, bug.explanation)
            counted[flat(shown)] = (text.count(flat(shown)), 1)
            if bug.pattern:
                counted[flat(hidden)] = (text.count(flat(hidden)), 0)
        for check in failed:
            if check.rule:
                counted[flat(check.rule)] = (text.count(flat(check.rule)), 1 if final else 0)
        counted[flat(DTYPE_RULE)] = (text.count(flat(DTYPE_RULE)), 1 if DTYPE_RULE in BUGS[name].explanation else 0)
        wrong = {said[:60]: times for said, times in counted.items() if times[0] != times[1]}
        assert wrong == {}, (name, "final" if final else "before the release")
        assert text.count("Part B's rule:") <= 1, (name, final)
        if html is not None:
            assert {said[:60]: html.count(said) for said in counted} == {
                said[:60]: times for said, (times, _) in counted.items()}, (name, final)
