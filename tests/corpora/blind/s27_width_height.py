def max_pool_backward(d_output, x, pool_size, stride=None):
    # sizes are given as (width, height)
    pw, ph = _pair(pool_size)
    sw, sh = _pair(stride) if stride is not None else (pw, ph)
    x = np.asarray(x)
    H, W = x.shape[-2:]
    out_rows, out_cols = d_output.shape[-2:]
    flat_x = x.reshape(-1, H, W)
    flat_d = np.asarray(d_output).reshape(-1, out_rows, out_cols)
    dx = np.zeros(flat_x.shape, dtype=x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    for n in range(flat_x.shape[0]):
        for r in range(out_rows):
            for c in range(out_cols):
                y0, x0 = r * sh, c * sw
                window = flat_x[n, y0:y0 + ph, x0:x0 + pw]
                dy, dxx = np.unravel_index(np.argmax(window), window.shape)
                dx[n, y0 + dy, x0 + dxx] += flat_d[n, r, c]
    return dx.reshape(x.shape)
