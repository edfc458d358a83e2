def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    X = x.reshape(-1, H, W)
    D = d_output.reshape(-1, Ho, Wo)
    dx = np.zeros(X.shape, dtype=x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    for n in range(X.shape[0]):
        for k in range(Ho):
            for l in range(Wo):
                window = X[n, k*sh:k*sh+ph, l*sw:l*sw+pw]
                i, j = np.unravel_index(np.argmax(window), (ph, pw))
                dx[n, k*sh + i, l*sw + j] += D[n, k, l]
    return dx.reshape(x.shape)
