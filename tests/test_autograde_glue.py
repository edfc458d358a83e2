"""The nbgrader glue on its own (tests/test_untrusted.py runs it through nbgrader)."""

from __future__ import annotations

import pytest
from helpers import RELEASE_NOTEBOOK
from nbconvert.preprocessors import Preprocessor

from maxpool_grader.glue.tolerantnotebookexporter import TolerantNotebookExporter
from maxpool_grader.names import NOTES_KEY


class Broken(Preprocessor):
    def preprocess(self, nb, resources):
        raise KeyError("IPython")  # what an import race in the grader once raised


def test_an_error_after_reading_is_the_graders_not_an_unreadable_notebook():
    exporter = TolerantNotebookExporter()
    exporter.register_preprocessor(Broken, enabled=True)
    with pytest.raises(KeyError):
        exporter.from_filename(str(RELEASE_NOTEBOOK))


def test_a_notebook_that_is_not_json_is_graded_as_empty_with_a_note(tmp_path):
    broken = tmp_path / "max_pool_backward" / "max_pool_backward.ipynb"
    broken.parent.mkdir()
    broken.write_text(RELEASE_NOTEBOOK.read_text()[:500])
    # the exercise's notebook, as nbgrader names it from the folder it grades (the course: the repository)
    found = {"nbgrader": {"assignment": "max_pool_backward", "notebook": "max_pool_backward"}}
    output, _ = TolerantNotebookExporter().from_filename(str(broken), found)
    assert "it is not JSON" in output and NOTES_KEY in output
