"""The instructor's operations: the ``maxpool-grader`` command (``cli``).

* ``grade`` runs grading as named steps: release, roster, autograde (``parallel``: worker
  processes on this machine; ``cluster`` and ``cluster_worker``: Dask workers), feedback,
  ``grades.csv``, the report and the score table (``table``); ``state`` decides what needs
  grading again; ``course`` runs nbgrader in the course directory.
* ``report`` (with ``templates/report.html.j2``) and ``similarity``: the class report.
* ``roster`` and ``lms``: the class list in, the LMS's zips in and its grade CSV out.

Everything a student wrote is graded through nbgrader with the glue's preprocessors;
nothing here runs student code itself.
"""
