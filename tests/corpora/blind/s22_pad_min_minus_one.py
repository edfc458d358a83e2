import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Max-pooling backward pass.

    x is padded on the bottom/right with a value smaller than every element of x
    (so the padding never wins a window), the windows are taken with
    sliding_window_view, and d_output is scattered to each window's first
    maximum with np.add.at. The padding stays in x's dtype so integer inputs are
    compared exactly.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    (ph, pw) = _pair(pool_size)
    (sh, sw) = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    H_out, W_out = d_output.shape[-2:]

    pad_h = max(0, (H_out - 1) * sh + ph - H)
    pad_w = max(0, (W_out - 1) * sw + pw - W)
    if pad_h or pad_w:
        fill = x.min() - 1
        padded = np.full(x.shape[:-2] + (H + pad_h, W + pad_w), fill, dtype=x.dtype)
        padded[..., :H, :W] = x
    else:
        padded = x

    windows = sliding_window_view(padded, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :]
    windows = windows[..., :H_out, :W_out, :, :]
    best = windows.reshape(windows.shape[:-2] + (ph * pw,)).argmax(axis=-1)
    rows = sh * np.arange(H_out)[:, None] + best // pw
    cols = sw * np.arange(W_out)[None, :] + best % pw

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(padded.shape, dtype=dtype)
    lead = tuple(i[..., None, None] for i in np.indices(x.shape[:-2], sparse=True))
    np.add.at(dx, lead + (rows, cols), d_output)
    return np.ascontiguousarray(dx[..., :H, :W])
