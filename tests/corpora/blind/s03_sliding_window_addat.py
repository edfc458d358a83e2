import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Gradient of max pooling with respect to its input, fully vectorised.

    Steps:
      1. Pad x (bottom/right) with a value that can never be a window's maximum,
         so that clipped ceil-mode windows become full windows.
      2. Build all windows with sliding_window_view and take the first argmax
         of each flattened window (row-major, like PyTorch).
      3. Scatter d_output to the winning positions with np.add.at, which
         accumulates correctly when windows overlap.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = _pair(pool_size if stride is None else stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    lead = x.shape[:-2]

    if np.issubdtype(x.dtype, np.floating):
        out_dtype, fill = x.dtype, -np.inf
    else:
        out_dtype, fill = np.dtype(np.float64), np.iinfo(x.dtype).min

    Hp = max(H, (Ho - 1) * sh + ph)
    Wp = max(W, (Wo - 1) * sw + pw)
    xp = np.full(lead + (Hp, Wp), fill, dtype=x.dtype)
    xp[..., :H, :W] = x

    windows = sliding_window_view(xp, (ph, pw), axis=(-2, -1))
    windows = windows[..., ::sh, ::sw, :, :][..., :Ho, :Wo, :, :]
    arg = windows.reshape(windows.shape[:-2] + (ph * pw,)).argmax(axis=-1)  # (..., Ho, Wo)

    rows = np.arange(Ho)[:, None] * sh + arg // pw
    cols = np.arange(Wo)[None, :] * sw + arg % pw

    n = int(np.prod(lead, dtype=np.int64))
    dx = np.zeros((n, H, W), dtype=out_dtype)
    plane = np.broadcast_to(np.arange(n)[:, None, None], (n, Ho, Wo))
    np.add.at(dx, (plane, rows.reshape(n, Ho, Wo), cols.reshape(n, Ho, Wo)),
              d_output.reshape(n, Ho, Wo))
    return dx.reshape(x.shape)
