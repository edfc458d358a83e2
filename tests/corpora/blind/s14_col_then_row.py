def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = _pair(pool_size if stride is None else stride)
    Ho, Wo = d_output.shape[-2:]
    dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == 'f' else np.float64)
    for p in np.ndindex(x.shape[:-2]):
        for k in range(Ho):
            for l in range(Wo):
                w = x[p][k*sh:k*sh+ph, l*sw:l*sw+pw]
                j = np.argmax(w.max(axis=0))
                i = np.argmax(w[:, j])
                dx[p][k*sh+i, l*sw+j] += d_output[p][k, l]
    return dx
