"""The catalogue's wrong implementations, written the ways students write them.

Most bugs are one twist of the same window loop (``window_loop``), so the twist is
the only thing that differs between them; the loop walks d_output's grid, as a
correct solution must. Bugs of a different shape (a global arg-max, an upsampling
trick, a window view modified in place) are written out in full. catalogue.py names
and explains each one.
"""

from __future__ import annotations

import numpy as np

from .geometry import as_pair


def _pair(value) -> tuple[int, int]:
    return as_pair("pool_size or stride", value)


def pool_and_stride(pool_size, stride) -> tuple[int, int, int, int]:
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    return ph, pw, sh, sw


def _planes(array: np.ndarray) -> np.ndarray:
    """View an (..., H, W) array as (planes, H, W)."""
    return array.reshape(-1, *array.shape[-2:])


def gradient_zeros(x: np.ndarray, shape=None) -> np.ndarray:
    """A zero dx in x's dtype when x is floating, else float64 (the rule every bug but the
    dtype bugs keeps, so that each breaks only what it is about)."""
    return np.zeros(x.shape if shape is None else shape, dtype=x.dtype if x.dtype.kind == "f" else np.float64)


def first_maximum(window: np.ndarray) -> np.ndarray:
    """Weights that send the whole gradient to the first maximum (row-major)."""
    weights = np.zeros(window.shape)
    weights[np.unravel_index(np.argmax(window), window.shape)] = 1.0
    return weights


def window_loop(d_output, x, pool_size, stride=None, *, weights=first_maximum,
                 overwrite=False, scale=True, dx_dtype=None, grid=None):
    """Loop over d_output's grid; each window's gradient goes where ``weights`` says.

    The keyword arguments are the twists the bugs apply: how a window's gradient is
    split (``weights``), ``=`` instead of ``+=`` (``overwrite``), routing 1 instead of
    the upstream value (``scale=False``), dx's dtype, and which grid is walked.
    """
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    dx = gradient_zeros(x) if dx_dtype is None else np.zeros(x.shape, dtype=dx_dtype)
    planes_x, planes_dx, planes_d = _planes(x), _planes(dx), _planes(d_output)
    rows, cols = planes_d.shape[1:] if grid is None else grid(x.shape[-2:], ph, pw, sh, sw)
    for n in range(planes_x.shape[0]):
        for k in range(rows):
            for l in range(cols):  # noqa: E741  Part A's (k, l): an output position
                window = planes_x[n, k * sh:k * sh + ph, l * sw:l * sw + pw]
                share = weights(window) * (planes_d[n, k, l] if scale else 1.0)
                target = planes_dx[n, k * sh:k * sh + ph, l * sw:l * sw + pw]
                if overwrite:
                    target[share != 0] = share[share != 0]
                else:
                    target += share.astype(target.dtype)
    return dx


def overwrite_overlaps(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, overwrite=True)


def fancy_index_accumulate(d_output, x, pool_size, stride=None):
    """Every window's arg-max at once, then ``dx[rows, cols] += d``: NumPy adds once per
    distinct index, so a maximum shared by several windows keeps only one gradient."""
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    dx = gradient_zeros(x)
    planes_x, planes_dx, planes_d = _planes(x), _planes(dx), _planes(d_output)
    rows, cols = planes_d.shape[1:]
    for n in range(planes_x.shape[0]):
        r, c = np.zeros((rows, cols), dtype=int), np.zeros((rows, cols), dtype=int)
        for k in range(rows):
            for l in range(cols):  # noqa: E741  Part A's (k, l)
                window = planes_x[n, k * sh:k * sh + ph, l * sw:l * sw + pw]
                flat = np.argmax(window)  # a flat, row-major index into the window
                r[k, l], c[k, l] = k * sh + flat // window.shape[1], l * sw + flat % window.shape[1]
        planes_dx[n][r, c] += planes_d[n]
    return dx


def integer_truncation(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, dx_dtype=np.asarray(x).dtype)


def float32_accumulator(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, dx_dtype=np.float32)


def dx_always_float64(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, dx_dtype=np.float64)


def float32_for_integer_input(d_output, x, pool_size, stride=None):
    """x's dtype for floating x, as Part B says, but float32 (not float64) for integer x."""
    dtype = np.asarray(x).dtype
    return window_loop(d_output, x, pool_size, stride, dx_dtype=dtype if dtype.kind == "f" else np.float32)


def all_tied_maxima(window):
    return (window == window.max()).astype(float)


