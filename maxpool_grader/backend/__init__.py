"""Grading backends: where a batch of submissions is autograded.

* ``pool``: this machine's worker processes, forked from the command (one ``NbGraderAPI``
  each, the feedback made right after each grading on the same workers);
* ``warm``: what the command does once before it forks them (their zygotes, started while
  it prepares; the warm-up they inherit).

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``, ``glue``, ``course``.
"""
