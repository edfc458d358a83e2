"""Every change this package makes to nbgrader's code (and the one it makes to nbclient's)
at run time, in one list, installed by ``install()`` from ``nbgrader_config.py``.

A patch replaces a function or object of another package, so it holds only for the code
it was written against. Each entry names what it replaces, the versions it was written
and tested for, and the upstream report; with any other version installed, ``install()``
refuses before anything is graded, naming the patch and what to check, rather than
grading with a patch that may no longer fit. To allow a new version: read the replaced
code in it, run the tests, then widen ``written_for``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Callable

from packaging.specifiers import SpecifierSet
from packaging.version import Version

NBGRADER = ("nbgrader", "==0.9.6")


@dataclass(frozen=True)
class Patch:
    """One run-time change of another package's code."""

    name: str
    replaces: str  # the dotted name of what it replaces, overrides or quiets (tests resolve it)
    why: str
    written_for: tuple[tuple[str, str], ...]  # (distribution, version specifier)
    upstream: str  # the upstream report, or why there is none
    apply: Callable[[], None] | None  # None: an override in a subclass, nothing to install


# Each patch imports its module (and that module the nbgrader code it patches) as install()
# applies it, after checking the installed versions: nbgrader_config.py imports this module,
# and another nbgrader must be refused by name (PatchVersionError), never by an ImportError.
def _grade_folders_without_notebooks() -> None:
    from nbgrader.converters import Autograde  # patched: only after the version check (above)

    from .submission import grade_folders_without_notebooks  # only after the version check (above)
    grade_folders_without_notebooks(Autograde)


def _skip_symbolic_links() -> None:
    from .submission import skip_symbolic_links  # only after the version check (above)
    skip_symbolic_links()


def _read_timestamps_safely() -> None:
    from .submission import read_timestamps_safely  # only after the version check (above)
    read_timestamps_safely()


def _stamp_collected_submissions() -> None:
    from .collecttime import stamp_collected_submissions  # only after the version check (above)
    stamp_collected_submissions()


def _quiet_known_nbgrader_warnings() -> None:
    from .submission import quiet_known_nbgrader_warnings  # only after the version check (above)
    quiet_known_nbgrader_warnings()


def _check_metadata_quickly() -> None:
    from .nbgrader_costs import check_metadata_quickly  # only after the version check (above)
    check_metadata_quickly()


def _reuse_database_engines() -> None:
    from .nbgrader_costs import reuse_database_engines  # only after the version check (above)
    reuse_database_engines()


def _open_gradebooks_quickly() -> None:
    from .nbgrader_costs import open_gradebooks_quickly  # only after the version check (above)
    open_gradebooks_quickly()


def _label_score_boxes() -> None:
    from nbgrader.server_extensions.formgrader import handlers  # patched: only after the version check (above)

    if getattr(handlers.SubmissionHandler.write, "labels_score_boxes", False):
        return
    write = handlers.SubmissionHandler.write

    def labelled(self, chunk):
        return write(self, label_score_boxes(chunk) if isinstance(chunk, str) else chunk)
    labelled.labels_score_boxes = True
    handlers.SubmissionHandler.write = labelled


_BOX = re.compile(r'<(input|textarea)\b[^>]*\bclass="(score|extra-credit|comment) tabbable"[^>]*>')
_BOX_ID = re.compile(r'\bid="([^"]*)"')
_BOX_NAME = {"score": "Score for {}", "extra-credit": "Extra credit for {}", "comment": "Comment on {}"}


def label_score_boxes(page: str) -> str:
    """Formgrader's grading page with a name for each score box, extra-credit box and comment box,
    which nbgrader's template gives none (a screen reader said "spin button" and nothing else)."""
    def named(match: re.Match) -> str:
        found = _BOX_ID.search(match[0])
        if found is None or "aria-label=" in match[0]:
            return match[0]
        grade_id = found[1].removesuffix("_extra_credit").removesuffix("-comment")
        return f'<{match[1]} aria-label="{_BOX_NAME[match[2]].format(grade_id)}"{match[0][len(match[1]) + 1:]}'
    return _BOX.sub(named, page)


