"""Grading package of the max_pool_backward nbgrader course.

Students never receive it: it is installed in the grading environment only. Twelve layers,
first to last; a package imports only from the layers before its own, never from a later
one nor from a sibling of its own layer (tests/test_layout.py checks, and
docs/development.md#package draws it). Each package's docstring says what it holds and what
it may import.

* ``names``: the course's names and metadata keys, imported by everything.
* ``exercise``: what max pooling's backward pass is and how an answer is judged. Pure
  NumPy; knows nothing of processes or nbgrader.
* ``sandbox``: where a student's code runs and what it can reach (bubblewrap, cgroups, the
  kernel, warm-start zygotes); knows nothing of the exercise.
* ``verdict``: every graded test decided in the grader, from a sandboxed process's numbers.
* ``glue``: nbgrader's side: the plugins ``nbgrader_config.py`` names, one class per file.
* ``course``: the course on disk (folders, configuration, roster), shared by every command.
* ``backend``: the grading backend interface and this machine's pool of workers.
* ``cluster``: the same backend on a Dask cluster.
* ``grading``: ``grade``'s run, its state, the class report.
* ``lti``: LTI 1.3, the LMS's launches, roster and gradebook, which ``serve`` uses.
* ``serve``, ``lms`` and ``authoring``: siblings, none importing another: feedback while the
  assignment is open; an LMS's zips in and grades out; ``check`` of the source notebook.
* ``cli``: the ``maxpool-grader`` command, on top.

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
