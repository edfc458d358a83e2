import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Vectorised max-pool backward pass.

    1. Pad the input with -inf on the bottom/right so that the border windows
       of a ceil-mode grid are complete (the padding can never be the max).
    2. Extract all pooling windows with sliding_window_view.
    3. Find the first maximum (row-major) of each window with argmax.
    4. Scatter d_output into dx at those positions.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    H_out, W_out = d_output.shape[-2:]
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64

    x3 = x.reshape(-1, H, W).astype(np.float64)
    n = x3.shape[0]
    pad_h = max(0, (H_out - 1) * sh + ph - H)
    pad_w = max(0, (W_out - 1) * sw + pw - W)
    x3 = np.pad(x3, ((0, 0), (0, pad_h), (0, pad_w)), constant_values=-np.inf)

    windows = sliding_window_view(x3, (ph, pw), axis=(1, 2))[:, ::sh, ::sw][:, :H_out, :W_out]
    arg = windows.reshape(n, H_out, W_out, ph * pw).argmax(axis=-1)

    rows = np.arange(H_out)[None, :, None] * sh + arg // pw
    cols = np.arange(W_out)[None, None, :] * sw + arg % pw
    batch = np.arange(n)[:, None, None]

    dx = np.zeros((n, H + pad_h, W + pad_w), dtype=out_dtype)
    dx[batch, rows, cols] += d_output.reshape(n, H_out, W_out)
    return dx[:, :H, :W].reshape(x.shape)
