"""Grading a class: ``maxpool-grader grade``'s run and what it leaves.

* ``grade``: the run as named steps (release, roster, autograde on a backend, feedback,
  ``grades.csv``, the report, the score table); ``state``: what needs grading again;
  ``interrupt``: Ctrl-C during the run; ``rehearsal``: ``grades.csv`` and the report tried
  before anything is graded;
* ``report`` (with ``templates/report.html.j2``) and ``similarity``: the class report
  (HTML, PNG, JSON) and pairs of near-identical student code; ``table``: the score table.

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``, ``glue``, ``course``, ``backend``, ``cluster``.
"""
