import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Route each upstream gradient to the maximum of its pooling window.

    For every output position (k, l) we build a boolean mask of the window
    marking where x equals the window maximum, and add d_output[..., k, l]
    there. Works for any number of leading axes and for overlapping windows.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H_out, W_out = d_output.shape[-2:]

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=dtype)

    for k in range(H_out):
        for l in range(W_out):
            rows = slice(k * sh, k * sh + ph)
            cols = slice(l * sw, l * sw + pw)
            window = x[..., rows, cols]
            mask = window == window.max(axis=(-2, -1), keepdims=True)
            dx[..., rows, cols] += mask * d_output[..., k, l][..., None, None]
    return dx
