"""The command line itself: its version, each command's description, and options that
only mean something together (what ``maxpool-grader`` prints before it grades anything)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from helpers import ROOT, copy_course, grade_command

from maxpool_grader.operations.cli import main


def test_version_is_the_installed_packages(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"maxpool-grader {version('maxpool-grader')}"


@pytest.mark.parametrize("command", ["grade", "roster", "collect-lms", "export-lms", "cluster-certs", "check"])
def test_each_command_says_what_it_does(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    description = text.split("\n\n")[1]  # after the usage lines
    assert description[:1].isupper() and description.rstrip().endswith("."), text
    assert "``" not in text


def test_the_programs_description_has_no_markup(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out


@pytest.mark.parametrize("options, named", [
    (["--insecure"], "--insecure applies only with --cluster"),
    (["--tls-cert", "c.pem", "--tls-key", "k.pem"], "--tls-cert, --tls-key apply only with --cluster"),
])
def test_cluster_options_without_a_cluster_are_refused(options, named, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["grade", "--course-dir", str(ROOT), *options])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize("command", ["grade", "roster", "collect-lms", "export-lms", "cluster-certs", "doctor",
                                     "check"])
def test_each_command_shows_examples(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "examples:\n  maxpool-grader " + command in text, text


@pytest.mark.integration  # grades a one-student class twice
def test_quiet_prints_the_results_only_and_verbose_prints_nbgraders_output(tmp_path):
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    quiet = grade_command(course, "-q")
    assert quiet.returncode == 0, quiet.stdout[-3000:]
    assert "loop_correct" in quiet.stdout and "15/15" in quiet.stdout  # the table
    assert "Class report:" in quiet.stdout
    assert "[autograde" not in quiet.stdout and "$ nbgrader" not in quiet.stdout, quiet.stdout
    loud = grade_command(course, "--force", "--verbose")
    assert loud.returncode == 0, loud.stdout[-3000:]
    assert "$ nbgrader export" in loud.stdout and "[ExportApp | INFO]" in loud.stdout, loud.stdout[-3000:]
    assert "[autograde 1/1] loop_correct" in loud.stdout
