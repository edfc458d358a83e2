import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Compute dL/dx for a max-pooling layer.

    Args:
        d_output: (..., H_out, W_out) upstream gradient; its shape defines the grid.
        x: (..., H, W) input of the forward pass.
        pool_size: int or (ph, pw).
        stride: int or (sh, sw), defaults to pool_size.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = _pair(pool_size) if stride is None else _pair(stride)
    *batch, H, W = x.shape
    H_out, W_out = d_output.shape[-2:]

    # Extra rows/cols needed so the ceil-mode grid fits
    pad_h = max(0, H_out * sh - H)
    pad_w = max(0, W_out * sw - W)

    x3 = x.reshape(-1, H, W)
    if x.dtype.kind == "f":
        fill = -np.inf
    else:
        fill = np.iinfo(x.dtype).min
    xp = np.pad(x3, ((0, 0), (0, pad_h), (0, pad_w)), mode="constant", constant_values=fill)

    windows = sliding_window_view(xp, (ph, pw), axis=(1, 2))[:, ::sh, ::sw][:, :H_out, :W_out]
    N = xp.shape[0]
    idx = windows.reshape(N, H_out, W_out, ph * pw).argmax(axis=-1)

    r = np.arange(H_out).reshape(1, -1, 1) * sh + idx // pw
    c = np.arange(W_out).reshape(1, 1, -1) * sw + idx % pw
    n = np.arange(N).reshape(-1, 1, 1)

    out_dtype = x.dtype if x.dtype.kind == "f" else np.float64
    dx = np.zeros(xp.shape, dtype=out_dtype)
    np.add.at(dx, (n, r, c), d_output.reshape(N, H_out, W_out))
    return dx[:, :H, :W].reshape(x.shape)
