import numpy as np
from numpy.lib.stride_tricks import as_strided


def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = _pair(stride) if stride is not None else (ph, pw)
    H, W = x.shape[-2:]
    oh, ow = d_output.shape[-2:]

    need_h, need_w = (oh - 1) * sh + ph, (ow - 1) * sw + pw
    xs = x.reshape(-1, H, W)
    if need_h > H or need_w > W:  # ceil mode: pad the border windows
        low = -np.inf if x.dtype.kind == 'f' else np.iinfo(x.dtype).min
        xs = np.pad(xs, ((0, 0), (0, max(0, need_h - H)), (0, max(0, need_w - W))),
                    constant_values=low)
    n, Hp, Wp = xs.shape
    b = xs.itemsize
    win = as_strided(xs, shape=(n, oh, ow, ph, pw),
                     strides=(Hp * Wp * b, sh * Wp * b, sw * b, Wp * b, b))
    arg = win.reshape(n, oh, ow, ph * pw).argmax(-1)
    r = np.arange(oh)[:, None] * sh + arg // pw
    c = np.arange(ow)[None, :] * sw + arg % pw

    dx = np.zeros((n, Hp, Wp), dtype=x.dtype if x.dtype.kind == 'f' else np.float64)
    np.add.at(dx, (np.arange(n)[:, None, None], r, c), d_output.reshape(n, oh, ow))
    return dx[:, :H, :W].reshape(x.shape)
