"""The course directory as the commands see it: its gradebook URL, and nbgrader run in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def nbgrader_environment() -> dict[str, str]:
    """The environment for nbgrader: this interpreter's bin/ first on PATH.

    Creating a gradebook runs ``alembic`` as a subprocess, which fails with
    FileNotFoundError when the virtual environment was not activated.
    """
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """A real nbgrader command in the course (shown on the terminal as it is run)."""
    print("$ nbgrader " + " ".join(args), flush=True)
    # nbgrader's own entry point, after this package's import (its fast start: __init__.py)
    return subprocess.run([sys.executable, "-c", _NBGRADER_MAIN, *args], cwd=course,
                          env=nbgrader_environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


_NBGRADER_MAIN = ("import sys, maxpool_grader; from nbgrader.apps.nbgraderapp import main; "
                  "sys.argv[0] = 'nbgrader'; sys.exit(main())")


def configured_db_url(course: Path) -> str:
    """The gradebook URL of nbgrader_config.py (CourseDirectory.db_url), else SQLite in the course."""
    from traitlets.config.loader import PyFileConfigLoader
    try:
        url = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config().CourseDirectory.get("db_url")
    except Exception:  # noqa: BLE001  nbgrader reports a broken config itself
        url = None
    return url or f"sqlite:///{course / 'gradebook.db'}"
