"""The students' own route, once, through a local exchange directory:
release_assignment -> fetch_assignment -> submit -> collect -> autograde ->
release_feedback -> fetch_feedback, all with nbgrader's real commands."""

from __future__ import annotations

import getpass
import sys

import nbformat
import pytest
from helpers import ROOT, copy_course, nbgrader
from nbgrader.api import Gradebook

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import VECTORIZED_CORRECT, fill  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


def test_student_round_trip_through_a_local_exchange(tmp_path):
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
