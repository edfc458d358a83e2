"""Window geometry of 2-D max pooling: the one place that knows the output-grid rule.

Every other module (the reference, the hidden checks, the test-case builders) asks
this module for shapes, so the rule "window (k, l) covers rows k*sh .. k*sh+ph-1 and
columns l*sw .. l*sw+pw-1, clipped at the border of x, and every window starts inside
x" is written down exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def as_pair(name: str, value) -> tuple[int, int]:
    """Return ``value`` as a (rows, cols) pair of positive ints.

    ``value`` is an int (the same for rows and columns) or a pair of ints.
    Raises TypeError / ValueError naming ``name`` otherwise.
    """
    def is_int(v) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if is_int(value):
        pair = (int(value), int(value))
    else:
        try:
            items = tuple(value)
        except TypeError:
            raise TypeError(
                f"{name} must be an int or a pair of ints (rows, cols), got {value!r}"
            ) from None
        if len(items) != 2 or not all(is_int(v) for v in items):
            raise TypeError(
                f"{name} must be an int or a pair of ints (rows, cols), got {value!r}"
            )
        pair = (int(items[0]), int(items[1]))
    if min(pair) < 1:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return pair


def as_real_array(name: str, value) -> np.ndarray:
    """Return ``value`` as an ndarray of real numbers (integer or floating dtype)."""
    try:
        array = np.asarray(value)
    except ValueError as error:  # ragged nested lists
        raise TypeError(f"{name} must be an array of real numbers: {error}") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be an array of real numbers (integer or floating dtype), "
            f"got dtype {array.dtype}"
        )
    if array.ndim < 2:
        raise ValueError(
            f"{name} must have at least 2 dimensions (..., H, W), got shape {array.shape}"
        )
    return array


def floor_output_size(size: int, pool: int, stride: int) -> int:
    """Number of windows along one axis when only full windows count (ceil_mode=False)."""
    return (size - pool) // stride + 1


def ceil_output_size(size: int, pool: int, stride: int) -> int:
    """Number of windows along one axis in PyTorch's ceil_mode=True (no padding).

    The last window may run past the border, but it must start inside x.
    """
    count = -(-(size - pool) // stride) + 1
    if (count - 1) * stride >= size:
        count -= 1
    return count


def output_sizes(size: int, pool: int, stride: int) -> tuple[int, ...]:
    """The output lengths x, pool and stride can produce along one axis (floor, ceil)."""
    return tuple(sorted({floor_output_size(size, pool, stride),
                         ceil_output_size(size, pool, stride)}))


def gradient_dtype(x_dtype) -> np.dtype:
    """dx's dtype: x's dtype when x is floating, float64 for integer x, whatever d_output's
    dtype (PyTorch returns the gradient in x's dtype: it casts the upstream gradient to it)."""
    dtype = np.dtype(x_dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


@dataclass(frozen=True)
class PoolGeometry:
    """Shapes of one pooling: x is (..., H, W), the output grid (..., H_out, W_out)."""

    leading: tuple[int, ...]
    in_shape: tuple[int, int]
    pool: tuple[int, int]
    stride: tuple[int, int]
    out_shape: tuple[int, int]

    @property
    def padded_shape(self) -> tuple[int, int]:
        """Size x must be padded to so that every (clipped) window is a full view."""
        return tuple(
            max(size, (out - 1) * step + window)
            for size, out, step, window in zip(self.in_shape, self.out_shape,
                                               self.stride, self.pool)
        )


def _check_pool_fits(x_shape, pool) -> None:
    height, width = x_shape[-2:]
    if pool[0] > height or pool[1] > width:
        raise ValueError(
            f"pool_size {pool} is larger than x's last two dimensions ({height}, {width}): "
            "every window must fit inside x"
        )


def forward_geometry(x_shape, pool_size, stride=None, ceil_mode: bool = False) -> PoolGeometry:
    """Geometry of ``max_pool_forward``: the grid is computed from x (floor or ceil)."""
    pool = as_pair("pool_size", pool_size)
    step = pool if stride is None else as_pair("stride", stride)
    _check_pool_fits(x_shape, pool)
    size_of = ceil_output_size if ceil_mode else floor_output_size
    out = tuple(size_of(n, p, s) for n, p, s in zip(x_shape[-2:], pool, step))
    return PoolGeometry(tuple(x_shape[:-2]), tuple(x_shape[-2:]), pool, step, out)


def backward_geometry(d_output_shape, x_shape, pool_size, stride=None) -> PoolGeometry:
    """Geometry of ``max_pool_backward``: the grid is d_output's, checked against x.

    Along each axis d_output may have the floor-mode or the ceil-mode length.
    """
    pool = as_pair("pool_size", pool_size)
    step = pool if stride is None else as_pair("stride", stride)
    if tuple(d_output_shape[:-2]) != tuple(x_shape[:-2]):
        raise ValueError(
            f"d_output's leading axes {tuple(d_output_shape[:-2])} differ from x's "
            f"{tuple(x_shape[:-2])}: d_output must have shape "
            f"{tuple(x_shape[:-2]) + ('H_out', 'W_out')}"
        )
    _check_pool_fits(x_shape, pool)
    allowed = [output_sizes(n, p, s) for n, p, s in zip(x_shape[-2:], pool, step)]
    out = tuple(d_output_shape[-2:])
    if out[0] not in allowed[0] or out[1] not in allowed[1]:
        rows = " or ".join(map(str, allowed[0]))
        cols = " or ".join(map(str, allowed[1]))
        raise ValueError(
            f"d_output has shape {tuple(d_output_shape)}, a {out[0]}x{out[1]} output grid, "
            f"which x of shape {tuple(x_shape)} with pool_size {pool} and stride {step} "
            f"cannot produce: d_output must have shape (..., H_out, W_out) with "
            f"H_out = {rows} and W_out = {cols}"
        )
    return PoolGeometry(tuple(x_shape[:-2]), tuple(x_shape[-2:]), pool, step, out)
