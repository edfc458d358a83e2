"""Each explanation once per feedback page: a notebook's reports, read in order, with what an
earlier report already explained replaced by where it is explained (the feedback summary,
glue/feedbacksummary.py, does this to the page's reports; the graded notebook keeps them whole)."""

from __future__ import annotations

import re

from .catalogue import BUGS
from .explain import mistake_text, wrap_prose

# A report with a smallest failing input starts its body with one of these; any other body
# is one reason given in full (no stride parameter, nothing defined, a time limit...).
REPRODUCER_STARTS = ("Smallest input where your function goes wrong", "Input: ")


def split_report(message: str) -> tuple[str, str]:
    """A report's head (what failed, what it checks) and its body."""
    head, _, body = message.partition("\n\n")
    return head, body


def reason_of(body: str) -> str | None:
    """The first sentence of a report body that is one reason (no smallest input), else None."""
    if not body.strip() or body.startswith(REPRODUCER_STARTS):
        return None
    flat = " ".join(body.split())
    end = re.search(r"[.!?](?=\s|$)", flat)
    sentence = flat[:end.end()] if end else flat
    return sentence if len(sentence) <= 300 else sentence[:297] + "..."


def _indented_block(lines: list[str], start: int) -> int:
    """The index after the lines indented by 4 or more from ``start`` on."""
    while start < len(lines) and lines[start].startswith("    "):
        start += 1
    return start


def same_input_as_before(body: str, inputs: dict[tuple[str, str], str], title: str) -> str:
    """``body`` with its smallest input and the student's dx replaced by a reference to the
    earlier report that showed the same (``inputs``: (code, student's dx) -> its title).
    What this test expects stays."""
    lines = body.split("\n")
    if not lines or lines[0] != REPRODUCER_STARTS[0] + " (paste it into a new cell to try it):":
        return body
    code_end = _indented_block(lines, 1)
    label_end = code_end
    while label_end < len(lines) and not lines[label_end].startswith("    "):
        label_end += 1
    expected_end = _indented_block(lines, label_end)
    if expected_end >= len(lines) or lines[expected_end] != "Your dx:":
        return body
    yours_end = _indented_block(lines, expected_end + 1)
    key = ("\n".join(lines[1:code_end]), "\n".join(lines[expected_end + 1:yours_end]))
    if key not in inputs:
        inputs[key] = title
        return body
    reference = wrap_prose(f"{REPRODUCER_STARTS[0]}: the same as under \u201c{inputs[key]}\u201d, and so is your dx.")
    return "\n".join([reference, *lines[code_end:expected_end], *lines[yours_end:]])


def shorten_repeats(reports: list[tuple[str, str]]) -> list[str]:
    """The reports (test title, message) of one notebook, in order, each explanation given
    once: a reason repeated word for word, or a named mistake an earlier report explained
    (as the report has it: what the code does, or, after the release, its full explanation),
    becomes a short line that says under which test it is explained; a smallest input with
    the same dx as an earlier report's is not shown again."""
    reasons: dict[str, str] = {}  # body -> the title of the test that explains it
    mistakes: dict[str, str] = {}  # mistake name -> the title of the test that explains it
    inputs: dict[tuple[str, str], str] = {}  # (smallest input, student's dx) -> the title that shows it
    shortened = []
    for title, message in reports:
        head, body = split_report(message)
        reason = reason_of(body)
        if reason is None:
            body = same_input_as_before(body, inputs, title)
        if reason is not None:
            if body in reasons:
                body = wrap_prose(f"{reason} (Explained above, under \u201c{reasons[body]}\u201d.)")
            else:
                reasons[body] = title
        else:
            body = _mistakes_once(body, mistakes, title)
        shortened.append(f"{head}\n\n{body}" if body else message)
    return shortened


def _mistakes_once(body: str, mistakes: dict[str, str], title: str) -> str:
    """``body`` with each mistake an earlier report explained referred to (``mistakes``: its
    name -> that report's title); the mistakes it explains first are added to ``mistakes``."""
    for bug in BUGS.values():
        for kind in ("Likely", "Possible"):
            whole = next((text for text in (wrap_prose(mistake_text(bug, kind, full)) for full in (True, False))
                          if text in body), None)
            if whole is None:
                continue
            if bug.name in mistakes:
                back = wrap_prose(f"{kind} mistake: {bug.title} (explained above, under "
                                  f"\u201c{mistakes[bug.name]}\u201d).")
                # the line of their code quoted under it was quoted there too
                body = re.sub(re.escape(whole) + r"(\n  In your code: [^\n]*)?", back.replace("\\", "\\\\"), body)
            else:
                mistakes[bug.name] = title
    return body
