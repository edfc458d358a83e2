"""The sample class graded in parallel against a real PostgreSQL server (Debian's
postgresql, started here on loopback): every submission's every cell is recorded, and
the grades equal plain serial nbgrader's on SQLite."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ASSIGNMENT, copy_course, nbgrader
from test_parallel import STUDENTS, all_grades, grade_command, sqlite

SERVER_HELP = "these tests need Debian's PostgreSQL server: apt-get install postgresql"


def _as_postgres(*command: str) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(prefix + list(command), check=True, capture_output=True, timeout=120)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    assert binaries, SERVER_HELP
    bin_dir = binaries[-1].parent
    home = Path(tempfile.mkdtemp(prefix="maxpool-pg-"))
    if os.geteuid() == 0:  # initdb refuses to run as root
        user = pwd.getpwnam("postgres")
        os.chown(home, user.pw_uid, user.pw_gid)
    port = _free_port()
    data = home / "data"
    _as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-w", "-o",
                 f"-p {port} -c listen_addresses=127.0.0.1 -k {home}", "start")
    try:
        _as_postgres(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "gradebook")
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)


def test_parallel_grading_on_postgresql_records_every_cell(postgres_url, tmp_path):
    course, serial = copy_course(tmp_path / "course"), copy_course(tmp_path / "serial")
    result = grade_command(course, "--workers", "2", "--db", postgres_url)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (course / "gradebook.db").exists()  # everything went to the server
    ours = all_grades(postgres_url)
    assert len(ours) == len(STUDENTS) * 11
    assert all(score is not None for (_, grade_id), score in ours.items() if grade_id != "part_a_derivation")
    nbgrader(serial, "generate_assignment", ASSIGNMENT)
    nbgrader(serial, "autograde", ASSIGNMENT)
    assert ours == all_grades(sqlite(serial))
    assert "loop_correct" in (course / "grades.csv").read_text()
