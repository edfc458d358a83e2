"""An LMS's files in and grades out: ``maxpool-grader collect-lms`` and ``export-lms``.

* ``intake``: a Canvas or Moodle zip collected into ``submitted/``, each upload's time kept
  for the late policy (glue/latepolicy.py);
* ``zip_upload``: the zip read and checked (sizes, names, links); ``match``: whose each
  upload is, by LMS id or a name only one LMS user has; ``store``: each student's files
  written atomically; ``tree``: folders of any depth walked and removed without recursion;
* ``export``: grades out as CSVs no spreadsheet runs;
* ``cli``: the ``collect-lms`` and ``export-lms`` command lines.

May import: ``names``, ``glue``, ``course``.
"""
