"""nbgrader configuration of the max_pool_backward course (this directory is the course root).

The grading logic and the reference solution live in the installed package
``maxpool_grader`` (see docs/development.md#package); nothing next to the source notebook is shipped
except the notebook itself.
"""

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

# nbgrader logs an error in this file and goes on without the file's settings, grading with
# its defaults (student code outside the sealed box): stop instead (a SystemExit stops it).
try:
    import maxpool_grader.glue
except ImportError as problem:
    raise SystemExit(f"nbgrader_config.py: {problem}. This course grades with the maxpool_grader package: "
                     "install it where nbgrader runs (pip install -e . in the course directory).") from None

c.CourseDirectory.course_id = "max_pool_backward"
# The exchange (release_assignment, submit, collect, feedback) in a folder of the course
# itself, made on first use, so the course works as shipped on one machine. On a shared
# JupyterHub every user must reach it: set /srv/nbgrader/exchange there (docs/operations.md#exchange).
import os  # noqa: E402

c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")

# ---------------------------------------------------------------- grading untrusted code
# See docs/security.md#guarantees. Every graded test is decided out of the
# student's process (maxpool_grader/verdict/verdicts.py): the code cells before the tests
# run in a separate, sandboxed process with limits, and the notebook's own test cell
# can only lower that verdict. The tests of a correct solution take milliseconds.
c.Autograde.exporter_class = "maxpool_grader.glue.tolerantnotebookexporter.TolerantNotebookExporter"
# What a notebook shows is made inert, as JupyterLab treats an untrusted notebook
# (docs/security.md#browser): first as the student sent it, then after it ran.
c.Autograde.sanitize_preprocessors = [
    "maxpool_grader.glue.makesubmissioninert.MakeSubmissionInert",
    "nbgrader.preprocessors.ClearOutput",
    # a pasted copy of a graded cell, a deleted one: graded, with a note (nbgrader's own steps
    # failed the submission with a KeyError)
    "maxpool_grader.glue.deduplicatecells.DeduplicateCells",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "maxpool_grader.glue.restoremissingcells.RestoreMissingCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "maxpool_grader.glue.restorecellorder.RestoreCellOrder",
    "maxpool_grader.glue.outofprocessverdicts.OutOfProcessVerdicts",
    "maxpool_grader.glue.safeexecute.SafeExecute",  # nbgrader's Execute, made safe
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "maxpool_grader.glue.showrubric.ShowRubric",  # Part A's rubric under the answer, for formgrader
    "nbgrader.preprocessors.LimitOutput",
    "maxpool_grader.glue.makeinert.MakeInert",  # what the notebook shows, as an untrusted notebook
    "maxpool_grader.glue.keephandgrades.KeepHandGrades",  # nbgrader's SaveAutoGrades, keeping hand grades
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# The limits, caps, time budgets and the late policy are not repeated here: each one's
# default, declared once in maxpool_grader, is the course's (docs/settings.md lists them,
# made from that declaration). Set one here only where this course differs, for example
#   c.SealedBox.sandbox = "required"  # refuse to grade without bubblewrap and a cgroup
# The late policy (maxpool-grader collect-lms stores the due date and each submission's
# time), c.LatePolicy in docs/settings.md:
c.AssignLatePenalties.plugin_class = "maxpool_grader.glue.latepolicy.LatePolicy"
# Every run-time patch of nbgrader's code, each checked against the installed versions
# first (maxpool_grader/glue/patches.py): a submission folder without its notebook is graded
# (0, with the reason), a student's symbolic link is never followed when nbgrader copies
# files, the cells' metadata schema is checked once, one database engine is reused.
maxpool_grader.glue.install()
# No per-cell execution timestamps: grading the same notebook twice writes the same file.
c.Execute.record_timing = False

# grades.csv (nbgrader export, and maxpool-grader grade through it) quoted, and no name in it
# a spreadsheet would run as a formula (maxpool_grader/glue/safecsvexport.py)
c.ExportApp.plugin_class = "maxpool_grader.glue.safecsvexport.SafeCsvExport"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A student who deletes a test cell still gets that test graded (nbgrader issue 1682).
c.OverwriteCells.add_missing_cells = True

# Feedback shows each hidden test cell's title, points and failure message, never its
# code: the hidden region is stripped again before rendering (nbgrader issue 917), and a
# failed check renders only its message, no traceback (see maxpool_grader/exercise/student_call.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "maxpool_grader.glue.modelanswer.ModelAnswer",  # Part A's model answer, in the final feedback only
    # the tests' full explanations in the final feedback only; before it, nothing of the rubric
    "maxpool_grader.glue.feedbackexplanations.FeedbackExplanations",
    "maxpool_grader.glue.feedbacksummary.FeedbackSummary",  # the summary first, each explanation once
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The page a student reads top-down: the summary, then the tests by their titles
# (maxpool_grader/glue/templates/maxpool_feedback, which extends nbgrader's feedback page).
c.GenerateFeedback.exporter_class = "maxpool_grader.glue.feedbackexporter.FeedbackExporter"
c.FeedbackExporter.template_name = "maxpool_feedback"
# nbconvert checks the whole notebook after every step of an export, 24 times per graded
# submission; its own option checks it once, after the last step (an invalid notebook still
# fails the export, as before)
c.TolerantNotebookExporter.optimistic_validation = True
c.FeedbackExporter.optimistic_validation = True
# Every HTML page nbgrader makes here (feedback, formgrader's grading page) shows student
# content inert again (a notebook graded before counts too), formulas as MathML that
# render without a network, and no MathJax from a CDN: the page's own
# Content-Security-Policy stands in its place (maxpool_grader/glue/templates/classic/):
# the course's templates first, then nbgrader's own (formgrader's and the feedback's).
# Markdown is rendered with its formulas held out of it, so that every formula reads as
# written ($i^*$ once lost its star to emphasis): maxpool_grader/glue/mathml.py.
from maxpool_grader.glue.inert import TEMPLATE_DIRS  # noqa: E402

c.HTMLExporter.preprocessors = ["maxpool_grader.glue.makeinert.MakeInert"]
c.HTMLExporter.filters = {"markdown2html": "maxpool_grader.glue.markdowntohtml.MarkdownToHTML"}
c.HTMLExporter.extra_template_basedirs = TEMPLATE_DIRS
