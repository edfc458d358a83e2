def max_pool_backward(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    if stride is None:
        stride = pool_size
    sh, sw = _pair(stride)

    if x.dtype == int:
        x = x.astype(float)

    dx = np.zeros_like(x)
    H_out, W_out = d_output.shape[-2:]
    for k in range(H_out):
        for l in range(W_out):
            win = x[..., k*sh:k*sh+ph, l*sw:l*sw+pw]
            h, w = win.shape[-2:]
            flat = win.reshape(win.shape[:-2] + (h * w,))
            best = flat.argmax(axis=-1)
            sub = dx[..., k*sh:k*sh+ph, l*sw:l*sw+pw].reshape(flat.shape)
            onehot = np.arange(h * w) == best[..., None]
            dx[..., k*sh:k*sh+ph, l*sw:l*sw+pw] = (sub + onehot * d_output[..., k, l][..., None]).reshape(win.shape)
    return dx
