"""The roster: names and emails into nbgrader's student table, and clear errors."""

from __future__ import annotations

import subprocess

import pytest
from helpers import BIN, copy_course
from nbgrader.api import Gradebook

from maxpool_grader.course.roster import RosterError, read_roster


def test_a_roster_is_read_whatever_its_header_spelling(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student ID,First Name,Last Name,E-mail\ns1,Ada,Lovelace,ada@example.edu\n\ns2,Alan,Turing,\n")
    assert read_roster(roster) == [
        {"id": "s1", "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.edu", "lms_id": None},
        {"id": "s2", "first_name": "Alan", "last_name": "Turing", "email": None, "lms_id": None}]


def test_control_characters_of_a_roster_cell_never_reach_the_gradebook(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text('id,first_name,last_name,email\ns1,"\0=1+2","\n@SUM(1)","a\tb\r\nc"\n')
    assert read_roster(roster) == [{"id": "s1", "first_name": "=1+2", "last_name": "@SUM(1)", "email": "a b  c",
                                    "lms_id": None}]


@pytest.mark.parametrize("text, says", [
    ("", "is empty"),
    ("id,first_name,email\ns1,Ada,a@b\n", "no 'last_name' column"),
    ("id,first_name,last_name\ns1,Ada,L\n,Bob,M\n", "line 3: the student id is empty"),
    ("id,first_name,last_name\ns1,Ada,L\ns1,Bob,M\n", "line 3: student id 's1' is already on line 2"),
])
def test_a_bad_roster_is_refused_with_the_reason(tmp_path, text, says):
    roster = tmp_path / "roster.csv"
    roster.write_text(text)
    with pytest.raises(RosterError, match=says):
        read_roster(roster)


@pytest.mark.integration
def test_the_roster_command_fills_the_gradebook_and_updates_names(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    roster = tmp_path / "class.csv"
    roster.write_text("id,first_name,last_name,email\ns1,Ada,Lovelace,ada@example.edu\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "maxpool-grader"), "roster", *args, "--course-dir", str(course)],
                              capture_output=True, text=True, timeout=120)
    assert run(str(roster)).returncode == 0
    roster.write_text("id,first_name,last_name,email\ns1,Ada,King,ada@example.edu\n")
    assert "1 students imported" in run(str(roster)).stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        student = gradebook.find_student("s1")
        assert (student.first_name, student.last_name, student.email) == ("Ada", "King", "ada@example.edu")
    broken = run(str(tmp_path / "missing.csv"))
    assert broken.returncode == 2 and "cannot be read" in broken.stderr
