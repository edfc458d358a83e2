"""Scores back to the LMS (LTI Assignment and Grade Services), through the outbox.

* Each graded attempt that counts, of a student the LMS knows (recorded in
  ``.maxpool-grader/lti.json``), is a score: the points the service gives it (Part B's, less the
  late penalty: serve/lti_service.py), of the assignment's maximum, with ``gradingProgress``
  "PendingManual" while Part A waits for a person (in AGS's words, a final score still to
  come that needs a person). The service grades a student's attempts in order and only the
  latest counts (an older one still queued is superseded), so the latest score the platform
  keeps is the attempt that counts, as ``grade --force`` counts it.
* Once the instructor has released the final feedback (``nbgrader release_feedback`` after
  the deadline: the service's ``final_of``), the final score (its ``final_score``: the
  gradebook's total less the late penalty), "FullyGraded", with a comment that links to the
  feedback page.

The service's own parts (its pages, its gradebook, its rule of what counts) are given to
``Passback``, never imported: this package sits below ``serve``.

Every score goes into the outbox first (lti/outbox.py) and is posted from there, in a
thread, tried again with backoff until the platform takes it. The line item is the launch's
own column when the launch names one (AGS ``lineitem``); else the one with the assignment's
tag, found or made once, and kept in the launch store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem

from .outbox import Outbox, Score
from .store import LaunchStore, records
from .tool import SCOPES, Lti, ServiceConnector, timed_session, tool_conf

AGS_SCOPES = [scope for scope in SCOPES if "lti-ags" in scope]
SCAN_EVERY = 3.0  # seconds between looks for a released final feedback


class NotReady(Exception):
    """Posting cannot start yet: what is missing, for the live view."""


def connector(course: Path, settings: Lti) -> ServiceConnector:
    """pylti1p3's client of the platform's services, signed with the tool's key; each of its
    requests (the access token, members, line items, scores) with lti/tool.py's timeout."""
    registration = tool_conf(course, settings).find_registration(settings.issuer)
    return ServiceConnector(registration, timed_session())


