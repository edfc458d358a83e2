"""What the exercise needs in a course's ``nbgrader_config.py``, declared once (``SETTINGS``),
and ``apply(c, assignment=...)``, which sets on the course's ``c`` only what the course has not
set itself: every setting the instructor made stays theirs.

``maxpool-grader add-to-course`` gives an instructor's own course one block that imports this
module and calls ``apply`` (course/add_exercise.py writes it). This repository's own
``nbgrader_config.py`` spells the same settings out line by line, each with why it is there;
tests/test_add_to_course.py checks that it sets exactly ``SETTINGS``.

``missing(config)``: what of the exercise's plugins a course's own settings leave out, for
which its grading guarantees do not hold (``doctor`` fails on it, add-to-course says so).
The course's id, exchange and gradebook are the course's own: nothing here sets them."""

from __future__ import annotations

from .inert import TEMPLATE_DIRS
from .patches import install

GLUE = "maxpool_grader.glue."
SETTINGS: dict[str, dict[str, object]] = {  # section -> name -> value, as nbgrader_config.py sets them
    # reading a submission: kept readable, its HTML inert, pasted and deleted graded cells put right
    "Autograde": {
        "exporter_class": GLUE + "tolerantnotebookexporter.TolerantNotebookExporter",
        "sanitize_preprocessors": [
            GLUE + "makesubmissioninert.MakeSubmissionInert", "nbgrader.preprocessors.ClearOutput",
            GLUE + "deduplicatecells.DeduplicateCells", "nbgrader.preprocessors.OverwriteKernelspec",
            GLUE + "restoremissingcells.RestoreMissingCells", "nbgrader.preprocessors.CheckCellMetadata"],
        # running it: every graded test decided out of process, student code in the sealed box
        "autograde_preprocessors": [
            GLUE + "restorecellorder.RestoreCellOrder", GLUE + "outofprocessverdicts.OutOfProcessVerdicts",
            GLUE + "safeexecute.SafeExecute", "nbgrader.preprocessors.IgnorePattern",
            "nbconvert.preprocessors.ClearMetadataPreprocessor", GLUE + "showrubric.ShowRubric",
            "nbgrader.preprocessors.LimitOutput", GLUE + "makeinert.MakeInert",
            GLUE + "keephandgrades.KeepHandGrades", "nbgrader.preprocessors.AssignLatePenalties",
            "nbgrader.preprocessors.CheckCellMetadata"],
    },
    "AssignLatePenalties": {"plugin_class": GLUE + "latepolicy.LatePolicy"},  # c.LatePolicy
    "Execute": {"record_timing": False},  # grading the same notebook twice writes the same file
    "ExportApp": {"plugin_class": GLUE + "safecsvexport.SafeCsvExport"},  # grades.csv no spreadsheet runs
    "OverwriteCells": {"add_missing_cells": True},  # a deleted test cell is still graded
    # the feedback: no hidden test's code, Part A's model answer after the deadline, the summary first
    "GenerateFeedback": {
        "preprocessors": [
            "nbgrader.preprocessors.GetGrades", "nbgrader.preprocessors.ClearHiddenTests",
            GLUE + "modelanswer.ModelAnswer", GLUE + "feedbackexplanations.FeedbackExplanations",
            GLUE + "feedbacksummary.FeedbackSummary", "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"],
        "exporter_class": GLUE + "feedbackexporter.FeedbackExporter",
    },
    "FeedbackExporter": {"template_name": "maxpool_feedback", "optimistic_validation": True},
    "TolerantNotebookExporter": {"optimistic_validation": True},
    # every page: student content inert, formulas as MathML, no MathJax from a CDN
    "HTMLExporter": {
        "preprocessors": [GLUE + "makeinert.MakeInert"],
        "filters": {"markdown2html": GLUE + "markdowntohtml.MarkdownToHTML"},
        "extra_template_basedirs": TEMPLATE_DIRS,
    },
}
# The settings whose plugins the exercise's grades and feedback rely on: a course's own value
# must hold every one of the exercise's (``missing``). The others are the course's to choose.
ESSENTIAL = ("Autograde.exporter_class", "Autograde.sanitize_preprocessors", "Autograde.autograde_preprocessors",
             "GenerateFeedback.preprocessors")


def wanted(assignment: str | None = None) -> dict[str, object]:
    """Every setting the exercise makes, as "Section.name" -> value; ``assignment``: the
    exercise's id in the course (``c.ThisExercise``, its notebook of the same name)."""
    found = {f"{section}.{name}": value for section, names in SETTINGS.items() for name, value in names.items()}
    if assignment:
        found.update({"ThisExercise.assignment": assignment, "ThisExercise.notebook": assignment})
    return found


def apply(c, assignment: str | None = None) -> list[str]:
    """Set on ``c`` (a course's config) every setting of ``wanted(assignment)`` it does not set
    yet, and install the patches of nbgrader (glue/patches.py); returns what it set."""
    added = []
    for key, value in wanted(assignment).items():
        if key not in c:  # "Section.name" in a traitlets Config: set there, by whatever means
            section, name = key.split(".")
            setattr(c[section], name, _copy(value))
            added.append(key)
    install()
    return added


def missing(config) -> list[str]:
    """What of the exercise's plugins the course's own settings leave out: one sentence per
    ``ESSENTIAL`` setting whose value lacks some of them (empty when none does)."""
    problems = []
    for key in ESSENTIAL:
        ours = wanted()[key]
        section, name = key.split(".")
        theirs = config[section][name] if key in config else ours
        if isinstance(ours, list):
            lacking = [step for step in ours if step.startswith(GLUE) and step not in list(theirs)]
            if lacking:
                problems.append(f"c.{key} lacks the exercise's {', '.join(short(step) for step in lacking)}")
        elif theirs != ours:
            problems.append(f"c.{key} is {theirs!r}, not the exercise's {short(ours)}")
    return problems


def short(value: object) -> str:
    """A setting's value as a line of a report: a class by its name, a list by its classes."""
    if isinstance(value, str) and "." in value and value.rsplit(".", 1)[1][:1].isupper():
        return value.rsplit(".", 1)[1]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "[" + ", ".join(short(item) for item in value) + "]"
    return repr(value)


def _copy(value):
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
