def max_pool_backward(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    if stride is None:
        sh, sw = ph, pw
    else:
        sh, sw = _pair(stride)
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    H, W = x.shape[-2:]
    out_h, out_w = d_output.shape[-2:]

    if np.issubdtype(x.dtype, np.floating):
        dtype = x.dtype
    else:
        dtype = np.float64

    xs = x.reshape(-1, H, W)
    ds = d_output.reshape(-1, out_h, out_w)
    dx = np.zeros(xs.shape, dtype=dtype)
    for n in range(xs.shape[0]):
        for k in range(out_h):
            for l in range(out_w):
                r0, c0 = k * sh, l * sw
                window = xs[n, r0:r0 + ph, c0:c0 + pw]
                i, j = np.unravel_index(np.argmax(window), window.shape)
                dx[n, r0 + i, c0 + j] += ds[n, k, l]
    return dx.reshape(x.shape)
