"""The pages of ``maxpool-grader serve``, made of the service's own data, never of a
student's notebook: from Jinja templates with autoescaping (``templates/serve/``), so every
text from a student (a name, a message) is escaped and every page shares one layout, one
style and its accessibility (a language, a main landmark, visible focus, no text that needs
colour alone). The brief feedback before the deadline (each test's points, and the mistakes
found at 'mistakes'), the same as a page of its own for the exchange's Fetch Feedback, and
the instructor's live view (the queue, attempts per student, each test's pass rate so far,
the most common mistakes, and with LTI the course the service is bound to) are here.

A page that keeps itself up to date (an attempt waiting to be graded, the live view) runs
one script of the service's own, ``poll.js``: it asks the service for the status and writes
it into a live region, instead of reloading the page, which took the focus and the place of
a screen reader each second. The pages' Content-Security-Policy allows that script by its
hash (``POLL_POLICY``) and no other.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup
from nbgrader.utils import notebook_hash

from ..course.directory import course_path
from ..glue.deadline import NOT_ANSWERED, NOT_GRADED
from ..glue.feedbacksummary import inline_code
from ..lti.store import described
from .policy import when_text
from .standing import WHY, counting, counting_of_each, part_b, policy_lines

if TYPE_CHECKING:
    from .service import Service

_FILES = resources.files("maxpool_grader.serve") / "templates"
_PAGES = jinja2.Environment(loader=jinja2.PackageLoader("maxpool_grader.serve", "templates"),
                            autoescape=True, trim_blocks=True, lstrip_blocks=True)
STYLE = Markup((_FILES / "style.css").read_text())
POLL_SCRIPT = Markup((_FILES / "poll.js").read_text())
_HASH = "'sha256-" + base64.b64encode(hashlib.sha256(POLL_SCRIPT.encode()).digest()).decode() + "'"
PAGE_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
               "frame-ancestors 'none'; base-uri 'none'")
POLL_POLICY = PAGE_POLICY + f"; script-src {_HASH}; connect-src 'self'"  # poll.js, and only it
LEVEL_TEXT = {"scores": "each test's points",
              "mistakes": "each test's points and, for a failed test, the mistake found in your code",
              "reports": "each test's points and, for a failed test, its report: the smallest input your function "
                         "gets wrong, the expected and your dx, where they differ, and what your code does"}
PART_A_WAITS = ("Part A (your derivation) is graded by a person after the deadline: until then it shows as "
                "\u201cnot graded yet\u201d, never as 0.")
FINAL_COMES = ("The final feedback, with Part A's grade, its model answer and the full explanations of "
               "the tests, comes when your instructor releases it after the deadline.")


def render(template: str, **context) -> str:
    """A page of ``templates/serve``; ``script=True`` adds poll.js (send ``POLL_POLICY`` with it)."""
    script = POLL_SCRIPT if context.pop("script", False) else None
    return _PAGES.get_template(template).render(style=STYLE, script=script, **context)


def part_a_waits(result: dict) -> str | None:
    """What Part A is instead of a score while no person has graded it (glue/deadline.py), or None."""
    waiting = [test for test in result.get("tests", []) if test["manual"]]
    if not waiting:
        return None
    return NOT_ANSWERED if not all(test.get("answered", True) for test in waiting) else NOT_GRADED


def final_feedback(service, student: str) -> Path | None:
    """The final feedback the instructor released for ``student`` (``nbgrader release_feedback``
    after the deadline: the page with Part A's grade and model answer), in the exchange's feedback
    folder (``service.released``) where Fetch Feedback finds it, or None. A web student's page is
    released under the submission secret the service gave their attempt that counts, which no one
    else knows; a page released before the deadline is not the final one."""
    policy = service.policy
    if service.released is None or policy.open_now() and policy.deadline() is not None:
        return None
    secret = course_path(service.course, "feedback", student, service.assignment) / "submission_secret.txt"
    try:
        key = secret.read_text().strip()
        page = service.released / f"{notebook_hash(secret=key, notebook_id=service.assignment)}.html"
        released = page.stat().st_mtime
    except OSError:
        return None
    deadline = policy.deadline()
    return page if deadline is None or released > deadline.timestamp() else None


def final_page(service, student: str, back: str) -> bytes | None:
    """The released final page (final_feedback) as ``/final`` serves it, or None: with what
    nbgrader's release cannot know put under its title, the attempt it is the feedback of (the
    one that counts: the course holds no other, serve/standing.py) and a link ``back`` to the
    student's attempts."""
    path = final_feedback(service, student)
    if path is None:
        return None
    page, found = path.read_bytes(), counting(service.queue.of_student(student))
    said = (f"This is the final feedback on attempt {found.id}, received {when_text(found.received)}: the attempt "
            f"that counts, because {WHY[service.settings.counts]}." if found is not None else
            "This is the final feedback on the submission your instructor graded.")
    added = Markup('<ul class="maxpool-standing"><li>{}</li></ul><p class="maxpool-back"><a href="{}">Back to your '
                   'attempts</a></p>').format(said, back).encode()
    at = re.search(rb"</h1>|<body[^>]*>", page, re.IGNORECASE)  # the template's title comes before any cell
    end = at.end() if at else 0
    return page[:end] + added + page[end:]


