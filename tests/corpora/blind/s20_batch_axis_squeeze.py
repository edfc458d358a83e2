def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    added_batch = x.ndim == 2
    if added_batch:
        x = x[np.newaxis]
        d_output = d_output[np.newaxis]

    ph, pw = _pair(pool_size)
    sh, sw = _pair(stride) if stride is not None else (ph, pw)
    lead = x.shape[:-2]
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    xb = x.reshape(-1, H, W)
    gb = d_output.reshape(-1, Ho, Wo)

    dx = np.zeros(xb.shape, dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    for b in range(xb.shape[0]):
        for k in range(Ho):
            for l in range(Wo):
                w = xb[b, k*sh:k*sh+ph, l*sw:l*sw+pw]
                i, j = np.unravel_index(w.argmax(), w.shape)
                dx[b, k*sh+i, l*sw+j] += gb[b, k, l]
    dx = dx.reshape(lead + (H, W))
    if added_batch:
        dx = dx.squeeze()
    return dx
