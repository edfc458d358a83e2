"""``MakeInert``: a notebook shown as an untrusted notebook, on every page."""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .inert import inert_notebook


class MakeInert(Preprocessor):
    """Student content made inert (module doc), for ``Autograde.autograde_preprocessors``
    (after the notebook ran) and ``HTMLExporter.preprocessors`` (every page)."""

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        return inert_notebook(nb), resources