class Passback:
    """The outbox of ``course`` and what fills and empties it. ``final_of(student)`` is the
    student's released final feedback page (or None), ``final_score(student)`` its score and
    the most (from the gradebook); ``base_url`` the service's address."""

    def __init__(self, course: Path, settings: Lti, launches: LaunchStore, *, assignment: str, folder: Path,
                 final_of: Callable[[str], Path | None], final_score: Callable[[str], tuple[float, float]],
                 base_url: str):
        self.course, self.settings, self.launches = course, settings, launches
        self.assignment, self.final_of, self.final_score, self.base_url = assignment, final_of, final_score, base_url
        self.outbox = Outbox(folder)
        self._scanned = 0.0

    def sub_of(self, student: str) -> str | None:
        return (records(self.course).get(student) or {}).get("sub")

    def graded(self, student: str, attempt_id: int, score: float, maximum: float, waiting: bool) -> None:
        """A graded attempt's score of ``maximum``, into the outbox (for a student the LMS knows);
        ``waiting``: a part of it still waits for a person."""
        sub = self.sub_of(student)
        if sub is None:
            return
        self.outbox.add(student, sub, f"attempt:{attempt_id}", score, maximum,
                        progress="PendingManual" if waiting else "FullyGraded", activity="Submitted")

    def scan_released(self) -> int:
        """Each released final feedback not yet scored, into the outbox; how many."""
        added = 0
        for student, info in records(self.course).items():
            page = self.final_of(student)
            if page is None:
                continue
            source = f"final:{student}:{page.stat().st_mtime_ns}"
            if self.outbox.has(source):
                continue
            score, maximum = self.final_score(student)
            comment = f"Your final feedback: {self.base_url.rstrip('/')}/final"
            added += self.outbox.add(student, info["sub"], source, score, maximum,
                                     progress="FullyGraded", activity="Completed", comment=comment)
        return added

    def ags_claim(self) -> dict:
        """The course's line items address and scopes: c.Lti.lineitems_url, or the last launch's
        (with the column the first launch named: LaunchStore.remember_services)."""
        if self.settings.lineitems_url:
            return {"scope": AGS_SCOPES, "lineitems": self.settings.lineitems_url}
        claim = self.launches.services()[1]
        if not claim:
            raise NotReady("no launch has named the course's line items yet (set c.Lti.lineitems_url, or launch once)")
        return claim

    def line_item(self, ags: AssignmentsGradesService, claim: dict, maximum: float) -> LineItem:
        key = f"lineitem:{claim['lineitems']}:{self.assignment}"
        found = self.launches.get(key)
        if found:
            return LineItem(found)
        item = ags.find_or_create_lineitem(LineItem().set_tag(self.assignment).set_label(self.assignment)
                                           .set_resource_id(self.assignment).set_score_maximum(maximum),
                                           find_by="tag")
        self.launches.put(key, {"id": item.get_id(), "tag": self.assignment, "label": self.assignment,
                                "scoreMaximum": maximum, "resourceId": self.assignment}, 365 * 86400)
        return item

    def post(self, score: Score) -> None:
        """One score to the platform (in a thread); raises what went wrong."""
        claim = self.ags_claim()
        ags = AssignmentsGradesService(connector(self.course, self.settings), claim)
        grade = (Grade().set_score_given(score.score).set_score_maximum(score.maximum).set_timestamp(score.timestamp)
                 .set_activity_progress(score.activity).set_grading_progress(score.progress).set_user_id(score.sub))
        if score.comment:
            grade.set_comment(score.comment)
        # the launch's own column when it names one (Canvas and Moodle make one per graded activity),
        # else the course's column of the assignment's tag, found or made
        item = None if claim.get("lineitem") else self.line_item(ags, claim, score.maximum)
        try:
            ags.put_grade(grade, item)
        except LtiServiceException as problem:
            if problem.response.status_code == 404:  # the column was deleted in the LMS: found or made anew next time
                self.launches.take(f"lineitem:{claim['lineitems']}:{self.assignment}")
            raise

    async def send_due(self) -> int:
        """Post what is due now; how many the platform took."""
        if time.monotonic() - self._scanned > SCAN_EVERY:
            self._scanned = time.monotonic()
            await asyncio.to_thread(self.scan_released)
        sent = 0
        for score in self.outbox.due():
            try:
                await asyncio.to_thread(self.post, score)
            except Exception as problem:  # noqa: BLE001  any failure: kept, and tried again later
                status = getattr(getattr(problem, "response", None), "status_code", None)
                if status == 409:  # a score of this timestamp or a later one is there (a repost, Moodle)
                    self.outbox.posted(score.id, "the platform had this score or a later one (HTTP 409)")
                elif status in REFUSED_FOR_GOOD:
                    self.outbox.refused(score.id, _why(problem))
                else:
                    self.outbox.failed(score.id, _why(problem))
            else:
                self.outbox.posted(score.id)
                sent += 1
        return sent

    async def run(self, stopped: Callable[[], bool], every: float = 1.0) -> None:
        while not stopped():
            await self.send_due()
            await asyncio.sleep(every)


# Answers a platform gives again to the same score: sent again, it is refused again (401 is a token
# that expired, 404 a column deleted, 408 and 429 a busy platform: those are tried again)
REFUSED_FOR_GOOD = frozenset({400, 403, 405, 406, 410, 413, 415, 422})


def _why(problem: Exception) -> str:
    """What went wrong, for the instructor: the platform's status and the start of its answer."""
    response = getattr(problem, "response", None)
    if response is not None and getattr(response, "status_code", None):
        said = " ".join(str(getattr(response, "text", "") or "").split())[:200]
        return f"the platform answered HTTP {response.status_code}" + (f": {said}" if said else "")
    return f"{type(problem).__name__}: {problem}"[:300]

