import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Backward pass of max pooling (first maximum of each window gets the gradient)."""
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)

    # --- forward routing: where is the max of each window? ---
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    Hp, Wp = max(H, (Ho - 1) * sh + ph), max(W, (Wo - 1) * sw + pw)
    xp = np.full(x.shape[:-2] + (Hp, Wp), low, dtype=x.dtype)
    xp[..., :H, :W] = x
    win = sliding_window_view(xp, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :][..., :Ho, :Wo, :, :]
    arg = win.reshape(win.shape[:-2] + (ph * pw,)).argmax(axis=-1)
    rows = np.arange(Ho)[:, None] * sh + arg // pw
    cols = np.arange(Wo)[None, :] * sw + arg % pw

    # --- backward: scatter d_output (np.add.at accumulates overlapping windows) ---
    dx = x.astype(out_dtype, copy=False)  # avoid an extra copy when x is already floating
    dx[...] = 0
    lead = tuple(a[..., None, None] for a in np.indices(x.shape[:-2], sparse=True))
    np.add.at(dx, lead + (rows, cols), d_output)
    return dx