PATCHES: tuple[Patch, ...] = (
    Patch("grade_folders_without_notebooks", "nbgrader.converters.Autograde.init_notebooks",
          "a submission folder without the notebook (or with it renamed) gets a 0 and the reason, "
          "not silence or a failed run", (NBGRADER,),
          "jupyter/nbgrader#1219, #1302 (renamed notebook fails the submission), #744 (empty folder)",
          _grade_folders_without_notebooks),
    Patch("skip_symbolic_links", "nbgrader.converters.base.find_all_files",
          "a link planted in a submission is not followed when nbgrader copies its files into "
          "autograded/ and feedback/, and a FIFO, socket or device there is left out (shutil.SpecialFileError "
          "failed the submission)", (NBGRADER,), "none filed: found here by attacking the course",
          _skip_symbolic_links),
    Patch("read_timestamps_safely", "nbgrader.coursedir.CourseDirectory.get_existing_timestamp",
          "a submission's timestamp.txt that does not parse counts as none (nbgrader calls self.fail, which "
          "CourseDirectory lacks: AttributeError, never graded); it is read without following a link, from a "
          "regular file only, at most 256 bytes", (NBGRADER,),
          "none filed yet (jupyter/nbgrader, nbgrader/coursedir.py get_existing_timestamp)",
          _read_timestamps_safely),
    Patch("stamp_collected_submissions", "nbgrader.exchange.default.collect.ExchangeCollect._path_to_record",
          "collect counts a submission as made no earlier than the last change (ctime) of its inbound folder's "
          "files, which the student cannot set back, not at the time its name and timestamp.txt state; a name "
          "whose time does not parse no longer stops the collect; with ExchangeCollect.do_copy, links, FIFOs and "
          "devices in an inbound folder are left out (copytree followed links into the instructor's files); a "
          "folder too large is left with an error, collect exits 1, and the student's submission collected "
          "before it is kept (copy_files deleted it first); every line it logs is printable (folder names are "
          "the students')",
          (NBGRADER,), "jupyter/nbgrader#1104 (open: timestamps can be altered); links: none filed, found here",
          _stamp_collected_submissions),
    Patch("quiet_known_nbgrader_warnings", "nbgrader.api.Gradebook.update_or_create_submission",
          "a warnings filter for the one SQLAlchemy autoflush warning this prints three times per new "
          "submission",
          (NBGRADER, ("sqlalchemy", ">=2,<3")), "none filed: the objects are added right after",
          _quiet_known_nbgrader_warnings),
    Patch("check_metadata_quickly", "nbgrader.nbgraderformat.common.jsonschema",
          "the schema of nbgrader's cell metadata checked once per process, not for every cell",
          (NBGRADER,), "none filed: found here by profiling a grading worker", _check_metadata_quickly),
    Patch("reuse_database_engines", "nbgrader.api.create_engine",
          "one SQLAlchemy engine per gradebook and process, not one per Gradebook object",
          (NBGRADER, ("sqlalchemy", ">=2,<3")), "none filed: found here by profiling a grading worker",
          _reuse_database_engines),
    Patch("open_gradebooks_quickly", "nbgrader.api.Gradebook.__init__",
          "a Gradebook of a database this process (or its parent) set up already only connects: no listing "
          "and creating of tables, no course check, each of the ten times a submission opens one",
          (NBGRADER, ("sqlalchemy", ">=2,<3")), "none filed: found here by profiling a grading worker",
          _open_gradebooks_quickly),
    Patch("label_score_boxes", "nbgrader.server_extensions.formgrader.handlers.SubmissionHandler.write",
          "formgrader's grading page gives its score, extra-credit and comment boxes no label (WCAG 4.1.2, "
          "axe's 'label'): each gets an aria-label naming the cell it grades", (NBGRADER,),
          "none filed yet (jupyter/nbgrader has no report of it, searched 2026-11-26); the report to file, with "
          "the template fix, is in docs/instructor.md#formgrader-labels", _label_score_boxes),
    Patch("KeepHandGrades.preprocess", "nbgrader.preprocessors.SaveAutoGrades.preprocess",
          "overridden in KeepHandGrades with nbgrader's own rules for a grade and a comment (_add_score, "
          "_add_comment) copied, committed once per notebook instead of once per cell",
          (NBGRADER,), "none filed: found here by profiling a grading worker", None),
    Patch("DeduplicateCells.preprocess", "nbgrader.preprocessors.DeduplicateIds.preprocess",
          "overridden in DeduplicateCells: of a pasted graded cell's copies the one in the assignment's place "
          "is graded and the others lose their grading data entirely (an empty entry failed the submission "
          "with KeyError: 'grade_id' in OverwriteCells.add_missing_task_cells)",
          (NBGRADER,), "jupyter/nbgrader#1083 (open); PR #1753 (open, not merged)", None),
    Patch("RestoreMissingCells.add_missing_grade_cells",
          "nbgrader.preprocessors.OverwriteCells.add_missing_grade_cells",
          "overridden in RestoreMissingCells: a deleted graded cell goes after the nearest earlier assignment "
          "cell the notebook still has (nbgrader's assumes a graded one: KeyError: 'part_a_question')",
          (NBGRADER,), "none filed yet: introduced with add_missing_cells, jupyter/nbgrader PR #1770", None),
    Patch("RestoreMissingCells.add_missing_task_cells", "nbgrader.preprocessors.OverwriteCells.add_missing_task_cells",
          "overridden in RestoreMissingCells: task cells looked up only among cells with grading data",
          (NBGRADER,), "jupyter/nbgrader#1083 (open)", None),
    Patch("SafeExecute._update_display_id", "nbclient.NotebookClient._update_display_id",
          "overridden (a private method) in SafeExecute: display updates would rewrite outputs of earlier "
          "cells past the output cap",
          (NBGRADER, ("nbclient", ">=0.10,<0.12")), "none filed: a cap of this course's", None),
    Patch("FeedbackExporter._create_environment", "nbconvert.exporters.TemplateExporter._create_environment",
          "overridden (a private method) in FeedbackExporter: the Jinja environment nbgrader makes for "
          "every student's page keeps the templates this process compiled already",
          (NBGRADER, ("nbconvert", ">=7.2,<8"), ("jinja2", ">=3.1,<4")),
          "none filed: found here by profiling a feedback worker", None),
)


