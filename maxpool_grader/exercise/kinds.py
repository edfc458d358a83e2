"""The kinds of valid input, declared once: what Part B allows for x, d_output, pool_size and
stride, and a seeded generator that draws inputs of every kind.

Part B's rules quantify over every input the contract allows: x of shape (..., H, W) with any
number of leading axes (size 1 among them, H or W of 1), any integer or floating dtype, any
values (negative, -inf, huge, a minimum that is not 0, ties), any memory layout a NumPy array
can have (Fortran order, a transposed, stepped or reversed view); d_output of any real dtype
and layout of its own; pool_size and stride as an int or a pair, stride None, smaller or larger
than the pool; the floor or the ceil-mode grid. ``Kind`` is one point of that space and
``case_of`` the input it names. The hidden tests draw their extra cases from here
(``exercise/contract.py`` says which rule draws over which dimensions), so a rule is checked on
every kind of input it covers, not on the cases someone thought of. The cases are drawn from a
seed: every student gets the same ones.

It holds kinds, never answers: nothing here computes a dx.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .geometry import ceil_output_size, floor_output_size

FLOATS = ("float64", "float32", "float16")
INTEGERS = ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")
DTYPES = FLOATS + INTEGERS
LAYOUTS = ("C", "F", "transposed", "stepped", "reversed")  # how an array's values lie in memory
X_VALUES = ("distinct", "negative", "offset", "mixed", "huge", "tiny", "neg_inf", "ties", "equal", "extremes",
            "very_negative", "bottom")


def arranged(array: np.ndarray, layout: str) -> np.ndarray:
    """A new array with ``array``'s values (and dtype), laid out in memory as ``layout`` says:
    ``C`` (row-major, contiguous), ``F`` (Fortran order), ``transposed`` (a view that swaps the
    last two axes of a contiguous array), ``stepped`` (every second column of a wider array:
    ``a[..., ::2]``), ``reversed`` (a view with negative strides: ``a[..., ::-1, ::-1]``)."""
    array = np.asarray(array)
    if layout == "C":
        return np.array(array, order="C", copy=True)
    if layout == "F":
        return np.array(array, order="F", copy=True)
    if layout == "transposed":
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(array, -1, -2)), -1, -2)
    if layout == "stepped":
        return np.repeat(array, 2, axis=-1)[..., ::2]
    if layout == "reversed":
        return np.ascontiguousarray(array[..., ::-1, ::-1])[..., ::-1, ::-1]
    raise ValueError(f"unknown layout {layout!r}")


def layout_code(array: np.ndarray, layout: str, literal, indent: int = 0) -> str:
    """Source text that rebuilds ``array`` in ``layout`` exactly as ``arranged`` does
    (``literal(array, indent)`` writes an ``np.array(...)``), for a reproducer to paste."""
    if layout == "C":
        return literal(array, indent)
    if layout == "F":
        return f"np.asfortranarray({literal(array, indent + len('np.asfortranarray('))})"
    if layout == "transposed":
        return f"np.swapaxes({literal(np.swapaxes(array, -1, -2), indent + len('np.swapaxes('))}, -1, -2)"
    if layout == "stepped":
        return f"np.repeat({literal(array, indent + len('np.repeat('))}, 2, axis=-1)[..., ::2]"
    if layout == "reversed":
        return f"{literal(np.ascontiguousarray(array[..., ::-1, ::-1]), indent)}[..., ::-1, ::-1]"
    raise ValueError(f"unknown layout {layout!r}")


@dataclass(frozen=True)
class Kind:
    """One kind of valid input. The defaults are the plain input: a 4x4 float64 plane of
    distinct positive values, pool 2, stride None, the floor grid, C order."""

    lead: tuple[int, ...] = ()
    plane: tuple[int, int] = (4, 4)
    pool: object = 2  # pool_size as passed: an int or a pair
    stride: object = None  # as passed: None, an int or a pair
    ceil: bool = False
    x_dtype: str = "float64"
    d_dtype: str = "float64"
    values: str = "distinct"  # one of X_VALUES
    x_layout: str = "C"
    d_layout: str = "C"
    first: bool = False  # each window's maximum moved to its first element (row-major)

    @property
    def pair(self) -> tuple[tuple[int, int], tuple[int, int]]:
        pool = _as_pair(self.pool)
        return pool, pool if self.stride is None else _as_pair(self.stride)

    @property
    def grid(self) -> tuple[int, int]:
        (ph, pw), (sh, sw) = self.pair
        size = ceil_output_size if self.ceil else floor_output_size
        return size(self.plane[0], ph, sh), size(self.plane[1], pw, sw)

    @property
    def valid(self) -> bool:
        (ph, pw), (sh, sw) = self.pair
        height, width = self.plane
        if ph > height or pw > width:
            return False
        if self.values in ("negative", "neg_inf", "mixed") and self.x_dtype.startswith("uint"):
            return False
        if self.values in ("huge", "tiny", "neg_inf", "very_negative") and self.x_dtype not in FLOATS:
            return False
        if self.values in ("extremes", "bottom") and self.x_dtype in FLOATS:
            return False
        floor = (floor_output_size(height, ph, sh), floor_output_size(width, pw, sw))
        return not self.ceil or floor != self.grid


def _as_pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def x_values(kind: Kind, rng: np.random.Generator) -> np.ndarray:
    x = _x_values(kind, rng)
    return maximum_first(x, kind.pair[0]) if kind.first else x


def maximum_first(x: np.ndarray, pool: tuple[int, int]) -> np.ndarray:
    """A copy of x with each window of the stride-None grid (windows that do not overlap, the
    clipped ones too) having its maximum swapped to its first element: a scan that starts from
    0, or from any value below x's, keeps the first element and so picks the maximum; padding
    past the border does not. It tells clipped border windows apart from negative values."""
    (ph, pw), x = pool, np.array(x, copy=True)
    for lead in np.ndindex(x.shape[:-2]):
        plane = x[lead]
        for top in range(0, plane.shape[0], ph):
            for left in range(0, plane.shape[1], pw):
                window = plane[top:top + ph, left:left + pw]
                where = np.unravel_index(np.argmax(window), window.shape)
                window[where], window[0, 0] = window[0, 0], window[where]
    return x


def _x_values(kind: Kind, rng: np.random.Generator) -> np.ndarray:
    """x of ``kind`` (in C order): ``distinct`` values 1..n in random order, ``negative`` (-n..-1),
    ``offset`` (from 1000 up: a minimum far from 0), ``mixed`` (both signs), ``huge`` (magnitudes
    near the dtype's largest), ``tiny`` (magnitudes near its smallest normal), ``neg_inf``
    (negative, with -inf in some places and a whole window of it), ``ties`` (1s and 2s), ``equal``
    (one value everywhere), ``extremes`` (integers at both ends of the dtype's range)."""
    shape = kind.lead + kind.plane
    count = int(np.prod(shape))
    dtype = np.dtype(kind.x_dtype)
    order = rng.permutation(count).reshape(shape)
    if kind.values == "ties":
        return rng.choice([1, 2], size=shape).astype(dtype)
    if kind.values == "equal":
        return np.full(shape, 3 if dtype.kind != "u" else 7, dtype=dtype)
    if kind.values == "bottom":  # the bottom of the range: 0 for unsigned, the most negative for signed
        return (np.iinfo(dtype).min + (order % 100).astype(object)).astype(dtype)
    if kind.values == "extremes":  # the top of the range, up to 2**53 (where float64 holds every integer)
        top = min(int(np.iinfo(dtype).max), 2**53) - (order % 100).astype(object)
        return top.astype(dtype)
    offset = 1000 if dtype.kind == "f" or dtype.itemsize > 1 else 60
    if dtype.kind in "iu":
        span = min(int(np.iinfo(dtype).max), 1 << 30) - (offset if kind.values == "offset" else 0)
        order = order % (span - 1)  # an int8 plane of more than 126 values repeats some
    distinct = order + 1
    if kind.values == "negative":
        return (-distinct).astype(dtype)
    if kind.values == "offset":
        return (distinct + offset).astype(dtype)
    if kind.values == "mixed":
        middle = int(distinct.max()) // 2
        return (distinct - middle - 0.5 if dtype.kind == "f" else distinct - middle).astype(dtype)
    if kind.values == "very_negative":  # below any sentinel a scan might start from (-1e9, -1e30)
        return (-distinct * (float(np.finfo(dtype).max) / (count + 1))).astype(dtype)
    if kind.values in ("huge", "tiny"):
        info = np.finfo(dtype)
        scale = float(info.max) / (count + 1) if kind.values == "huge" else float(info.tiny) * 4
        signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return (distinct * scale * signs).astype(dtype)
    if kind.values == "neg_inf":  # -inf anywhere but at a window's maximum: no maximum is tied
        x = (-distinct).astype(dtype)
        x[(rng.random(shape) < 0.4) & ~_window_maxima(x, kind)] = -np.inf
        return x
    return distinct.astype(dtype)


def _window_maxima(x: np.ndarray, kind: Kind) -> np.ndarray:
    """Where each window of ``kind``'s grid (clipped at the border) has its first maximum."""
    (ph, pw), (sh, sw) = kind.pair
    marked = np.zeros(x.shape, dtype=bool)
    for lead in np.ndindex(x.shape[:-2]):
        for k, l in np.ndindex(kind.grid):  # noqa: E741  (k, l): an output position, as in Part A
            window = x[lead][k * sh:k * sh + ph, l * sw:l * sw + pw]
            row, col = np.unravel_index(np.argmax(window), window.shape)
            marked[lead + (k * sh + row, l * sw + col)] = True
    return marked


def d_output_values(kind: Kind, rng: np.random.Generator) -> np.ndarray:
    """d_output of ``kind`` (in C order): halves (0.5, -1.5, ...) for a floating dtype, which every
    float dtype holds exactly; whole numbers for an integer one (positive for unsigned)."""
    shape = kind.lead + kind.grid
    dtype = np.dtype(kind.d_dtype)
    whole = rng.integers(1, 9, size=shape)
    if dtype.kind == "u":
        return whole.astype(dtype)
    signed = whole * rng.choice([-1, 1], size=shape)
    return (signed - 0.5 * np.sign(signed) if dtype.kind == "f" else signed).astype(dtype)


def inputs_of(kind: Kind, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(d_output, x) of ``kind``, both in C order (``arranged`` lays them out)."""
    rng = np.random.default_rng(seed)
    x = x_values(kind, rng)
    return d_output_values(kind, rng), x


# The dimensions of the input space a rule can draw over, each with its values (the first is plain).
DIMENSIONS: dict[str, tuple] = {
    "x_dtype": DTYPES,
    "d_dtype": DTYPES,
    "lead": ((), (2,), (1,), (2, 3), (3, 1, 2), (1, 1, 1)),
    "plane": ((4, 4), (3, 5), (5, 3), (1, 4), (4, 1), (2, 6), (6, 2), (1, 1), (5, 5), (6, 7), (3, 3), (7, 7), (6, 6)),
    "pool": (2, 3, 1, (1, 2), (2, 1), (2, 3), (3, 2), (1, 1)),
    "stride": (None, 1, 2, 3, (1, 2), (2, 1), (3, 2), (2, 3)),
    "ceil": (False, True),
    "values": X_VALUES,
    "x_layout": LAYOUTS,
    "d_layout": LAYOUTS,
}


def draw(over: tuple[str, ...], count: int, seed: int, where=lambda kind: True, base: Kind = Kind()) -> list[Kind]:
    """``count`` distinct valid kinds that vary the dimensions ``over`` (the rest as in
    ``base``) and that ``where`` accepts, drawn with ``seed``: the same every time. They are
    spread evenly over the values of the first dimension ``over`` names (every dtype of x,
    every kind of values, ...), in turn, the others drawn at random."""
    rng = np.random.default_rng(seed)
    strata: dict[object, list[Kind]] = {}
    first, rest = over[0], tuple(name for name in dict.fromkeys(over[1:]) if name != over[0])
    for value in DIMENSIONS[first]:  # each value of the first dimension: its own stratum
        group = strata.setdefault(value, [])
        for _ in range(400):
            if len(group) >= count:
                break
            kind = replace(base, **{first: value}, **{name: DIMENSIONS[name][rng.integers(len(DIMENSIONS[name]))]
                                                      for name in rest})
            if kind not in group and kind.valid and where(kind):
                group.append(kind)
    found: list[Kind] = []
    for turn in range(count):
        groups = [group for group in strata.values() if len(group) > turn]
        if not groups or len(found) >= count:
            break
        found += [group[turn] for group in groups][:count - len(found)]
    return found
