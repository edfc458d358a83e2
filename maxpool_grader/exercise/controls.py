"""Correct implementations written the ways students write them: every check must pass
every one of them (the mutation test)."""

from __future__ import annotations

import numpy as np

from .bugs import gradient_zeros, pool_and_stride, window_loop


def loop_with_argmax(d_output, x, pool_size, stride=None):
    return window_loop(d_output, x, pool_size, stride)


def vectorized_sliding_windows(d_output, x, pool_size, stride=None):
    # a student's import, inside: each control's source is a whole answer (benchmarks/bench_similarity.py)
    from numpy.lib.stride_tricks import sliding_window_view
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    rows, cols = d_output.shape[-2:]
    height, width = max(x.shape[-2], (rows - 1) * sh + ph), max(x.shape[-1], (cols - 1) * sw + pw)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = np.full((*x.shape[:-2], height, width), lowest, dtype=x.dtype)
    padded[..., :x.shape[-2], :x.shape[-1]] = x
    view = sliding_window_view(padded, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :][..., :rows, :cols, :, :]
    flat = view.reshape(*view.shape[:-2], -1).argmax(axis=-1)  # within each window, row-major
    r = np.arange(rows)[:, None] * sh + flat // pw
    c = np.arange(cols)[None, :] * sw + flat % pw
    dx = gradient_zeros(x, (*x.shape[:-2], height, width))
    lead = np.indices(x.shape[:-2] + (rows, cols))[:-2]
    np.add.at(dx, (*lead, r, c), d_output)
    return dx[..., :x.shape[-2], :x.shape[-1]]


def pure_python_scan(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw, sh, sw = pool_and_stride(pool_size, stride)
    height, width = x.shape[-2:]
    dx = gradient_zeros(x)
    for lead in np.ndindex(x.shape[:-2]):
        plane = x[lead].tolist()
        for k in range(d_output.shape[-2]):
            for l in range(d_output.shape[-1]):  # noqa: E741  Part A's (k, l)
                best = None
                for r in range(k * sh, min(k * sh + ph, height)):
                    for c in range(l * sw, min(l * sw + pw, width)):
                        if best is None or plane[r][c] > best[0]:
                            best = (plane[r][c], r, c)
                dx[(*lead, best[1], best[2])] += d_output[(*lead, k, l)]
    return dx


def mask_with_first_tie(d_output, x, pool_size, stride=None):
    def first_of_mask(window):
        mask = window == window.max()
        first = np.zeros(mask.size)
        first[np.flatnonzero(mask)[0]] = 1.0
        return first.reshape(window.shape)
    return window_loop(d_output, x, pool_size, stride, weights=first_of_mask)


def noisy_but_correct(d_output, x, pool_size, stride=None):
    import sys  # a student's import, inside: the control's source is a whole answer (as above)
    print("debug: starting backward pass", file=sys.stderr)
    np.log(np.array([-1.0]))  # RuntimeWarning: invalid value encountered in log
    return loop_with_argmax(d_output, x, pool_size, stride)