def status_text(attempt) -> str:
    if attempt.status == "graded":
        waiting = part_a_waits(attempt.result)
        if waiting:  # Part B's points alone: an ungraded Part A is never a 0
            return "graded: Part B {:g} of {:g}; Part A {}".format(*part_b(attempt.result), waiting)
        return f"graded: {attempt.result.get('score', 0):g} of {attempt.result.get('max_score', 0):g}"
    if attempt.status in ("refused", "failed", "superseded", "forged"):
        return f"{attempt.status}: {attempt.message}"
    return attempt.status


def home_view(service: Service, student: str, url) -> dict:
    """The student's page (home.html.j2): the policy, whether uploads are taken, their final
    feedback once it is released, their attempts."""
    deadline, now = service.policy.deadline(), time.time()
    settings, final = service.settings, final_feedback(service, student)
    attempts = service.queue.of_student(student)
    counts = counting(attempts)
    return {"title": f"{service.assignment}: submit for feedback", "student": student, "assignment": service.assignment,
            "open": service.policy.open_now(), "action": url("/upload"), "level": LEVEL_TEXT[service.policy.level()],
            "deadline": (when_text(deadline.timestamp()) + (" (passed)" if now > deadline.timestamp() else ""))
            if deadline else "", "part_a": PART_A_WAITS, "final_comes": FINAL_COMES,
            "final": url("/final") if final else "",
            "used": policy_lines(service, student, now)[0], "why": WHY[settings.counts],
            "attempts": [{"id": a.id, "url": url(f"/attempt/{a.id}"), "received": when_text(a.received),
                          "status": status_text(a), "counts": counts is not None and a.id == counts.id}
                         for a in attempts]}


def attempt_progress(service: Service, attempt, here: str) -> dict:
    """What a waiting attempt's live region says, whether it is done, and where its result is."""
    if attempt.status == "queued":
        ahead = service.queue.position(attempt.id)
        return {"text": f"Waiting to be graded: {ahead} submission{'s' if ahead != 1 else ''} ahead of yours.",
                "done": False, "url": here}
    if attempt.status == "grading":
        return {"text": "Being graded now.", "done": False, "url": here}
    ready = " Your feedback is ready." if attempt.status == "graded" else ""
    said = status_text(attempt).rstrip()
    said = said[:1].upper() + said[1:] + ("" if said.endswith((".", "?", "!")) else ".")  # its own words kept
    return {"text": said + ready, "done": True, "url": here}


def _shown(test: dict, level: str) -> dict:
    """One test's row of the brief feedback."""
    if test["manual"]:
        waiting = NOT_GRADED if test.get("answered", True) else NOT_ANSWERED
        return {"title": test["title"], "shown": f"{waiting} (of {test['points']:g}; graded by a person after the "
                                                 "deadline)", "passed": None, "mistakes": []}
    passed = test["score"] >= test["points"]
    # a title's `code` as code (its text escaped first), never backticks shown as text
    mistakes = [Markup(inline_code(title)) for title in test["mistakes"]] if level == "mistakes" and not passed else []
    return {"title": test["title"], "shown": f"{test['score']:g} of {test['points']:g}", "passed": passed,
            "mistakes": mistakes}


def brief(result: dict, level: str) -> Markup:
    """The feedback before the deadline at 'scores' or 'mistakes': our own titles and numbers,
    nothing from the student's notebook."""
    tests = result.get("tests", [])
    scored, possible = part_b(result)
    return Markup(_PAGES.get_template("brief.html.j2").render(
        tests=[_shown(test, level) for test in tests], level=LEVEL_TEXT[level], standing=result.get("standing", []),
        scored=f"{scored:g}", possible=f"{possible:g}"))


