"""``FeedbackSummary`` (``GenerateFeedback.preprocessors``, after ``GetGrades``): the summary
at the top of a student's feedback page.

It puts a summary first: the points of each part (Part A is graded by hand: until it is, the page
says so) and what cost points, each cause named once with the tests it cost and their
points: a catalogue mistake as the test's report names it (likely, or possible), or a reason
a report gives in full (no ``stride`` parameter, nothing defined, ...). Each
explanation is then given once, under the first test it cost; later failure messages
refer back to it (``repeats.shorten_repeats``). The graded notebook keeps every message
in full. Everything taken from the student's notebook is escaped, and the summary is one
block of sanitized HTML, as every other cell is (glue/inert.py); a cause's Markdown inline
code (`dx[...] = ...`) is shown as code, its text escaped first.

It also names the page (``page_title``, the ``<title>`` and the heading): the assignment, the
attempt's number when ``serve`` grades it (``c.FeedbackSummary.attempt``, set in its grading
workers) and when it was submitted (the submission's ``timestamp.txt``, as autograde took it);
``attempts_link`` is where the web way's page links back to the student's attempts.
"""

from __future__ import annotations

import html
import os
import re

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from nbgrader.utils import parse_utc
from traitlets import Bool, Int, List, Unicode

from ..exercise.catalogue import BUGS
from ..exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from ..exercise.part_a import PART_A_POINTS
from ..exercise.repeats import reason_of, shorten_repeats, split_report
from ..names import PART_A_CELL, RESOURCES_KEY, SUMMARY_TAG, grade_id
from .inert import html_block
from .modelanswer import part_a_pending, unanswered
from .submission import read_timestamp
from .thisexercise import is_exercise

PART_A_TITLE = "Part A: your derivation (graded by hand)"


PART_B_TITLE = "Part B: your max_pool_backward (graded by the tests)"


def _points(value) -> str:
    number = float(value or 0)
    return f"{number:g}"


class FeedbackSummary(Preprocessor):
    """The summary first, each explanation once (module doc)."""

    enabled = Bool(True)  # nbgrader registers it by name, which leaves nbconvert's default off
    attempt = Int(0, help="the attempt's number on serve's pages, in the page's title (0: none)").tag(config=True)
    attempts_link = Unicode("", help="the address of the student's attempts, linked from the page "
                                     "(serve's web way; empty: no link)").tag(config=True)
    standing = List(Unicode(), default_value=[], help="serve's sentences on the attempt: whether it counts and "
                    "why, the attempts left, the deadline (serve/standing.py; empty: none)").tag(config=True)

    def preprocess(self, nb, resources):
        if not is_exercise(self, resources):  # another assignment's page: nbgrader's own
            return nb, resources
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
        ours["page_title"] = page_title(resources, self.attempt)
        ours["attempts_link"] = self.attempts_link
        ours["standing"] = list(self.standing)
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
        blank = " (your answer cell was left as released)" if ours.get("final") and unanswered(part_a) else ""
        rows.append((PART_A_TITLE, pending.get(PART_A_CELL, f"{_points(score)} of {_points(points)}{blank}")))
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


def mistakes_named(message: str) -> list[str]:
    """The causes a report names, as the report names them (so the summary never says other
    than the test it sums up): each likely mistake, or the possible ones together."""
    flat = " ".join(message.split())
    likely = [bug.title for bug in BUGS.values() if f"Likely mistake: {' '.join(bug.title.split())}" in flat]
    possible = [bug.title for bug in BUGS.values() if f"Possible mistake: {' '.join(bug.title.split())}" in flat]
    if likely or not possible:
        return [f"Likely mistake: {title}." for title in likely]
    if len(possible) == 1:
        return [f"Possible mistake: {possible[0]}."]
    return [f"One of {len(possible)} possible mistakes: {'; '.join(possible)}."]


def _causes_html(tests: list) -> list[str]:
    """What cost points: each cause once, with the tests it cost and their points."""
    causes: dict[str, list] = {}  # cause (plain text) -> the failed test cells
    for cell in tests:
        score, points = _score(cell)
        if score >= points:
            continue
        output = _failure(cell)
        message = str(output.get("evalue", "")) if output else ""
        reason = reason_of(split_report(message)[1]) if output else None
        named = mistakes_named(message)
        if named:
            keys = named
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
        items.append(f"<li><p><strong>{inline_code(cause)}</strong><br>It cost {_points(lost)} "
                     f"point{'s' if lost != 1 else ''} in {len(cells)} {tests_word}: {links}.</p></li>")
    return ["<h3>What cost you points</h3>", f"<ol>{''.join(items)}</ol>",
            "<p>Each cause is explained in full under the first test it cost; the later tests "
            "refer back to it.</p>"]


_INLINE_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> str:
    """``text`` as HTML, every character escaped, and its Markdown inline code (`...`) as
    ``<code>``: the backticks are matched in the escaped text, so nothing in them is markup."""
    return _INLINE_CODE.sub(r"<code>\1</code>", html.escape(text))


def page_title(resources, attempt: int = 0) -> str:
    """What the page is: the assignment, the attempt (when serve numbers it) and when it was
    submitted (minutes, UTC)."""
    found = resources.get("nbgrader", {})
    parts = [f"Feedback on {found.get('assignment') or found.get('notebook') or 'your notebook'}"]
    if attempt:
        parts.append(f"attempt {attempt}")
    when = _submitted(resources)
    if when:
        parts.append(f"submitted {when}")
    return ", ".join(parts)


def _submitted(resources) -> str | None:
    """The submission's time from the timestamp.txt beside the graded notebook, or None."""
    folder = resources.get("metadata", {}).get("path")
    text = read_timestamp(os.path.join(folder, "timestamp.txt")) if folder else None
    if not text:
        return None
    try:  # nbgrader's own reading of it, as autograde's
        return parse_utc(text).strftime("%Y-%m-%d %H:%M UTC")
    except Exception:  # noqa: BLE001  a time nbgrader cannot read is shown as none
        return None
