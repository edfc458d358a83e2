"""The bug catalogue: realistic wrong ``max_pool_backward`` implementations, and controls.

Each ``Bug`` is a small function with the mistake students actually make, a title and
an explanation written for the student (what goes wrong, how to fix it). Feedback runs
them on the input where a student's dx is wrong and names those that give exactly the
student's answer. ``CONTROLS`` are correct implementations written the ways students
write them; the mutation test (tests/test_mutation.py) requires every hidden check to
pass every control and every bug to lose points somewhere.

Most bugs are one twist of the same window loop (``_window_loop``), so the twist is
the only thing that differs between them; the loop walks d_output's grid, as a
correct solution must. Bugs of a different shape (a global arg-max, an upsampling
trick, a window view modified in place) are written out in full.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .geometry import as_pair

Backward = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Bug:
    name: str
    title: str  # the mistake in a few words
    explanation: str  # what goes wrong and how to fix it, for the student
    function: Backward
    # Whether a student's source shows this mistake: True (it has the construct the mistake
    # needs), False (it cannot make it), None (reading the code cannot tell). Used to tell
    # apart mistakes that give the same dx (look-alikes).
    in_source: Callable[[str], bool | None] = lambda source: None


@dataclass(frozen=True)
class Control:
    name: str
    description: str
    function: Backward


# ------------------------------------------------------------------ shared pieces
def _pair(value) -> tuple[int, int]:
    return as_pair("pool_size or stride", value)


def _pool_and_stride(pool_size, stride) -> tuple[int, int, int, int]:
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return ph, pw, sh, sw


def _planes(array: np.ndarray) -> np.ndarray:
    """View an (..., H, W) array as (planes, H, W)."""
    return array.reshape(-1, *array.shape[-2:])


def first_maximum(window: np.ndarray) -> np.ndarray:
    """Weights that send the whole gradient to the first maximum (row-major)."""
    weights = np.zeros(window.shape)
    weights[np.unravel_index(np.argmax(window), window.shape)] = 1.0
    return weights


def _window_loop(d_output, x, pool_size, stride=None, *, weights=first_maximum,
                 overwrite=False, scale=True, dx_dtype=float, grid=None):
    """Loop over d_output's grid; each window's gradient goes where ``weights`` says.

    The keyword arguments are the twists the bugs apply: how a window's gradient is
    split (``weights``), ``=`` instead of ``+=`` (``overwrite``), routing 1 instead of
    the upstream value (``scale=False``), dx's dtype, and which grid is walked.
    """
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    dx = np.zeros(x.shape, dtype=dx_dtype)
    planes_x, planes_dx, planes_d = _planes(x), _planes(dx), _planes(d_output)
    rows, cols = planes_d.shape[1:] if grid is None else grid(x.shape[-2:], ph, pw, sh, sw)
    for n in range(planes_x.shape[0]):
        for i in range(rows):
            for j in range(cols):
                window = planes_x[n, i * sh:i * sh + ph, j * sw:j * sw + pw]
                share = weights(window) * (planes_d[n, i, j] if scale else 1.0)
                target = planes_dx[n, i * sh:i * sh + ph, j * sw:j * sw + pw]
                if overwrite:
                    target[share != 0] = share[share != 0]
                else:
                    target += share.astype(target.dtype)
    return dx


# ------------------------------------------------------------------ bugs
def overwrite_overlaps(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride, overwrite=True)


def fancy_index_accumulate(d_output, x, pool_size, stride=None):
    """Every window's arg-max at once, then ``dx[rows, cols] += d``: NumPy adds once per
    distinct index, so a maximum shared by several windows keeps only one gradient."""
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    dx = np.zeros(x.shape)
    planes_x, planes_dx, planes_d = _planes(x), _planes(dx), _planes(d_output)
    rows, cols = planes_d.shape[1:]
    for n in range(planes_x.shape[0]):
        r, c = np.zeros((rows, cols), dtype=int), np.zeros((rows, cols), dtype=int)
        for i in range(rows):
            for j in range(cols):
                window = planes_x[n, i * sh:i * sh + ph, j * sw:j * sw + pw]
                k = np.argmax(window)
                r[i, j], c[i, j] = i * sh + k // window.shape[1], j * sw + k % window.shape[1]
        planes_dx[n][r, c] += planes_d[n]
    return dx


def _subscript_stores(source: str) -> tuple[bool, bool]:
    """Whether ``source`` stores into the array it returns (dx), through a subscript, with
    ``=`` (something other than a constant) and with ``+=``. Without a ``return name``,
    any array counts."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False, False
    returned = {node.value.id for node in ast.walk(tree)
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)}

    def into_dx(target) -> bool:
        if not isinstance(target, ast.Subscript):
            return False
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        return not returned or (isinstance(target, ast.Name) and target.id in returned)

    assigns = any(isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant)
                  and any(into_dx(target) for target in node.targets) for node in ast.walk(tree))
    adds = any(isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and into_dx(node.target)
               for node in ast.walk(tree))
    return assigns, adds


