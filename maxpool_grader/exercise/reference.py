"""Reference 2-D max pooling, forward and backward, identical to PyTorch's max_pool2d.

Semantics (shared with ``torch.nn.functional.max_pool2d``, padding 0, dilation 1):

* window (k, l) covers rows k*sh .. k*sh+ph-1 and columns l*sw .. l*sw+pw-1 of x,
  clipped at x's border; every window starts inside x (see ``geometry``);
* the forward value is the window's maximum; a NaN in the window makes it NaN;
* backward sends each window's upstream gradient to one position: the first
  maximum in row-major order within the window, or, if the window holds NaN, the
  last NaN (PyTorch updates its running arg-max on ``val > max or isnan(val)``);
* contributions of overlapping windows add up; dx has x's dtype when x is floating,
  float64 for integer x (PyTorch casts the upstream gradient to x's dtype).

Both functions are vectorised: no Python loop over windows or batch elements.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .geometry import PoolGeometry, as_real_array, backward_geometry, forward_geometry, gradient_dtype


def _lowest(dtype: np.dtype):
    """A value no element of ``dtype`` is below: fills the clipped part of a window."""
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def windows(x: np.ndarray, geometry: PoolGeometry) -> np.ndarray:
    """The pooling windows of x as an array of shape (..., H_out, W_out, ph*pw).

    Positions past x's border are filled with the dtype's lowest value. They never
    become the chosen maximum: each window's first element is inside x and
    ``first_max_in_window`` prefers the earliest of equal values.
    """
    pad_rows, pad_cols = (p - n for p, n in zip(geometry.padded_shape, geometry.in_shape))
    padding = [(0, 0)] * len(geometry.leading) + [(0, pad_rows), (0, pad_cols)]
    padded = np.pad(x, padding, constant_values=_lowest(x.dtype)) if pad_rows or pad_cols else x
    (out_rows, out_cols), (step_rows, step_cols) = geometry.out_shape, geometry.stride
    view = sliding_window_view(padded, geometry.pool, axis=(-2, -1))
    view = view[..., ::step_rows, ::step_cols, :, :][..., :out_rows, :out_cols, :, :]
    return view.reshape(*view.shape[:-2], -1)


def first_max_in_window(window_values: np.ndarray) -> np.ndarray:
    """Index (row-major, within the window) of the element that receives the gradient."""
    chosen = np.argmax(window_values, axis=-1)  # first occurrence of the maximum
    if window_values.dtype.kind == "f":
        is_nan = np.isnan(window_values)
        has_nan = is_nan.any(axis=-1)
        if has_nan.any():
            last_nan = is_nan.shape[-1] - 1 - np.argmax(is_nan[..., ::-1], axis=-1)
            chosen = np.where(has_nan, last_nan, chosen)
    return chosen


def argmax_positions(x: np.ndarray, geometry: PoolGeometry) -> np.ndarray:
    """Flat index into x's (H, W) plane of each window's chosen maximum: (..., H_out, W_out)."""
    within = first_max_in_window(windows(x, geometry))
    pool_cols = geometry.pool[1]
    out_rows, out_cols = geometry.out_shape
    rows = np.arange(out_rows)[:, None] * geometry.stride[0] + within // pool_cols
    cols = np.arange(out_cols)[None, :] * geometry.stride[1] + within % pool_cols
    return rows * geometry.in_shape[1] + cols


def max_pool_forward(x, pool_size, stride=None, ceil_mode=False):
    """Max pooling over the last two axes.

    Args:
        x: array of shape (..., H, W), integer or floating.
        pool_size: int or (ph, pw), the window size.
        stride: int or (sh, sw); None means stride = pool_size.
        ceil_mode: False keeps only full windows; True adds border windows that start
            inside x and are clipped at its border (PyTorch's ceil_mode).

    Returns:
        out: array of shape (..., H_out, W_out) and x's dtype, each window's maximum.
    """
    x = as_real_array("x", x)
    geometry = forward_geometry(x.shape, pool_size, stride, ceil_mode)
    return windows(x, geometry).max(axis=-1)


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Gradient of the loss with respect to the input of a max-pooling layer.

    Args:
        d_output: array of shape (..., H_out, W_out), the gradient with respect to the
            pooled output; its grid (floor or ceil mode) decides which windows exist.
        x: array of shape (..., H, W), the layer's input (same leading axes).
        pool_size: int or (ph, pw).
        stride: int or (sh, sw); None means stride = pool_size.

    Returns:
        dx: array of x's shape and dtype when x is floating (float64 for integer x). Each
        window's d_output value is added at the window's first maximum.
    """
    x = as_real_array("x", x)
    d_output = as_real_array("d_output", d_output)
    geometry = backward_geometry(d_output.shape, x.shape, pool_size, stride)
    dtype = gradient_dtype(x.dtype)
    planes = int(np.prod(geometry.leading, dtype=np.int64))
    height, width = geometry.in_shape
    targets = argmax_positions(x, geometry).reshape(planes, -1)
    dx = np.zeros((planes, height * width), dtype=dtype)
    plane_index = np.broadcast_to(np.arange(planes)[:, None], targets.shape)
    # Row-major order of the outputs, as PyTorch accumulates: bit-identical sums.
    np.add.at(dx, (plane_index, targets), d_output.reshape(planes, -1).astype(dtype))
    return dx.reshape(x.shape)
