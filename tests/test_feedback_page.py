"""The feedback page reads top-down: the summary first, the tests by their titles, each
explanation once (maxpool_grader/glue/feedbackexporter.py).

The browser test grades two failing sample students with plain nbgrader (forum_compiles:
no stride parameter, an integer dx, pool_size as an int only; forum_verbatim: does not
compile, so every test fails for one cause) and opens their feedback in a real headless
Chromium that reaches nothing but this machine; what the page must say comes from the
gradebook. The unit tests check the
back-references and that what the summary takes from the student's notebook is escaped.
"""

from __future__ import annotations

import re
import shutil

import jinja2
import pytest
from helpers import (
    ASSIGNMENT,
    EXERCISE,
    copy_course,
    flat,
    formulas_without_their_latex,
    nbgrader,
    part_a_answer_in,
    sqlite,
)
from nbconvert.filters.highlight import Highlight2HTML
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.api import Gradebook

from maxpool_grader.exercise.catalogue import BUGS
from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS, VISIBLE_CHECKS
from maxpool_grader.exercise.explain import mistake_text, report, wrap_prose
from maxpool_grader.exercise.part_a import FIGURE_1_ALT
from maxpool_grader.exercise.repeats import shorten_repeats
from maxpool_grader.glue.feedbackexporter import FeedbackExporter
from maxpool_grader.glue.feedbacksummary import PART_A_TITLE, FeedbackSummary, inline_code, page_title
from maxpool_grader.glue.modelanswer import FIGURE_2_ALT
from maxpool_grader.names import REPORT_KEY, SUMMARY_TAG

STUDENTS = ["forum_compiles", "forum_verbatim"]  # three mistakes, one test each; one cause, every test


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("feedback") / "course", students=STUDENTS)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    nbgrader(course, "autograde", ASSIGNMENT)
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    return course


def _explanations(body: str) -> list[str]:
    """The sentences of the page that explain something (long enough to be more than a label)."""
    return [sentence.strip() for sentence in re.split(r"(?<=[.:])\s+", body) if len(sentence.strip()) >= 90]


@pytest.mark.integration
@pytest.mark.parametrize("student", STUDENTS)
def test_the_feedback_of_a_failing_student_reads_top_down(graded, browser, student):
    from pages import offline_page
    with Gradebook(sqlite(graded)) as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, student)
        score, most = submission.code_score, submission.max_code_score
    feedback_page = graded / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    page = offline_page(browser)
    page.goto(feedback_page.as_uri())
    page.wait_for_load_state("networkidle")
    top = lambda selector: page.locator(selector).first.bounding_box()["y"]  # noqa: E731
    # the page says what it is: the assignment and when it was submitted (no attempt: plain nbgrader)
    assert re.fullmatch(rf"Feedback on {ASSIGNMENT}, submitted \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", page.title())
    assert page.inner_text("h1").startswith(page.title() + " (Score: ")
    assert page.get_by_text("Back to your attempts").count() == 0  # no attempts page outside serve's web way
    # the summary first: above the contents and every cell of the notebook
    assert page.locator("#summary").count() == 1
    assert top("#summary") < top("#toc") < top(".cell")
    summary = flat(page.inner_text("#summary"))
    assert summary.startswith("Summary"), summary
    assert "Part A: your derivation (graded by hand) not graded yet, of 5" in summary, summary
    assert f"Part B: your max_pool_backward (graded by the tests) {score:g} of {most:g}" in summary, summary
    # each cause once, with what it cost: together, every point Part B lost
    named = [sentence for sentence in re.split(r"(?<=\.)\s+", summary) if "It cost" in sentence]
    assert len(set(named)) == len(named) > 0, summary
    costs = [int(points) for points in re.findall(r"It cost (\d+) points? in \d+ tests?", summary)]
    assert sum(costs) == most - score, summary
    for bug in BUGS.values():
        assert summary.count(f"Likely mistake: {flat(bug.title)}.") <= 1, summary
    # the contents and the cells' headings name the tests by their titles, never by grade id
    titles = [PART_A_TITLE] + [check.title for check in (VISIBLE_CHECKS | HIDDEN_CHECKS).values()]
    assert page.locator("#toc li a").all_inner_texts() == titles
    headings = flat(" ".join(page.locator(".nbgrader_cell .panel-heading").all_inner_texts()))
    assert "Test cell" not in flat(page.inner_text("body")) and not any(check in headings for check in GRADED_CHECKS)
    assert all(title in headings for title in titles), headings
    # each explanation once; the later tests refer back to it
    body = flat(page.inner_text("#notebook-container"))
    repeated = {sentence for sentence in _explanations(body) if body.count(sentence) > 1}
    assert not repeated, sorted(repeated)[:3]
    for bug in BUGS.values():
        assert body.count(flat(bug.explanation)) <= 1, bug.name
    failed_tests = sum(1 for check in GRADED_CHECKS.values() if f"Test failed: {check.title}" in body
                       or f"Hidden test failed: {check.title}" in body)
    assert body.count("explained above, under") + body.count("Explained above, under") >= failed_tests - len(costs)
    # every code cell ran (failed tests too): no "In [ ]"; the rubric speaks to the student
    assert "In [ ]" not in body.replace("\xa0", " ")
    assert "How your Part A answer is graded" in body and "For the grader" not in body
    alts = page.eval_on_selector_all("#notebook-container img", "images => images.map(image => image.alt)")
    assert sorted(alts) == sorted([FIGURE_1_ALT, FIGURE_2_ALT]), alts
    # every formula carries its LaTeX as written, for a screen reader without MathML
    submitted = graded / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    formulas, wrong = formulas_without_their_latex(page.content(), submitted)
    assert formulas >= 10 and wrong == [], (formulas, wrong[:3])
    page.close()


