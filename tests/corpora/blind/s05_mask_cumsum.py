def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    g = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    Hout, Wout = g.shape[-2:]
    dx = np.zeros(x.shape, dtype=x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    for k in range(Hout):
        for l in range(Wout):
            rs = slice(k * sh, k * sh + ph)
            cs = slice(l * sw, l * sw + pw)
            win = x[..., rs, cs]
            mask = win == win.max(axis=(-2, -1), keepdims=True)
            # only the first max (row-major) gets the gradient
            flat = mask.reshape(mask.shape[:-2] + (-1,))
            first = flat & (np.cumsum(flat, axis=-1) == 1)
            dx[..., rs, cs] += first.reshape(mask.shape) * g[..., k, l][..., None, None]
    return dx
