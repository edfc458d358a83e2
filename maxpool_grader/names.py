"""The course's names, in one place: the assignment, its notebook's cells, the function
students write, the keys and tags the grader leaves in graded notebooks, and the service's
folder and the student ids it accepts."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent  # the grader package, all of it

ASSIGNMENT = "max_pool_backward"  # the assignment id, and its one notebook's name
FUNCTION = "max_pool_backward"  # what the students implement
SOLUTION_CELL = "max_pool_backward"  # grade ids of the notebook's cells
PART_A_CELL = "part_a_derivation"
PROVIDED_CELL = "provided_helpers"  # the forward pass every student gets, read-only
PROVIDED_TOOLS_CELL = "provided_tools"  # the checking tools (collapsed), read-only

NOTES_KEY = "maxpool_grader_notes"  # notebook metadata: the grader's notes for the student
REPORT_KEY = "maxpool_grader"  # cell metadata: a test's out-of-process verdict (passed, kind, bugs)
RESOURCES_KEY = "maxpool_grader"  # nbconvert resources: what the glue's preprocessors hand on
FORMAT_KEY = "maxpool_grader_nbformat"  # notebook metadata: the format serve converted an upload from
RUBRIC_TAG = "maxpool-part-a-rubric"  # cell tags (and ids) of the cells the grader adds
MODEL_ANSWER_TAG = "maxpool-part-a-model-answer"
NOTES_TAG = "grader-notes"
SUMMARY_TAG = "maxpool-feedback-summary"  # the summary at the top of the feedback
SERVE_DIR = Path(".maxpool-grader") / "serve"  # the service's state in the course: its queue, sign-in, LTI's
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # what the service accepts as a student id


def package_files() -> list[Path]:
    """Every file of the grader that can change a grade or a page: code and templates, in a
    fixed order (what the digests of grading/state.py and cluster/worker.py hash)."""
    return sorted(path for path in PACKAGE_DIR.rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc")


def grade_id(cell) -> str | None:
    """A cell's nbgrader grade id, or None (a cell the student added has no nbgrader metadata)."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
