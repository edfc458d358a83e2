"""Untrusted submissions through plain ``nbgrader autograde``, in one batch.

The attack corpus (tests/corpus.py) must score no more than a solution returning
zeros and leave every other file, the gradebook and the other students untouched; the
fault corpus must end with a recorded grade and a reason the student reads in the
feedback; the correct samples keep full marks. Student code runs in the bubblewrap
sandbox (``.ci/run`` installs it): these tests require it, they do not skip.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from conftest import ASSIGNMENT, BIN, RELEASE_NOTEBOOK, ROOT, copy_course, flat, nbgrader
from corpus import ATTACKS, CORPUS, FAULTS, FULL
from maxpool_grader import sandbox
from maxpool_grader.checks import GRADED_CHECKS

CORRECT_SAMPLES = ["loop_correct", "vectorized_correct", "noisy_correct"]


def _digests(course: Path) -> dict[str, str]:
    watched = [course / "nbgrader_config.py", *sorted((course / "submitted").rglob("*")),
               *sorted((ROOT / "maxpool_grader").glob("*.py"))]
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in watched if path.is_file()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    assert sandbox.bwrap_works(), "these tests need the sandbox: apt-get install bubblewrap"
    course = copy_course(tmp_path_factory.mktemp("untrusted") / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    for student in CORRECT_SAMPLES:
        shutil.copytree(ROOT / "submitted" / student, course / "submitted" / student)
    import corpus
    corpus.build(course, RELEASE_NOTEBOOK)
    before = _digests(course)
    started = time.monotonic()
    autograde = nbgrader(course, "autograde", ASSIGNMENT, check=False)
    seconds = time.monotonic() - started
    feedback = nbgrader(course, "generate_feedback", ASSIGNMENT, check=False)
    time.sleep(2)  # a surviving daemon would have rewritten its rows by now
    return {"course": course, "autograde": autograde, "feedback": feedback, "before": before,
            "seconds": seconds}


def _scores(course: Path) -> dict[str, tuple[float, bool]]:
    """student -> (autograded score, whether any autograded cell still needs a person)."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        result = {}
        for student in gradebook.students:
            submission = gradebook.find_submission(ASSIGNMENT, student.id)
            pending = any(grade.needs_manual_grade for notebook in submission.notebooks
                          for grade in notebook.grades if grade.cell_type == "code")
            result[student.id] = (submission.code_score, pending)
        return result


def _feedback_text(course: Path, student: str) -> str:
    page = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert page.exists(), f"no feedback for {student}"
    text = re.sub(r"<[^>]+>", " ", page.read_text())
    return flat(html.unescape(text))


def test_the_batch_has_no_failed_submission(batch):
    assert batch["autograde"].returncode == 0, batch["autograde"].stdout[-5000:]
    assert "There was an error processing" not in batch["autograde"].stdout
    assert batch["feedback"].returncode == 0, batch["feedback"].stdout[-3000:]
    print(f"autograde of {len(CORPUS) + len(CORRECT_SAMPLES)} submissions: {batch['seconds']:.0f} s")


@pytest.mark.parametrize("student", CORRECT_SAMPLES)
def test_correct_samples_keep_full_marks(batch, student):
    assert _scores(batch["course"])[student] == (FULL, False)
    feedback = _feedback_text(batch["course"], student)
    assert all(flat(f"Passed: {check.title}").lower() in feedback.lower() for check in GRADED_CHECKS.values())
    assert "test failed" not in feedback.lower()


@pytest.mark.parametrize("submission", ATTACKS, ids=lambda s: s.name)
def test_attack_scores_no_more_than_zeros_and_is_told_why(batch, submission):
    score, pending = _scores(batch["course"])[submission.name]
    assert (score, pending) == (submission.score, False), submission.what
    assert flat(submission.reason) in _feedback_text(batch["course"], submission.name)


@pytest.mark.parametrize("submission", FAULTS, ids=lambda s: s.name)
def test_fault_gets_a_grade_and_a_reason(batch, submission):
    score, pending = _scores(batch["course"])[submission.name]
    assert (score, pending) == (submission.score, False), submission.what
    assert flat(submission.reason) in _feedback_text(batch["course"], submission.name)


def test_attacks_changed_no_file_outside_their_own_folder(batch):
    after = _digests(batch["course"])
    changed = [path for path, digest in batch["before"].items() if after.get(path) != digest]
    assert changed == []


def test_no_student_code_outlives_grading(batch):
    course = batch["course"]
    rows = sqlite3.connect(course / "gradebook.db").execute(
        "SELECT COUNT(*) FROM grade WHERE manual_score IS NOT NULL").fetchone()
    assert rows == (0,), "something rewrote manual scores in the gradebook"
    beat = course / "autograded" / "attack_detached_rewriter" / ASSIGNMENT / "heartbeat_detached_rewriter"
    first = beat.read_text() if beat.exists() else None
    time.sleep(1.5)
    assert (beat.read_text() if beat.exists() else None) == first, "the detached daemon is still running"
    survivors = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).count("maxpool-")]
    assert survivors == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_without_a_sandbox_grading_still_works_and_says_so(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    shutil.copytree(ROOT / "submitted" / "loop_correct", course / "submitted" / "loop_correct")
    env = {"PATH": str(BIN), "HOME": os.environ.get("HOME", "/root")}  # no /usr/bin: no bwrap
    result = subprocess.run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT], cwd=course, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.count("GRADING UNSANDBOXED") == 1
    assert _scores(course)["loop_correct"] == (FULL, False)
