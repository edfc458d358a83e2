"""nbgrader's own test suites under this course's configuration, declared once: which suites
run, the configuration they run under, and the deliberate differences. ``.ci/nbgrader-suites``
runs the suites with these differences deselected; tests/test_stock_differences.py runs each
difference under both configurations and checks that docs/instructor.md#differences lists
exactly these. Standard library only: the CI script imports it before anything is installed
but nbgrader."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the modules of nbgrader.tests.apps run in CI (release: releaseassignment and releasefeedback)
SUITES = tuple(f"nbgrader.tests.apps.test_nbgrader_{name}" for name in (
    "autograde", "generate_feedback", "generate_assignment", "validate", "export", "collect",
    "releaseassignment", "releasefeedback"))

# each deliberate difference, as "module::class::test" of nbgrader.tests.apps -> what the
# test's output shows under this course's configuration (the reason it differs; the guide's
# table gives it in words)
DIFFERENCES = {
    "test_nbgrader_autograde::TestNbGraderAutograde::test_side_effects":
        "side-effect.txt",  # never reached autograded/: the sealed box
    "test_nbgrader_autograde::TestNbGraderAutograde::test_hidden_tests_single_notebook":
        "THE CONTENTS OF 1 TEST CELL(S) HAVE CHANGED",  # the inert notebook
    "test_nbgrader_autograde::TestNbGraderAutograde::test_grade_empty_timestamp":
        "Unreadable timestamp",  # graded, with a warning, not failed
    # the collected folder's mode is the instructor's, not the inbound folder's 777
    "test_nbgrader_collect::TestNbGraderCollect::test_permissions[False]":
        '"submitted", "foobar_student", "ps1")) == ("777"',
    "test_nbgrader_collect::TestNbGraderCollect::test_permissions[True]":
        '"submitted", "foobar_student", "ps1")) == ("777"',
}


def site_packages() -> Path:
    """The folder nbgrader is installed in: pytest's rootdir for its suites, so that a test's
    node id is ``nbgrader/tests/apps/<module>.py::<class>::<test>`` wherever it runs."""
    spec = importlib.util.find_spec("nbgrader")
    assert spec is not None and spec.submodule_search_locations, "nbgrader is not installed"
    return Path(list(spec.submodule_search_locations)[0]).parent


def node_id(difference: str) -> str:
    """A difference's pytest node id, relative to site_packages()."""
    module, rest = difference.split("::", 1)
    return f"nbgrader/tests/apps/{module}.py::{rest}"


def pyarg(difference: str) -> str:
    """A difference as a ``--pyargs`` argument: the one test, found through the import path."""
    module, rest = difference.split("::", 1)
    return f"nbgrader.tests.apps.{module}::{rest}"


def course_config_dir(target: Path) -> Path:
    """A Jupyter config directory with the course's nbgrader_config.py, less its course id and
    exchange: what nbgrader loads for every course of the user (as a hub gives every user one)."""
    target.mkdir(parents=True, exist_ok=True)
    lines = (ROOT / "nbgrader_config.py").read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(("c.CourseDirectory.course_id", "c.Exchange.root"))]
    assert len(lines) - len(kept) == 2, "the course id and the exchange root are one line each"
    (target / "nbgrader_config.py").write_text("".join(kept))
    return target


def environment(config_dir: Path, bin_dir: Path) -> dict[str, str]:
    """The environment nbgrader's tests run in: ``config_dir`` as the only user config (an empty
    folder gives nbgrader's defaults), ``bin_dir`` first on PATH for ``nbgrader`` and ``alembic``."""
    env = {key: value for key, value in os.environ.items() if key != "JUPYTER_CONFIG_DIR"}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["JUPYTER_CONFIG_DIR"] = str(config_dir)
    return env


def pytest_arguments(*targets: str) -> list[str]:
    """``-m pytest``'s arguments for ``targets`` (``--pyargs`` names) with nbgrader's installed
    folder as rootdir and no cache written; run them in a folder outside this repository, whose
    pytest settings (``addopts``) are not nbgrader's."""
    return ["-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(site_packages()), "-q", "-rfE",
            "--pyargs", *targets]
