# adapted from Clarence-G/learngit/cs231n/assignment2/max-pool.py
import numpy as np
# __coauthor__ = 'Deeplayer'
# 6.25.2016 #
# (ported to Python 3: / -> //, xrange -> range)


def max_pool_backward(d_output, x, pool_size, stride=None):
    HH, WW = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        sh, sw = HH, WW
    else:
        sh, sw = (stride, stride) if np.isscalar(stride) else stride
    orig = x.shape
    x = x.reshape((-1, 1) + x.shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])

    N, C, H, W = x.shape
    H_new = 1 + (H - HH) // sh
    W_new = 1 + (W - WW) // sw
    dx = np.zeros_like(x)
    for i in range(N):
        for j in range(C):
            for k in range(H_new):
                for l in range(W_new):
                    window = x[i, j, k*sh:HH+k*sh, l*sw:WW+l*sw]
                    m = np.max(window)
                    dx[i, j, k*sh:HH+k*sh, l*sw:WW+l*sw] = (window == m) * dout[i, j, k, l]

    return dx.reshape(orig)
