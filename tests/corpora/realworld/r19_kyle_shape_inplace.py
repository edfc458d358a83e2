# adapted from kyle-nguyennn/dl-labs/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    kh, kw = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        sh, sw = kh, kw
    else:
        sh, sw = (stride, stride) if np.isscalar(stride) else tuple(stride)
    x_shape = x.shape
    # view as (N, C, H, W) without copying (like x_cols.shape = ... in cs231n)
    x.shape = (-1, 1) + x_shape[-2:]
    d_output.shape = (-1, 1) + d_output.shape[-2:]
    dout = d_output
    H_out, W_out = dout.shape[2], dout.shape[3]

    n, c, h, w = x.shape
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=dtype)
    for i in range(n):
        for j in range(c):
            for k in range(H_out):
                for l in range(W_out):
                    x_slice = x[i, j, k*sh:k*sh+kh, l*sw:l*sw+kw]
                    max_index = np.unravel_index(np.argmax(x_slice), x_slice.shape)
                    dx[i, j, k*sh+max_index[0], l*sw+max_index[1]] += dout[i, j, k, l]

    return dx.reshape(x_shape)
