"""What a student reads when a check fails: the test's title and points, what it checks,
the smallest input where their function goes wrong with the expected and their dx, and
the catalogue mistakes that explain it (several that fit are all named; the student's
code chooses between them where it can)."""

from __future__ import annotations

import re
import textwrap

from .catalogue import BUGS, Bug
from .checks import GradedCheck
from .reference import max_pool_backward
from .reproducer import call_text, literal
from .rules import SMALL, indented
from .search import Outcome, likely_mistakes, smallest_failure
from .student_call import StudentError


def describe_failure(student: Outcome, graded: Outcome, witnesses: list[Outcome],
                     named: list[str] | None = None, source: str = "", accepts: str = "") -> str:
    """The reproducer, expected and actual dx, and the likely mistake, for the student.

    ``student`` is the smallest attempt that went wrong, ``graded`` the graded one,
    ``witnesses`` further small inputs that went wrong the same way, ``source`` the
    student's code (it tells apart mistakes that give the same dx), ``accepts`` which dx
    the check accepts when it is not one (``GradedCheck.accepts``).
    """
    case = student.case
    if case.x.size <= SMALL:
        code = "\n".join([f"x = {literal(case.x, 4)}", f"d_output = {literal(case.d_output, 11)}",
                          call_text(case.pool_size, case.stride)])
        expected = max_pool_backward(case.d_output, case.x, case.pool_size, case.stride)
        label = f"Accepted dx: {accepts}; for example:" if accepts else "Expected dx:"
        parts = ["Smallest input where your function goes wrong (paste it into a new cell "
                 "to try it):", indented(code), label, indented(literal(expected))]
        if student.dx is not None:
            parts += ["Your dx:", indented(literal(student.dx))]
            if student.inputs_changed[0]:
                parts += ["x after your call (it must not change):", indented(literal(student.given.x))]
            if student.problem and not student.problem.startswith("dx differs"):
                parts.append(student.problem)
        else:
            parts.append(f"Your function: {student.problem}")
    else:
        parts = [f"Input: {case.describe()}", student.problem or ""]
    if isinstance(student.error, StudentError) and isinstance(student.error.exception, NotImplementedError):
        return "\n".join(parts)
    bugs, certain = likely_mistakes(student, graded, witnesses)
    if bugs:
        parts += mistakes_text(bugs, certain, source, named)
    elif student.error is None:
        parts.append(f"None of the {len(BUGS)} mistakes in our catalogue gives exactly your result on "
                     "this input, so this one is new to us: compare your dx with the expected one "
                     "entry by entry, and check which window each entry comes from.")
    return "\n".join(parts)


def mistakes_text(bugs: list[Bug], certain: bool, source: str = "",
                  named: list[str] | None = None) -> list[str]:
    """The lines that name the catalogue mistakes that give the student's dx.

    One mistake is "likely". Several that give the same dx (look-alikes) are all named,
    each a "possible" mistake, unless the student's code shows which one was made
    (``Bug.in_source``): then that one alone is named, one explanation per mistake. A
    mistake whose construct the code does not contain is named only when no other fits,
    with a warning that the student's may be another mistake with the same effect. The
    names of the mistakes called likely go to ``named`` (the class report's fingerprints).
    """
    marks = {bug.name: bug.in_source(source) if source else None for bug in bugs}
    fitting = [bug for bug in bugs if marks[bug.name] is not False]
    unlike = [bug for bug in bugs if marks[bug.name] is False]
    decided = [bug for bug in fitting if marks[bug.name]]
    likely = decided if decided else fitting if len(fitting) == 1 else []
    lines = []
    if not certain:
        lines.append("Your dx on this small input is exactly what the following mistake"
                     f"{'s give' if len(likely or fitting or unlike) > 1 else ' gives'}, though on the "
                     "graded input your dx differs from it too:")
    elif not likely and len(fitting) > 1:
        lines.append(f"{len(fitting)} known mistakes give exactly this dx, and your code does not show "
                     "which one you made:")
    for bug in likely or fitting:
        lines.append(mistake_text(bug, "Likely" if likely and certain else "Possible"))
    if not fitting:
        lines += [f"(The same dx comes from this mistake: {bug.title}; but your code does not do that, so "
                  "yours is probably another mistake with the same effect.)" for bug in unlike]
        lines.append("Compare your dx with the expected one entry by entry, and check which window each "
                     "entry comes from.")
    if named is not None and certain:
        named += [bug.name for bug in (likely or fitting)]
    return lines


def mistake_text(bug: Bug, kind: str) -> str:
    """One named mistake and its explanation: ``kind`` is "Likely" or "Possible"."""
    return f"{kind} mistake: {bug.title}.\n{indented(bug.explanation, 2)}"


WIDTH = 92  # notebook outputs and nbgrader's feedback scroll sideways instead of wrapping


def wrap_prose(text: str) -> str:
    """Wrap the prose lines of a report; code and arrays (indented 4 or more) stay as they are."""
    lines = []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if indent >= 4 or len(line) <= WIDTH:
            lines.append(line)
        else:
            lines += textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent,
                                   break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def report(check: GradedCheck, body: str) -> str:
    points = points_label(check.points)
    kind = "Hidden test" if check.hidden else "Test"
    return wrap_prose(f"{kind} failed: {check.title} (0 of {points}).\n"
                    f"What it checks: {check.what}\n\n{body}")


