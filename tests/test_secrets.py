"""Secrets stay out of the repository: the files that grant access (every student's link in
``tokens.csv``, the service's secret, the instructor's link) are git-ignored and owner-only in a
fresh clone of this course, and ``doctor`` and ``tokens`` say when git would keep one."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from helpers import BIN, ROOT

pytestmark = pytest.mark.integration  # real git clones, real maxpool-grader commands

BASE_URL = "https://grader.example.edu/maxpool/"


def _env() -> dict:
    return dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))


def _run(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "maxpool-grader"), *args, "--course-dir", str(course)], cwd=course,
                            env=_env(), text=True, capture_output=True, timeout=600)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def _git(course: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(course), *args], check=True, text=True, capture_output=True).stdout


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def clone(tmp_path) -> Path:
    """A fresh clone of this repository (its committed HEAD), as an instructor starts a course."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(tmp_path / "course")], check=True)
    return tmp_path / "course"


def test_tokens_in_a_fresh_clone_leaves_git_status_clean_and_the_links_owner_only(clone):
    result = _run(clone, "tokens", "--base-url", BASE_URL)
    assert "personal links written to" in result.stdout and "Warning" not in result.stderr, result.stderr
    tokens = clone / "tokens.csv"
    assert f"{BASE_URL}login/" in tokens.read_text()
    assert _git(clone, "status", "--porcelain") == ""
    assert _mode(tokens) == 0o600 and _mode(clone / ".maxpool-grader" / "serve" / "secret") == 0o600
    # a CSV made readable by others, and the instructor's link as serve left it: written again, owner-only
    tokens.chmod(0o644)
    link = clone / ".maxpool-grader" / "serve" / "instructor-link"
    link.write_text("http://127.0.0.1:8765/instructor/login/old\n")
    link.chmod(0o644)
    _run(clone, "tokens", "--base-url", BASE_URL, "--rotate")
    assert _mode(tokens) == 0o600 and _mode(link) == 0o600
    assert link.read_text().startswith("http://127.0.0.1:8765/instructor/login/") and "/old" not in link.read_text()
    assert _git(clone, "status", "--porcelain") == ""


def test_tokens_warns_when_git_would_keep_the_links(clone):
    """A CSV no ignore rule covers (a name of the instructor's own), and one git tracks."""
    result = _run(clone, "tokens", "--base-url", BASE_URL, "--out", "links-for-the-lms.csv")
    assert "Warning: git does not ignore" in result.stderr and "links-for-the-lms.csv" in result.stderr
    assert "every link in it is a password" in result.stderr
    _run(clone, "tokens", "--base-url", BASE_URL)
    _git(clone, "add", "--force", "tokens.csv")
    result = _run(clone, "tokens", "--base-url", BASE_URL)
    assert "Warning: git tracks" in result.stderr and "git rm --cached" in result.stderr


def test_doctor_warns_when_a_file_that_grants_access_is_tracked_or_readable(clone):
    _run(clone, "tokens", "--base-url", BASE_URL)
    report = _run(clone, "doctor", "--json", check=False)
    found = {finding["name"]: finding for finding in json.loads(report.stdout)}
    assert found["secrets"]["holds"], found["secrets"]
    secret = clone / ".maxpool-grader" / "serve" / "secret"
    _git(clone, "add", "--force", "tokens.csv", str(secret))
    secret.chmod(0o644)
    report = _run(clone, "doctor", check=False)
    assert report.returncode == 1
    line = next(line for line in report.stdout.splitlines() if " secrets " in line)
    assert line.startswith("FAIL") and "git tracks tokens.csv" in line, report.stdout
    assert "git tracks .maxpool-grader/serve/secret" in line and "readable by others" in line
    fix = report.stdout.split(line, 1)[1].splitlines()[1]
    assert "fix: git rm --cached .maxpool-grader/serve/secret tokens.csv" in fix and "tokens --rotate" in fix
    assert "chmod 600 .maxpool-grader/serve/secret" in fix
