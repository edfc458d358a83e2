def max_pool_backward(d_output, x, pool_size, stride=None):
    kh, kw = _pair(pool_size)
    sh, sw = (kh, kw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    xx = x.reshape(-1, H, W)
    dd = d_output.reshape(-1, Ho, Wo)
    if np.issubdtype(x.dtype, np.floating):
        dx = np.zeros(xx.shape, dtype=x.dtype)
    else:
        dx = np.zeros(xx.shape, dtype=np.float64)
    for b in range(xx.shape[0]):
        for i in range(Ho):
            for j in range(Wo):
                h0 = i * sh
                w0 = j * sw
                patch = xx[b, h0:h0 + kh, w0:w0 + kw]
                m = np.argmax(patch)
                r, c = divmod(m, patch.shape[1])
                dx[b, h0 + r, w0 + c] = dd[b, i, j]
    return dx.reshape(x.shape)
