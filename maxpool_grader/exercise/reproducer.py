"""The smallest input that shows a student's mistake, printed so it can be pasted back.

When a hidden check fails, its graded inputs are usually too big to reason about by
hand. Every check therefore owns a list of probe inputs from its own domain (ties for
the tie checks, stride < pool for the overlap check, ...), enumerated from the
smallest up; the first probe the student's function gets wrong is the reproducer.
Probes are fixed, so the feedback is the same every time.

``literal`` prints arrays as exact Python literals (``repr`` of floats round-trips),
so the pasted reproducer gives the student the same input and the same expected dx.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .geometry import ceil_output_size, floor_output_size
from .rules import Case

MAX_SIDE = 4
STRIDES = (None,) + tuple((sh, sw) for sh in (1, 2, 3) for sw in (1, 2, 3))


@dataclass(frozen=True)
class ProbeConfig:
    lead: tuple[int, ...]
    in_shape: tuple[int, int]
    pool: tuple[int, int]
    stride: tuple[int, int] | None
    ceil: bool
    out_shape: tuple[int, int]

    @property
    def effective_stride(self) -> tuple[int, int]:
        return self.pool if self.stride is None else self.stride

    @property
    def overlapping(self) -> bool:
        return any(s < p for s, p in zip(self.effective_stride, self.pool))

    @property
    def rectangular_or_leading(self) -> bool:
        return self.pool[0] != self.pool[1] or bool(self.lead)

    @property
    def pool_size(self):
        return self.pool[0] if self.pool[0] == self.pool[1] else self.pool

    @property
    def stride_argument(self):
        if self.stride is None:
            return None
        return self.stride[0] if self.stride[0] == self.stride[1] else self.stride


@functools.lru_cache(maxsize=1)
def all_configs() -> tuple[ProbeConfig, ...]:
    """Every small pooling configuration, smallest first."""
    configs = []
    for lead in ((), (2,)):
        for height in range(1, MAX_SIDE + 1):
            for width in range(1, MAX_SIDE + 1):
                for ph in range(1, height + 1):
                    for pw in range(1, width + 1):
                        if ph * pw < 2:
                            continue
                        for stride in STRIDES:
                            sh, sw = (ph, pw) if stride is None else stride
                            floor = (floor_output_size(height, ph, sh), floor_output_size(width, pw, sw))
                            ceil = (ceil_output_size(height, ph, sh), ceil_output_size(width, pw, sw))
                            configs.append(ProbeConfig(lead, (height, width), (ph, pw), stride, False, floor))
                            if ceil != floor:
                                configs.append(ProbeConfig(lead, (height, width), (ph, pw), stride, True, ceil))

    # Strides that place the same windows are the same probe: keep the plainest (None first).
    distinct: dict[tuple, ProbeConfig] = {}
    for config in configs:
        (sh, sw), (rows, cols) = config.effective_stride, config.out_shape
        windows = (config.lead, config.in_shape, config.pool,
                   tuple(range(0, rows * sh, sh)), tuple(range(0, cols * sw, sw)))
        distinct.setdefault(windows, config)
    configs = list(distinct.values())

    def size(config: ProbeConfig):
        planes = int(np.prod(config.lead, dtype=int))
        return (planes * config.in_shape[0] * config.in_shape[1],
                planes * config.out_shape[0] * config.out_shape[1], len(config.lead),
                config.in_shape, config.pool, config.stride is not None, config.stride or (0, 0),
                config.ceil)
    return tuple(sorted(configs, key=size))


def values(config: ProbeConfig, pattern: str, dtype=np.float64) -> np.ndarray:
    """x for a probe: ``distinct`` (1..n shuffled, each plane's largest value in its
    centre, so that overlapping windows share it), ``negative`` (the same, negated and
    with -1 in the centre), ``ties`` (only 1s and 2s), ``equal`` (all 1s).

    Seeded by the shape only: configurations that differ in pool or stride get the
    same x, so the smallest probe that fails shows the setting that matters.
    """
    shape = config.lead + config.in_shape
    count = int(np.prod(shape))
    rng = np.random.default_rng([*shape, ("distinct", "negative", "ties", "equal").index(pattern)])
    if pattern == "equal":
        return np.ones(shape, dtype=dtype)
    if pattern == "ties":
        return rng.choice([1, 2], size=shape).astype(dtype)
    array = rng.permutation(np.arange(1, count + 1)).reshape(shape)
    planes = array.reshape(-1, *config.in_shape)
    centre = (config.in_shape[0] // 2, config.in_shape[1] // 2)
    for plane in planes:
        top = np.unravel_index(np.argmax(plane), plane.shape)
        plane[top], plane[centre] = plane[centre], plane[top]
    if pattern == "negative":  # -n..-1, with -1 where n was
        array = array - (count + 1)
    return array.astype(dtype)


def upstream(config: ProbeConfig, kind: str = "whole") -> np.ndarray:
    """d_output for a probe: 1, 2, 3, ... in row-major order (``halves``: 0.5, 1.5, ...;
    ``tenths``: 0.1, 0.2, ..., which float32 cannot hold exactly)."""
    shape = config.lead + config.out_shape
    array = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)
    if kind == "halves":
        return array - 0.5
    if kind == "tenths":
        return array / 10
    if kind == "int64":
        return array.astype(np.int64)
    return array


def probes_where(where: Callable[[ProbeConfig], bool], patterns=("distinct", "negative"), dtype=np.float64,
            d_output="whole", limit: int = 300, dtypes: tuple = ()) -> Callable[[], list[Case]]:
    """Probe inputs from the small configurations ``where`` accepts, smallest first
    (``dtypes``: for each configuration, x and d_output in each of these (dtype, d_output
    kind) pairs, instead of ``dtype`` and ``d_output``)."""
    @functools.lru_cache(maxsize=1)
    def build() -> tuple[Case, ...]:
        cases: list[Case] = []
        for config in all_configs():
            if len(cases) >= limit:
                break
            if where(config):
                for kind, upstream_kind in dtypes or ((None, d_output),):
                    cases += [Case(_frozen(_as(upstream(config, upstream_kind), kind)),
                                   _frozen(values(config, pattern, kind or dtype)),
                                   config.pool_size, config.stride_argument) for pattern in patterns]
        return tuple(cases)
    return build


def _as(array: np.ndarray, dtype) -> np.ndarray:
    return array if dtype is None else array.astype(dtype)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False  # shared between calls: students only ever get copies
    return array


# ------------------------------------------------------------------ printing
# An array a student reads is printed whole up to this many elements (every input the search
# finds, and the dx of its shape, is far smaller); a larger one, which only a wrong dx can be,
# is cut: its first rows, then how many more there are.
SHOWN_ELEMENTS = 400
SHOWN_ROWS = 6  # of a cut array: the first rows (or elements) of each of its last two axes


def _rows_shown(ndim: int) -> int:
    """How many rows of an axis with ``ndim`` axes below it and itself a cut array shows: its
    last two axes ``SHOWN_ROWS``, the two before 2, any before those 1 (at most 144 numbers)."""
    return SHOWN_ROWS if ndim <= 2 else 2 if ndim <= 4 else 1


def _nested(items, depth: int) -> str:
    if not isinstance(items, list):
        return repr(items)
    if not items or not isinstance(items[0], list):
        return "[" + ", ".join(repr(item) for item in items) + "]"
    separator = ",\n" + " " * (depth + 1)
    return "[" + separator.join(_nested(item, depth + 1) for item in items) + "]"


def is_cut(array) -> bool:
    """Whether ``literal`` cuts ``array`` (too large to be read, or pasted, whole)."""
    return np.size(array) > SHOWN_ELEMENTS


def _cut(array: np.ndarray, depth: int) -> str:
    """The first rows of ``array`` at every level, each level's rest counted: "… 9 more rows"."""
    count = _rows_shown(array.ndim)
    shown, more = array[:count], max(0, len(array) - count)
    if array.ndim == 1:
        items = [repr(item) for item in shown.tolist()]
        items += [f"\u2026 {more} more element{'s' if more != 1 else ''}"] if more else []
        return "[" + ", ".join(items) + "]"
    separator = ",\n" + " " * (depth + 1)
    rows = [_cut(row, depth + 1) for row in shown]
    if more:
        rows.append(f"\u2026 {more} more row{'s' if more != 1 else ''}")
    return "[" + separator.join(rows) + "]"


def literal(array: np.ndarray, indent: int = 0) -> str:
    """``np.array(...)`` source text that rebuilds ``array`` exactly (values and dtype); an
    array of more than ``SHOWN_ELEMENTS`` elements is cut (``is_cut``): its first rows at
    every level and how many more, which is no longer code to paste."""
    array = np.asarray(array)
    dtype = "" if array.dtype == np.float64 else f", dtype=np.{array.dtype.name}"
    opening = indent + len("np.array(")
    if is_cut(array) and array.ndim:
        return f"np.array({_cut(array, opening)}{dtype})"
    return f"np.array({_nested(array.tolist(), opening)}{dtype})"


def cut_note(array) -> str:
    """What a reader of a cut array is told (``is_cut``): its shape and size, and that it is cut."""
    shape = np.shape(array)
    return (f"(cut: it has shape {shape[:8]}{'...' if len(shape) > 8 else ''} and {np.size(array)} elements, too many "
            "to show: its first rows and elements, which are no code to paste)")


def call_text(pool_size, stride) -> str:
    arguments = f"pool_size={pool_size!r}" + ("" if stride is None else f", stride={stride!r}")
    return f"dx = max_pool_backward(d_output, x, {arguments})"
