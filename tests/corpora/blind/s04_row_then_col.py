def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    pool_h, pool_w = _pair(pool_size)
    if stride is None:
        stride = pool_size
    step_h, step_w = _pair(stride)
    grid_h, grid_w = d_output.shape[-2:]

    if x.dtype.kind == 'f':
        dx = np.zeros(x.shape, dtype=x.dtype)
    else:
        dx = np.zeros(x.shape)

    for plane in np.ndindex(x.shape[:-2]):
        a = x[plane]
        g = d_output[plane]
        out = dx[plane]
        for k in range(grid_h):
            top = k * step_h
            for l in range(grid_w):
                left = l * step_w
                block = a[top:top + pool_h, left:left + pool_w]
                # first row holding the max, then first column of that row
                i = int(np.argmax(block.max(axis=1)))
                j = int(np.argmax(block[i]))
                out[top + i, left + j] += g[k, l]
    return dx
