"""The feedback page a student reads top-down (``GenerateFeedback``).

* ``FeedbackSummary`` (``GenerateFeedback.preprocessors``, after ``GetGrades``) puts a
  summary first: the points of each part (Part A is graded by hand: until it is, the page
  says so) and what cost points, each cause named once with the tests it cost and their
  points: a catalogue mistake the out-of-process verdict named (``REPORT_KEY``), or a
  reason a report gives in full (no ``stride`` parameter, nothing defined, ...). Each
  explanation is then given once, under the first test it cost; later failure messages
  refer back to it (``explain.shorten_repeats``). The graded notebook keeps every message
  in full. Everything taken from the student's notebook is escaped, and the summary is one
  block of sanitized HTML, as every other cell is (glue/inert.py).
* ``FeedbackExporter`` (``GenerateFeedback.exporter_class``) renders the page with
  ``templates/maxpool_feedback``: nbgrader's feedback page with the summary above the
  table of contents, and each test's title instead of "Test cell" and its grade id. Titles
  are looked up by grade id when the page is made, so renamed tests show their new title.
  nbgrader makes a new exporter, so a new Jinja environment, for every student: compiling
  nbconvert's templates again was about a third of a page's time. The compiled templates
  are kept per process (``_CompiledTemplates``); a template whose source changed is
  compiled again, and the page is the same byte for byte. Likewise the code cells most
  pages share (the provided code, the tests) are highlighted once per process
  (``_RememberedHighlight``): Pygments was a fifth of what was left. Last, nbconvert
  reads the whole page into BeautifulSoup and writes it out again (alt texts, tabindex),
  and Pygments' spans are most of its tags: with this course's template each code cell
  stands in the page as a placeholder while it does, and is put back as BeautifulSoup
  writes that cell's HTML alone, once per process (``from_notebook_node``).
"""

from __future__ import annotations

import copy
import html
import json
import re
import uuid
from collections import OrderedDict
from pathlib import Path

import nbgrader
from bs4 import BeautifulSoup
from jinja2 import BytecodeCache, FileSystemLoader, PrefixLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from traitlets import Bool, default

from ..exercise.catalogue import BUGS
from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from ..exercise.explain import reason_of, shorten_repeats, split_report
from ..exercise.part_a import PART_A_POINTS
from ..names import PART_A_CELL, REPORT_KEY, RESOURCES_KEY, SUMMARY_TAG, grade_id
from .inert import html_block
from .model_answer import part_a_pending

PART_A_TITLE = "Part A: your derivation (graded by hand)"
PART_B_TITLE = "Part B: your max_pool_backward (graded by the tests)"
NBGRADER_TEMPLATES = Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTMLExporter that also finds nbgrader's own templates as ``nbgrader/...``:
    the course's feedback template extends nbgrader's and changes only what it must."""

    @default("extra_loaders")
    def _nbgrader_templates(self):
        return [PrefixLoader({"nbgrader": FileSystemLoader(str(NBGRADER_TEMPLATES))})]

    def _create_environment(self):
        """nbconvert's environment, with this process's compiled templates (module doc)."""
        environment = super()._create_environment()
        shape = (environment.is_async, tuple(sorted(environment.extensions)))  # what compiling depends on
        environment.bytecode_cache = _COMPILED.setdefault(shape, _CompiledTemplates())
        return environment

    code_cells: list | None = None  # while a page is made: each code cell's HTML, by placeholder number

    def register_filter(self, name, jinja_filter):
        """nbconvert registers its code highlighter for each page: this one remembers (module doc)."""
        if name == "highlight_code" and type(jinja_filter) is Highlight2HTML:
            jinja_filter = _RememberedHighlight(jinja_filter, self)
        return super().register_filter(name, jinja_filter)

    def from_notebook_node(self, nb, resources=None, **kw):
        """nbconvert's page, its code cells passed through BeautifulSoup on their own (module
        doc). BeautifulSoup's html.parser builds each element from its own tags alone and
        writes it the same wherever it stands; what depends on the neighbours is only
        whitespace-only text, shortened to one newline, and the comment that stands in for
        a block bounds that text as the block did (the block's own text is in its ``<pre>``,
        kept as it is). In this template a code cell is the whole content of its
        ``input_area``, and nbconvert's pass changes nothing inside a block (images and cell
        wrappers only): so the page is the same, byte for byte. A placeholder not found
        exactly once (a template that moved one) makes the page again the plain way."""
        if self.template_name != TEMPLATE:  # only this template's code cells are known to stand alone
            return super().from_notebook_node(nb, resources, **kw)
        spare = copy.deepcopy(resources)  # the preprocessors write into it
        self.code_cells = []
        try:
            page, made = super().from_notebook_node(nb, resources, **kw)
            cells = self.code_cells
        finally:
            self.code_cells = None
        if sorted(int(number) for number in _PLACEHOLDER.findall(page)) != list(range(len(cells))):
            return super().from_notebook_node(nb, spare, **kw)
        return _PLACEHOLDER.sub(lambda match: cells[int(match[1])], page), made


class _CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates in memory, by template name and file: Jinja compiles a
    template again when its source's checksum differs from the one stored with it."""

    def __init__(self):
        self.codes: dict[str, bytes] = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.codes:
            bucket.bytecode_from_string(self.codes[bucket.key])

    def dump_bytecode(self, bucket):
        self.codes[bucket.key] = bucket.bytecode_to_string()

    def clear(self):
        self.codes.clear()


