"""The command line itself: its version, each command's description, and options that
only mean something together (what ``maxpool-grader`` prints before it grades anything)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from helpers import ROOT, copy_course, grade_command

from maxpool_grader.cli.main import main


def test_version_is_the_installed_packages(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"maxpool-grader {version('maxpool-grader')}"


@pytest.mark.parametrize("command", ["grade", "roster", "collect-lms", "export-lms", "cluster-certs", "check",
                                     "add-to-course"])
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
                                     "check", "add-to-course"])
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


HUB_SERVICE = {"JUPYTERHUB_API_TOKEN": "a-token", "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/hub/api",
               "JUPYTERHUB_CLIENT_ID": "service-maxpool", "JUPYTERHUB_SERVICE_URL": "http://127.0.0.1:10101",
               "JUPYTERHUB_SERVICE_PREFIX": "/services/maxpool/",
               "JUPYTERHUB_OAUTH_CALLBACK_URL": "/services/maxpool/oauth_callback"}


@pytest.mark.parametrize("options, environment, named", [
    ([], {}, 'give the service a "url" in c.JupyterHub.services'),
    (["--port", "10101", "--base-url", "https://hub.example.edu/services/maxpool/"], {},
     "JUPYTERHUB_API_TOKEN, JUPYTERHUB_API_URL, JUPYTERHUB_CLIENT_ID missing"),
    (["--base-url", "https://hub.example.edu/maxpool/"], HUB_SERVICE,
     "the Hub sends students back to /services/maxpool/oauth_callback, but the service's pages are under /maxpool/"),
    (["--no-web"], HUB_SERVICE, "--hub-login signs students in to the web page, which --no-web turns off"),
])
def test_hub_login_without_what_the_hub_gives_a_service_is_refused(options, environment, named, monkeypatch,
                                                                    capsys):
    for name in HUB_SERVICE:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--course-dir", str(ROOT), "--hub-login", *options])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
