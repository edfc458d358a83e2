"""Grading package of the max_pool_backward nbgrader course.

Students never receive it: it is installed in the grading environment only. Five layers,
each importing only from the ones above it in this list (tests/test_layout.py checks):

* ``names``: the course's names and metadata keys, imported by everything.
* ``exercise``: what max pooling's backward pass is and how an answer is judged: the
  output-grid rule, the reference, the checks, the bug catalogue, the smallest failing
  input and the words a student reads. Pure NumPy; knows nothing of processes or nbgrader.
* ``isolation``: where a student's code runs and what it can reach: the sealed box
  (bubblewrap, cgroups), the kernel, the out-of-process verdict, the warm-start zygotes.
* ``glue``: nbgrader's side: the preprocessors ``nbgrader_config.py`` plugs into
  autograde and feedback, and their one settings class (``c.SealedBox``).
* ``operations``: the instructor's commands (``maxpool-grader``): grading a class in
  parallel or on a cluster, its incremental state, the report, roster and LMS files.

``maxpool_grader.checks.run_check`` stays importable under that name: the hidden test
cells of committed and submitted notebooks call it.
"""

import sys as _sys

# jsonschema, which nbformat imports (so every command, worker and nbgrader run of ours),
# builds about 35 Earley parsers of rfc3987-syntax when it is imported: 2 s at each process
# start on a 2-core machine (python-jsonschema/jsonschema#1428). They check only the "iri"
# formats, which no Jupyter or nbgrader schema uses, so a process that imports this package
# first goes without them: jsonschema then leaves those two formats unchecked.
if "jsonschema" not in _sys.modules:
    _sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

from .exercise.reference import max_pool_backward, max_pool_forward  # noqa: E402

__all__ = ["max_pool_backward", "max_pool_forward"]