@pytest.mark.integration
def test_a_page_made_before_the_deadline_keeps_part_a_s_answer_for_after_it(graded, tmp_path):
    """The instructor's own nbgrader generate_feedback, before the deadline and after it: the
    model answer, rubric and Figure 2 only in the page made after it; the heading never counts
    an ungraded Part A, and the tools cell is folded."""
    course = shutil.copytree(graded, tmp_path / "course")
    pages = {}
    for when in ("2099-01-01 00:00", "2020-01-01 00:00"):
        nbgrader(course, "generate_feedback", ASSIGNMENT, "--force", "--student=forum_compiles",
                 f"--Serve.deadline={when}")
        pages[when] = (course / "feedback" / "forum_compiles" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    before, after = pages["2099-01-01 00:00"], pages["2020-01-01 00:00"]
    assert part_a_answer_in(before) == [] and "Part A is graded by a person after the deadline" in before
    assert {"Part A: the model answer", "How your Part A answer is graded", "Figure 2's image"} <= set(
        part_a_answer_in(after))
    submitted = course / "submitted" / "forum_compiles" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    counts = {}
    for when, page in pages.items():  # every formula, the model answer's too, carries its LaTeX as alttext
        counts[when], wrong = formulas_without_their_latex(page, submitted)
        assert wrong == [], (when, wrong[:3])
    assert 10 <= counts["2099-01-01 00:00"] < counts["2020-01-01 00:00"], counts
    for page in (before, after):  # Part A waits for a person: the heading shows Part B's points alone
        assert re.search(r"\(Score: \d+ of 15 so far; Part A \(5 points\) is not graded yet\)", page), page[:3000]
        assert re.search(r'<details class="maxpool-tools"><summary>[^<]*</summary>\s*<div class="cell', page)


def _test_cell(grade_id: str, message: str | None, bugs=()):
    cell = new_code_cell(f"# {grade_id}", metadata={"nbgrader": {
        "grade": True, "solution": False, "grade_id": grade_id, "points": GRADED_CHECKS[grade_id].points,
        "score": 0 if message else GRADED_CHECKS[grade_id].points}})
    if message:
        cell.outputs = [new_output("error", ename="CheckFailed", evalue=message, traceback=message.split("\n"))]
        cell.metadata[REPORT_KEY] = {"passed": False, "kind": "wrong", "bugs": list(bugs)}
    return cell


def test_a_repeated_mistake_is_explained_once_and_referred_to_after():
    bug = BUGS["integer_truncation"]
    first, second = HIDDEN_CHECKS["hidden_ties_valid_subgradient"], HIDDEN_CHECKS["hidden_forum_integer_input"]
    body = "Smallest input where your function goes wrong (paste it into a new cell to try it):\n    x = 1\n"
    reports = [(check.title, report(check, body + wrap_prose(mistake_text(bug, "Likely"))))
               for check in (first, second)]
    shortened = shorten_repeats(reports)
    assert shortened[0] == reports[0][1]
    assert flat(bug.explanation) not in flat(shortened[1])
    back = f"Likely mistake: {bug.title} (explained above, under \u201c{first.title}\u201d)."
    assert flat(back) in flat(shortened[1])


def test_a_test_failed_on_the_same_input_refers_to_the_first_for_it():
    """ties_all_maxima fails both tie tests on the same smallest input with the same dx: the
    second report keeps what its test expects and refers to the first for the input, the
    student's dx and the mistake, instead of repeating them."""
    import sys

    import numpy as np
    from helpers import ROOT

    from maxpool_grader.exercise.grading import evaluate
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_sample_class import TIES_ALL_MAXIMA
    namespace = {"np": np}
    exec(TIES_ALL_MAXIMA, namespace)
    checks = [HIDDEN_CHECKS["hidden_ties_valid_subgradient"], HIDDEN_CHECKS["hidden_ties_first_maximum"]]
    reports = [(check.title, evaluate(check.grade_id, namespace["max_pool_backward"], TIES_ALL_MAXIMA))
               for check in checks]
    first, second = shorten_repeats(reports)
    assert first == reports[0][1]
    code = first.split("try it):\n", 1)[1].split("Accepted dx", 1)[0]
    assert code.strip() and code not in second and "Your dx:" not in second, second
    assert flat(f"the same as under \u201c{checks[0].title}\u201d") in flat(second), second
    assert "Expected dx:\n    np.array([[1.0, 0.0]])" in second  # what this test wants stays
    assert flat(f"(explained above, under \u201c{checks[0].title}\u201d)") in flat(second)
    assert len(second) < 0.7 * len(reports[1][1])


def test_the_summary_escapes_what_it_takes_from_the_notebook():
    hostile = "Your function is defined as max_pool_backward(<img src=x onerror=alert(1)>): it has no stride."
    checks = list(HIDDEN_CHECKS.values())[:3]
    nb = new_notebook(cells=[new_markdown_cell("hi", metadata={"tags": [SUMMARY_TAG]})]
                      + [_test_cell(check.grade_id, report(check, hostile)) for check in checks[:2]]
                      + [_test_cell(checks[2].grade_id, None)])
    nb, resources = FeedbackSummary().preprocess(nb, {"nbgrader": {"score": 2, "max_score": 20, **EXERCISE}})
    summaries = [cell for cell in nb.cells if SUMMARY_TAG in cell.metadata.get("tags", [])]
    assert len(summaries) == 1 and summaries[0] is nb.cells[0], "one summary, ours, first"
    source = summaries[0].source
    assert "<img" not in source and "onerror=alert(1)&gt;" in source, source
    assert f'href="#{checks[0].grade_id}"' in source and f'href="#{checks[1].grade_id}"' in source
    assert "It cost 4 points in 2 tests" in source, source
    assert resources["maxpool_grader"]["titles"][checks[0].grade_id] == checks[0].title


def test_the_summary_shows_inline_code_as_code_and_escapes_everything_else():
    """A catalogue title's Markdown inline code (`dx[...] = ...`) is shown as <code> (issue 49: the
    backticks were shown as text); whatever stands between backticks is escaped first."""
    assert inline_code("Likely mistake: overlapping windows overwrite each other (`dx[...] = ...`).") == (
        "Likely mistake: overlapping windows overwrite each other (<code>dx[...] = ...</code>).")
    hostile = inline_code("`<img src=x onerror=alert(1)>` & `</code><script>x()</script>` a`b")
    assert hostile == ("<code>&lt;img src=x onerror=alert(1)&gt;</code> &amp; "
                       "<code>&lt;/code&gt;&lt;script&gt;x()&lt;/script&gt;</code> a`b")
    overwrite = BUGS["overwrite_overlaps"]
    check = HIDDEN_CHECKS["hidden_overlapping_windows"]
    message = f"Hidden test failed: {check.title}.\nLikely mistake: {overwrite.title}.\n"
    nb = new_notebook(cells=[_test_cell(check.grade_id, message)])
    nb, _ = FeedbackSummary().preprocess(nb, {"nbgrader": {"score": 13, "max_score": 20, **EXERCISE}})
    assert "<strong>Likely mistake: overlapping windows overwrite each other (<code>dx[...] = ...</code>).</strong>" \
        in nb.cells[0].source, nb.cells[0].source


def test_the_page_title_names_the_assignment_the_attempt_and_the_time(tmp_path):
    (tmp_path / "timestamp.txt").write_text("2026-12-01 14:03:27.512 UTC")
    resources = {"nbgrader": dict(EXERCISE), "metadata": {"path": str(tmp_path)}}
    assert page_title(resources, 7) == f"Feedback on {ASSIGNMENT}, attempt 7, submitted 2026-12-01 14:03 UTC"
    assert page_title(resources) == f"Feedback on {ASSIGNMENT}, submitted 2026-12-01 14:03 UTC"
    (tmp_path / "timestamp.txt").write_text("not a time <b>")
    assert page_title(resources, 3) == f"Feedback on {ASSIGNMENT}, attempt 3"
    nb, resources = FeedbackSummary(attempt=3, attempts_link="../../").preprocess(new_notebook(), resources)
    assert resources["maxpool_grader"]["page_title"] == f"Feedback on {ASSIGNMENT}, attempt 3"
    assert resources["maxpool_grader"]["attempts_link"] == "../../"


def test_each_students_exporter_reuses_the_compiled_templates_and_renders_the_same(monkeypatch):
    """nbgrader makes a new exporter for every student: the second compiles no template,
    highlights no code cell it saw already and makes the same page; a template whose
    source changed is compiled again."""
    from collections import OrderedDict

    from maxpool_grader.glue import feedbackexporter
    # this process may have made pages already (tests/test_reveal.py renders some): start afresh
    monkeypatch.setattr(feedbackexporter, "_COMPILED", {})
    monkeypatch.setattr(feedbackexporter, "_HIGHLIGHTED", OrderedDict())
    compiled, highlighted = [], []
    compile_template, highlight = jinja2.Environment.compile, Highlight2HTML.__call__
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda self, source, name=None, *a, **k: compiled.append(name) or compile_template(
                            self, source, name, *a, **k))
    monkeypatch.setattr(Highlight2HTML, "__call__", lambda self, source, *a: highlighted.append(source) or highlight(
        self, source, *a))
    nb = new_notebook(cells=[new_markdown_cell("# Feedback"), new_code_cell("x = 1")])
    first, _ = FeedbackExporter().from_notebook_node(nb)
    assert compiled, "the first exporter compiles the templates"
    compiled.clear()
    nb.cells.append(new_code_cell("y = 2"))
    second = FeedbackExporter().from_notebook_node(nb)[0]
    assert compiled == [] and highlighted[-1:] == ["y = 2"] and highlighted.count("x = 1") == 1
    nb.cells.pop()
    assert FeedbackExporter().from_notebook_node(nb)[0] == first != second
    changed = FeedbackExporter(raw_template="{%- extends 'lab/index.html.j2' -%}\n{% block body_header %}CHANGED"
                                            "{{ super() }}{% endblock body_header %}")
    assert "CHANGED" in changed.from_notebook_node(nb)[0] and "<memory>" in compiled


