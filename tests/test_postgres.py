"""The sample class graded in parallel against a real PostgreSQL server (Debian's
postgresql, started here on loopback): every submission's every cell is recorded, and
the grades equal plain serial nbgrader's on SQLite."""

from __future__ import annotations

import pytest
from helpers import GRADED_CELLS, STUDENTS, all_grades, copy_course, grade_command, sqlite

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


def test_parallel_grading_on_postgresql_records_every_cell(postgres_server, serial_class, tmp_path):
    postgres_url = postgres_server("gradebook")
    course = copy_course(tmp_path / "course")
    result = grade_command(course, "--workers", "2", "--db", postgres_url)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (course / "gradebook.db").exists()  # everything went to the server
    ours = all_grades(postgres_url)
    assert len(ours) == len(STUDENTS) * GRADED_CELLS
    assert all(score is not None for (_, grade_id), score in ours.items() if grade_id != "part_a_derivation")
    serial = {key: score for key, score in all_grades(sqlite(serial_class)).items() if key[0] in STUDENTS}
    assert ours == serial
    assert "loop_correct" in (course / "grades.csv").read_text()
