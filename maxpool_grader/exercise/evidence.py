"""What a feedback page shows of the student's function besides one test's failure, and which
catalogue mistakes agree with all of it.

A mistake is named "likely" (or, among look-alikes, "possible") only when the evidence
supports it: it gives the student's outcome on every input the test found wrong, passes every
input of the test the student's function passed, passes every test of the page the student's
function passed, and passes every rule of the notebook's self-check (``check_rules``) that the
student's function passes. A mistake that fails where the student's code did not is not
theirs. Once named for a reproducer, the same input and dx get the same diagnosis everywhere
on the page (``Page.diagnoses``).
"""

from __future__ import annotations

import contextlib
import functools
import io
from dataclasses import dataclass, field

from .catalogue import BUGS, Bug
from .checks import GRADED_CHECKS
from .search import passes
from .student_call import quiet_student_code


@dataclass
class Page:
    """What the page shows of the student's function: the graded tests it passed, and the
    self-check's rules it passed (None: not known, for instance outside a graded notebook),
    with the tools cell's code that checks them (to run the same rules on a mistake)."""

    passed_tests: frozenset[str] = frozenset()
    self_check_ok: frozenset[str] | None = None
    tools: str = ""
    diagnoses: dict = field(default_factory=dict)  # (reproducer, the student's dx) -> the lines said
    fresh_tried: bool = False  # a fresh start was tried for this page (exercise/state.py): once is enough
    keeps_state: bool = False  # a report of the page found state kept between calls

    def agrees(self, bug: Bug) -> bool:
        if not all(bug_passes(bug.name, grade_id) for grade_id in self.passed_tests):
            return False
        return self.self_check_ok is None or self.self_check_ok <= self_check_of(bug.name, self.tools)


@functools.lru_cache(maxsize=None)
def bug_passes(bug_name: str, grade_id: str) -> bool:
    """Whether a catalogue mistake passes every input of a graded test (ours: computed once)."""
    check = GRADED_CHECKS[grade_id]
    with quiet_student_code():
        return all(passes(BUGS[bug_name], check, case) for case in check.cases())


def self_check_problems(tools: str, function) -> dict[str, str | None]:
    """What the tools cell's ``check_rules`` says of each rule for ``function`` (None: it holds).
    Its code is the course's own, released to every student: run here with ``function``."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        exec(compile(tools, "<the notebook's tools cell>", "exec"), namespace)  # noqa: S102  the course's code
        return namespace["rule_problems"](function)


def self_check_results(tools: str, function) -> frozenset[str]:
    """The rules the tools cell's ``check_rules`` says ``function`` passes."""
    return frozenset(rule for rule, problem in self_check_problems(tools, function).items() if problem is None)


@functools.lru_cache(maxsize=None)
def self_check_of(bug_name: str, tools: str) -> frozenset[str]:
    with quiet_student_code():
        return self_check_results(tools, BUGS[bug_name].function)
