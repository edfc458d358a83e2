import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Backward pass of 2D max pooling over the last two axes of x.

    The routing of the gradient is computed with sliding_window_view; each
    upstream gradient goes to the first maximum (row-major) of its window.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]

    # Result dtype: able to hold both x and d_output; integers are promoted to float64.
    dtype = np.result_type(x.dtype, d_output.dtype)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.float64

    # Pad with -inf so clipped border windows (ceil mode) can be handled uniformly.
    Hp = max(H, (Ho - 1) * sh + ph)
    Wp = max(W, (Wo - 1) * sw + pw)
    xp = np.full(x.shape[:-2] + (Hp, Wp), -np.inf)
    xp[..., :H, :W] = x

    win = sliding_window_view(xp, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :]
    win = win[..., :Ho, :Wo, :, :]
    flat_arg = win.reshape(win.shape[:-2] + (-1,)).argmax(axis=-1)
    di, dj = np.divmod(flat_arg, pw)
    rows = np.arange(Ho)[:, None] * sh + di
    cols = np.arange(Wo)[None, :] * sw + dj

    dx = np.zeros(x.shape[:-2] + (Hp, Wp), dtype=dtype)
    lead = np.indices(x.shape[:-2], sparse=True)
    lead = tuple(a[..., None, None] for a in lead)
    np.add.at(dx, lead + (rows, cols), d_output)
    return dx[..., :H, :W]
