"""The nbgrader glue: one configurable preprocessor per step, as nbgrader's own are.

``nbgrader_config.py`` plugs them into ``nbgrader autograde`` (so plain nbgrader and
``maxpool-grader grade`` grade alike) and into the feedback:

* ``submission``: read whatever was submitted (``TolerantNotebookExporter``), put moved
  cells back (``RestoreCellOrder``), never follow a student's symbolic link;
* ``verdicts`` (``OutOfProcessVerdicts``) and ``execute`` (``SafeExecute``): the graded
  verdicts from a sandboxed process, and the notebook run in a sandboxed kernel; both
  read their limits from ``sealed_box.SealedBox`` (``c.SealedBox``);
* ``grades``: hand grades kept for unchanged answers (``KeepHandGrades``), Part A's
  rubric for the person grading (``ShowRubric``); ``notes``: the grader's notes cell;
* ``model_answer``, ``feedback_page``: the model answer and the student's feedback page;
  ``mathml``: formulas as MathML, read exactly as written, on every page nbgrader renders;
  ``inert`` and ``allow_list``: student content shown inert; ``deadline``: the
  assignment's deadline, read once for every page that depends on it;
* ``csv_export`` (``SafeCsvExport``): ``grades.csv`` that no spreadsheet runs;
* ``nbgrader_costs``: costs nbgrader pays again for every submission, paid once;

* ``patches``: every run-time change of nbgrader's code, each checked against the
  installed versions, applied by ``install()`` (``nbgrader_config.py`` calls it).

This layer uses the exercise and the isolation; the operations use it.
"""

from .patches import install

__all__ = ["install"]
