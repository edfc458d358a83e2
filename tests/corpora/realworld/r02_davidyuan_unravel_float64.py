# adapted from davidyuan-mle/gatech-deeplearning/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    # adapter: int or pair -> (kh, kw), (sh, sw); (..., H, W) -> (N, C, H, W)
    kh, kw = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        sh, sw = kh, kw
    else:
        sh, sw = (stride, stride) if np.isscalar(stride) else tuple(stride)
    orig_shape = x.shape
    x = x.reshape((-1, 1) + x.shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])
    H_out, W_out = dout.shape[-2:]

    N, C, H, W = x.shape
    dx = np.zeros((N, C, H, W))

    for n in range(N):
        for c in range(C):
            for i in range(H_out):
                for j in range(W_out):
                    h1 = i * sh
                    h2 = h1 + kh
                    w1 = j * sw
                    w2 = w1 + kw
                    x_window = x[n, c, h1:h2, w1:w2]
                    max_index = np.unravel_index(np.argmax(x_window), x_window.shape)
                    dx[n, c, h1 + max_index[0], w1 + max_index[1]] += dout[n, c, i, j]

    return dx.reshape(orig_shape)
