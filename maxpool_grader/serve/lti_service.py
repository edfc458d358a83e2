"""The service's side of LTI (the ``lti`` package, which knows nothing of the service): its
launch store and its passback, made from the course's registration (``c.Lti``) with what only
the service knows, the score of each attempt that counts and of a released final feedback.

* ``attempt_score``: an attempt's score for the LMS's gradebook: Part B's points (standing's
  ``part_b``) less the late penalty nbgrader gave the submission, never below 0, of the
  assignment's maximum, and whether Part A still waits for a person;
* ``final_score``: once the final feedback is released, the gradebook's total less the late
  penalty, of the maximum;
* ``enable_lti``: with ``c.Lti.enabled``, the service takes launches (its launch store) and
  posts scores (its passback).
"""

from __future__ import annotations

from ..course.directory import say
from ..lti.passback import Passback
from ..lti.store import LaunchStore
from ..lti.tool import Lti, missing
from .grading_job import scores_of
from .pages import final_feedback
from .standing import part_b


def attempt_score(result: dict) -> tuple[float, float, bool]:
    """An attempt's (score, maximum, whether a person still has to grade part of it)."""
    waiting = any(test["manual"] for test in result.get("tests", []))
    return max(0.0, part_b(result)[0] - result.get("late_penalty", 0.0)), result.get("max_score", 0.0), waiting


def final_score(result: dict) -> tuple[float, float]:
    """The final score of the gradebook's ``result`` (grading_job's ``scores_of``), and its maximum."""
    return max(0.0, result["score"] - result["late_penalty"]), result["max_score"]


def enable_lti(service, settings: Lti) -> None:
    """With ``c.Lti.enabled``: the service takes launches (its launch store) and posts scores
    (its passback), from the course's registration."""
    if not settings.enabled:
        return
    service.lti, service.launches = settings, LaunchStore(service.queue.folder)

    def final_of(student: str):
        return final_feedback(service, student)

    def final_of_gradebook(student: str) -> tuple[float, float]:
        return final_score(scores_of(service.db_url, service.course, student, service.assignment))
    service.passback = Passback(service.course, settings, service.launches, assignment=service.assignment,
                                folder=service.queue.folder, final_of=final_of, final_score=final_of_gradebook,
                                base_url=service.base_url)
    if problems := missing(settings):
        say(f"serve: LTI is enabled but {', '.join(problems)} not set: launches are refused until they are "
            "(docs/lti.md#settings)")
    else:
        say(f"serve: LTI 1.3 launches from {settings.issuer} (client {settings.client_id})")
