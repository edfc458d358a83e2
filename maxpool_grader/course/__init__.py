"""The course on disk, shared by every command: what the capability packages share.

* ``directory``: the course's folders (nbgrader's ``CourseDirectory.format_path``), its
  configuration (``nbgrader_config.py``, read here and nowhere else), which of its
  assignments is the exercise (``c.ThisExercise``), nbgrader's API and ``export`` run in the
  command's own process, the commands' verbosity;
* ``jobs``: what one grading job reports (``JobResult``);
* ``roster``: the roster CSV into nbgrader's student table, and the names it gives;
* ``files``: a state file replaced whole, never half written; which files git would keep.

May import: ``names``, ``glue``.
"""
