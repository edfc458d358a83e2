def max_pool_backward(d_output, x, pool_size, stride=None):
    ph, pw = _pair(pool_size)
    if stride is None:
        sh, sw = ph, pw
    else:
        sh, sw = _pair(stride)
    H, W = x.shape[-2], x.shape[-1]
    Ho, Wo = d_output.shape[-2], d_output.shape[-1]

    # pad so the border windows are full size, pad value very small so it never wins
    Hp = max(H, (Ho - 1) * sh + ph)
    Wp = max(W, (Wo - 1) * sw + pw)
    xp = np.full(x.shape[:-2] + (Hp, Wp), -1e9)
    xp[..., :H, :W] = x

    xp = xp.reshape(-1, Hp, Wp)
    g = d_output.reshape(-1, Ho, Wo)
    grad = np.zeros(xp.shape)
    for n in range(xp.shape[0]):
        for k in range(Ho):
            for l in range(Wo):
                win = xp[n, k*sh:k*sh+ph, l*sw:l*sw+pw]
                t = np.argmax(win)
                grad[n, k*sh + t // pw, l*sw + t % pw] += g[n, k, l]
    grad = grad[:, :H, :W].reshape(x.shape)
    if np.issubdtype(x.dtype, np.floating):
        grad = grad.astype(x.dtype)
    return grad
