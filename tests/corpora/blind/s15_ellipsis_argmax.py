def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    Hout, Wout = d_output.shape[-2:]
    dx = np.zeros(x.shape, dtype=x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    for k in range(Hout):
        for l in range(Wout):
            r0, c0 = k * sh, l * sw
            window = x[..., r0:r0 + ph, c0:c0 + pw]
            pos = np.unravel_index(np.argmax(window), window.shape)
            i, j = pos[-2], pos[-1]
            dx[..., r0 + i, c0 + j] += d_output[..., k, l]
    return dx
