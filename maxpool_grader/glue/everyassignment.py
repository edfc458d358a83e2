"""``EveryAssignment`` (``c.EveryAssignment``): what protects every assignment of the course,
not only this exercise (thisexercise.py), each on by default. What is the exercise's alone
(out-of-process verdicts, notes, the summary, Part A) never reaches another assignment."""

from __future__ import annotations

from traitlets import Bool
from traitlets.config import Configurable


class EveryAssignment(Configurable):
    """What the course does for every assignment's notebooks (module doc)."""

    sealed_box = Bool(True, help=(
        "Run every assignment's notebooks in the sealed box (c.SealedBox: bubblewrap, the caps, "
        "SafeExecute's time limits and output cap), not only this exercise's. False: another "
        "assignment's notebook runs in nbgrader's own kernel, unsandboxed, as stock nbgrader "
        "runs it.")).tag(config=True, unit="")
    inert = Bool(True, help=(
        "Make every assignment's submitted notebooks inert at autograde (HTML and scripts of "
        "markdown and outputs sanitized, as JupyterLab treats an untrusted notebook), not only "
        "this exercise's. False: another assignment's notebook is graded as sent; every page "
        "the course renders (c.HTMLExporter.preprocessors) stays inert.")).tag(config=True, unit="")
    safe_csv = Bool(True, help=(
        "Write every assignment's rows of grades.csv formula-safe (a ' before a name a "
        "spreadsheet would run as a formula), not only this exercise's. False: another "
        "assignment's names and ids as the gradebook holds them.")).tag(config=True, unit="")


def protects(owner, what: str) -> bool:
    """Whether ``what`` (a trait of EveryAssignment) applies to another assignment here."""
    return bool(getattr(EveryAssignment(config=owner.config), what))
