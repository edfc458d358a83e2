"""Which attempt counts (serve/standing.py), on a real queue: the rule decides from the Part B
scores alone, the attempt that counts is the one the course keeps, and every sentence of an
attempt's page says what it is. The whole path (both ways, the gradebook, grade --force) is
tests/test_serve.py's test_a_worse_attempt_after_a_full_score_is_graded_and_told_but_the_full_score_counts."""

from __future__ import annotations

import pytest

from maxpool_grader.serve.queue import Queue
from maxpool_grader.serve.standing import WHY, attempt_lines, counted_before, counting, counts, part_b

pytestmark = pytest.mark.unit


def _result(score: float, part_a: float | None = None) -> dict:
    tests = [{"id": "t", "title": "T", "points": 15.0, "score": score, "manual": False, "answered": True,
              "mistakes": []}]
    if part_a is not None:  # a person graded Part A: it is in the total, never in Part B
        tests.append({"id": "a", "title": "A", "points": 5.0, "score": part_a, "manual": False, "answered": True,
                      "mistakes": []})
    return {"tests": tests, "score": score, "max_score": 15.0}


def _graded(queue: Queue, student: str, score: float, *, counted: bool, received: float) -> int:
    number = queue.add(student, "a", "web", b"{}", received=received)
    queue.start(number)
    queue.finish(number, "graded", result={**_result(score), "counts": counted})
    return number


def test_best_keeps_the_better_score_and_the_latest_of_equal_ones(tmp_path):
    queue = Queue(tmp_path)
    full = _graded(queue, "kim", 15, counted=True, received=100)
    assert counted_before(queue.of_student("kim")) == {"attempt": full, "score": 15, "max": 15}
    assert not counts("best", 13, counted_before(queue.of_student("kim")))  # worse: put back, not counted
    assert counts("best", 15, counted_before(queue.of_student("kim")))  # equal: the latest counts
    assert counts("latest", 0, counted_before(queue.of_student("kim")))  # latest: whatever its score
    assert counts("best", 0, None)  # the first attempt always counts
    _graded(queue, "kim", 13, counted=False, received=200)
    assert counting(queue.of_student("kim")).id == full  # an attempt put back never counts
    again = _graded(queue, "kim", 15, counted=True, received=300)
    assert counting(queue.of_student("kim")).id == again


def test_an_attempt_of_another_status_or_student_never_counts(tmp_path):
    queue = Queue(tmp_path)
    mine = _graded(queue, "kim", 10, counted=True, received=100)
    _graded(queue, "lee", 15, counted=True, received=150)
    refused = queue.add("kim", "a", "web", None, status="refused", message="no", received=200)
    waiting = queue.add("kim", "a", "web", b"{}", received=250)
    assert counting(queue.of_student("kim")).id == mine and {refused, waiting}.isdisjoint({mine})
    legacy = queue.add("kim", "a", "web", b"{}", received=300)  # graded before the rule was recorded
    queue.start(legacy)
    queue.finish(legacy, "graded", result=_result(3))
    assert counting(queue.of_student("kim")).id == legacy


def test_part_b_leaves_out_what_a_person_grades():
    graded = _result(12, part_a=4)
    graded["tests"][1]["manual"] = True
    assert part_b(graded) == (12, 15)


def test_the_page_says_its_attempt_whether_it_counts_why_and_what_is_left():
    before = {"attempt": 7, "score": 15.0, "max": 15.0}
    policy = ["Attempts used: 2 of 3 in the last hour, 2 of 10 in the last 24 hours; your next attempt is "
              "possible now.", "Deadline: 2026-12-05 23:59 UTC."]
    worse = attempt_lines("best", 9, 0.0, 12.0, 15.0, before, policy)
    assert worse[0].startswith("Attempt 9, received ") and worse[0].endswith(": Part B 12 of 15.")
    assert worse[1] == (f"This attempt does not count: attempt 7 (Part B 15 of 15) stays the one that counts, "
                        f"because {WHY['best']}.")
    assert worse[2].endswith("possible now (as this attempt was graded).") and worse[3] == policy[1]
    better = attempt_lines("best", 9, 0.0, 15.0, 15.0, before, policy)
    assert better[1] == f"This attempt is the one that counts now: {WHY['best']}."
    assert attempt_lines("latest", 9, 0.0, 1.0, 15.0, before, policy)[1].endswith(f"{WHY['latest']}.")
