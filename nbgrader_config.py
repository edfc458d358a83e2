"""nbgrader configuration of the max_pool_backward course (this directory is the course root).

The grading logic and the reference solution live in the installed package
``maxpool_grader`` (see README.md); nothing next to the source notebook is shipped
except the notebook itself.
"""

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "max_pool_backward"

# Student code gets this long per cell before nbgrader interrupts it. The hidden
# tests of a correct solution take well under a second each.
c.Execute.timeout = 30
# No per-cell execution timestamps: grading the same notebook twice writes the same file.
c.Execute.record_timing = False

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A student who deletes a test cell still gets that test graded (nbgrader issue 1682).
c.OverwriteCells.add_missing_cells = True

# Feedback shows each hidden test cell's title, points and failure message, never its
# code: the hidden region is stripped again before rendering (nbgrader issue 917), and a
# failed check renders only its message, no traceback (see maxpool_grader/student_call.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