def explain(check: GradedCheck, function, failed: Outcome, named: list[str] | None = None,
            after: str = "", source: str = "") -> str:
    """The report for a failed graded attempt: reproducer, expected and actual dx, likely
    mistake (whose catalogue names are added to ``named``), then ``after``. ``function``
    None: no search for a smaller input (the graded one is shown). ``source``: the
    student's code, which tells apart mistakes that give the same dx."""
    after = f"\n\n{after}" if after else ""
    if isinstance(failed.error, StudentError) and isinstance(failed.error.exception, NotImplementedError):
        return report(check, failed.problem + after)
    if function is None:
        return report(check, describe_failure(failed, failed, [], named, source, check.accepts) + after)
    reproducer, witnesses = smallest_failure(check, function, failed)
    return report(check, describe_failure(reproducer, failed, witnesses, named, source, check.accepts) + after)


def passed_message(check: GradedCheck) -> str:
    return f"Passed: {check.title} ({points_label(check.points)})."


def points_label(points: int) -> str:
    """"1 point", "2 points"."""
    return f"{points} point" + ("s" if points != 1 else "")


# ------------------------------------------------------------------ the feedback page
# A report with a smallest failing input starts its body with one of these; any other body
# is one reason given in full (no stride parameter, nothing defined, a time limit...).
REPRODUCER_STARTS = ("Smallest input where your function goes wrong", "Input: ")


def split_report(message: str) -> tuple[str, str]:
    """A report's head (what failed, what it checks) and its body."""
    head, _, body = message.partition("\n\n")
    return head, body


def reason_of(body: str) -> str | None:
    """The first sentence of a report body that is one reason (no smallest input), else None."""
    if not body.strip() or body.startswith(REPRODUCER_STARTS):
        return None
    flat = " ".join(body.split())
    end = re.search(r"[.!?](?=\s|$)", flat)
    sentence = flat[:end.end()] if end else flat
    return sentence if len(sentence) <= 300 else sentence[:297] + "..."


def _indented_block(lines: list[str], start: int) -> int:
    """The index after the lines indented by 4 or more from ``start`` on."""
    while start < len(lines) and lines[start].startswith("    "):
        start += 1
    return start


def same_input_as_before(body: str, inputs: dict[tuple[str, str], str], title: str) -> str:
    """``body`` with its smallest input and the student's dx replaced by a reference to the
    earlier report that showed the same (``inputs``: (code, student's dx) -> its title).
    What this test expects stays."""
    lines = body.split("\n")
    if not lines or lines[0] != REPRODUCER_STARTS[0] + " (paste it into a new cell to try it):":
        return body
    code_end = _indented_block(lines, 1)
    label_end = code_end
    while label_end < len(lines) and not lines[label_end].startswith("    "):
        label_end += 1
    expected_end = _indented_block(lines, label_end)
    if expected_end >= len(lines) or lines[expected_end] != "Your dx:":
        return body
    yours_end = _indented_block(lines, expected_end + 1)
    key = ("\n".join(lines[1:code_end]), "\n".join(lines[expected_end + 1:yours_end]))
    if key not in inputs:
        inputs[key] = title
        return body
    reference = wrap_prose(f"{REPRODUCER_STARTS[0]}: the same as under \u201c{inputs[key]}\u201d, and so is your dx.")
    return "\n".join([reference, *lines[code_end:expected_end], *lines[yours_end:]])


def shorten_repeats(reports: list[tuple[str, str]]) -> list[str]:
    """The reports (test title, message) of one notebook, in order, each explanation given
    once: a reason repeated word for word, or a named mistake an earlier report explained,
    becomes a short line that says under which test it is explained; a smallest input with
    the same dx as an earlier report's is not shown again."""
    reasons: dict[str, str] = {}  # body -> the title of the test that explains it
    mistakes: dict[str, str] = {}  # mistake name -> the title of the test that explains it
    inputs: dict[tuple[str, str], str] = {}  # (smallest input, student's dx) -> the title that shows it
    shortened = []
    for title, message in reports:
        head, body = split_report(message)
        reason = reason_of(body)
        if reason is None:
            body = same_input_as_before(body, inputs, title)
        if reason is not None:
            if body in reasons:
                body = wrap_prose(f"{reason} (Explained above, under \u201c{reasons[body]}\u201d.)")
            else:
                reasons[body] = title
        else:
            for bug in BUGS.values():
                for kind in ("Likely", "Possible"):
                    full = wrap_prose(mistake_text(bug, kind))
                    if full not in body:
                        continue
                    if bug.name in mistakes:
                        body = body.replace(full, wrap_prose(
                            f"{kind} mistake: {bug.title} (explained above, under \u201c{mistakes[bug.name]}\u201d)."))
                    else:
                        mistakes[bug.name] = title
        shortened.append(f"{head}\n\n{body}" if body else message)
    return shortened
