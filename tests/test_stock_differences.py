"""The deliberate differences from stock nbgrader (docs/instructor.md#differences), each shown
by nbgrader's own test of it: it passes with nbgrader's defaults and fails, for the reason the
guide gives, with this course's ``nbgrader_config.py`` as the user's config (a Jupyter config
directory, as a hub gives every user one; the course id and exchange lines left out).

tests/nbgrader_suites.py lists them (``DIFFERENCES``) and the suites of nbgrader's they come from;
``.ci/nbgrader-suites`` runs those whole suites the same way, with these deselected (a step of
its own in ``.ci/run``: see docs/development.md#tests).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BIN, ROOT
from nbgrader_suites import DIFFERENCES, course_config_dir, environment, pyarg, pytest_arguments

pytestmark = pytest.mark.integration  # nbgrader's own tests: real nbgrader runs and kernels


def run_nbgrader_test(difference: str, cwd: Path, config_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *pytest_arguments(pyarg(difference)), "-n", "0"],
                          cwd=cwd, env=environment(config_dir, BIN), text=True, capture_output=True, timeout=900)


@pytest.mark.parametrize("difference", sorted(DIFFERENCES))
def test_each_listed_difference_is_nbgrader_s_own_test_failing_for_its_reason(difference, tmp_path):
    empty = tmp_path / "empty-config"  # nbgrader's defaults: no user config at all
    empty.mkdir()
    stock = run_nbgrader_test(difference, tmp_path, empty)
    assert stock.returncode == 0 and re.search(r"\b1 passed\b", stock.stdout), stock.stdout[-3000:]
    ours = run_nbgrader_test(difference, tmp_path, course_config_dir(tmp_path / "config"))
    assert ours.returncode == 1 and re.search(r"\b1 failed\b", ours.stdout), ours.stdout[-3000:]
    assert DIFFERENCES[difference] in ours.stdout, ours.stdout[-3000:]


def test_the_guide_lists_exactly_these_differences():
    guide = (ROOT / "docs" / "instructor.md").read_text().split("{#differences}", 1)[1].split("\n## ", 1)[0]
    assert sorted(re.findall(r"^\| `(test_nbgrader_[^`]+)` \|", guide, flags=re.M)) == sorted(DIFFERENCES)
