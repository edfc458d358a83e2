"""Grading backends: where submissions are autograded, for ``grade`` and ``serve`` alike.

* ``interface``: ``GradingBackend`` (start, submit, stop) and ``WorkerDied``; the cluster
  package's ``DaskCluster`` is the other backend;
* ``pool``: ``LocalPool``, this machine's worker processes, forked from the command (one
  ``NbGraderAPI`` each; a submission's follow-up, its feedback, on the same worker);
* ``batch``: a class's submissions run on a backend, with ``progress`` shown;
* ``warm``: what the command does once before it forks the workers (their zygotes,
  started while it prepares; the warm-up they inherit);
* ``control``: the control submission a backend's workers grade before any grade is
  written (the reference solution and the blank release notebook, recorded by no one).

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``, ``glue``, ``course``.
"""
