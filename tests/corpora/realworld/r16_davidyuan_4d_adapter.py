# adapted from davidyuan-mle/gatech-deeplearning/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    ks_h, ks_w = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        s_h, s_w = ks_h, ks_w
    else:
        s_h, s_w = (stride, stride) if np.isscalar(stride) else tuple(stride)

    # the layer works on (N, C, H, W): add the missing batch/channel axes
    squeeze = 0
    if x.ndim == 2:
        x, d_output, squeeze = x[None, None], d_output[None, None], 2
    elif x.ndim == 3:
        x, d_output, squeeze = x[None], d_output[None], 1

    N, C, H, W = x.shape
    _, _, H_out, W_out = d_output.shape
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros((N, C, H, W), dtype=dtype)

    for n in range(N):
        for c in range(C):
            for i in range(H_out):
                for j in range(W_out):
                    h1 = i * s_h
                    h2 = h1 + ks_h
                    w1 = j * s_w
                    w2 = w1 + ks_w
                    x_window = x[n, c, h1:h2, w1:w2]
                    max_index = np.unravel_index(np.argmax(x_window), x_window.shape)
                    dx[n, c, h1 + max_index[0], w1 + max_index[1]] += d_output[n, c, i, j]

    for _ in range(squeeze):
        dx = dx[0]
    return dx