@pytest.mark.integration
def test_a_page_is_the_same_byte_for_byte_with_its_code_cells_passed_through_alone(graded, tmp_path, monkeypatch):
    """The feedback page with its code cells passed through BeautifulSoup on their own
    (feedbackexporter.FeedbackExporter.from_notebook_node) is the page nbconvert makes,
    for code BeautifulSoup could read otherwise: empty, whitespace, markup, entities."""
    import shutil

    import nbformat
    from nbconvert.exporters import HTMLExporter
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    from maxpool_grader.glue import feedbackexporter
    course = shutil.copytree(graded, tmp_path / "course")
    notebook = course / "autograded" / STUDENTS[0] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    for source in ["", " ", "\n\n", "\t", "</pre></div>", "<!-- x -->", "a = '&not' + '&amp' # &lt", "x = 1\r\ny = 2",
                   "s = '''\n   \n'''", "# é ∑ 🐍\n", "<script>alert(1)</script>", "%%bash\necho hi"]:
        nb.cells += [new_code_cell(source), new_markdown_cell(f"<pre>\n{source}\n</pre> <textarea>")]
    notebook.chmod(0o644)
    nbformat.write(nb, notebook)
    monkeypatch.chdir(course)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    made, make = [], HTMLExporter.from_notebook_node  # made twice: a placeholder was lost
    monkeypatch.setattr(HTMLExporter, "from_notebook_node", lambda *a, **k: made.append(1) or make(*a, **k))
    pages = []
    for template in (feedbackexporter.TEMPLATE, "the plain way"):
        monkeypatch.setattr(feedbackexporter, "TEMPLATE", template)
        for student in STUDENTS:
            assert api.generate_feedback(ASSIGNMENT, student, force=True)["success"]
        pages.append([(course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
                      for student in STUDENTS])
    assert pages[0] == pages[1]
    assert pages[0][0].count("hl-ipython3") > 12 and len(made) == 2 * len(STUDENTS)
