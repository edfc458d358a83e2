"""The instructor's operations: the ``maxpool-grader`` command (``cli``).

* ``grade`` runs grading as named steps: release, roster, autograde (``parallel``: worker
  processes on this machine, ``warm``: what is done once before they fork, ``jobs``: what
  one job reports; ``cluster``, ``cluster_worker`` and ``cluster_tls``: Dask workers and
  who may talk to them), feedback, ``grades.csv``, the report and the score table
  (``table``); ``state`` decides what needs grading again; ``course`` runs nbgrader in the
  course directory and reads its configuration (the one place that does).
* ``report`` (with ``templates/report.html.j2``) and ``similarity``: the class report.
* ``roster`` and ``lms``: the class list in, and the LMS's zips in (``lms_zip`` reads and
  checks a zip, ``lms_match`` says whose each upload is, ``lms_store`` writes it with
  nothing half-written); ``lms_export``: the grade CSV out.
* ``serve``: feedback while the assignment is open (``serve_cli``: its command line and
  ``tokens``; ``serve_policy``: ``c.Serve``; ``serve_queue``; ``serve_grading``: a worker's
  side; ``serve_exchange``: the exchange way; ``serve_tokens``: links and sessions;
  ``serve_handler``, ``serve_web``, ``serve_hub`` and ``serve_pages``: the web way, which
  the core is given and never imports).
* ``check`` (with ``check_cells`` and ``check_answer``): the source notebook against the
  grader; ``doctor``: which guarantees hold on this machine; ``settings_doc``:
  docs/settings.md made from the settings' declarations.

Everything a student wrote is graded through nbgrader with the glue's preprocessors;
nothing here runs student code itself.
"""
