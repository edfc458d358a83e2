"""Every install that works outside the box works inside it (issue 37.2), beyond the
``pip install --target`` one of tests/test_faults.py: the course's dependencies and the
grader installed with ``pip install --user`` (into a ``PYTHONUSERBASE`` of the test's own, by
the interpreter the test's venv was made from, with no virtual environment) grade the sample
class to the README's table. It once failed before grading anyone: nbgrader creates the
gradebook with the ``alembic`` program, which such an install keeps in the user base's
``bin/``, on no PATH.

Not here: a venv with ``--system-site-packages`` (it would need the course's dependencies in
the machine's own site-packages, which a test must not install into)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from helpers import ASSIGNMENT, ROOT, STUDENTS, copy_course
from test_faults import BASE_PYTHON, package_source, printed_table, readme_table

pytestmark = pytest.mark.integration  # a real install, nbgrader, kernels and sandboxes


@pytest.fixture(scope="module")
def user_install(tmp_path_factory):
    """The grader and its dependencies installed with ``pip install --user`` into a user base
    of this module's own: the user base's folder."""
    base = tmp_path_factory.mktemp("user")
    userbase = base / "userbase"
    done = subprocess.run([str(BASE_PYTHON), "-m", "pip", "install", "--quiet", "--no-compile", "--user",
                           "--no-warn-script-location", str(package_source(base / "source"))],
                          env=dict(os.environ, PYTHONUSERBASE=str(userbase)), capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    yield userbase
    shutil.rmtree(base, ignore_errors=True)


def test_an_install_with_pip_user_grades_the_sample_class_to_the_readme_table(user_install, tmp_path):
    course = copy_course(tmp_path / "course")
    shutil.copy(ROOT / "roster.csv", course)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",  # a fresh login's
           "PYTHONUSERBASE": str(user_install), "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    graded = subprocess.run([str(BASE_PYTHON), "-m", "maxpool_grader.cli.entry", "grade"], cwd=course, env=env,
                            text=True, capture_output=True, timeout=1200)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    assert printed_table(graded.stdout) == readme_table()
    assert len(list((course / "feedback").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.html"))) == len(STUDENTS)
