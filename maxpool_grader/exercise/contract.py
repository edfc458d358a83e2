"""The contract, once, as data: every rule Part B states (and the two Part A asks the student to
derive), where the notebook states it, the hidden test that grades it, and the kinds of input
it is checked on.

A rule is public: it says what a right dx is, never what it is on an input, so the release may
carry it (the notebook's own text states each one). From this declaration:

* each hidden test draws, besides its fixed cases, cases of every kind of input its rules cover
  (``drawn_cases``; exercise/kinds.py), each judged on that rule alone (``Rule.judge``), so a
  mistake costs the points of its own rule's test and no other;
* ``maxpool-grader check`` fails when the notebook's Part B text no longer states a rule
  (``Rule.stated``), or when the tools cell's ``check_rules`` checks a rule that is not here, or
  leaves out one that is (``Rule.self_check``);
* tests/test_contract.py builds one mutant per rule and kind of input (a correct solution with
  exactly that rule broken) and requires each to lose points in its rule's test, at most 2 in
  all, and requires every rule the self-check fails to fail the hidden test of that rule.

Plain, for a case: a float64 plane of distinct positive values, C order, pool 2, stride None,
the floor grid; a rule's draw varies the dimensions ``over`` and keeps the rest plain, except
that rules judged on the result alone (dtype, inputs unchanged) draw over every dimension.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass, replace
from typing import Callable

from .judges import JUDGES
from .kinds import DIMENSIONS, FLOATS, INTEGERS, Kind, arranged, draw, inputs_of
from .rules import Case

EVERYTHING = tuple(DIMENSIONS)  # x_dtype first: a rule's draw is spread over its first dimension


def _no_overlap(kind: Kind) -> bool:
    (ph, pw), (sh, sw) = kind.pair
    return sh >= ph and sw >= pw


def _overlap(kind: Kind) -> bool:
    (ph, pw), (sh, sw) = kind.pair
    return sh < ph or sw < pw


def _square_int(kind: Kind) -> bool:
    """An int pool and an int stride (or None): the forms are another rule's."""
    return isinstance(kind.pool, int) and (kind.stride is None or isinstance(kind.stride, int))


def _tiled(kind: Kind) -> bool:
    """Square planes that the windows tile exactly (stride None): plain in every way but values."""
    (ph, pw), _ = kind.pair
    height, width = kind.plane
    return _square_int(kind) and height == width and height % ph == 0 and width % pw == 0


def _varied(kind: Kind) -> bool:
    """Not the plain case: the draw shows a kind of input that the fixed cases may not."""
    return kind != Kind()


@dataclass(frozen=True)
class Rule:
    name: str
    statement: str  # what must hold; for a rule the self-check checks, its line there
    stated: str  # the words of the notebook's text that state it (Part B; Part A for derived rules)
    test: str  # the grade id of the hidden test that grades it
    judge: str  # how a drawn case is judged (judges.JUDGES)
    over: tuple[str, ...]  # the dimensions of the kinds of input (kinds.DIMENSIONS) its cases vary
    where: Callable[[Kind], bool] = _varied  # which of those kinds are its own
    count: int = 5  # how many drawn cases (each a call of the student's function per notebook graded)
    self_check: bool = True  # checked by the notebook's check_rules
    base: Kind = Kind()
    part: str = "B"  # the part that states it: a rule of Part A's derivation is its answer (told after the release)


