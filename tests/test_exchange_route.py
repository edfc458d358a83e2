"""The students' own route, once, through a local exchange directory:
release_assignment -> fetch_assignment -> submit -> collect -> autograde ->
release_feedback -> fetch_feedback, all with nbgrader's real commands."""

from __future__ import annotations

import getpass
import os
import shutil
import sys
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT, copy_course, digests, grade_command, nbgrader
from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from maxpool_grader.glue.collecttime import SetAside

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import VECTORIZED_CORRECT, fill  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


def submitted_through_an_exchange(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """A course released through a local exchange, and one student's correct notebook fetched
    and submitted into it: (course, exchange, the student's home, the exchange options)."""
    course = copy_course(tmp_path / "course", with_submissions=False)
    exchange = tmp_path / "exchange"
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o777)  # nbgrader's exchange must be writable by every student
    student_home = tmp_path / "student"
    student_home.mkdir()
    shared = [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=max_pool_backward"]
    nbgrader(course, "generate_assignment", "max_pool_backward", "--force")
    nbgrader(course, "release_assignment", "max_pool_backward", *shared)
    nbgrader(student_home, "fetch_assignment", "max_pool_backward", *shared)
    fetched = student_home / "max_pool_backward" / "max_pool_backward.ipynb"
    nbformat.write(fill(nbformat.read(fetched, as_version=4), VECTORIZED_CORRECT), fetched)
    nbgrader(student_home, "submit", "max_pool_backward", *shared)
    return course, exchange, student_home, shared


def test_student_round_trip_through_a_local_exchange(tmp_path):
    course, _, student_home, shared = submitted_through_an_exchange(tmp_path)
    nbgrader(course, "collect", "max_pool_backward", *shared)
    student = getpass.getuser()
    assert (course / "submitted" / student / "max_pool_backward" / "max_pool_backward.ipynb").is_file()
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("max_pool_backward", student)
        assert submission.code_score == 15 and submission.max_code_score == 15

    nbgrader(course, "generate_feedback", "max_pool_backward")
    nbgrader(course, "release_feedback", "max_pool_backward", *shared)
    nbgrader(student_home, "fetch_feedback", "max_pool_backward", *shared)
    feedback = list((student_home / "max_pool_backward" / "feedback").glob("*/max_pool_backward.html"))
    assert len(feedback) == 1
    html = feedback[0].read_text()
    assert "Passed: Ties: PyTorch's convention (the first maximum in row-major order)" in html
    assert "Score: 15 of 15 so far; Part A (5 points) is not graded yet" in html  # Part A is not counted as 0


def test_collect_counts_the_time_a_student_cannot_set_back(tmp_path):
    """After the deadline a student rewrites their inbound folder: an earlier time in its name
    and in timestamp.txt, a changed notebook, a link to the instructor's file and a FIFO.
    collect counts the time of the folder's last change (late, with the course's penalty), never
    follows the link, skips the FIFO; a classmate's folder whose name holds no time does not
    stop the collect. A folder left alone keeps the time it states."""
    course, exchange, student_home, shared = submitted_through_an_exchange(tmp_path)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:  # due three days ago
        gradebook.update_or_create_assignment("max_pool_backward", duedate=datetime.utcnow() - timedelta(days=3))
    inbound = exchange / "max_pool_backward" / "inbound"
    [honest] = list(inbound.iterdir())
    stated = parse_utc((honest / "timestamp.txt").read_text())

    nbgrader(course, "collect", "max_pool_backward", *shared)  # left alone: the time it states
    student = getpass.getuser()
    submitted = course / "submitted" / student / "max_pool_backward"
    assert parse_utc((submitted / "timestamp.txt").read_text()) == stated

    secret = tmp_path / "instructor-only.txt"
    secret.write_text("INSTRUCTOR-SECRET")
    forged_at = datetime.utcnow()
    early = "2000-01-01 00:00:00.000000 UTC"
    for name in ("timestamp.txt", "max_pool_backward.ipynb"):
        (honest / name).chmod(0o644)
    (honest / "timestamp.txt").write_text(early)
    with open(honest / "max_pool_backward.ipynb", "a") as notebook:
        notebook.write(" ")
    (honest / "notes.txt").symlink_to(secret)
    (honest / "folder").symlink_to(tmp_path)
    os.mkfifo(honest / "pipe")
    forged = honest.with_name(f"{student}+max_pool_backward+{early}+{honest.name.rsplit('+', 1)[1]}")
    honest.rename(forged)
    junk = inbound / "mallory+max_pool_backward+not a time+x1"
    junk.mkdir()
    shutil.copy(forged / "max_pool_backward.ipynb", junk)
    huge = inbound / f"aaron+max_pool_backward+{early}+x2"  # nbgrader stopped the whole collect on it
    huge.mkdir()
    (huge / "max_pool_backward.ipynb").write_bytes(b" " * 400_000)

    shutil.rmtree(course / "submitted")  # the instructor's first collect is after the deadline
    untouched = digests(course, student_home, skip=("submitted",))
    collected = nbgrader(course, "collect", "max_pool_backward", "--CourseDirectory.max_dir_size=300", *shared,
                         check=False)
    assert collected.returncode == 1 and "1 submission folder(s) NOT collected (see above)" in collected.stdout
    assert digests(course, student_home, skip=("submitted",)) == untouched  # collect wrote submitted/ only
    assert secret.read_text() == "INSTRUCTOR-SECRET"
    assert not list((course / "submitted").rglob(".collecting-*"))
    stamp = parse_utc((submitted / "timestamp.txt").read_text())
    assert stamp >= forged_at - timedelta(seconds=1), (stamp, forged_at)
    assert "last changed" in collected.stdout
    assert sorted(p.name for p in submitted.iterdir()) == ["max_pool_backward.ipynb", "submission_secret.txt",
                                                          "timestamp.txt"]
    assert not any("INSTRUCTOR-SECRET" in path.read_text(errors="replace")
                   for path in (course / "submitted").rglob("*") if path.is_file())
    assert (course / "submitted" / "mallory" / "max_pool_backward" / "max_pool_backward.ipynb").is_file()
    assert f"{huge} was NOT collected" in collected.stdout and (huge / "max_pool_backward.ipynb").is_file()
    assert not (course / "submitted" / "aaron").exists() or not any((course / "submitted" / "aaron").rglob("*.ipynb"))
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("max_pool_backward", student)
        assert submission.timestamp >= forged_at - timedelta(seconds=1)
        assert submission.total_seconds_late > 3 * 86400 - 60
        assert submission.code_score == 15 and submission.late_submission_penalty > 0


def test_a_newer_submission_too_large_to_collect_never_costs_the_one_collected(tmp_path):
    """nbgrader's ``collect --update`` deleted a student's collected submission before copying
    their newer one; when the newer folder is too large to collect, the collected one stays as
    it was, the error names the folder, and collect exits non-zero (the rest is collected)."""
    course, exchange, student_home, shared = submitted_through_an_exchange(tmp_path)
    limit = "--CourseDirectory.max_dir_size=300"  # the instructor's, at collect
    nbgrader(course, "collect", "max_pool_backward", limit, *shared)
    submitted = course / "submitted" / getpass.getuser() / "max_pool_backward"
    kept = digests(submitted)
    assert "max_pool_backward.ipynb" in " ".join(kept)

    (student_home / "max_pool_backward" / "data.bin").write_bytes(b"x" * 400_000)  # the newer one: too large
    nbgrader(student_home, "submit", "max_pool_backward", *shared)
    newer = max((exchange / "max_pool_backward" / "inbound").iterdir(), key=lambda path: path.name)
    updated = nbgrader(course, "collect", "--update", "max_pool_backward", limit, *shared,
                       check=False)
    assert updated.returncode != 0, updated.stdout
    assert f"{newer} was NOT collected" in updated.stdout
    assert digests(submitted) == kept, updated.stdout  # the collected submission, as it was
    assert not [path for path in submitted.parent.iterdir() if path.name != "max_pool_backward"]
    nbgrader(course, "autograde", "max_pool_backward", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("max_pool_backward", getpass.getuser()).code_score == 15

    SetAside.rmtree(str(submitted))  # a collect --update killed right after it set the submission aside
    graded = grade_command(course, "--force")
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    assert f"{submitted}: a collect was stopped while it replaced this submission" in graded.stderr
    assert digests(submitted) == kept
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("max_pool_backward", getpass.getuser()).code_score == 15



def test_a_folder_name_in_the_exchange_cannot_write_escapes_to_the_instructor_s_terminal(tmp_path):
    """A student names an inbound folder with ANSI and OSC escapes (clear the screen, set the
    terminal's title) and a line break that forges a log line: collect prints it escaped."""
    course, exchange, _, shared = submitted_through_an_exchange(tmp_path)
    inbound = exchange / "max_pool_backward" / "inbound"
    [honest] = list(inbound.iterdir())
    forged = inbound / "mallory\x1b[2J\x1b]0;pwned\x07\n[CollectApp | INFO] all fine+max_pool_backward+not a time+x9"
    shutil.copytree(honest, forged)
    collected = nbgrader(course, "collect", "max_pool_backward", *shared)
    assert "\x1b" not in collected.stdout and "\x07" not in collected.stdout, collected.stdout
    assert "\n[CollectApp | INFO] all fine" not in collected.stdout
    assert "mallory\\x1b[2J" in collected.stdout
