"""Every formula reads exactly as written, wherever a notebook is shown.

A corpus of what students write in a markdown answer (``i^*``, ``x_{i*j}``, ``a*b*c``,
``\\ast``, ``\\text{...}``, ``\\begin{cases}``, ``$$...$$`` blocks, dollars in prose, emphasis
next to math, math in headings, lists, tables, links, pictures and raw HTML). For each case,
the HTML a reader gets is written out in full: each formula is latex2mathml's MathML for the
same LaTeX, sanitized (``clean_mathml``), and the prose around it is what Markdown makes of
it (emphasis still ``<em>``). Markdown once read each pair of ``*`` in the MathML as emphasis
and deleted both: ``$(i^*, j^*)$`` read "(i, j)".

The same corpus is checked in the feedback page as the FeedbackExporter makes it with the
course's configuration (unit, no server), and, graded by plain ``nbgrader autograde``, in
formgrader's grading page as a real ``jupyter server`` serves it and in the page of plain
``nbgrader generate_feedback`` (integration). The model answer's ``(i^*, j^*)`` is read back
from its MathML and from what headless Chromium shows of it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import nbformat
import pytest
from bs4 import BeautifulSoup
from helpers import ASSIGNMENT, RELEASE_NOTEBOOK, ROOT, copy_course, nbgrader
from hostile_pages import PNG_B64
from latex2mathml.converter import convert
from nbformat.v4 import new_markdown_cell

from maxpool_grader.exercise.part_a import MODEL_ANSWER
from maxpool_grader.glue.allow_list import clean_mathml
from maxpool_grader.glue.mathml import WIDE_FORMULA
from maxpool_grader.names import PART_A_CELL, grade_id


@dataclass(frozen=True)
class Case:
    name: str
    markdown: str
    # (LaTeX read, display[, LaTeX as written, its alttext when another]), in the order the page shows them
    formulas: tuple[tuple, ...]
    expected: str  # the HTML a reader gets, "{0}", "{1}", ... standing for the formulas' MathML
    attachments: dict | None = None


def inline(latex: str) -> tuple[str, bool]:
    return latex, False


def block(latex: str) -> tuple[str, bool]:
    return latex, True


INERT = '<div class="maxpool-inert">{}\n</div>'  # a cell with a link or HTML, cleaned at autograde (glue/inert.py)
CORPUS = [
    Case("star_superscript", "$i^*$", (inline("i^*"),), "<p>{0}</p>"),
    Case("arg_max_pair", "The winner is $(i^*, j^*)$, the arg max.", (inline("(i^*, j^*)"),),
         "<p>The winner is {0}, the arg max.</p>"),
    Case("stars_in_two_formulas", "$i^*$ and $j^*$ are the indices", (inline("i^*"), inline("j^*")),
         "<p>{0} and {1} are the indices</p>"),
    Case("star_in_subscript", "$x_{i*j}$ and $x_{j*i}$", (inline("x_{i*j}"), inline("x_{j*i}")),
         "<p>{0} and {1}</p>"),
    Case("products", "$a*b*c$ equals $a * b * c$", (inline("a*b*c"), inline("a * b * c")),
         "<p>{0} equals {1}</p>"),
    Case("ast", "$\\ast$ and $a \\ast b$", (inline("\\ast"), inline("a \\ast b")), "<p>{0} and {1}</p>"),
    Case("double_star", "$x^{**}$ and $a_{**}$", (inline("x^{**}"), inline("a_{**}")), "<p>{0} and {1}</p>"),
    Case("star_subscripts", "The winner $x_{i^*j^*}$ gets *all* of it.", (inline("x_{i^*j^*}"),),
         "<p>The winner {0} gets <em>all</em> of it.</p>"),
    Case("emphasis_beside_math", "*see* $x_i$ and _this_", (inline("x_i"),),
         "<p><em>see</em> {0} and <em>this</em></p>"),
    Case("strong_beside_math", "**bold** $y_{k,l}$ __strong__", (inline("y_{k,l}"),),
         "<p><strong>bold</strong> {0} <strong>strong</strong></p>"),
    Case("emphasis_around_math", "*$x^*$* and _$y_j$_", (inline("x^*"), inline("y_j")),
         "<p><em>{0}</em> and <em>{1}</em></p>"),
    Case("underscores", "_note_: $\\text{max_pool_backward}(x)$ and $x\\_1$ are _not_ alike",
         (inline("\\text{max_pool_backward}(x)"), inline("x\\_1")),
         "<p><em>note</em>: {0} and {1} are <em>not</em> alike</p>"),
    Case("max_over_window", "$f_{kl} = \\max_{(i,j) \\in \\Omega(k,l)} x_{ij}$",
         (inline("f_{kl} = \\max_{(i,j) \\in \\Omega(k,l)} x_{ij}"),), "<p>{0}</p>"),
    Case("max_subscript", "$\\max_{(i,j)} x_{ij}$ is $x_{i^*j^*}$",
         (inline("\\max_{(i,j)} x_{ij}"), inline("x_{i^*j^*}")), "<p>{0} is {1}</p>"),
    Case("arg_max", "$(i^*, j^*) = \\mathrm{arg\\,max}_{(i,j)} x_{ij}$",
         (inline("(i^*, j^*) = \\mathrm{arg\\,max}_{(i,j)} x_{ij}"),), "<p>{0}</p>"),
    Case("text", "$\\text{otherwise}$, and $1 \\text{ if } x_{ij} = \\max$",
         (inline("\\text{otherwise}"), inline("1 \\text{ if } x_{ij} = \\max")), "<p>{0}, and {1}</p>"),
    Case("sum", "$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$", (inline("\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}"),),
         "<p>{0}</p>"),
    Case("partial", "so $\\partial L / \\partial x_{i^*j^*} = \\partial L / \\partial y$",
         (inline("\\partial L / \\partial x_{i^*j^*} = \\partial L / \\partial y"),), "<p>so {0}</p>"),
    Case("display_chain_rule",
         "$$\\frac{\\partial L}{\\partial x_{ij}} = \\sum_{(k,l)} \\frac{\\partial L}{\\partial y_{kl}}"
         "\\frac{\\partial y_{kl}}{\\partial x_{ij}}$$",
         (block("\\frac{\\partial L}{\\partial x_{ij}} = \\sum_{(k,l)} \\frac{\\partial L}{\\partial y_{kl}}"
                "\\frac{\\partial y_{kl}}{\\partial x_{ij}}"),), "<p>{0}</p>"),
    Case("display_cases",
         "$$ \\frac{\\partial f_{kl}}{\\partial x_{ij}} = \\begin{cases} 1 & (i,j) = (i^*, j^*) \\\\ "
         "0 & \\text{otherwise} \\end{cases} $$",
         (block("\\frac{\\partial f_{kl}}{\\partial x_{ij}} = \\begin{cases} 1 & (i,j) = (i^*, j^*) \\\\ "
                "0 & \\text{otherwise} \\end{cases}"),), "<p>{0}</p>"),
    Case("display_on_its_own_lines",
         "Hence\n$$\n\\frac{\\partial f}{\\partial x_{i*j}} = 1 * 1\n$$\nfor *every* window.",
         (block("\\frac{\\partial f}{\\partial x_{i*j}} = 1 * 1"),),
         "<p>Hence\n{0}\nfor <em>every</em> window.</p>"),
    Case("inline_across_a_line_break", "where $x_{i*j} +\ny_{j*i}$ is the sum", (inline("x_{i*j} +\ny_{j*i}"),),
         "<p>where {0} is the sum</p>"),
    Case("dollars_in_prose", "It costs $5 and $6 in total.", (), "<p>It costs $5 and $6 in total.</p>"),
    Case("one_dollar_and_emphasis", "A ticket costs $5, *cheap* for $x^*$.", (inline("x^*"),),
         "<p>A ticket costs $5, <em>cheap</em> for {0}.</p>"),
    Case("escaped_dollars", "Escaped: \\$x^*\\$ stays *text*", (), "<p>Escaped: $x^*$ stays <em>text</em></p>"),
    Case("digit_after_dollar", "$x^*$5 is not math", (), "<p>$x^*$5 is not math</p>"),
    Case("space_inside_dollars", "$ x^* $ is not math", (), "<p>$ x^* $ is not math</p>"),
    Case("code_span", "`$x^*$` is code, $x^*$ is math", (inline("x^*"),),
         "<p><code>$x^*$</code> is code, {0} is math</p>"),
    Case("code_and_math", "`a*b` and $a*b$ and *c*", (inline("a*b"),),
         "<p><code>a*b</code> and {0} and <em>c</em></p>"),
    Case("heading", "### The maximum $(i^*, j^*)$",
         (inline("(i^*, j^*)"),),
         '<h3 id="The-maximum-$(i%5E*,-j%5E*)$">The maximum {0}'
         '<a class="anchor-link" href="#The-maximum-$(i%5E*,-j%5E*)$">\u00b6</a></h3>'),
    Case("list", "- $i^*$ first\n- $j^*$ *second*", (inline("i^*"), inline("j^*")),
         "<ul>\n<li>{0} first</li>\n<li>{1} <em>second</em></li>\n</ul>"),
    Case("ordered_list", "1. Take $\\delta > 0$\n2. then $\\delta/2$", (inline("\\delta > 0"), inline("\\delta/2")),
         "<ol>\n<li>Take {0}</li>\n<li>then {1}</li>\n</ol>"),
    Case("blockquote", "> Claim: $i^*$ is *unique*.", (inline("i^*"),),
         "<blockquote>\n<p>Claim: {0} is <em>unique</em>.</p>\n</blockquote>"),
    Case("table", "| case | value |\n|---|---|\n| $|x|$ | $a*b$ |", (inline("|x|"), inline("a*b")),
         "<table>\n<thead>\n<tr>\n  <th>case</th>\n  <th>value</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n"
         "  <td>{0}</td>\n  <td>{1}</td>\n</tr>\n</tbody>\n</table>"),
    Case("less_than", "$a<b$ and $c>d$, *both*", (inline("a<b"), inline("c>d")),
         INERT.format("<p>{0} and {1}, <em>both</em></p>")),
    Case("link", "See [the $i^*$ rule](https://example.org/rule) for $x_{i*j}$.",
         (inline("i^*"), inline("x_{i*j}")),
         INERT.format('<p>See <a href="https://example.org/rule" rel="noopener noreferrer nofollow">the {0} rule</a>'
                      " for {1}.</p>")),
    Case("picture", "![the $i^*$ window](attachment:w.png) where $w_{i*j}$ is *kept*", (inline("w_{i*j}"),),
         INERT.format(f'<p><img alt="the $i^*$ window" src="data:image/png;base64,{PNG_B64}"> where {{0}} is '
                      "<em>kept</em></p>"),
         attachments={"w.png": {"image/png": PNG_B64}}),
    Case("raw_html", "<b>$i^*$</b> is *the* winner", (inline("i^*"),),
         INERT.format("<p><b>{0}</b> is <em>the</em> winner</p>")),
    Case("raw_html_block", "<div>\n$x_{i*j}$ and $a*b$\n</div>", (inline("x_{i*j}"), inline("a*b")),
         INERT.format("<div>\n{0} and {1}\n</div>")),
    Case("unreadable_formula", "$x^$ stays *as written*", (), "<p>$x^$ stays <em>as written</em></p>"),
    # \arg is MathJax's (JupyterLab shows it) but not latex2mathml's, which printed "\arg max":
    # operator names are read as \operatorname, as MathJax reads them
    Case("arg_operator", "$(i^*, j^*) = \\arg\\max_{(i,j)} x_{ij}$ and $\\argmax_j y_j$",
         (inline("(i^*, j^*) = \\operatorname{arg}\\max_{(i,j)} x_{ij}") + ("(i^*, j^*) = \\arg\\max_{(i,j)} x_{ij}",),
          inline("\\operatorname{argmax}_j y_j") + ("\\argmax_j y_j",)),
         "<p>{0} and {1}</p>"),
    Case("numbering_left_out", "$$\\sum\\nolimits_k a_k = 1 \\label{eq:one} \\nonumber$$",
         (block("\\sum_k a_k = 1") + ("\\sum\\nolimits_k a_k = 1 \\label{eq:one} \\nonumber",),), "<p>{0}</p>"),
    Case("unknown_command", "$\\weird{x}^*$ stays *as written*", (), "<p>$\\weird{x}^*$ stays <em>as written</em></p>"),
]
assert len({case.name for case in CORPUS}) == len(CORPUS) >= 30


def mathml(latex: str, display: bool, written: str | None = None) -> str:
    """What the page must show for one formula: latex2mathml's MathML, sanitized, with the LaTeX
    as written as its ``alttext``, and in the keyboard's order when it has more than
    WIDE_FORMULA symbols (it may be wider than a phone's column)."""
    made = BeautifulSoup(clean_mathml(convert(latex.strip(), display="block" if display else "inline")), "html.parser")
    symbols = sum(len(token.get_text().strip()) for token in made.find_all(["mi", "mn", "mo", "mtext", "ms"]))
    made.math["alttext"] = (latex if written is None else written).strip()
    if symbols > WIDE_FORMULA:
        made.math["tabindex"] = "0"
    return str(made)


def normal(html: str) -> str:
    """HTML as BeautifulSoup writes it (entities, quoting, empty tags and the order of
    attributes written one way)."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(True):
        tag.attrs = dict(sorted(tag.attrs.items()))
    return str(soup).strip()


def expected_html(case: Case) -> str:
    found = case.expected
    for number, formula in enumerate(case.formulas):
        found = found.replace("{%d}" % number, mathml(*formula))
    return normal(found)


# ------------------------------------------------------------------ the notebook and its pages
MARKER = "The math corpus follows, one case a cell."
PART_A_ANSWER = ("Let $(i^*, j^*)$ be the window's arg max, so $f_{kl} = x_{i^*j^*}$ and *only* "
                 "$x_{i^*j^*}$ gets $\\partial L/\\partial f_{kl}$.")
PART_A_FORMULAS = (inline("(i^*, j^*)"), inline("f_{kl} = x_{i^*j^*}"), inline("x_{i^*j^*}"),
                   inline("\\partial L/\\partial f_{kl}"))
PART_A_EXPECTED = "<p>Let {0} be the window's arg max, so {1} and <em>only</em> {2} gets {3}.</p>"


def corpus_notebook(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The release notebook as a student answers it: Part A with stars, then the corpus."""
    nb = nbformat.from_dict(nbformat.reads(nbformat.writes(release), as_version=4))
    at = next(index for index, cell in enumerate(nb.cells) if grade_id(cell) == PART_A_CELL)
    nb.cells[at].source = PART_A_ANSWER
    added = [new_markdown_cell(MARKER)]
    for case in CORPUS:
        added.append(new_markdown_cell(case.markdown))
        if case.attachments:
            added[-1].attachments = case.attachments
    nb.cells[at + 1:at + 1] = added
    return nb


def rendered_cells(page: str) -> dict[str, str]:
    """Each corpus case's rendered markdown (and Part A's answer) as a page shows it."""
    soup = BeautifulSoup(page, "html.parser")
    renders = soup.select("#notebook-container .text_cell_render")
    at = next(index for index, found in enumerate(renders) if found.get_text().strip() == MARKER)
    cells = {case.name: renders[at + 1 + number].decode_contents() for number, case in enumerate(CORPUS)}
    answers = [found for found in renders[:at] if "window's arg max" in found.get_text()]
    assert len(answers) == 1, [found.get_text()[:80] for found in answers]
    cells["part_a_answer"] = answers[0].decode_contents()
    return cells


def check_case(cells: dict[str, str], case: Case) -> None:
    assert "maxpoolmath" not in cells[case.name]  # no placeholder of glue/mathml.py left over
    shown = BeautifulSoup(cells[case.name], "html.parser")
    assert [normal(str(found)) for found in shown.find_all("math")] == [
        normal(mathml(*formula)) for formula in case.formulas], case.markdown
    assert normal(cells[case.name]) == expected_html(case), case.markdown


def check_part_a(cells: dict[str, str]) -> None:
    check_case(cells, Case("part_a_answer", PART_A_ANSWER, PART_A_FORMULAS, PART_A_EXPECTED))


def shown_text(text: str) -> str:
    """What Chromium shows, its math italic letters (U+1D456 for an ``<mi>i</mi>``) as plain
    ones, without spaces."""
    return "".join(unicodedata.normalize("NFKC", text).split())


def course_config():
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def feedback_page(nb: nbformat.NotebookNode) -> str:
    """The feedback page as ``nbgrader generate_feedback`` makes it with this course's
    settings: its exporter made as nbgrader's GenerateFeedback makes it (``c.HTMLExporter.*``
    and nbgrader's own additions), after the summary's preprocessor (the template reads it)."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    from maxpool_grader.glue.feedbackexporter import FeedbackExporter
    from maxpool_grader.glue.feedbacksummary import FeedbackSummary
    config = course_config()
    converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
    assert converter.exporter_class is FeedbackExporter
    for cell in nb.cells:  # as GetGrades leaves them (it reads the gradebook)
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata.nbgrader["score"] = 0
    resources = {"nbgrader": {"notebook": ASSIGNMENT, "assignment": ASSIGNMENT, "student": "corpus",
                              "score": 0, "max_score": 20, "late_penalty": 0}}
    nb, resources = FeedbackSummary(config=converter.config).preprocess(nb, resources)
    page, _ = converter.exporter_class(parent=converter, config=converter.config).from_notebook_node(nb, resources)
    return page


@pytest.fixture(scope="module")
def exported_cells() -> dict[str, str]:
    return rendered_cells(feedback_page(corpus_notebook(nbformat.read(RELEASE_NOTEBOOK, as_version=4))))


# ------------------------------------------------------------------ the feedback page, no server
@pytest.mark.parametrize("case", CORPUS, ids=lambda case: case.name)
def test_the_feedback_exporter_shows_each_formula_as_written(exported_cells, case):
    check_case(exported_cells, case)


def test_the_feedback_exporter_shows_part_a_s_answer_as_written(exported_cells):
    check_part_a(exported_cells)


def test_the_model_answer_s_arg_max_reads_i_star_j_star():
    """The model answer through the course's feedback exporter: its ``(i^*, j^*)`` is MathML
    with both stars, each a superscript operator, and no star went missing anywhere."""
    nb = nbformat.v4.new_notebook(cells=[new_markdown_cell(MARKER), new_markdown_cell(MODEL_ANSWER)])
    page = feedback_page(nb)
    answer = BeautifulSoup(page, "html.parser").select("#notebook-container .text_cell_render")[-1]
    assert normal(mathml("(i^*, j^*)", False)) in normal(str(answer))
    superscripts = [[tuple(part.get_text() for part in sup.find_all(recursive=False)) for sup in formula("msup")]
                    for formula in answer.find_all("math")]
    pairs = [found for found in superscripts if found == [("i", "*"), ("j", "*")]]
    assert len(pairs) >= 2, MODEL_ANSWER  # "Let (i*, j*) = ..." and "leaves (i*, j*) the maximum"
    formulas = re.findall(r"\$\$.*?\$\$|\$[^$]*\$", MODEL_ANSWER, flags=re.S)
    assert sum(formula.get_text().count("*") for formula in answer.find_all("math")) == "".join(formulas).count("*")
    assert not [formula for formula in answer.find_all("math") if formula.find("em")]


@pytest.mark.parametrize("markdown, written", [
    ("[a link]($x^*$ \"the $y^*$ rule\")", ["$x^*$", "the $y^*$ rule"]),
    ("![the $i^*$ window]($w^*$.png)", ["the $i^*$ window", "$w^*$.png"]),
    ('<span title="$x^*$">a</span> $y^*$', ["$x^*$"]),
    ("    code $x^*$ and *this*\n\ntext", ["code $x^*$ and *this*"]),
    ("~~~\n$x^*$ and $a*b*c$\n~~~", ["$x^*$ and $a*b*c$\n"]),
    ("``$x^*$ in ` code``", ["$x^*$ in ` code"]),
    ("<pre>$x^*$ and $a*b$</pre>", ["$x^*$ and $a*b$"]),
    ("### Max $a*b$ and $x_{i^*}$", []),
    ("#Max $(i^*, j^*)$ of $\\Omega$\n", []),
])
def test_a_formula_in_code_an_attribute_or_an_anchor_stays_as_written(markdown, written):
    """Where a formula is not text (code, a link's address and title, an alt text, raw
    HTML's attributes), it is its LaTeX as written; a heading's id and anchor are the ones
    nbconvert makes of the LaTeX, and no attribute ever holds MathML."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    from maxpool_grader.glue.mathml import markdown_to_html
    page = BeautifulSoup(markdown_to_html(markdown), "html.parser")
    values = [value for tag in page.find_all(True) for value in tag.attrs.values()]
    assert not [value for value in values if "<m" in value or "maxpoolmath" in value], values
    for text in written:
        assert text in values or text in [found.get_text() for found in page.find_all(["code", "pre"])], text
    if markdown.startswith("#"):  # nbconvert's own anchor for the same heading
        heading = page.find(["h1", "h3"])
        stock = BeautifulSoup(markdown2html_mistune(markdown), "html.parser").find(["h1", "h3"])
        assert (heading["id"], heading.a["href"]) == (stock["id"], stock.a["href"])
        assert heading.find_all("math")  # its text holds the MathML


# ------------------------------------------------------------------ the pages nbgrader makes
@pytest.fixture(scope="module")
def graded_corpus(tmp_path_factory):
    """The corpus submitted by one student, graded by plain ``nbgrader autograde``, its
    feedback made by ``nbgrader generate_feedback``, served by a real ``jupyter server``."""
    from corpus import LOOP_CORRECT, notebook_with
    from pages import Server
    course = copy_course(tmp_path_factory.mktemp("math") / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    folder = course / "submitted" / "corpus" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(corpus_notebook(notebook_with(release, LOOP_CORRECT)), folder / f"{ASSIGNMENT}.ipynb")
    nbgrader(course, "autograde", ASSIGNMENT)
    nbgrader(course, "generate_feedback", ASSIGNMENT)
    server = Server(course)
    yield course, server
    server.stop()


@pytest.fixture(scope="module")
def grading_page_cells(graded_corpus) -> dict[str, str]:
    _, server = graded_corpus
    found = server.call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    submission = next(item for item in found if item["student"] == "corpus")
    return rendered_cells(server.call("GET", f"/formgrader/submissions/{submission['id']}/?token={server.token}"))


@pytest.fixture(scope="module")
def feedback_page_cells(graded_corpus) -> dict[str, str]:
    course, _ = graded_corpus
    return rendered_cells((course / "feedback" / "corpus" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text())


@pytest.mark.integration
@pytest.mark.parametrize("case", CORPUS, ids=lambda case: case.name)
def test_formgrader_s_grading_page_shows_each_formula_as_written(grading_page_cells, case):
    check_case(grading_page_cells, case)


@pytest.mark.integration
@pytest.mark.parametrize("case", CORPUS, ids=lambda case: case.name)
def test_generate_feedback_s_page_shows_each_formula_as_written(feedback_page_cells, case):
    check_case(feedback_page_cells, case)


@pytest.mark.integration
def test_every_formula_of_the_feedback_page_carries_its_latex_as_alttext(graded_corpus):
    """Not only the corpus's: the notebook's own formulas and Part A's answer too, on the page
    generate_feedback made (a screen reader without MathML reads the alttext)."""
    from helpers import formulas_without_their_latex
    course, _ = graded_corpus
    page = (course / "feedback" / "corpus" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    formulas, wrong = formulas_without_their_latex(
        page, course / "submitted" / "corpus" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    corpus = sum(len(case.formulas) for case in CORPUS)
    assert formulas >= corpus + len(PART_A_FORMULAS) + 10 and wrong == [], (formulas, wrong[:3])


@pytest.mark.integration
def test_the_grader_reads_part_a_s_stars_in_formgrader(grading_page_cells, feedback_page_cells, graded_corpus,
                                                         browser):
    """Part A's answer as written, in both pages; and what Chromium shows of it, offline."""
    from pages import offline_page
    check_part_a(grading_page_cells)
    check_part_a(feedback_page_cells)
    _, server = graded_corpus
    found = server.call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    submission = next(item for item in found if item["student"] == "corpus")
    page = offline_page(browser)
    page.goto(f"{server.base}/formgrader/submissions/{submission['id']}/?token={server.token}")
    page.wait_for_load_state("networkidle")
    answer = page.locator(".text_cell_render", has_text="the window's arg max").first
    text = shown_text(answer.inner_text())
    assert "Let(i*,j*)bethewindow's" in text and "onlyxi*j*gets" in text, text
    page.close()


def _in_chromium(tmp_path, browser, markdown: str):
    """The feedback page of a notebook with ``markdown`` as its last cell, open in Chromium."""
    from pages import offline_page
    nb = nbformat.v4.new_notebook(cells=[new_markdown_cell(MARKER), new_markdown_cell(markdown)])
    path = tmp_path / "page.html"
    path.write_text(feedback_page(nb))
    page = offline_page(browser)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page


@pytest.mark.integration
def test_chromium_reads_the_model_answer_s_i_star_j_star(tmp_path, browser):
    page = _in_chromium(tmp_path, browser, MODEL_ANSWER)
    answer = page.locator("#notebook-container .text_cell_render").last
    assert answer.locator("math").count() >= 10
    text = shown_text(answer.inner_text())
    assert text.count("(i*,j*)") >= 2 and "(i,j)=(i*,j*)" in text, text
    page.close()


STYLED = r"The mask $\mathbb{1}[x_{ij} = m]$ of $x \in \mathbb{R}^n$, a vector $\mathbf{v}$, a loss $\mathcal{L}$."


def test_a_double_struck_one_is_shown_double_struck():
    """MathML in browsers ignores ``mathvariant="double-struck"``: a student's ``\\mathbb{1}``
    read as a plain 1. It is Unicode's double-struck digit (and ``\\mathbb{R}`` its ℝ, bold and
    script letters theirs), with no mathvariant left for a browser to drop."""
    nb = nbformat.v4.new_notebook(cells=[new_markdown_cell(MARKER), new_markdown_cell(STYLED)])
    answer = BeautifulSoup(feedback_page(nb), "html.parser").select("#notebook-container .text_cell_render")[-1]
    tokens = [(token.name, token.get_text()) for token in answer.find_all(["mi", "mn"])]
    assert ("mn", "\U0001D7D9") in tokens and ("mi", "\u211D") in tokens, tokens  # 𝟙, ℝ
    assert ("mi", "\U0001D42F") in tokens and ("mi", "\u2112") in tokens, tokens  # 𝐯, ℒ
    assert not answer.find_all(attrs={"mathvariant": True}), answer
    assert [formula["alttext"] for formula in answer.find_all("math")][0] == r"\mathbb{1}[x_{ij} = m]"


@pytest.mark.integration
def test_chromium_shows_a_double_struck_one(tmp_path, browser):
    page = _in_chromium(tmp_path, browser, STYLED)
    text = page.locator("#notebook-container .text_cell_render").last.inner_text()
    assert "\U0001D7D9" in text and "\u211D" in text, text  # what the student reads: 𝟙 and ℝ, not 1 and R
    page.close()
