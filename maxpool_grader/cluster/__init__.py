"""Grading past one machine: a Dask cluster as a grading backend.

* ``coordinator``: submissions sent to the cluster's workers, each graded notebook
  recorded here, in the course's gradebook;
* ``worker``: what a Dask worker does with one (a private course made of the bundle, the
  sealed box, plain nbgrader autograde), and the checks that refuse a worker;
* ``tls``: the course's certificates and who may connect.

May import: ``names``, ``sandbox``, ``glue``, ``course``, ``backend``.
"""
