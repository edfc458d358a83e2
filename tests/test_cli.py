"""The command line itself: its version, each command's description, and options that
only mean something together (what ``maxpool-grader`` prints before it grades anything)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from helpers import ROOT

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
