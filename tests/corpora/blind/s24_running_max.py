def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    xs = x.reshape(-1, H, W)
    ds = d_output.reshape(-1, Ho, Wo)
    if x.dtype.kind == 'f':
        dx = np.zeros(xs.shape, dtype=x.dtype)
    else:
        dx = np.zeros(xs.shape, dtype=np.float64)

    for n in range(xs.shape[0]):
        for k in range(Ho):
            for l in range(Wo):
                best = 0
                bi, bj = k * sh, l * sw
                for i in range(k * sh, min(k * sh + ph, H)):
                    for j in range(l * sw, min(l * sw + pw, W)):
                        if xs[n, i, j] > best:
                            best = xs[n, i, j]
                            bi, bj = i, j
                dx[n, bi, bj] += ds[n, k, l]
    return dx.reshape(x.shape)
