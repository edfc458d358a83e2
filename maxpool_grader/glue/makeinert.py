"""``MakeInert``: a notebook shown as an untrusted notebook, on every page."""

from __future__ import annotations

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .everyassignment import protects
from .inert import inert_notebook
from .thisexercise import is_exercise


class MakeInert(Preprocessor):
    """Student content made inert (module doc), for ``Autograde.autograde_preprocessors``
    (after the notebook ran) and ``HTMLExporter.preprocessors`` (every page). At autograde,
    another assignment's notebook is left as it ran when ``c.EveryAssignment.inert`` is off;
    a page is always made inert."""

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        if not isinstance(self.parent, HTMLExporter) and "nbgrader" in (resources or {}) \
                and not is_exercise(self, resources) and not protects(self, "inert"):
            return nb, resources
        return inert_notebook(nb), resources
