"""Mutation test: every hidden check against every catalogue bug and correct control.

Every bug must lose points, every control must keep full marks, and the feedback of
every failed cell must name the bug and give a reproducer that, pasted into a fresh
namespace, produces the printed expected dx (with the reference) and the printed wrong
dx (with the bug). The kill matrix is printed at the end of the pytest run.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re

import numpy as np
import pytest
from helpers import KILL_MATRIX, ROOT, flat, hidden_messages, keep_summary_table

from maxpool_grader import max_pool_backward
from maxpool_grader.exercise.catalogue import BUGS, CONTROLS
from maxpool_grader.exercise.checks import GRADED_CHECKS, HIDDEN_CHECKS
from maxpool_grader.exercise.rules import SMALL
from maxpool_grader.exercise.student_call import quiet_student_code

VARIANTS = {**{name: bug.function for name, bug in BUGS.items()},
            **{name: control.function for name, control in CONTROLS.items()}}


def _key(case) -> tuple:
    return tuple((array.tobytes(), array.dtype.str, array.shape) for array in (case.x, case.d_output)) + (
        repr(case.pool_size), repr(case.stride))


def _outcome(function, case) -> tuple:
    """What a variant does on one input: its dx (or the exception it raised), and whether
    it changed x or d_output."""
    x, d_output = case.x.copy(), case.d_output.copy()
    try:  # (the caller keeps the variants quiet: once for all its calls, not once per call)
        dx = np.asarray(function(d_output, x, case.pool_size, case.stride))
        result = ("dx", dx.shape, dx.dtype.kind == "f", dx.astype(float).tobytes())
    except Exception as problem:  # noqa: BLE001  a bug may crash on an input
        result = ("raised", type(problem).__name__, str(problem))
    return result, np.array_equal(x, case.x), np.array_equal(d_output, case.d_output)


@pytest.fixture(scope="module")
def look_alikes() -> dict[str, list[str]]:
    """Each bug's look-alikes: the other bugs that give exactly its outcome on every graded
    input and every probe of every check (no input we have tells them apart)."""
    cases = list({_key(case): case for check in GRADED_CHECKS.values()
                  for case in (*check.cases(), *check.probes())}.values())  # checks share probes: once each
    groups: dict[str, list[str]] = {}
    with quiet_student_code():
        for name, bug in BUGS.items():
            signature = hashlib.sha256(repr([_outcome(bug.function, case) for case in cases]).encode()).hexdigest()
            groups.setdefault(signature, []).append(name)
    LOOK_ALIKES.update(inputs=len(cases), groups=[group for group in groups.values() if len(group) > 1])
    return {name: [other for other in group if other != name] for group in groups.values() for name in group}


LOOK_ALIKES: dict = {}  # for the summary: how many inputs, which groups


@pytest.fixture(scope="module")
def messages(request, look_alikes) -> dict[tuple[str, str], str | None]:
    """Feedback of every hidden check for every variant (None = passed)."""
    said = hidden_messages()
    found = {(name, grade_id): said[name, grade_id] for name in VARIANTS for grade_id in HIDDEN_CHECKS}
    keep_summary_table(request.config, KILL_MATRIX, kill_matrix(found) + "\n" + look_alike_lines())
    return found


def look_alike_lines() -> str:
    groups = LOOK_ALIKES.get("groups", [])
    lines = [f"look-alikes: bugs with the same outcome on all {LOOK_ALIKES.get('inputs', 0)} graded and probe "
             f"inputs ({len(groups)} group{'s' if len(groups) != 1 else ''}; feedback names them all and "
             "reads the student's code to choose)"]
    lines += ["  " + " = ".join(group) for group in groups]
    return "\n".join(lines)


def kill_matrix(found) -> str:
    labels = {grade_id: f"H{number}" for number, grade_id in enumerate(HIDDEN_CHECKS, start=1)}
    width = max(map(len, VARIANTS)) + 2
    lines = ["X = the hidden cell fails the variant (its points are lost), . = it passes",
             " " * width + " ".join(f"{label:>3}" for label in labels.values()) + "   lost"]
    for kind, names in (("bugs", BUGS), ("controls", CONTROLS)):
        lines.append(f"-- {kind}")
        for name in names:
            row = [found[name, grade_id] is not None for grade_id in HIDDEN_CHECKS]
            lost = sum(HIDDEN_CHECKS[g].points for g, failed in zip(HIDDEN_CHECKS, row) if failed)
            lines.append(f"{name:<{width}}" + " ".join(f"{'X' if failed else '.':>3}" for failed in row)
                         + f"   {lost:>4}")
    lines += [f"{label} = {grade_id} ({HIDDEN_CHECKS[grade_id].points} p)" for grade_id, label in labels.items()]
    return "\n".join(lines)


@pytest.mark.parametrize("name", BUGS)
def test_every_bug_loses_points(messages, name):
    failed = [grade_id for grade_id in HIDDEN_CHECKS if messages[name, grade_id]]
    assert failed, f"no hidden check catches the catalogue bug {name!r}"


@pytest.mark.parametrize("name", CONTROLS)
def test_every_correct_control_gets_full_marks(messages, name):
    failed = {grade_id: messages[name, grade_id] for grade_id in HIDDEN_CHECKS if messages[name, grade_id]}
    assert not failed, f"correct control {name!r} loses points:\n" + "\n\n".join(failed.values())


@pytest.mark.parametrize("name", BUGS)
def test_every_failed_cell_names_the_bug_and_its_look_alikes(messages, look_alikes, name):
    """The bug is named with what its code does, and so is every look-alike of it; when it is
    the only mistake that fits, it is the likely one, else the message says how many fit."""
    for grade_id in HIDDEN_CHECKS:
        message = messages[name, grade_id]
        if not message:
            continue
        fitting = re.findall(r"(?:Likely|Possible) mistake: ", message)
        if len(fitting) == 1:
            assert flat(f"Likely mistake: {BUGS[name].title}.") in flat(message), message
        else:
            assert f"{len(fitting)} known mistakes give exactly this dx" in message, message
        for named in (name, *look_alikes[name]):
            assert re.search(r"(Likely|Possible) mistake: " + re.escape(flat(BUGS[named].title)) + r"\.",
                             flat(message)), message
            assert flat(BUGS[named].before_release) in flat(message)


def reproducer(message: str) -> tuple[str, str, str | None]:
    """The pasted code, the printed expected dx (or the example of an accepted one) and the
    printed 'your dx' of a message."""
    found = re.search(r"paste it into a new cell to try it\):\n(?P<code>(?:    .*\n)+?)"
                      r"(?:Expected dx:|Accepted dx: [^:]*; for example:)\n(?P<expected>(?:    .*\n?)+?)(?=\S)",
                      message)
    assert found, f"no reproducer in:\n{message}"
    yours = re.search(r"Your dx:\n((?:    .*\n?)+)", message)
    dedent = lambda text: "\n".join(line[4:] for line in text.rstrip("\n").split("\n"))
    return dedent(found["code"]), dedent(found["expected"]), yours and dedent(yours[1])


@pytest.mark.parametrize("name", BUGS)
def test_the_reproducer_pasted_back_gives_the_printed_results(messages, name):
    checked = 0
    for grade_id in HIDDEN_CHECKS:
        message = messages[name, grade_id]
        if not message or "paste it into a new cell" not in message:
            continue
        code, expected, yours = reproducer(message)
        with_reference = {"np": np, "max_pool_backward": max_pool_backward}
        exec(code, with_reference)
        assert with_reference["x"].size <= SMALL
        printed_expected = eval(expected, {"np": np})
        assert printed_expected.dtype == with_reference["dx"].dtype
        np.testing.assert_array_equal(with_reference["dx"], printed_expected)
        if yours is not None:
            with_bug = {"np": np, "max_pool_backward": BUGS[name].function}
            with contextlib.redirect_stderr(io.StringIO()), np.errstate(all="ignore"):
                exec(code, with_bug)
            np.testing.assert_array_equal(with_bug["dx"], eval(yours, {"np": np}))
        checked += 1
    assert checked, f"no failed cell of {name!r} printed a reproducer"


def test_reproducers_are_small(messages):
    sizes = {}
    for (name, grade_id), message in messages.items():
        if message and "paste it into a new cell" in message:
            namespace = {"np": np, "max_pool_backward": max_pool_backward}
            exec(reproducer(message)[0], namespace)
            sizes[name, grade_id] = namespace["x"].size
    assert sizes and max(sizes.values()) <= SMALL
    assert sorted(sizes.values())[len(sizes) // 2] <= 4, "half the reproducers have at most 4 elements"


def test_docs_state_the_catalogue_size():
    readme = (ROOT / "docs" / "development.md").read_text()
    assert f"{len(BUGS)} realistic wrong implementations" in readme
    assert f"and {len(CONTROLS)} correct controls" in readme
