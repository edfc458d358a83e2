"""The course on disk, shared by every command: what the capability packages share.

* ``directory``: the course's folders (nbgrader's ``CourseDirectory.format_path``), its
  configuration (``nbgrader_config.py``, read here and nowhere else), which of its
  assignments is the exercise (``c.ThisExercise``), nbgrader's API and ``export`` run in the
  command's own process, the commands' verbosity;
* ``jobs``: what one grading job reports (``JobResult``);
* ``roster``: the roster CSV into nbgrader's student table, and the names it gives;
* ``files``: a state file replaced whole, never half written; a SQLite file synced at every
  commit; which files git would keep;
* ``add_exercise``: the exercise put into an instructor's own course (``add-to-course``): its
  notebook in ``source/``, one marked block in ``nbgrader_config.py``, refused before anything
  is written when it would not fit.

May import: ``names``, ``glue``.
"""
