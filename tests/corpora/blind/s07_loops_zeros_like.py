def max_pool_backward(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    sh, sw = _pair(stride) if stride is not None else (ph, pw)
    Ho, Wo = d_output.shape[-2:]
    dx = np.zeros_like(x)
    for idx in np.ndindex(*x.shape[:-2]):
        plane = x[idx]
        for k in range(Ho):
            for l in range(Wo):
                win = plane[k*sh:k*sh+ph, l*sw:l*sw+pw]
                a = np.argmax(win)
                i, j = a // win.shape[1], a % win.shape[1]
                dx[idx + (k*sh + i, l*sw + j)] += d_output[idx + (k, l)]
    return dx
