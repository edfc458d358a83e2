"""The steps after grading, rehearsed before it: ``grades.csv`` and the class report made once
from the gradebook as it is, into a folder thrown away, before any submission is graded.

The control submission (backend/control.py) takes a submission's own steps (autograde, then its
feedback page) before any grade is written; ``grades.csv`` and the report are made from the
gradebook once every submission is graded, and a course whose export plugin or report failed
there had its grades recorded already, the CSV and the report missing. Rehearsed, such a fault
stops the run before anything is graded, with a sentence naming the step, the error and the fix
where it is known.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..course.directory import export_grades
from ..names import ASSIGNMENT
from . import report, similarity

REHEARSAL_FAILED = "A step after grading failed when it was tried first"  # how its sentence starts


def rehearse(course: Path, db_url: str, assignment: str = ASSIGNMENT,
             similarity_threshold: float = similarity.THRESHOLD) -> str:
    """"" when ``grades.csv`` and the report can be made, else what failed, in a sentence."""
    with tempfile.TemporaryDirectory(prefix="maxpool-rehearsal-") as scratch:
        try:
            exported = export_grades(course, db_url, Path(scratch) / "grades.csv")
        except Exception as problem:  # noqa: BLE001  a plugin that cannot be loaded raises (traitlets)
            exported = {"success": False, "error": f"{type(problem).__name__}: {problem}"}
        if not exported["success"]:
            said = [line for line in ((exported.get("log") or "") + "\n" + str(exported.get("error") or "")
                                      ).splitlines() if line.strip()]
            return (f"{REHEARSAL_FAILED}, so nothing was graded or recorded: nbgrader export, which writes "
                    f"grades.csv with the course's plugin (c.ExportApp.plugin_class), failed"
                    f"{': ' + said[-1].strip()[:300] if said else ''}. Fix the plugin or its setting in "
                    "nbgrader_config.py (nbgrader export shows the same error).")
        try:
            report.write_report(course, db_url, assignment, similarity_threshold, folder=Path(scratch) / "report")
        except Exception as problem:  # noqa: BLE001  whatever stops the report stops it after grading
            return (f"{REHEARSAL_FAILED}, so nothing was graded or recorded: the class report could not be made "
                    f"({type(problem).__name__}: {str(problem)[:300]}).")
    return ""
