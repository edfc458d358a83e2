def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    ph, pw = _pair(pool_size)
    if stride is None:
        stride = ph
    sh, sw = _pair(stride)

    H, W = x.shape[-2:]
    oh, ow = d_output.shape[-2:]
    xr = x.reshape(-1, H, W)
    gr = np.asarray(d_output).reshape(-1, oh, ow)
    dx = np.zeros(xr.shape, dtype=x.dtype if x.dtype.kind == 'f' else float)

    for n in range(xr.shape[0]):
        for i in range(oh):
            for j in range(ow):
                r, c = i * sh, j * sw
                patch = xr[n, r:r + ph, c:c + pw]
                a, b = np.unravel_index(patch.argmax(), patch.shape)
                dx[n, r + a, c + b] += gr[n, i, j]
    return dx.reshape(x.shape)
