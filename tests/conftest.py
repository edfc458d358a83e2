"""Shared helpers: a throw-away copy of the course and real nbgrader commands run in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "max_pool_backward"
SOURCE_NOTEBOOK = ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE_NOTEBOOK = ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
BIN = Path(sys.executable).parent


def nbgrader(cwd: Path, *args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a real ``nbgrader`` command with the test interpreter's bin/ on PATH (for alembic);
    ``env`` adds variables (a TMPDIR of the test's own, say)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), **(env or {}))
    result = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if check and result.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed ({result.returncode}):\n{result.stdout}")
    return result


def copy_course(target: Path, *, with_submissions: bool = True) -> Path:
    """The course as an instructor clones it: config, source notebook, sample class."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", target)
    shutil.copytree(ROOT / "source", target / "source")
    (target / "exchange").mkdir(exist_ok=True)  # the course-local exchange (exchange/.gitkeep in git)
    if with_submissions:
        shutil.copytree(ROOT / "submitted", target / "submitted")
    return target


@pytest.fixture
def course(tmp_path) -> Path:
    return copy_course(tmp_path / "course", with_submissions=False)


KILL_MATRIX = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter, config):
    """Print the mutation test's kill matrix at the end of every run that computed it."""
    matrix = config.stash.get(KILL_MATRIX, None)
    if matrix:
        terminalreporter.write_sep("=", "kill matrix (tests/test_mutation.py)")
        terminalreporter.write_line(matrix)


def flat(text: str) -> str:
    """``text`` with every run of whitespace made one space: feedback wraps its prose lines."""
    return " ".join(text.split())


def cmdline(pid: str) -> str:
    """A process's command line, arguments joined by spaces ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