def ties_all_maxima(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, weights=all_tied_maxima)


def ties_shared(d_output, x, pool_size, stride=None):
    def shared(window):
        mask = all_tied_maxima(window)
        return mask / mask.sum()
    return window_loop(d_output, x, pool_size, stride, weights=shared)


def ties_last_maximum(d_output, x, pool_size, stride=None):
    def last(window):
        flipped = first_maximum(window.ravel()[::-1])
        return flipped[::-1].reshape(window.shape)
    return window_loop(d_output, x, pool_size, stride, weights=last)


def stride_ignored(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, None)


def stride_none_means_one(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, 1 if stride is None else stride)


def window_from_stride(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size if stride is None else stride, stride)


def pool_transposed(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    return window_loop(d_output, x, (pw, ph), stride)


def border_windows_dropped(d_output, x, pool_size, stride=None):
    def floor_grid(shape, ph, pw, sh, sw):
        return (shape[0] - ph) // sh + 1, (shape[1] - pw) // sw + 1
    return window_loop(d_output, x, pool_size, stride, grid=floor_grid)


def square_plane_assumed(d_output, x, pool_size, stride=None):
    """Code written for square images: the number of output columns is taken from the
    number of rows (``W_out = H_out``), so a wide plane loses its right-hand windows and a
    tall one reads d_output past its last column."""
    rows = np.asarray(d_output).shape[-2]
    return window_loop(d_output, x, pool_size, stride, grid=lambda shape, ph, pw, sh, sw: (rows, rows))


def window_one_short(d_output, x, pool_size, stride=None):
    def short(window):
        weights = np.zeros(window.shape)
        inner = window[:-1, :-1] if min(window.shape) > 1 else window
        weights[np.unravel_index(np.argmax(inner), inner.shape)] = 1.0
        return weights
    return window_loop(d_output, x, pool_size, stride, weights=short)


def not_scaled_by_d_output(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, scale=False)


def average_pool_routing(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride, weights=lambda w: np.full(w.shape, 1.0 / w.size))


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
    return window_loop(d_output, x, pool_size, stride, weights=scan_from_zero)


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
    return window_loop(d_output, x, pool_size, stride, weights=_unravelled_with(ph))


def clipped_window_unravelled_with_pool_width(d_output, x, pool_size, stride=None):
    _, pw = _pair(pool_size)
    return window_loop(d_output, x, pool_size, stride, weights=_unravelled_with(pw))


def zero_padding(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    rows, cols = d_output.shape[-2:]
    pad_h = max(0, (rows - 1) * sh + ph - x.shape[-2])
    pad_w = max(0, (cols - 1) * sw + pw - x.shape[-1])
    padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(0, pad_h), (0, pad_w)])  # zeros
    return window_loop(d_output, padded, pool_size, stride)[..., :x.shape[-2], :x.shape[-1]]


def pool_size_int_only(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    pool_height, pool_width = pool_size, pool_size  # a pair (ph, pw) breaks the slices below
    step_h, step_w = (pool_height, pool_width) if stride is None else _pair(stride)
    dx = gradient_zeros(x)
    for lead in np.ndindex(x.shape[:-2]):
        for k in range(d_output.shape[-2]):
            for l in range(d_output.shape[-1]):  # noqa: E741  Part A's (k, l)
                window = x[lead][k * step_h:k * step_h + pool_height, l * step_w:l * step_w + pool_width]
                r, c = np.unravel_index(np.argmax(window), window.shape)
                dx[(*lead, k * step_h + r, l * step_w + c)] += d_output[(*lead, k, l)]
    return dx


def only_two_dimensional(d_output, x, pool_size, stride=None):
    height, width = np.shape(x)  # fails for (..., H, W) with leading axes
    return window_loop(d_output, x, pool_size, stride)


def one_argmax_across_leading_axes(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    dx = gradient_zeros(x)
    for k in range(d_output.shape[-2]):
        for l in range(d_output.shape[-1]):  # noqa: E741  Part A's (k, l)
            window = x[..., k * sh:k * sh + ph, l * sw:l * sw + pw]
            where = np.unravel_index(np.argmax(window), window.shape)  # over all planes at once
            *lead, r, c = where
            dx[(*lead, k * sh + r, l * sw + c)] += d_output[(*lead, k, l)]
    return dx


def global_argmax(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    dx = gradient_zeros(x)
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
    dx = gradient_zeros(x)
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
    return window_loop(d_output, x, pool_size, stride, weights=subtract_max)
