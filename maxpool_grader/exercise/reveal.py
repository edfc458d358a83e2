"""What a failed test's report may say before the final feedback is released, and what comes
back after it.

Part A asks the student to derive why each window's gradient goes where it goes; Part B's
tests check the code. Until the release a report speaks about the student's code and data:
the input, the expected dx, theirs, the positions that differ, what their code does
(``Bug.pattern``). After the release the full explanations come back (``after_release``):
each mistake's ``explanation``, each check's ``rule`` and what its ``accepts`` means.

The guard is the rubric itself: ``rubric_phrases`` are the runs of three words of Part A's
rubric (``part_a.RUBRIC``) within a clause that say something (not only small words) and that
the question does not say already (``part_a.RUBRIC_ITEMS``' asked words,
``part_a.QUESTION_POINTS``), and the long words of its items the question does not use
("subgradient").
Before the release ``guarded`` leaves out of a report every sentence that holds one, and
tests/test_reveal.py checks that none of ours ever does (so it leaves out nothing of ours).
Words are compared by their stem (``receive``, ``receives``, ``receiving`` alike), formulas
left out.
"""

from __future__ import annotations

import functools
import re

from .catalogue import BUGS
from .checks import GradedCheck
from .explain import MANY_ACCEPTED, checks_line, mistake_text, wrap_prose
from .part_a import QUESTION_POINTS, RUBRIC, RUBRIC_ITEMS

# English's small words: a run of three of them ("if it is", "one of the") says nothing of the rubric's
SMALL_WORDS = frozenset("""a an the and or nor but if so as at by for from in into of on onto to with without
    is are was were be been being it its this that these those there here which who whom whose what when
    where how not no only also each every any all some one two both either neither than then too very
    can may must should would could will do does did has have had i e g p""".split())
_FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s", "e"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[:-len(ending)]
    return word


_CLAUSE_END = re.compile(r"[.,;:!?()\[\]{}\"`=*]|\s-\s|\u2014")  # a phrase never runs across one


def words(text: str) -> list[list[str]]:
    """``text``'s words clause by clause, lower case and stemmed, its formulas left out."""
    clauses = _CLAUSE_END.split(re.sub(r"'s\b", "", _FORMULA.sub(" . ", text).lower()))
    return [[_stem(word) for word in _WORD.findall(clause)] for clause in clauses]


def _runs(clauses: list[list[str]], length: int = 3) -> set[tuple[str, ...]]:
    return {tuple(found[at:at + length]) for found in clauses for at in range(len(found) - length + 1)}


LONG_WORD = 10  # a word of the rubric this long that the question does not use is a phrase alone


def _asked() -> list[list[str]]:
    return words(QUESTION_POINTS + ". " + ". ".join(item[2] for item in RUBRIC_ITEMS))


@functools.lru_cache(maxsize=1)
def rubric_phrases() -> frozenset[tuple[str, ...]]:
    """The rubric's runs of three words that say something and that the question does not say,
    and its long words that the question does not use (module doc), stemmed."""
    asked = _asked()
    runs = frozenset(run for run in _runs(words(RUBRIC)) if run not in _runs(asked)
                     and sum(word not in SMALL_WORDS for word in run) >= 2)
    used = {word for clause in asked for word in clause}
    graded = words(" ".join(item[3] for item in RUBRIC_ITEMS))  # the items' terms (not "derivation")
    return runs | {(word,) for clause in graded for word in clause if len(word) >= LONG_WORD
                   and word not in used and word.isalpha()}


def rubric_phrases_in(text: str) -> list[str]:
    """The rubric phrases ``text`` holds (empty: none), as words."""
    clauses = words(text)
    found = _runs(clauses) | {(word,) for clause in clauses for word in clause}
    return sorted(" ".join(run) for run in found & rubric_phrases())


_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


def guarded(message: str) -> tuple[str, list[str]]:
    """``message`` without the sentences that hold a rubric phrase (code and arrays, indented by
    4 or more, are kept), and the phrases that were found."""
    lines, kept, found = message.split("\n"), [], []
    at = 0
    while at < len(lines):
        indent = len(lines[at]) - len(lines[at].lstrip(" "))
        end = at + 1
        while end < len(lines) and indent < 4 and lines[end].strip() and \
                len(lines[end]) - len(lines[end].lstrip(" ")) == indent and not _starts_anew(lines[end]):
            end += 1
        block = lines[at:end]
        phrases = rubric_phrases_in(" ".join(block)) if indent < 4 else []
        if phrases:
            found += phrases
            sentences = [sentence for sentence in _SENTENCE_END.split(" ".join(line.strip() for line in block))
                         if not rubric_phrases_in(sentence)]
            block = [wrap_prose(" " * indent + " ".join(sentences))] if sentences else []
        kept += block
        at = end
    return "\n".join(kept), sorted(set(found))


def _starts_anew(line: str) -> bool:
    """A line that begins a part of its own, not the wrapped rest of the line before."""
    return line.lstrip().startswith(("Likely mistake:", "Possible mistake:", "Where your dx differs", "Your dx",
                                     "Expected dx", "Accepted dx", "x after your call", "In your code:"))


def after_release(message: str, check: GradedCheck) -> str:
    """``message`` (a report of ``check``) with its full explanations: each named mistake's
    ``explanation`` in place of what the code does, the check's ``rule`` after what it checks,
    and which dx it accepts."""
    full = wrap_prose(f"{checks_line(check)} {check.rule}")
    if check.rule and full not in message:  # a page made again from a final one: once
        message = message.replace(wrap_prose(checks_line(check)), full, 1)
    if check.accepts:
        message = message.replace(f"Accepted dx: {MANY_ACCEPTED}; for example:",
                                  wrap_prose(f"Accepted dx: {check.accepts}; for example:"))
    for bug in BUGS.values():
        if not bug.pattern:
            continue
        for kind in ("Likely", "Possible"):
            message = message.replace(wrap_prose(mistake_text(bug, kind)), wrap_prose(mistake_text(bug, kind, True)))
    return message
