"""Fixtures of the tests (a course, the serial reference class, a PostgreSQL server), the
markers, and the kill matrix printed after the run. Helpers are in helpers.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import (
    ASSIGNMENT,
    EXTRA,
    FAIR_POINTS,
    KILL_MATRIX,
    POSTGRES_HELP,
    as_postgres,
    copy_course,
    free_port,
    locked,
    nbgrader,
    shared_folder,
    summary_table,
)


@pytest.fixture
def course(tmp_path) -> Path:
    return copy_course(tmp_path / "course", with_submissions=False)


@pytest.fixture(scope="session")
def serial_class(tmp_path_factory) -> Path:
    """The sample class and EXTRA graded by plain serial `nbgrader autograde`: the reference
    every other way of grading must equal cell for cell. Read it, never change it.

    Graded once for the whole run: the test processes (pytest-xdist) share one copy, made by
    the first that asks while the others wait on its lock."""
    from corpus import build as build_corpus
    shared = shared_folder(tmp_path_factory)
    serial, done = shared / "serial", shared / "serial.done"
    with locked(shared / "serial.lock"):
        if not done.exists():
            shutil.rmtree(serial, ignore_errors=True)
            copy_course(serial)
            nbgrader(serial, "generate_assignment", ASSIGNMENT)
            build_corpus(serial, serial / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", EXTRA)
            nbgrader(serial, "autograde", ASSIGNMENT)
            done.touch()
    return serial


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on loopback, started here; yields ``new_database(name) -> URL``."""
    import pwd
    import tempfile
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    assert binaries, POSTGRES_HELP
    bin_dir = binaries[-1].parent
    home = Path(tempfile.mkdtemp(prefix="maxpool-pg-"))
    if os.geteuid() == 0:  # initdb refuses to run as root
        user = pwd.getpwnam("postgres")
        os.chown(home, user.pw_uid, user.pw_gid)
    port = free_port()
    data = home / "data"
    as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-w", "-o",
                 f"-p {port} -c listen_addresses=127.0.0.1 -k {home}", "start")

    def new_database(name: str) -> str:
        as_postgres(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{port}/{name}"
    try:
        yield new_database
    finally:
        as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    """A real headless Chromium (tests/pages.py), for one test module: Playwright's sync API
    keeps an event loop running in the main thread while it is open, and later modules
    (the cluster's) run asyncio themselves."""
    from pages import launch_chromium
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        launched = launch_chromium(playwright)
        yield launched
        launched.close()


def pytest_collection_modifyitems(items):
    """Every test not marked ``integration`` is a ``unit`` test: ``pytest -m unit`` runs the
    fast ones alone (no kernel, sandbox, nbgrader command or server)."""
    for item in items:
        if item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.unit)


def pytest_terminal_summary(terminalreporter, config):
    """Print the mutation test's kill matrix, and each bug's points lost against the
    properties it breaks, at the end of every run that computed them."""
    matrix = summary_table(config, KILL_MATRIX)
    if matrix:
        terminalreporter.write_sep("=", "kill matrix (tests/test_mutation.py)")
        terminalreporter.write_line(matrix)
    fair = summary_table(config, FAIR_POINTS)
    if fair:
        terminalreporter.write_sep("=", "points lost against properties broken (tests/test_fair_points.py)")
        terminalreporter.write_line(fair)
