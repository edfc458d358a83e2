"""Which attempt counts, and what is left: the rule ``c.Serve.counts`` states, and the
sentences every page of an attempt carries (the feedback page, the brief page through the
exchange, the web page of the attempt and the student's list of attempts).

The rule is decided once, here, and kept true in the course itself: the gradebook, the
student's ``submitted/`` and ``autograded/`` folders always hold the attempt that counts.
An attempt that does not count is graded and its feedback given, then what its grading
changed is put back (grading_job.put_back), so ``maxpool-grader grade --force``, the
instructor's gradebook and the LMS's (LTI passback sends only an attempt that counts) all
agree with the page.

* ``best`` (the default): the best Part B score counts, the latest of equal ones. A student
  who tries a risky change after a full score never loses it, and a resubmission of the same
  code with a better derivation (Part A, graded by a person after the deadline, on the
  notebook that counts) takes its place.
* ``latest``: the latest graded attempt counts, whatever its score (nbgrader's own rule).
"""

from __future__ import annotations

import time

from .policy import when_text

WHY = {"best": "your best Part B score counts at the deadline (of equal scores, the latest attempt), so an "
               "attempt that scores less never takes its place",
       "latest": "your latest graded attempt counts at the deadline, whatever its score"}


def part_b(result: dict) -> tuple[float, float]:
    """The points of the tests (Part B) in an attempt's result, and their most."""
    automatic = [test for test in result.get("tests", []) if not test["manual"]]
    return sum(test["score"] for test in automatic), sum(test["points"] for test in automatic)


def counted(result: dict) -> bool:
    """Whether a graded attempt's ``result`` was kept as the one that counts when it was graded
    (its grading was not put back; an attempt graded before the rule was recorded counted)."""
    return result.get("counts", True)


def counting(attempts) -> object | None:
    """The attempt of ``attempts`` (one student's) that counts now: the latest graded one that
    was counted when it was graded."""
    graded = [attempt for attempt in attempts if attempt.status == "graded" and counted(attempt.result)]
    return max(graded, key=lambda attempt: attempt.id, default=None)


def counting_of_each(attempts) -> dict:
    """Each student's attempt that counts now, of ``attempts`` (any students')."""
    by_student: dict = {}
    for attempt in attempts:
        by_student.setdefault(attempt.student, []).append(attempt)
    return {student: found for student, theirs in by_student.items() if (found := counting(theirs)) is not None}


def counted_before(attempts) -> dict | None:
    """What a new attempt is measured against: the counting attempt's number and Part B score."""
    found = counting(attempts)
    if found is None:
        return None
    score, most = part_b(found.result)
    return {"attempt": found.id, "score": score, "max": most}


def counts(rule: str, score: float, before: dict | None) -> bool:
    """Whether a new attempt of Part B score ``score`` counts, against ``before`` (counted_before)."""
    return rule == "latest" or before is None or score >= before["score"]


def standing_of(service, attempt) -> dict:
    """What the grading worker needs to tell ``attempt`` whether it counts (serve_followup)."""
    return {"rule": service.settings.counts, "received": attempt.received,
            "policy": policy_lines(service, attempt.student),
            "before": counted_before(service.queue.of_student(attempt.student))}


def policy_lines(service, student: str, now: float | None = None) -> list[str]:
    """The attempts used and left, the next free time, and the deadline, as of ``now``."""
    now = time.time() if now is None else now
    usage = list(service.policy.usage(student, now))
    used = ", ".join(f"{made} of {limit} in the last {span}" for made, limit, span, _ in usage)
    next_free = max([possible for *_, possible in usage if possible is not None], default=None)
    lines = ["Attempts used: " + used + ("; your next attempt is possible now." if next_free is None
                                         else f"; your next attempt is possible at {when_text(next_free)}.")]
    deadline = service.policy.deadline()
    lines.append(f"Deadline: {when_text(deadline.timestamp())}." if deadline else "This assignment has no deadline.")
    return lines


def attempt_lines(rule: str, attempt: int, received: float, score: float, most: float, before: dict | None,
                  policy: list[str]) -> list[str]:
    """What the page of one attempt says of it: its number and time, whether it counts and why,
    and ``policy`` (policy_lines, as of its grading)."""
    lines = [f"Attempt {attempt}, received {when_text(received)}: Part B {score:g} of {most:g}."]
    if counts(rule, score, before):
        lines.append(f"This attempt is the one that counts now: {WHY[rule]}.")
    else:
        lines.append(f"This attempt does not count: attempt {before['attempt']} (Part B {before['score']:g} of "
                     f"{before['max']:g}) stays the one that counts, because {WHY[rule]}.")
    return lines + [policy[0].rstrip(".") + " (as this attempt was graded).", *policy[1:]]
