def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    out_h = (H - ph) // sh + 1
    out_w = (W - pw) // sw + 1

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=dtype)
    for idx in np.ndindex(x.shape[:-2]):
        for k in range(out_h):
            for l in range(out_w):
                window = x[idx][k * sh:k * sh + ph, l * sw:l * sw + pw]
                i, j = np.unravel_index(np.argmax(window), window.shape)
                dx[idx][k * sh + i, l * sw + j] += d_output[idx][k, l]
    return dx
