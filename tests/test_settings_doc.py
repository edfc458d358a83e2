"""Each setting is declared once (issue 24, item 2): the traitlets with their help= are the
single source of every limit, cap, time budget and the late policy; docs/settings.md is made
from them, nbgrader_config.py repeats none of their defaults, and a value set in a course's
config reaches the messages a student reads."""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest
from helpers import ROOT
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config, PyFileConfigLoader

from maxpool_grader.cli import settings_doc
from maxpool_grader.glue.latepolicy import LatePolicy
from maxpool_grader.glue.outofprocessverdicts import OutOfProcessVerdicts
from maxpool_grader.glue.safeexecute import SafeExecute
from maxpool_grader.glue.sealedbox import SealedBox
from maxpool_grader.sandbox.box import Box, Caps, disk_hit
from maxpool_grader.verdict.process import Limits, describe_exit

DOC = ROOT / "docs" / "settings.md"
CONFIG = ROOT / "nbgrader_config.py"


def test_docs_settings_md_is_what_the_declarations_render():
    assert DOC.read_text() == settings_doc.settings_page(CONFIG), (
        f"docs/settings.md is out of date: run `{settings_doc.COMMAND}` in the repository")


def test_every_setting_is_in_the_docs_with_its_default_and_help():
    text = DOC.read_text()
    for cls, _ in settings_doc.SETTINGS:
        for name, trait in settings_doc.settings_of(cls).items():
            assert trait.help and "unit" in trait.metadata, f"{cls.__name__}.{name}: help= and a unit tag"
            assert f"| `{name}` | {settings_doc.value_text(trait.default(), trait.metadata['unit'])} |" in text


def test_an_edited_default_changes_the_docs(monkeypatch):
    """The docs follow the declaration (and the caps follow the same declaration: below)."""
    monkeypatch.setattr(SealedBox.class_traits()["processes"], "default_value", 999)
    rendered = settings_doc.settings_page(CONFIG)
    assert "| `processes` | 999 |" in rendered and rendered != DOC.read_text()


def test_the_defaults_are_the_isolation_layers():
    """The sandbox's dataclasses and the settings agree: no number is typed twice."""
    assert SealedBox().caps() == Caps()
    assert OutOfProcessVerdicts().limits() == Limits()
    assert SealedBox().verdict_memory_mib << 20 == Limits.memory_bytes


def test_the_course_config_repeats_no_default():
    """nbgrader_config.py sets a limit only where the course differs from its default."""
    for key, value in settings_doc.course_values(CONFIG).items():
        cls = {cls.__name__: cls for cls, _ in settings_doc.SETTINGS}.get(key.split(".")[0], SafeExecute)
        assert value != cls.class_traits()[key.split(".")[1]].default_value, f"c.{key} repeats its default"


def test_a_value_in_a_course_config_shows_in_the_docs(tmp_path):
    config = tmp_path / "nbgrader_config.py"
    config.write_text(CONFIG.read_text() + "\nc.SealedBox.memory_mib = 1024\nc.Execute.timeout = 20\n"
                      "c.Exchange.root = '/srv'\n")
    rendered = settings_doc.settings_page(config)
    assert "| `memory_mib` | 2048 (2 GiB) | MiB | 1024 (1 GiB) (`c.SealedBox.memory_mib`) |" in rendered
    assert "| `timeout` | 15 | s | 20 (`c.Execute.timeout`) |" in rendered
    assert "Exchange" not in rendered


def _configured(**sections) -> Config:
    config = Config()
    for section, values in sections.items():
        for name, value in values.items():
            setattr(getattr(config, section), name, value)
    return config


def test_a_value_in_a_course_config_reaches_the_messages():
    config = _configured(SealedBox={"memory_mib": 512, "processes": 32, "scratch_mib": 100, "output_kib": 64,
                                    "verdict_memory_mib": 300},
                         OutOfProcessVerdicts={"check_seconds": 7, "total_seconds": 33},
                         LatePolicy={"percent_per_day": 25})
    caps = SealedBox(config=config).caps()
    assert caps == Caps(memory_bytes=512 << 20, processes=32, scratch_bytes=100 << 20, output_bytes=64 << 10)
    box = object.__new__(Box)  # a box whose cgroup saw both caps hit
    box.caps, box.cgroup = caps, SimpleNamespace(events=lambda: {"oom_kill": 1, "pids_max": 1})
    assert any("more than 512 MiB of memory" in hit for hit in box.hits())
    assert any("more than 32 processes" in hit for hit in box.hits())
    assert "more than 100 MiB" in disk_hit("OSError: [Errno 28] No space left on device", caps)
    limits = OutOfProcessVerdicts(config=config).limits()
    assert (limits.check_seconds, limits.total_seconds, limits.memory_bytes) == (7, 33, 300 << 20)
    assert "limit 300 MiB" in describe_exit(-signal.SIGKILL, limits)
    assert limits.cpu_seconds > 33
    assert LatePolicy(config=config).percent_per_day == 25


@pytest.mark.parametrize("sections, expected", [
    ({}, SafeExecute.class_traits()["timeout"].default_value),
    ({"Execute": {"timeout": 20}}, 20),  # nbgrader's own section reaches SafeExecute
    ({"Execute": {"timeout": 20}, "SafeExecute": {"timeout": 9}}, 9),
])
def test_the_cell_timeout_is_set_once(sections, expected):
    assert SafeExecute(config=_configured(**sections)).timeout == expected


@pytest.mark.integration  # a real kernel
def test_a_cap_edited_in_the_course_config_reaches_the_graded_notebooks_notes(tmp_path):
    """One line added to the course's own nbgrader_config.py, loaded as nbgrader loads it."""
    (tmp_path / "nbgrader_config.py").write_text(
        CONFIG.read_text() + "\nc.SealedBox.output_kib = 1\nc.SealedBox.sandbox = 'off'  # a quick kernel\n"
        "c.ThisExercise.assignment = c.ThisExercise.notebook = 'max_pool_backward'\n")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    nb = new_notebook(cells=[new_code_cell("print('x' * 5000)")])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    resources = {"metadata": {"path": str(tmp_path)},
                 "nbgrader": {"assignment": "max_pool_backward", "notebook": "max_pool_backward"}}
    nb, resources = OutOfProcessVerdicts(config=config).preprocess(nb, resources)  # the pipeline's order
    nb, _ = SafeExecute(config=config).preprocess(nb, resources)
    assert "printed more than 1 KiB" in nb.cells[0].source, nb.cells[0]