def _calls(source: str, names: set[str], compared: bool = False) -> bool | None:
    """True when ``source`` calls a function or method named in ``names`` (inside an ``==``
    comparison, with ``compared``); None otherwise (the mistake may be written another way)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scopes = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)
              and any(isinstance(op, ast.Eq) for op in node.ops)] if compared else [tree]
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) in names
                                               or getattr(node.func, "id", None) in names):
                return True
    return None


def _assigns_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if assigns else False if adds else None


def _adds_into_dx(source: str) -> bool | None:
    assigns, adds = _subscript_stores(source)
    return True if adds else False if assigns else None


def integer_truncation(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride, dx_dtype=np.asarray(x).dtype)


def all_tied_maxima(window):
    return (window == window.max()).astype(float)


def ties_all_maxima(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride, weights=all_tied_maxima)


def ties_shared(d_output, x, pool_size, stride=None):
    def shared(window):
        mask = all_tied_maxima(window)
        return mask / mask.sum()
    return _window_loop(d_output, x, pool_size, stride, weights=shared)


def ties_last_maximum(d_output, x, pool_size, stride=None):
    def last(window):
        flipped = first_maximum(window.ravel()[::-1])
        return flipped[::-1].reshape(window.shape)
    return _window_loop(d_output, x, pool_size, stride, weights=last)


def stride_ignored(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, None)


def stride_none_means_one(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, 1 if stride is None else stride)


def window_from_stride(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size if stride is None else stride, stride)


def pool_transposed(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    return _window_loop(d_output, x, (pw, ph), stride)


def border_windows_dropped(d_output, x, pool_size, stride=None):
    def floor_grid(shape, ph, pw, sh, sw):
        return (shape[0] - ph) // sh + 1, (shape[1] - pw) // sw + 1
    return _window_loop(d_output, x, pool_size, stride, grid=floor_grid)


def window_one_short(d_output, x, pool_size, stride=None):
    def short(window):
        weights = np.zeros(window.shape)
        inner = window[:-1, :-1] if min(window.shape) > 1 else window
        weights[np.unravel_index(np.argmax(inner), inner.shape)] = 1.0
        return weights
    return _window_loop(d_output, x, pool_size, stride, weights=short)


def not_scaled_by_d_output(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride, scale=False)


def average_pool_routing(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride, weights=lambda w: np.full(w.shape, 1.0 / w.size))


def max_initialised_to_zero(d_output, x, pool_size, stride=None):
    def scan_from_zero(window):
        best, where = 0, (0, 0)
        for r in range(window.shape[0]):
            for c in range(window.shape[1]):
                if window[r, c] > best:
                    best, where = window[r, c], (r, c)
        weights = np.zeros(window.shape)
        weights[where] = 1.0
        return weights
    return _window_loop(d_output, x, pool_size, stride, weights=scan_from_zero)


def _unravelled_with(width: int):
    """Weights at the window's flat arg-max unravelled as if the window had ``width``
    columns: right only when it has; nothing when that lands outside the window."""
    def weights(window):
        chosen = np.zeros(window.shape)
        r, c = divmod(int(np.argmax(window)), width)
        if r < window.shape[0] and c < window.shape[1]:
            chosen[r, c] = 1.0
        return chosen
    return weights


def argmax_unravelled_with_pool_height(d_output, x, pool_size, stride=None):
    ph, _ = _pair(pool_size)
    return _window_loop(d_output, x, pool_size, stride, weights=_unravelled_with(ph))


def clipped_window_unravelled_with_pool_width(d_output, x, pool_size, stride=None):
    _, pw = _pair(pool_size)
    return _window_loop(d_output, x, pool_size, stride, weights=_unravelled_with(pw))


def zero_padding(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    rows, cols = d_output.shape[-2:]
    pad_h = max(0, (rows - 1) * sh + ph - x.shape[-2])
    pad_w = max(0, (cols - 1) * sw + pw - x.shape[-1])
    padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(0, pad_h), (0, pad_w)])  # zeros
    return _window_loop(d_output, padded, pool_size, stride)[..., :x.shape[-2], :x.shape[-1]]


def pool_size_int_only(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    pool_height, pool_width = pool_size, pool_size  # a pair (ph, pw) breaks the slices below
    step_h, step_w = (pool_height, pool_width) if stride is None else _pair(stride)
    dx = np.zeros(x.shape)
    for lead in np.ndindex(x.shape[:-2]):
        for i in range(d_output.shape[-2]):
            for j in range(d_output.shape[-1]):
                window = x[lead][i * step_h:i * step_h + pool_height, j * step_w:j * step_w + pool_width]
                r, c = np.unravel_index(np.argmax(window), window.shape)
                dx[(*lead, i * step_h + r, j * step_w + c)] += d_output[(*lead, i, j)]
    return dx


def only_two_dimensional(d_output, x, pool_size, stride=None):
    height, width = np.shape(x)  # fails for (..., H, W) with leading axes
    return _window_loop(d_output, x, pool_size, stride)


def one_argmax_across_leading_axes(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    dx = np.zeros(x.shape)
    for i in range(d_output.shape[-2]):
        for j in range(d_output.shape[-1]):
            window = x[..., i * sh:i * sh + ph, j * sw:j * sw + pw]
            where = np.unravel_index(np.argmax(window), window.shape)  # over all planes at once
            *lead, r, c = where
            dx[(*lead, i * sh + r, j * sw + c)] += d_output[(*lead, i, j)]
    return dx


def global_argmax(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    dx = np.zeros(x.shape)
    planes_dx, planes_d, planes_x = _planes(dx), _planes(d_output), _planes(x)
    for n in range(planes_x.shape[0]):
        where = np.unravel_index(np.argmax(planes_x[n]), planes_x[n].shape)
        planes_dx[n][where] += planes_d[n].sum()
    return dx


def upsampling_mask(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw = _pair(pool_size)
    rows, cols = d_output.shape[-2:]
    out = _planes(x)[:, :rows * ph, :cols * pw].reshape(-1, rows, ph, cols, pw).max(axis=(2, 4))
    up_max = out.repeat(ph, axis=1).repeat(pw, axis=2)
    up_d = _planes(d_output).repeat(ph, axis=1).repeat(pw, axis=2)
    dx = np.zeros(x.shape)
    planes_dx = _planes(dx)
    region = _planes(x)[:, :rows * ph, :cols * pw]
    planes_dx[:, :rows * ph, :cols * pw] = (region == up_max) * up_d
    return dx


def modifies_x_in_place(d_output, x, pool_size, stride=None):
    def subtract_max(window):  # window is a view into x: this changes x itself
        window -= window.max()
        weights = np.zeros(window.shape)
        weights[np.unravel_index(np.argmax(window == 0), window.shape)] = 1.0
        return weights
    return _window_loop(d_output, x, pool_size, stride, weights=subtract_max)


BUGS: dict[str, Bug] = {bug.name: bug for bug in [
    Bug("overwrite_overlaps", "overlapping windows overwrite each other (`=` instead of `+=`)",
        "When stride < pool_size, one element can be the maximum of several windows. Your code "
        "assigns each window's gradient with `dx[...] = d`, so the last window wins and the others "
        "are lost. Add instead: `dx[...] += d`.", overwrite_overlaps, _assigns_into_dx),
    Bug("fancy_index_accumulate", "`dx[rows, cols] += d` with repeated indices adds only once",
        "With index arrays, NumPy's `+=` reads all the old values, adds, and writes back once per "
        "element: when two windows share their maximum, the same (row, col) appears twice and only "
        "one of the two gradients is kept. Accumulate with `np.add.at(dx, (rows, cols), d)`, or add "
        "window by window in a loop.", fancy_index_accumulate, _adds_into_dx),
    Bug("integer_truncation", "dx has x's integer dtype, so fractions are truncated",
        "`np.zeros_like(x)` copies x's dtype; with integer x, adding 0.5 to it stores 0. "
        "Create dx as floats: `dx = np.zeros(x.shape)`.", integer_truncation),
    Bug("ties_all_maxima", "every tied maximum receives the full gradient",
        "A mask like `window == window.max()` is true at every tied maximum, so a window with two "
        "equal maxima passes back its gradient twice. The forward pass picked one element; send the "
        "gradient to that one only: the first maximum, e.g. `np.argmax(window)`.", ties_all_maxima,
        lambda source: _calls(source, {"max", "amax"}, compared=True)),
    Bug("ties_shared", "tied maxima share the gradient equally",
        "Splitting a window's gradient equally among tied maxima is a valid subgradient, but PyTorch "
        "(and this assignment) sends all of it to the first maximum in row-major order, which is "
        "what `np.argmax` on the window returns.", ties_shared),
    Bug("ties_last_maximum", "on ties, the last maximum gets the gradient instead of the first",
        "A scan with `>=` (or an argmax over the reversed window) ends on the LAST tied maximum. "
        "Use `>` so the first maximum in row-major order is kept, or simply `np.argmax(window)`.",
        ties_last_maximum),
    Bug("stride_ignored", "stride ignored: windows always step by the pool size",
        "Your windows start at `i * pool_size`, so a stride different from the pool size is "
        "ignored. Window (i, j) starts at row `i * stride_h` and column `j * stride_w`.",
        stride_ignored),
    Bug("stride_none_means_one", "stride=None treated as stride 1",
        "`stride=None` means windows step by the pool size (non-overlapping windows), as in "
        "PyTorch. Start with `if stride is None: stride = pool_size`.", stride_none_means_one),
    Bug("window_from_stride", "window size taken from the stride",
        "Your windows are `stride` elements wide, not `pool_size`. A window covers rows "
        "`i*sh : i*sh + ph` and columns `j*sw : j*sw + pw`.", window_from_stride),
    Bug("pool_transposed", "pool height and width swapped",
        "pool_size=(ph, pw) means ph rows and pw columns. Your windows are pw rows by ph columns; "
        "unpack it as `ph, pw = pool_size`.", pool_transposed),
    Bug("border_windows_dropped", "border windows of d_output's grid are skipped",
        "Your loop computes the number of windows from x with a floor, so when d_output has an "
        "extra row or column of windows that run past x's border (ceil mode), their gradient is "
        "lost. Loop over d_output's shape: `for i in range(d_output.shape[-2])`, and let slicing "
        "clip the window at the border.", border_windows_dropped),
    Bug("window_one_short", "windows one row and one column too small (off by one)",
        "A window covers rows `i*sh` up to and including `i*sh + ph - 1`; the slice is "
        "`i*sh : i*sh + ph` (the end is exclusive). Your slice stops one element early, so a "
        "maximum in a window's last row or column is missed.", window_one_short),
    Bug("not_scaled_by_d_output", "the gradient is not multiplied by d_output",
        "Your dx holds 1 at each window's maximum. The chain rule multiplies by the upstream "
        "gradient: the maximum receives `d_output[..., i, j]`, not 1.", not_scaled_by_d_output),
    Bug("average_pool_routing", "the gradient is spread over the whole window (average pooling)",
        "Dividing a window's gradient by its size is the backward pass of AVERAGE pooling. Max "
        "pooling's output depends only on the maximum, so only that element gets the gradient.",
        average_pool_routing),
    Bug("max_initialised_to_zero", "the running maximum starts at 0, so negative windows go wrong",
        "Your scan starts with `best = 0`; in a window of negative numbers nothing beats 0, so the "
        "gradient goes to the wrong element. Start from the window's first element (or -inf), or "
        "use `np.argmax(window)`.", max_initialised_to_zero),
    Bug("argmax_unravelled_with_pool_height", "the flat arg-max index is unravelled with the wrong width",
        "`np.argmax(window)` is a flat row-major index; row = k // window_width, column = "
        "k % window_width. Dividing by the pool HEIGHT is right only for square windows. Use "
        "`np.unravel_index(k, window.shape)`.", argmax_unravelled_with_pool_height),
    Bug("clipped_window_unravelled_with_pool_width",
        "the arg-max of a clipped border window is unravelled with the full pool width",
        "A window that runs past x's border is clipped: it has fewer columns than pool_size. Its "
        "flat arg-max index must be unravelled with the clipped window's own width: "
        "`np.unravel_index(k, window.shape)`.", clipped_window_unravelled_with_pool_width),
    Bug("zero_padding", "x padded with zeros for the border windows",
        "Padding x with 0 to fit the border windows makes a padded 0 the maximum of a window of "
        "negative numbers, so that window's gradient vanishes into the padding. Slice the clipped "
        "window instead (NumPy slicing stops at the border), or pad with -inf.", zero_padding),
    Bug("pool_size_int_only", "pool_size given as a pair (ph, pw) is not supported",
        "pool_size may be one int or a pair (ph, pw); so may stride. Code like "
        "`pool_height = pool_width = pool_size` makes slice bounds out of a tuple. Unpack it first: "
        "`ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size`.",
        pool_size_int_only),
    Bug("only_two_dimensional", "only 2-D inputs supported",
        "x may have leading batch/channel axes: shape (..., H, W). Pool over the last two axes only, "
        "e.g. loop over `np.ndindex(x.shape[:-2])`, or reshape to (-1, H, W) and back.",
        only_two_dimensional),
    Bug("one_argmax_across_leading_axes", "one arg-max taken across all batch/channel planes",
        "`x[..., rows, cols]` is a stack of windows, one per plane; `np.argmax` over it finds one "
        "maximum for all planes together. Each plane's window has its own maximum: take the arg-max "
        "over the last two axes only.", one_argmax_across_leading_axes),
    Bug("global_argmax", "one arg-max for the whole plane instead of one per window",
        "Your code finds the maximum of the whole input once and sends every window's gradient there. "
        "Each window (i, j) has its own maximum: take the arg-max of `x[..., rows, cols]` for every "
        "window.", global_argmax),
    Bug("upsampling_mask", "upsampling trick: non-overlapping windows that tile x exactly, and every tie",
        "`x == out.repeat(ph, 0).repeat(pw, 1)` builds the mask for windows that do not overlap and "
        "cover x exactly; it is wrong for any other stride or size, and it marks every tied maximum. "
        "Loop over the windows (or use sliding_window_view) and pick one maximum each.", upsampling_mask,
        lambda source: _calls(source, {"repeat", "kron", "tile"})),
    Bug("modifies_x_in_place", "x modified in place through a window view",
        "A slice like `x[r0:r1, c0:c1]` is a VIEW: `window -= ...` or `window[...] = ...` changes x "
        "itself, which the caller still needs (and later windows read). Work on `window.copy()` or "
        "compute without writing to x.", modifies_x_in_place),
]}


# ------------------------------------------------------------------ correct controls
def loop_with_argmax(d_output, x, pool_size, stride=None):
    return _window_loop(d_output, x, pool_size, stride)


def vectorized_sliding_windows(d_output, x, pool_size, stride=None):
    from numpy.lib.stride_tricks import sliding_window_view
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    rows, cols = d_output.shape[-2:]
    height, width = max(x.shape[-2], (rows - 1) * sh + ph), max(x.shape[-1], (cols - 1) * sw + pw)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = np.full((*x.shape[:-2], height, width), lowest, dtype=x.dtype)
    padded[..., :x.shape[-2], :x.shape[-1]] = x
    view = sliding_window_view(padded, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :][..., :rows, :cols, :, :]
    k = view.reshape(*view.shape[:-2], -1).argmax(axis=-1)
    r = np.arange(rows)[:, None] * sh + k // pw
    c = np.arange(cols)[None, :] * sw + k % pw
    dx = np.zeros((*x.shape[:-2], height, width))
    lead = np.indices(x.shape[:-2] + (rows, cols))[:-2]
    np.add.at(dx, (*lead, r, c), d_output)
    return dx[..., :x.shape[-2], :x.shape[-1]]


def pure_python_scan(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = _pool_and_stride(pool_size, stride)
    height, width = x.shape[-2:]
    dx = np.zeros(x.shape)
    for lead in np.ndindex(x.shape[:-2]):
        plane = x[lead].tolist()
        for i in range(d_output.shape[-2]):
            for j in range(d_output.shape[-1]):
                best = None
                for r in range(i * sh, min(i * sh + ph, height)):
                    for c in range(j * sw, min(j * sw + pw, width)):
                        if best is None or plane[r][c] > best[0]:
                            best = (plane[r][c], r, c)
                dx[(*lead, best[1], best[2])] += d_output[(*lead, i, j)]
    return dx


def mask_with_first_tie(d_output, x, pool_size, stride=None):
    def first_of_mask(window):
        mask = window == window.max()
        first = np.zeros(mask.size)
        first[np.flatnonzero(mask)[0]] = 1.0
        return first.reshape(window.shape)
    return _window_loop(d_output, x, pool_size, stride, weights=first_of_mask)


def noisy_but_correct(d_output, x, pool_size, stride=None):
    import sys
    print("debug: starting backward pass", file=sys.stderr)
    np.log(np.array([-1.0]))  # RuntimeWarning: invalid value encountered in log
    return loop_with_argmax(d_output, x, pool_size, stride)


CONTROLS: dict[str, Control] = {control.name: control for control in [
    Control("loop_with_argmax", "loops over windows, np.argmax per window", loop_with_argmax),
    Control("vectorized_sliding_windows", "sliding_window_view, argmax and np.add.at",
            vectorized_sliding_windows),
    Control("pure_python_scan", "nested Python loops and comparisons on lists", pure_python_scan),
    Control("mask_with_first_tie", "max mask, keeping only its first true entry", mask_with_first_tie),
    Control("noisy_but_correct", "correct, but prints to stderr and triggers a RuntimeWarning",
            noisy_but_correct),
]}