PLANES, STRIDES = "hidden_rectangular_leading_axes", "hidden_overlapping_windows"
RULES: tuple[Rule, ...] = (
    Rule("shape", "dx is a NumPy array of x's shape", "`dx` has `x`'s shape", PLANES, "shape_and_values",
         ("lead", "plane", "pool"), lambda k: _square_int(k) and 1 in k.plane, count=6),
    Rule("dtype", "dx has x's dtype when x is floating, float64 for integer x",
         "`x`'s dtype when `x` is floating (float64 for integer `x`)", "hidden_dtype_of_x", "dtype",
         EVERYTHING, count=22),
    Rule("unchanged", "x and d_output are left unchanged", "the inputs are left unchanged",
         "hidden_inputs_unmodified_float_result", "unchanged", ("values", *EVERYTHING[1:]), count=12),
    Rule("forms", "pool_size and stride are an int or a pair", "`pool_size` and `stride`: an int or a pair",
         PLANES, "shape_and_values", ("pool", "stride", "plane"),
         lambda k: _varied(k) and (k.stride is None or k.pair[0] == k.pair[1])),
    Rule("stride_none", "stride=None means stride = pool_size", "`stride=None` means stride = pool size",
         PLANES, "shape_and_values", ("pool", "plane"), lambda k: _varied(k)),
    Rule("leading_axes", "any number of leading axes", "`x` has shape `(..., H, W)` (leading batch/channel axes)",
         PLANES, "shape_and_values", ("lead", "plane"), lambda k: bool(k.lead)),
    Rule("layout", "x and d_output may be any NumPy arrays of their shapes (views, Fortran order)",
         "`x` has shape `(..., H, W)`", PLANES, "shape_and_values",
         ("x_layout", "d_layout", "lead", "plane"), lambda k: k.x_layout != "C" or k.d_layout != "C",
         count=5, self_check=False),
    Rule("windows", "window (k, l) covers rows k*sh .. k*sh+ph-1 and columns l*sw .. l*sw+pw-1",
         "window $(k, l)$ covers rows `k*sh … k*sh+ph-1` and columns `l*sw … l*sw+pw-1`", STRIDES,
         "values", ("pool", "stride", "plane"),
         lambda k: _no_overlap(k) and k.pair[1] != k.pair[0] and k.plane[0] == k.plane[1] and _square_int(k)),
    Rule("overlap", "an element that is the maximum of several windows receives the sum of their gradients",
         "a stride smaller than the window makes windows overlap", STRIDES, "values",
         ("pool", "stride", "plane"), lambda k: _overlap(k) and _square_int(k) and k.plane[0] == k.plane[1],
         self_check=False, part="A"),
    Rule("clipped", "border windows of d_output's grid are clipped to x",
         "the *ceil-mode* grid, which adds windows that start inside `x` and are clipped at its border",
         "hidden_ceil_border_windows", "values", ("values", "plane", "pool"),
         lambda k: _square_int(k) and k.plane[0] == k.plane[1] and k.values in ("distinct", "very_negative", "neg_inf"),
         count=6, base=Kind(ceil=True, first=True)),
    Rule("clipped_integer", "border windows of d_output's grid are clipped to x, for integer x too",
         "the *ceil-mode* grid, which adds windows that start inside `x` and are clipped at its border",
         "hidden_ceil_border_windows", "values", ("x_dtype", "d_dtype", "plane", "pool"),
         lambda k: _square_int(k) and k.plane[0] == k.plane[1] and k.x_dtype in INTEGERS and k.d_dtype in INTEGERS,
         count=8, self_check=False, base=Kind(ceil=True, first=True, values="bottom")),
    Rule("clipped_overlap", "border windows of d_output's grid are clipped to x, for any stride",
         "the *ceil-mode* grid, which adds windows that start inside `x` and are clipped at its border",
         "hidden_ceil_border_windows", "accepted", ("pool", "stride", "plane"),
         lambda k: _overlap(k) and _square_int(k) and k.plane[0] == k.plane[1], count=6, self_check=False,
         base=Kind(ceil=True)),
    Rule("negative", "x may be negative", "`x` may be negative", "hidden_gradient_check", "values",
         ("values", "plane", "pool"), lambda k: _tiled(k) and k.values in
         ("negative", "offset", "mixed", "huge", "tiny", "neg_inf", "very_negative"), count=7),
    Rule("integer", "x may be an integer array: dx keeps the fractions of d_output",
         "and may be an integer array", "hidden_forum_integer_input", "floating_values",
         ("x_dtype", "d_dtype", "values", "pool", "plane"),
         lambda k: k.x_dtype in INTEGERS and k.d_dtype in FLOATS and _tiled(k)
         and (k.values in ("distinct", "offset") or k.values == "bottom" and k.x_dtype[0] == "u"),
         count=8, self_check=False),
    Rule("integer_range", "x may be an integer array with values anywhere in its dtype's range",
         "and may be an integer array", "hidden_forum_integer_input", "floating_values",
         ("x_dtype", "d_dtype", "pool", "plane"), lambda k: k.x_dtype in INTEGERS and k.d_dtype in FLOATS
         and _tiled(k), count=8, self_check=False, base=Kind(values="extremes")),
    Rule("ties", "ties: the first maximum in row-major order",
         "The forward pass selected a window's first maximum in row-major order", "hidden_ties_first_maximum",
         "values", ("values", "plane", "pool"),
         lambda k: k.values in ("ties", "equal") and _tiled(k)),
    Rule("subgradient", "a window's gradient goes to its maxima only, in total exactly once",
         "what may the layer pass back?", "hidden_ties_valid_subgradient", "subgradient",
         ("values", "plane", "pool"),
         lambda k: k.values in ("ties", "equal") and _tiled(k), self_check=False, part="A"),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


@functools.lru_cache(maxsize=None)
def drawn_kinds(rule: Rule) -> list[Kind]:
    """The kinds of input ``rule`` is checked on, drawn with a seed of its own name."""
    return draw(rule.over, rule.count, zlib.crc32(rule.name.encode()), rule.where, rule.base)


def case_of(kind: Kind, seed: int, judged: str = "") -> Case:
    d_output, x = inputs_of(kind, seed)
    for array in (d_output, x):
        array.flags.writeable = False  # shared between calls: students only ever get copies
    return Case(d_output, x, kind.pool, kind.stride, judged, kind.x_layout, kind.d_layout)


def drawn_cases(grade_id: str) -> list[Case]:
    """The drawn cases of a hidden test: those of every rule it grades, each judged on its rule."""
    return [case_of(kind, zlib.crc32(f"{rule.name}:{number}".encode()), rule.judge)
            for rule in RULES if rule.test == grade_id for number, kind in enumerate(drawn_kinds(rule))]


def with_drawn(check):
    """A graded check (exercise/checks.py) with the cases drawn for its rules after its fixed ones,
    each drawn case judged on its rule alone (``judges.JUDGES``), the fixed ones by its verdict."""
    fixed, verdict = check.cases, check.verdict

    @functools.lru_cache(maxsize=1)
    def cases() -> tuple[Case, ...]:
        return (*fixed(), *drawn_cases(check.grade_id))

    def judge(case: Case, dx, given=None):
        return JUDGES[case.judged](case, dx, given) if case.judged else verdict(case, dx, given)
    return replace(check, cases=lambda: list(cases()), verdict=judge, what=check.what + told(check.grade_id))


def told(grade_id: str) -> str:
    """What a hidden test's report adds to its "What it checks" line: the rules of Part B it also
    grades on drawn inputs, in the contract's words, and what those inputs vary (a rule of Part
    A's derivation is its answer: not told before the release)."""
    rules = [rule for rule in RULES if rule.test == grade_id and rule.part == "B"]
    if not rules:
        return ""
    varied = ", ".join(dict.fromkeys(VARIED[dimension] for rule in rules for dimension in rule.over))
    statements = list(dict.fromkeys(rule.statement for rule in rules))  # each test's own: no two pages alike
    return f" It also checks “{'; '.join(statements)}” on drawn inputs that vary {varied}."


# What a dimension of the kinds of input (kinds.DIMENSIONS) varies, as a report says it
VARIED = {"x_dtype": "x's dtype", "d_dtype": "d_output's dtype", "lead": "the leading axes",
          "plane": "the plane's height and width", "pool": "the pool size", "stride": "the stride",
          "ceil": "floor and ceil grids", "values": "the values (negative, huge, tied, ...)",
          "x_layout": "x's memory layout", "d_layout": "d_output's memory layout"}


def self_checked() -> list[str]:
    """The lines of the notebook's check_rules, in the contract's words."""
    return [rule.statement for rule in RULES if rule.self_check]


__all__ = ["RULES", "RULES_BY_NAME", "Rule", "arranged", "case_of", "drawn_cases", "drawn_kinds", "with_drawn"]