_COMPILED: dict[tuple, _CompiledTemplates] = {}  # one per kind of environment (async, extensions)


class _RememberedHighlight:
    """nbconvert's ``Highlight2HTML``, its HTML kept by everything it reads: the source, the
    language (or the notebook's lexer), the formatter's options and a cell's
    ``magics_language``."""

    def __init__(self, highlight: Highlight2HTML, exporter: FeedbackExporter):
        self.highlight, self.exporter = highlight, exporter

    def __call__(self, source, language=None, metadata=None):
        if metadata is not None and not isinstance(metadata, dict):
            return self.highlight(source, language, metadata)
        key = (source, language, self.highlight.pygments_lexer, (metadata or {}).get("magics_language"),
               json.dumps(self.highlight.extra_formatter_options, sort_keys=True, default=repr))
        if key in _HIGHLIGHTED:
            _HIGHLIGHTED.move_to_end(key)
        else:
            _HIGHLIGHTED[key] = [self.highlight(source, language, metadata), None]
            if len(_HIGHLIGHTED) > _HIGHLIGHTS_KEPT:
                _HIGHLIGHTED.popitem(last=False)
        kept = _HIGHLIGHTED[key]
        cells, code = self.exporter.code_cells, kept[0].rstrip()
        if cells is None or not (code.startswith("<div ") and code.endswith("</pre></div>")):
            return kept[0]
        if kept[1] is None:  # as BeautifulSoup writes it: what the page's pass would make of it
            kept[1] = str(BeautifulSoup(code, features="html.parser"))
        cells.append(kept[1])
        # a comment in its place: the text around it (the "\n" after the block included), which
        # BeautifulSoup shortens when it is only whitespace, is the same as around the block
        return f"<!--{_NONCE}n{len(cells) - 1}x-->{kept[0][len(code):]}"


_HIGHLIGHTED: OrderedDict[tuple, list] = OrderedDict()  # [HTML, as BeautifulSoup writes it], most recent last
_NONCE = f"maxpoolcode{uuid.uuid4().hex}"  # a placeholder no page holds by chance (letters and digits only)
_PLACEHOLDER = re.compile(f"<!--{_NONCE}n([0-9]+)x-->")
TEMPLATE = "maxpool_feedback"
_HIGHLIGHTS_KEPT = 2000  # a class's shared cells many times over; a long-running serve stays small


def _points(value) -> str:
    number = float(value or 0)
    return f"{number:g}"


class FeedbackSummary(Preprocessor):
    """The summary first, each explanation once (module doc)."""

    enabled = Bool(True)  # nbgrader registers it by name, which leaves nbconvert's default off

    def preprocess(self, nb, resources):
        for cell in nb.cells:  # only the grader's own summary may carry its tag
            tags = cell.get("metadata", {}).get("tags")
            if isinstance(tags, list) and SUMMARY_TAG in tags:
                tags.remove(SUMMARY_TAG)
        tests = [cell for cell in nb.cells if cell.cell_type == "code" and grade_id(cell) in GRADED_CHECKS]
        _shorten_messages(tests)
        ours = resources.setdefault(RESOURCES_KEY, {})
        ours["titles"] = {**{check_id: check.title for check_id, check in GRADED_CHECKS.items()},
                          PART_A_CELL: PART_A_TITLE}
        ours["pending"] = part_a_pending(nb, resources, self.config)
        ours["header"] = _header(nb, resources)
        summary = new_markdown_cell(html_block(_summary_html(nb, tests, resources)),
                                    metadata={"tags": [SUMMARY_TAG]})
        summary.id = SUMMARY_TAG
        nb.cells.insert(0, summary)
        return nb, resources


def _failure(cell) -> dict | None:
    """The error output that holds a failed check's report, if any."""
    return next((output for output in cell.get("outputs", [])
                 if output.get("output_type") == "error" and output.get("ename") == "CheckFailed"), None)


def _shorten_messages(tests: list) -> None:
    failed = [(cell, output) for cell in tests if (output := _failure(cell)) is not None]
    reports = [(GRADED_CHECKS[grade_id(cell)].title, str(output.get("evalue", ""))) for cell, output in failed]
    for (_, output), message in zip(failed, shorten_repeats(reports)):
        if message != output.get("evalue"):
            output["evalue"] = message
            output["traceback"] = message.split("\n")


