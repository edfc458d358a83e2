def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    Ho, Wo = d_output.shape[-2:]
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=dtype)
    for p in np.ndindex(x.shape[:-2]):
        xp, gp, dp = x[p], d_output[p], dx[p]
        for k in range(Ho):
            for l in range(Wo):
                win = xp[k*sh:k*sh+ph, l*sw:l*sw+pw]
                hit = np.isclose(win, win.max())   # floats: don't compare with ==
                i, j = np.unravel_index(np.argmax(hit), win.shape)   # first hit, row-major
                dp[k*sh + i, l*sw + j] += gp[k, l]
    return dx
