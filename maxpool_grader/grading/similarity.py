"""Pairs of submissions whose student-written code is near-identical.

A reason for a person to look, never a verdict: two students may have worked from the
same lecture example, and short exercises leave little room to differ.

Built on copydetect (winnowing, as MOSS does): each submission's own code (its
solution cell and the cells the student added) is tokenized with variable, function
and class names made alike and comments and whitespace dropped, so renamed variables,
changed comments and reformatting do not hide a copy; k-gram fingerprints are kept by
winnowing, so reordered functions still match piece by piece. Fingerprints of the
release notebook's own code are removed first (boilerplate): code every student got
does not count, and code too short to tell (a one-line stub) is not compared. Candidate
pairs come from an index of fingerprints (only pairs that
share some), then copydetect scores each pair: the share of each side's code that also
appears in the other. A pair is listed when the larger share reaches the threshold.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from html import escape
from itertools import combinations
from pathlib import Path

import nbformat
import numpy as np
from copydetect import CodeFingerprint, compare_files
from copydetect import utils as copydetect_utils
from copydetect.utils import highlight_overlap
from nbgrader.utils import is_solution
from numpy.lib.stride_tricks import sliding_window_view

from ..course.directory import notebook_path
from ..names import grade_id

NOISE_TOKENS = 25  # copydetect's noise threshold k: matches shorter than this are ignored
GUARANTEE_TOKENS = 30  # matches at least this long are always found (window = guarantee - noise + 1)
THRESHOLD = 0.8  # default: a pair is listed when this share of one side's code is in the other
MIN_OWN_TOKENS = 60  # less code of one's own (a one-line stub) is too short to tell a copy


@dataclass
class Pair:
    first: str
    second: str
    score: float  # the larger of the two shares
    shares: tuple[float, float]
    code: tuple[str, str]
    slices: tuple[np.ndarray, np.ndarray]

    def summary(self) -> dict:
        return {"students": [self.first, self.second], "score": round(self.score, 3),
                "shares": [round(share, 3) for share in self.shares]}


def student_code(notebook: nbformat.NotebookNode, release: set[str]) -> str:
    """The code the student wrote: the solution cell and every cell they added (no nbgrader
    metadata), without cells that are exactly as released."""
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"
             and (is_solution(cell) or not grade_id(cell))
             and cell.source.strip() not in release]
    return "\n\n".join(cells)


def release_code(release: nbformat.NotebookNode) -> list[str]:
    return [cell.source.strip() for cell in release.cells if cell.cell_type == "code" and cell.source.strip()]


def stable_kgram_hashes(string: str, k: int) -> np.ndarray:
    """The hash of every k-gram of ``string``, the same in every process: a polynomial hash
    of the characters, wrapping at 64 bits."""
    chars = np.frombuffer(string.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(chars) < k:
        return np.array([], dtype=np.int64)
    powers = np.uint64(1_000_003) ** np.arange(k - 1, -1, -1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (sliding_window_view(chars, k) * powers).sum(axis=1, dtype=np.uint64).view(np.int64)


@contextlib.contextmanager
def _stable_hashes():
    """copydetect hashes k-grams with Python's hash(), salted anew in every process: winnowing
    then keeps other fingerprints and a pair scores 94% in one run and 93% in the next."""
    salted = copydetect_utils.hashed_kgrams
    copydetect_utils.hashed_kgrams = stable_kgram_hashes
    try:
        yield
    finally:
        copydetect_utils.hashed_kgrams = salted


def _fingerprint(code: str, boilerplate=None, k: int = NOISE_TOKENS,
                 window: int = GUARANTEE_TOKENS - NOISE_TOKENS + 1) -> CodeFingerprint:
    with _stable_hashes():
        return CodeFingerprint("solution.py", k, window, boilerplate=boilerplate, fp=io.StringIO(code))


def similar_pairs(codes: dict[str, str], boilerplate_code: list[str], threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of ``codes`` (student -> code) at or above ``threshold``, most similar first."""
    boilerplate = boilerplate_hashes(boilerplate_code)
    prints = {student: found for student, code in sorted(codes.items())
              if (found := fingerprint(code, boilerplate)) is not None}
    return pairs_of(prints, threshold)


def boilerplate_hashes(boilerplate_code: list[str]) -> np.ndarray:
    """The fingerprints of the release's code, which no student's code is judged by."""
    return np.unique(np.array([hash_ for code in boilerplate_code
                               for hash_ in _fingerprint(code, window=1).hashes], dtype=np.int64))


def fingerprint(code: str, boilerplate: np.ndarray) -> CodeFingerprint | None:
    """One student's fingerprints, or None when their own code is too short to tell."""
    if not code.strip():
        return None
    found = _fingerprint(code, boilerplate)
    return found if found.token_coverage >= MIN_OWN_TOKENS else None


def pairs_of(prints: dict[str, CodeFingerprint], threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of ``prints`` (student -> fingerprints, in the students' order) at or above
    ``threshold``, most similar first."""
    owners: dict[int, list[str]] = {}
    for student, found in prints.items():
        for hash_ in found.hashes:
            owners.setdefault(hash_, []).append(student)
    shared: dict[tuple[str, str], int] = {}
    for students in owners.values():
        if len(students) > 60:  # an idiom half the class writes says nothing about a pair
            continue
        for pair in combinations(students, 2):
            shared[pair] = shared.get(pair, 0) + 1
    pairs = []
    for (first, second), count in shared.items():
        # a cheap bound first: the pair cannot reach the threshold with so few shared fingerprints
        if count < threshold * min(len(prints[first].hashes), len(prints[second].hashes)) * 0.5:
            continue
        _, shares, slices = compare_files(prints[first], prints[second])
        score = float(max(shares))
        if score >= threshold:
            pairs.append(Pair(first, second, score, (float(shares[0]), float(shares[1])),
                              (prints[first].raw_code, prints[second].raw_code), slices))
    return sorted(pairs, key=lambda pair: (-pair.score, pair.first, pair.second))


def class_release_code(course: Path, assignment: str) -> list[str]:
    release_path = notebook_path(course, "release", ".", assignment)
    return release_code(nbformat.read(release_path, as_version=4)) if release_path.exists() else []


def submitted_code(course: Path, student: str, assignment: str, release: set[str]) -> str | None:
    """The student's own code (``student_code``), None when the submission cannot be read."""
    path = notebook_path(course, "submitted", student, assignment)
    try:
        return student_code(nbformat.read(path, as_version=4), release)
    except Exception:  # noqa: BLE001  unreadable or missing: nothing to compare (the grade says why)
        return None


def sides(pair: Pair) -> list[dict]:
    """The two codes of a pair, escaped for HTML, the matching regions in ``<mark>``."""
    found = []
    for student, code, slices in zip((pair.first, pair.second), pair.code, pair.slices, strict=True):
        marked = highlight_overlap(code, slices, "<mark>", "</mark>", escape_html=True)[0] \
            if slices.shape[-1] else escape(code)
        found.append({"student": student, "marked": marked})
    return found
