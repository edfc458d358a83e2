"""docs/settings.md, made from the settings' declarations: every limit, cap, time budget and
the late policy, with its default, its unit and its help text, and the value the course's
``nbgrader_config.py`` sets instead, if any.

Each setting is declared once, as a traitlet with its ``help=`` (its default read from the
sandbox's or verdict's dataclass where that layer needs it too); nothing else types its number.
``tests/test_settings_doc.py`` fails when docs/settings.md differs from what this renders::

    python -m maxpool_grader.cli.settings_doc --fix docs/settings.md
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from traitlets import TraitType
from traitlets.config import Configurable

from ..glue.everyassignment import EveryAssignment
from ..glue.latepolicy import LatePolicy
from ..glue.modelanswer import ModelAnswer
from ..glue.outofprocessverdicts import OutOfProcessVerdicts
from ..glue.safeexecute import KERNEL_CPU_MARGIN_SECONDS, SafeExecute
from ..glue.sealedbox import SealedBox
from ..glue.thisexercise import ThisExercise
from ..lms.zip_upload import ZipLimits
from ..lti.tool import Lti
from ..sandbox.box import Caps
from ..sandbox.kernel_client import MAX_MESSAGE_BYTES, QUEUED_MESSAGES
from ..serve.policy import Serve
from ..verdict.process import CPU_MARGIN_SECONDS, Limits

SETTINGS: list[tuple[type[Configurable], str]] = [
    (ThisExercise, "Which assignment of the course, and which of its notebooks, is this exercise. The "
                   "exercise's plugins act on that notebook alone; every other assignment goes through "
                   "nbgrader's own steps, with nbgrader's own output (see docs/instructor.md#differences)."),
    (EveryAssignment, "What protects every assignment of the course, not only this exercise. Formulas as "
                      "MathML with no MathJax from a CDN (c.HTMLExporter.filters and extra_template_basedirs) "
                      "and the patches of nbgrader's bugs (maxpool_grader.glue.install()) are lines of "
                      "nbgrader_config.py, and apply to every assignment while they are there."),
    (SealedBox, "The sealed box of each submission: its kernel, its verdict processes and "
                "everything they start share these caps; each process has its own address-space "
                "limit too."),
    (OutOfProcessVerdicts, "Every graded test is decided in a separate, sandboxed process before "
                           "the kernel starts; these are its time limits."),
    (SafeExecute, "The notebook itself, run in the kernel as nbgrader's Execute runs it."),
    (LatePolicy, "The late policy, applied by nbgrader's AssignLatePenalties to the due date "
                 "and submission times that maxpool-grader collect-lms stores."),
    (ModelAnswer, "Part A's model answer, rubric and Figure 2 in the feedback: in the final feedback "
                  "only, never while Part A can still change (see docs/serve.md#before-the-deadline)."),
    (Serve, "The policy of maxpool-grader serve, which grades a submission while the assignment is "
            "open and shows its feedback within seconds (see docs/serve.md)."),
    (Lti, "LTI 1.3: students start from the assignment in Canvas or Moodle, the roster comes from the LMS and "
          "each score goes back to its gradebook (see docs/lti.md)."),
]
COMMAND = "python -m maxpool_grader.cli.settings_doc --fix docs/settings.md"


def settings_of(cls: type[Configurable]) -> dict[str, TraitType]:
    """The configurable traits ``cls`` declares itself (not those it inherits), in order."""
    own = cls.class_own_traits(config=True)
    return {name: own[name] for name in cls.__dict__ if name in own}


def course_values(config: Path | None) -> dict[str, object]:
    """What a course's nbgrader_config.py sets of SETTINGS, as "Class.name" -> value. Read
    from its source, not run (running it installs the grader's patches into nbgrader): the
    assignments of a constant ``c.Class.name = value``."""
    if config is None or not config.is_file():
        return {}
    found = {}
    for node in ast.walk(ast.parse(config.read_text(), str(config))):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = ast.unparse(node.targets[0])
        if target.count(".") == 2 and target.startswith("c."):
            try:
                found[target[2:]] = ast.literal_eval(node.value)
            except ValueError:
                found[target[2:]] = ast.unparse(node.value)
    known = {f"{cls.__name__}.{name}" for cls, _ in SETTINGS for name in settings_of(cls)}
    known |= {f"Execute.{name}" for name in settings_of(SafeExecute)}  # nbgrader's section reaches it
    return {key: value for key, value in found.items() if key in known}


def value_text(value: object, unit: str = "") -> str:
    """A value as the tables show it: a number with its unit, a bigger unit when it is whole."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"
    text = f"{value:g}"
    if unit in ("MiB", "KiB") and value >= 1024 and not value % 1024:
        bigger = {"KiB": "MiB", "MiB": "GiB"}[unit]
        return f"{text} ({value // 1024:g} {bigger})"
    return text


def _mib(count: int) -> str:
    """A size in bytes, in MiB as the tables show it."""
    mib = count >> 20
    return f"{mib} MiB" + (f" ({mib >> 10} GiB)" if mib >= 1024 and not mib % 1024 else "")


def _row(cls: type[Configurable], name: str, trait: TraitType, course: dict[str, object]) -> str:
    unit = trait.metadata.get("unit", "")
    help_text = " ".join(trait.help.split()).replace("|", "\\|")
    if isinstance(getattr(trait, "values", None), (list, tuple)):
        help_text += " One of " + ", ".join(f"`{value!r}`" for value in trait.values) + "."
    set_here = [key for key in (f"{cls.__name__}.{name}", f"Execute.{name}") if key in course]
    here = f"{value_text(course[set_here[0]], unit)} (`c.{set_here[0]}`)" if set_here else ""
    return f"| `{name}` | {value_text(trait.default(), unit)} | {unit} | {here} | {help_text} |"


def settings_page(config: Path | None = None) -> str:
    """docs/settings.md: a table per class, then what follows from the settings; ``config``
    is the course's nbgrader_config.py, whose own values get a column."""
    course = course_values(config)
    lines = ["# Course settings", "",
             "<!-- Generated from the settings' declarations in maxpool_grader: do not edit by hand. -->",
             f"<!-- Rewrite it with `{COMMAND}`; tests/test_settings_doc.py fails until then. -->", "",
             "Every limit, cap, time budget and the late policy of the course, each declared once "
             "in the `maxpool_grader` package. A default is the course's unless `nbgrader_config.py` "
             "sets the setting (column *this course*); set one there only where the course differs "
             "(`c.SealedBox.memory_mib = 1024`), or for one run on the command line "
             "(`nbgrader autograde max_pool_backward --SealedBox.memory_mib=1024`).", ""]
    for cls, about in SETTINGS:
        lines += [f"## `c.{cls.__name__}`", "", about, "",
                  "| setting | default | unit | this course | what it does |", "|---|---|---|---|---|"]
        lines += [_row(cls, name, trait, course) for name, trait in settings_of(cls).items()]
        lines.append("")
    lines += derived_limits()
    return "\n".join(lines)


def derived_limits() -> list[str]:
    """The limits that follow from the settings or are fixed: per-process rlimits, /dev/shm."""
    return [
        "## Following from the settings, or fixed", "",
        "| limit | value |", "|---|---|",
        f"| CPU time of the kernel (`RLIMIT_CPU`) | `SafeExecute.notebook_seconds` + "
        f"{KERNEL_CPU_MARGIN_SECONDS} s |",
        f"| CPU time of a verdict process (`RLIMIT_CPU`) | `OutOfProcessVerdicts.total_seconds` + "
        f"{CPU_MARGIN_SECONDS} s |",
        f"| size of a file a verdict process writes (`RLIMIT_FSIZE`) | {_mib(Limits.file_bytes)} |",
        f"| `/dev/shm` of each sandbox (a tmpfs besides the scratch folder) | {_mib(Caps.shm_bytes)} |",
        "| processes without a cgroup (`RLIMIT_NPROC`) | `SealedBox.processes` |",
        "| memory without a cgroup | per process only: `SealedBox.verdict_memory_mib`, "
        "`SealedBox.kernel_memory_mib` |",
        f"| one message from the kernel (bigger: the grader reconnects, the cell's output is cut) | "
        f"{_mib(MAX_MESSAGE_BYTES)} |",
        f"| messages from the kernel waiting in one channel | {QUEUED_MESSAGES} |",
        "",
        "`maxpool-grader collect-lms` takes its own limits on the command line (`--help`):",
        "",
        "| option | default |", "|---|---|",
        f"| `--max-file-size` (one entry of the LMS zip) | {_mib(ZipLimits.per_file)} |",
        f"| `--max-total-size` (all entries of the zip) | {_mib(ZipLimits.total)} |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maxpool_grader.cli.settings_doc",
                                     description="Print docs/settings.md, made from the settings' declarations.")
    parser.add_argument("--config", type=Path, default=Path("nbgrader_config.py"),
                        help="the course's nbgrader_config.py (default: the one in the current directory)")
    parser.add_argument("--fix", type=Path, metavar="FILE", help="write FILE instead of printing it")
    args = parser.parse_args(argv)
    text = settings_page(args.config)
    if args.fix is None:
        sys.stdout.write(text)
    elif not args.fix.is_file() or args.fix.read_text() != text:
        args.fix.write_text(text)
        print(f"{args.fix} rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