def _score(cell) -> tuple[float, float]:
    meta = cell.metadata.get("nbgrader", {})
    check = GRADED_CHECKS.get(grade_id(cell))
    points = meta.get("points", check.points if check else 0)
    return float(meta.get("score") or 0), float(points or 0)


def _summary_html(nb, tests: list, resources) -> str:
    ours = resources.get(RESOURCES_KEY, {})
    pending = ours.get("pending", {})
    rows = []
    part_a = next((cell for cell in nb.cells if grade_id(cell) == PART_A_CELL), None)
    if part_a is not None:
        score, points = _score(part_a)
        rows.append((PART_A_TITLE, pending.get(PART_A_CELL, f"{_points(score)} of {_points(points)}")))
    else:
        rows.append((PART_A_TITLE, f"no answer found (of {PART_A_POINTS})"))
    visible = [_score(cell) for cell in tests if grade_id(cell) not in HIDDEN_CHECKS]
    hidden = [_score(cell) for cell in tests if grade_id(cell) in HIDDEN_CHECKS]
    total = lambda found, at: _points(sum(pair[at] for pair in found))  # noqa: E731
    rows.append((PART_B_TITLE,
                 f"{total(visible + hidden, 0)} of {total(visible + hidden, 1)} (visible tests "
                 f"{total(visible, 0)} of {total(visible, 1)}, hidden tests {total(hidden, 0)} of {total(hidden, 1)})"))
    found = resources.get("nbgrader", {})
    if float(found.get("late_penalty") or 0) > 0:
        rows.append(("Late submission penalty", f"\u2212{_points(found['late_penalty'])}"))
    if "score" in found:
        rows.append(("<strong>Total</strong>", f"<strong>{html.escape(ours.get('header', ''))}</strong>"))
    table = "".join(f"<tr><td>{name if name.startswith('<strong>') else html.escape(name)}</td><td>{value}</td></tr>"
                    for name, value in rows)
    parts = ["<h2>Summary</h2>", f"<table><tr><th>Part</th><th>Points</th></tr>{table}</table>"]
    parts += _causes_html(tests)
    return "".join(parts)


def _header(nb, resources) -> str:
    """The score the page's heading shows: the total once Part A has a grade, else Part B's
    points alone and what is still to come (never an ungraded Part A counted as 0)."""
    found = resources.get("nbgrader", {})
    pending = resources.get(RESOURCES_KEY, {}).get("pending", {})
    score, max_score = float(found.get("score") or 0), float(found.get("max_score") or 0)
    if PART_A_CELL not in pending:
        return f"{_points(score)} of {_points(max_score)}"
    part_a = next(cell for cell in nb.cells if grade_id(cell) == PART_A_CELL)
    a_score, a_points = _score(part_a)
    return (f"{_points(score - a_score)} of {_points(max_score - a_points)} so far; Part A "
            f"({_points(a_points)} points) is {pending[PART_A_CELL].split(',')[0]}")


def _causes_html(tests: list) -> list[str]:
    """What cost points: each cause once, with the tests it cost and their points."""
    causes: dict[str, list] = {}  # cause (plain text) -> the failed test cells
    for cell in tests:
        score, points = _score(cell)
        if score >= points:
            continue
        verdict = cell.metadata.get(REPORT_KEY) or {}
        named = [BUGS[name].title for name in verdict.get("bugs", []) if name in BUGS]
        output = _failure(cell)
        reason = reason_of(split_report(str(output.get("evalue", "")))[1]) if output else None
        if named:
            keys = [f"Likely mistake: {title}." for title in named]
        elif reason:
            keys = [reason]
        elif output is not None:
            keys = ["A mistake that is not in our catalogue: compare your dx with the expected one in each test."]
        else:
            keys = ["Other problems: see each test below."]
        for key in keys:
            causes.setdefault(key, []).append(cell)
    if not causes:
        return ["<p>Every test passed.</p>"]
    items = []
    for cause, cells in causes.items():
        lost = sum(points - score for score, points in map(_score, cells))
        links = ", ".join(f'<a href="#{html.escape(grade_id(cell))}">{html.escape(GRADED_CHECKS[grade_id(cell)].title)}'
                          f"</a> ({_points(_score(cell)[1] - _score(cell)[0])})" for cell in cells)
        tests_word = "test" if len(cells) == 1 else "tests"
        items.append(f"<li><p><strong>{html.escape(cause)}</strong><br>It cost {_points(lost)} "
                     f"point{'s' if lost != 1 else ''} in {len(cells)} {tests_word}: {links}.</p></li>")
    return ["<h3>What cost you points</h3>", f"<ol>{''.join(items)}</ol>",
            "<p>Each cause is explained in full under the first test it cost; the later tests "
            "refer back to it.</p>"]
