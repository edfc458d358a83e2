"""The run-time patches of nbgrader (maxpool_grader/glue/patches.py): one list, each patch
checked against the installed versions, and a version it was not written for refused at
start-up with the patch named."""

from __future__ import annotations

import importlib
from importlib.metadata import version

import pytest
from helpers import ROOT, copy_course, nbgrader

from maxpool_grader.glue.patches import PATCHES, PatchVersionError, install, mismatches


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(dotted)


def test_the_installed_versions_are_the_ones_every_patch_was_written_for():
    assert mismatches() == []


@pytest.mark.parametrize("patch", PATCHES, ids=lambda patch: patch.name)
def test_what_each_patch_replaces_exists_and_says_where_it_was_reported(patch):
    assert _resolve(patch.replaces) is not None
    assert patch.upstream and patch.why
    assert any(distribution == "nbgrader" for distribution, _ in patch.written_for)


def test_another_nbgrader_is_refused_naming_each_patch():
    def installed(distribution):
        return "0.9.7" if distribution == "nbgrader" else version(distribution)
    problems = mismatches(installed=installed)
    assert len(problems) == len(PATCHES)
    for patch, problem in zip(PATCHES, problems):
        assert patch.name in problem and "nbgrader==0.9.6" in problem and "nbgrader 0.9.7" in problem


def test_a_missing_package_is_named():
    def installed(distribution):
        return None if distribution == "nbclient" else version(distribution)
    assert mismatches(installed=installed) == [
        next(problem for problem in mismatches(installed=installed) if "nbclient is not installed" in problem)]


def test_install_applies_each_patch_once_and_refuses_before_applying_any(monkeypatch):
    from nbgrader import api
    install()
    engine = api.create_engine
    install()  # a second config load in the same process changes nothing
    assert api.create_engine is engine and getattr(engine, "_reused", False)
    import maxpool_grader.glue.patches as patches
    monkeypatch.setattr(patches, "version", lambda distribution: "1.0.0")
    with pytest.raises(PatchVersionError, match="skip_symbolic_links"):
        install()


@pytest.mark.integration  # a real nbgrader command
def test_nbgrader_itself_refuses_a_course_whose_patches_do_not_fit(tmp_path):
    """What an instructor sees: a real nbgrader command, in a course whose config installs the
    patches, with a patch whose written_for the installed nbgrader does not satisfy."""
    (tmp_path / "nbgrader_config.py").write_text(
        "import maxpool_grader.glue.patches as patches\n"
        "patches.NBGRADER = ('nbgrader', '==0.9.5')\n"
        "patches.PATCHES = tuple(p.__class__(**{**p.__dict__, 'written_for': (patches.NBGRADER,)})"
        " for p in patches.PATCHES)\n"
        + (ROOT / "nbgrader_config.py").read_text())
    result = nbgrader(tmp_path, "db", "student", "list", check=False)
    assert result.returncode != 0, result.stdout
    assert "patch grade_folders_without_notebooks" in result.stdout
    assert "nbgrader==0.9.5, but nbgrader 0.9.6 is here" in result.stdout


@pytest.mark.integration  # a real nbgrader command
def test_nbgrader_stops_when_the_course_cannot_import_the_grader(tmp_path):
    """traitlets logs an exception raised in nbgrader_config.py and goes on without its
    settings: nbgrader would grade with its defaults, student code outside the box."""
    course = copy_course(tmp_path / "course", with_submissions=False)
    shadow = tmp_path / "shadow" / "maxpool_grader"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named maxpool_grader (simulated)')\n")
    result = nbgrader(course, "db", "student", "list", check=False, env={"PYTHONPATH": str(shadow.parent)})
    assert result.returncode != 0, result.stdout
    assert "This course grades with the maxpool_grader package" in result.stdout
