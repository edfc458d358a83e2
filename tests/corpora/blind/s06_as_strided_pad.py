import numpy as np
from numpy.lib.stride_tricks import as_strided


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Max-pool backward pass using as_strided windows over a padded copy of x."""
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = _pair(stride) if stride is not None else (ph, pw)
    H, W = x.shape[-2:]
    oh, ow = d_output.shape[-2:]

    # Pad bottom/right so every window of d_output's grid is complete.
    need_h = (oh - 1) * sh + ph
    need_w = (ow - 1) * sw + pw
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = np.full(x.shape[:-2] + (max(H, need_h), max(W, need_w)), low, dtype=x.dtype)
    padded[..., :H, :W] = x
    padded = padded.reshape((-1,) + padded.shape[-2:])  # contiguous (N, Hp, Wp)

    n = padded.shape[0]
    s0, s1, s2 = padded.strides
    windows = as_strided(padded, shape=(n, oh, ow, ph, pw),
                         strides=(s0, s1 * sh, s2 * sw, s1, s2), writeable=False)
    best = windows.reshape(n, oh, ow, ph * pw).argmax(axis=-1)
    di, dj = np.divmod(best, pw)
    rows = np.arange(oh)[:, None] * sh + di
    cols = np.arange(ow)[None, :] * sw + dj

    grad = np.zeros(padded.shape, dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    np.add.at(grad, (np.arange(n)[:, None, None], rows, cols), d_output.reshape(n, oh, ow))
    return grad[:, :H, :W].reshape(x.shape)
