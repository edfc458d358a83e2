"""The nbgrader glue: the plugins ``nbgrader_config.py`` names, one class per file, each file
named after its class as nbgrader's own ``preprocessors/`` are.

``nbgrader_config.py`` plugs them into ``nbgrader autograde`` (so plain nbgrader and
``maxpool-grader grade`` grade alike) and into the feedback:

* reading a submission: ``tolerantnotebookexporter`` (``TolerantNotebookExporter``),
  ``restorecellorder`` (``RestoreCellOrder``), ``makesubmissioninert``
  (``MakeSubmissionInert``), ``deduplicatecells`` (``DeduplicateCells``: a pasted graded
  cell), ``restoremissingcells`` (``RestoreMissingCells``: a deleted one); ``submission``:
  what they share, and the patches that never follow a student's symbolic link and grade a
  folder without its notebook; ``collecttime``: ``nbgrader collect``'s time of a submission,
  from what its student cannot set back, and its copy without links;
* running it: ``outofprocessverdicts`` (``OutOfProcessVerdicts``) and ``safeexecute``
  (``SafeExecute``, with ``outputs``: what a cell may show), both reading their limits
  from ``sealedbox`` (``SealedBox``, ``c.SealedBox``);
* saving it: ``keephandgrades`` (``KeepHandGrades``), ``showrubric`` (``ShowRubric``),
  ``latepolicy`` (``LatePolicy``); ``notes``: the grader's notes cell; ``recording``: the
  gate a grading worker may put before grades are written (its control submission);
* the feedback: ``modelanswer`` (``ModelAnswer``), ``feedbackexplanations``
  (``FeedbackExplanations``), ``feedbacksummary`` (``FeedbackSummary``), ``feedbackexporter``
  (``FeedbackExporter``), ``makeinert``
  (``MakeInert``) and ``markdowntohtml`` (``MarkdownToHTML``); the functions they share:
  ``mathml`` (formulas as MathML, read exactly as written), ``inert`` and ``allow_list``
  (student content shown inert), ``deadline`` (read once for every page that depends on it);
* ``safecsvexport`` (``SafeCsvExport``): ``grades.csv`` that no spreadsheet runs, and
  ``csv_cell``, the cell every CSV of ours is written with;
* ``thisexercise`` (``ThisExercise``, ``c.ThisExercise``): which assignment and notebook of
  the course is this exercise; every plugin acts on that notebook alone, every other one
  goes through nbgrader's own steps (what protects every assignment excepted);
  ``everyassignment`` (``EveryAssignment``, ``c.EveryAssignment``): what protects every
  assignment (the sealed box, inert notebooks, formula-safe CSV), each a setting;
* ``exercise_config``: what the exercise needs in a course's ``nbgrader_config.py``, declared
  once, and ``apply(c, assignment=...)``, which sets only what the course did not set (the
  block ``maxpool-grader add-to-course`` adds to an instructor's course calls it);
* ``nbgrader_costs``: costs nbgrader pays again for every submission, paid once;
  ``patches``: every run-time change of nbgrader's code, each checked against the
  installed versions, applied by ``install()`` (``nbgrader_config.py`` calls it).

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``.
"""

from .patches import install

__all__ = ["install"]
