"""The pages of ``maxpool-grader serve`` that are made of the service's own data, never of a
student's notebook: the brief feedback before the deadline (each test's points, and the
mistakes found at 'mistakes'), the same as a page of its own for the exchange's Fetch
Feedback, and the instructor's live view (the queue, attempts per student, each test's
pass rate so far, the most common mistakes). Every text from a student (a name, a
message) is escaped."""

from __future__ import annotations

import html
import time
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .serve import Service

STYLE = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
         "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.3rem .6rem;text-align:left}"
         ".refused{background:#fde8e8;border:1px solid #c33;padding:.6rem}.ok{color:#176117}.lost{color:#a11}"
         "small{color:#555}")
LEVEL_TEXT = {"scores": "each test's points", "mistakes": "each test's points and the mistakes found",
              "everything": "the whole feedback: each test, the mistake found and the smallest input it fails on"}


def status_text(attempt) -> str:
    if attempt.status == "graded":
        return f"graded: {attempt.result.get('score', 0):g} of {attempt.result.get('max_score', 0):g}"
    if attempt.status in ("refused", "failed", "superseded"):
        return f"{attempt.status}: {attempt.message}"
    return attempt.status


def brief(result: dict, level: str) -> str:
    """The feedback before the deadline at 'scores' or 'mistakes': our own titles and numbers,
    nothing from the student's notebook."""
    rows = []
    for test in result.get("tests", []):
        if test["manual"]:
            shown = (f"graded by a person after the deadline (of {test['points']:g})" if test.get("answered", True)
                     else f"not answered yet (of {test['points']:g}; graded by a person after the deadline)")
        else:
            ok = test["score"] >= test["points"]
            shown = f"<span class='{'ok' if ok else 'lost'}'>{test['score']:g} of {test['points']:g}</span>"
        mistakes = ""
        if level == "mistakes" and test["mistakes"] and test["score"] < test["points"]:
            mistakes = "<br><small>Likely mistake: " + "; ".join(html.escape(m) for m in test["mistakes"]) + "</small>"
        rows.append(f"<tr><td>{html.escape(test['title'])}{mistakes}</td><td>{shown}</td></tr>")
    automatic = [test for test in result.get("tests", []) if not test["manual"]]
    scored = sum(test["score"] for test in automatic)
    possible = sum(test["points"] for test in automatic)
    return (f"<p>Autograded so far: <strong>{scored:g} of {possible:g}</strong> (Part A is graded by a person "
            f"after the deadline). Before the deadline this page shows {LEVEL_TEXT[level]}.</p>"
            f"<table><tr><th>Test</th><th>Points</th></tr>{''.join(rows)}</table>")


def standalone_page(title: str, body: str) -> str:
    """A page of ours released through the exchange (no server sends its headers): the
    policy that runs no script is in the page itself."""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>")


def brief_page(assignment: str, result: dict, level: str) -> str:
    """The brief feedback as a page of its own, for the exchange's Fetch Feedback."""
    if level == "everything":  # graded at 'scores' or 'mistakes', released after the deadline
        level = "mistakes"
    return standalone_page(f"{assignment}: your feedback so far", brief(result, level))


def refusal_page(assignment: str, message: str) -> str:
    """Why an exchange submission was not graded, where its feedback would be."""
    return standalone_page(f"{assignment}: this submission was not graded", f"<p>{html.escape(message)}</p>")


def instructor_view(service: Service) -> str:
    """The queue, attempts per student, pass rate of each test so far, the common mistakes."""
    attempts = service.queue.all()
    now = time.time()
    by_status = Counter(attempt.status for attempt in attempts)
    waiting = sorted((a for a in attempts if a.status in ("queued", "grading")), key=lambda a: a.id)
    latest = {}
    for attempt in sorted((a for a in attempts if a.status == "graded"), key=lambda a: a.id):
        latest[attempt.student] = attempt
    parts = [f"<p>{len(attempts)} attempts: " + ", ".join(f"{count} {html.escape(status)}"
                                                          for status, count in sorted(by_status.items())) + ".</p>"]
    parts.append("<h2>Queue</h2>")
    if waiting:
        parts.append("<table><tr><th>Attempt</th><th>Student</th><th>Status</th><th>Waiting</th></tr>" + "".join(
            f"<tr><td>{a.id}</td><td>{html.escape(a.student)}</td><td>{a.status}</td>"
            f"<td>{now - a.received:.0f} s</td></tr>" for a in waiting) + "</table>")
    else:
        parts.append("<p>Empty.</p>")
    tests: dict[str, list] = {}
    mistakes: Counter = Counter()
    for attempt in latest.values():
        for test in attempt.result.get("tests", []):
            if not test["manual"]:
                tests.setdefault(test["title"], []).append(test["score"] >= test["points"])
                mistakes.update(set(test["mistakes"]) if test["score"] < test["points"] else set())
    parts.append(f"<h2>Each test so far</h2><p><small>Over each student's latest graded attempt "
                 f"({len(latest)} students).</small></p>")
    if tests:
        parts.append("<table><tr><th>Test</th><th>Passed</th></tr>" + "".join(
            f"<tr><td>{html.escape(title)}</td><td>{sum(found)} of {len(found)} "
            f"({100 * sum(found) / len(found):.0f}%)</td></tr>" for title, found in tests.items()) + "</table>")
    parts.append("<h2>Most common mistakes</h2>")
    common = "".join(f"<li>{html.escape(title)}: {count} student{'s' if count != 1 else ''}</li>"
                     for title, count in mistakes.most_common(10))
    parts.append(f"<ol>{common}</ol>" if mistakes else "<p>None.</p>")
    students: dict[str, list] = {}
    for attempt in attempts:
        students.setdefault(attempt.student, []).append(attempt)
    parts.append("<h2>Attempts per student</h2><table><tr><th>Student</th><th>Last hour</th><th>All</th>"
                 "<th>Latest</th></tr>" + "".join(
                     f"<tr><td>{html.escape(student)}</td>"
                     f"<td>{len(service.queue.counted_since(student, now - 3600))}</td><td>{len(found)}</td>"
                     f"<td>{html.escape(status_text(max(found, key=lambda a: a.id)))}</td></tr>"
                     for student, found in sorted(students.items())) + "</table>")
    problems = [a for a in attempts if a.status in ("refused", "failed")][:30]
    parts.append("<h2>Refused and failed</h2>")
    parts.append("<table><tr><th>Attempt</th><th>Student</th><th>Way</th><th>Why</th></tr>" + "".join(
        f"<tr><td>{a.id}</td><td>{html.escape(a.student)}</td><td>{a.way}"
        f"{' ' + html.escape(repr(a.source)) if a.source else ''}</td><td>{html.escape(a.message)}</td></tr>"
        for a in problems) + "</table>" if problems else "<p>None.</p>")
    if service.events:
        parts.append("<h2>For you to look at</h2><ul>" + "".join(f"<li>{html.escape(event)}</li>"
                                                                  for event in service.events[-30:]) + "</ul>")
    parts.append(f"<p><small>Refreshed every 5 s; {len(service.in_flight)} being graded now.</small></p>")
    return "".join(parts)