def standalone_page(title: str, **context) -> str:
    """A page of ours released through the exchange (no server sends its headers): the
    policy that runs no script is in the page itself."""
    return render(context.pop("template", "message.html.j2"), title=title,
                  policy="default-src 'none'; style-src 'unsafe-inline'", **context)


def brief_page(assignment: str, result: dict, level: str) -> str:
    """The brief feedback as a page of its own, for the exchange's Fetch Feedback."""
    if level == "reports":  # graded at 'scores' or 'mistakes', released after the deadline
        level = "mistakes"
    return standalone_page(f"{assignment}: your feedback so far", template="result.html.j2",
                           brief=brief(result, level))


def refusal_page(assignment: str, message: str) -> str:
    """Why an exchange submission was not graded, where its feedback would be."""
    return standalone_page(f"{assignment}: this submission was not graded", paragraphs=[message])


def queue_summary(service: Service) -> str:
    """The live view's first line: every attempt so far, by status, and how many are graded now.
    It is a live region, so it changes only when a count does (the time it was read is apart)."""
    by_status = Counter(attempt.status for attempt in service.queue.all())
    counts = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
    return f"{sum(by_status.values())} attempts: {counts or 'none yet'}; {len(service.in_flight)} being graded now."


def lti_course(service: Service) -> str:
    """The live view's sentence on the course this service serves (LTI), or "" without LTI."""
    if service.launches is None:
        return ""
    bound = service.launches.binding()
    if bound is None:
        return ("No course yet: the first instructor launch from the LMS binds this service to its course; "
                "a launch from any other course is refused.")
    return (f"This service serves one course: {described(bound)}, bound by its instructor's first launch on "
            f"{bound.get('bound', '?')}. A launch from any other course is refused.")


def instructor_view(service: Service) -> dict:
    """The live view's tables: the queue, pass rate of each test so far, the common mistakes,
    attempts per student, refusals and failures, events (the template's context)."""
    attempts = service.queue.all()
    now = time.time()
    latest = counting_of_each(attempts)  # each student's attempt that counts (serve/standing.py)
    tests: dict[str, list] = {}
    mistakes: Counter = Counter()
    for attempt in latest.values():
        for test in attempt.result.get("tests", []):
            if not test["manual"]:
                tests.setdefault(test["title"], []).append(test["score"] >= test["points"])
                mistakes.update(set(test["mistakes"]) if test["score"] < test["points"] else set())
    students: dict[str, list] = {}
    for attempt in attempts:
        students.setdefault(attempt.student, []).append(attempt)
    return {
        "summary": queue_summary(service), "read_at": time.strftime("%H:%M:%S"), "students_graded": len(latest),
        "waiting": [{"id": a.id, "student": a.student, "status": a.status, "waiting": f"{now - a.received:.0f} s"}
                    for a in sorted((a for a in attempts if a.status in ("queued", "grading")), key=lambda a: a.id)],
        "tests": [{"title": title, "passed": f"{sum(found)} of {len(found)} ({100 * sum(found) / len(found):.0f}%)"}
                  for title, found in tests.items()],
        "mistakes": [f"{title}: {count} student{'s' if count != 1 else ''}"
                     for title, count in mistakes.most_common(10)],
        "students": [{"student": student, "hour": len(service.queue.counted_since(student, now - 3600)),
                      "all": len(found), "latest": status_text(max(found, key=lambda a: a.id))}
                     for student, found in sorted(students.items())],
        "problems": [{"id": a.id, "student": f"forged by {a.student}, claiming {a.claimed}" if a.status == "forged"
                      else a.student, "way": a.way + (f" {a.source!r}" if a.source else ""), "why": a.message}
                     for a in attempts if a.status in ("refused", "failed", "forged")][:30],
        "events": service.events[-30:],
        "lti": service.passback is not None,
        "lti_course": lti_course(service),
        "unposted": [{"student": score.student, "score": f"{score.score:g} of {score.maximum:g} ({score.progress})",
                      "tries": score.tries, "error": score.error or "not tried yet"}
                     for score in (service.passback.outbox.pending() if service.passback else [])][:100],
        "refused": [{"student": score.student, "score": f"{score.score:g} of {score.maximum:g}", "why": score.error}
                    for score in (service.passback.outbox.refusals() if service.passback else [])][-100:],
    }
