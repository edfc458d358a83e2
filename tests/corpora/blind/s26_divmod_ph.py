import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]

    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    Hp, Wp = max(H, (Ho - 1) * sh + ph), max(W, (Wo - 1) * sw + pw)
    xp = np.full(x.shape[:-2] + (Hp, Wp), fill, dtype=x.dtype)
    xp[..., :H, :W] = x

    v = sliding_window_view(xp, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :][..., :Ho, :Wo, :, :]
    a = v.reshape(v.shape[:-2] + (-1,)).argmax(-1)
    di, dj = np.divmod(a, ph)
    r = np.arange(Ho)[:, None] * sh + di
    c = np.arange(Wo)[None, :] * sw + dj

    dx = np.zeros(x.shape[:-2] + (Hp, Wp),
                  dtype=x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    lead = tuple(t[..., None, None] for t in np.indices(x.shape[:-2], sparse=True))
    np.add.at(dx, lead + (r, c), d_output)
    return dx[..., :H, :W].copy()