class PatchVersionError(SystemExit):
    """A patched package is installed in a version its patch was not written for.

    A SystemExit, so that it stops nbgrader: traitlets logs any Exception raised while it
    loads ``nbgrader_config.py`` and goes on without that file's settings, which would grade
    with nbgrader's defaults (student code outside the sealed box)."""


def mismatches(patches: tuple[Patch, ...] | None = None, installed: Callable[[str], str] | None = None) -> list[str]:
    """One line per patch whose package is installed in a version outside ``written_for``."""
    patches, installed = patches or PATCHES, installed or version
    found = []
    for patch in patches:
        for distribution, specifier in patch.written_for:
            try:
                have = installed(distribution)
            except PackageNotFoundError:
                have = None
            if have is None or Version(have) not in SpecifierSet(specifier):
                found.append(f"patch {patch.name} (replaces {patch.replaces}) was written for {distribution}"
                             f"{specifier}, but {distribution} {have or 'is not installed'} is here; upstream: "
                             f"{patch.upstream}")
    return found


def install() -> None:
    """Apply every patch (again: each applies once per process), after checking that every
    patched package is a version it was written for."""
    problems = mismatches()
    if problems:
        raise PatchVersionError(
            "maxpool_grader refuses to grade with patches that may no longer fit the installed packages "
            "(install the versions pyproject.toml names, or check each patch against the new code, run the "
            "tests and widen its written_for in maxpool_grader/glue/patches.py):\n  " + "\n  ".join(problems))
    for patch in PATCHES:
        if patch.apply is not None:
            patch.apply()
