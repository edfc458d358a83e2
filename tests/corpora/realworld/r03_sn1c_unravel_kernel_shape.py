# adapted from sn1c/cs7643-deep-learning/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    # --- adapter ---
    ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        stride = (ph, pw)
    sh, sw = (stride, stride) if np.isscalar(stride) else tuple(stride)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)          # Part B: float64 for integer x
    shape = x.shape
    x = x.reshape((-1, 1) + shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])
    H_out, W_out = dout.shape[-2:]
    # ---------------

    N, C, H, W = x.shape

    dx = np.zeros_like(x)

    for h in range(H_out):
        for w in range(W_out):
            h_lower = h * sh
            h_upper = h * sh + ph
            w_lower = w * sw
            w_upper = w * sw + pw

            x_flat = x[:, :, h_lower:h_upper, w_lower:w_upper].reshape(N, C, -1)
            x_argmax = np.argmax(x_flat, axis=2)

            for n in range(N):
                for c in range(C):
                    h_offset, w_offset = np.unravel_index(x_argmax[n, c], shape=(ph, pw))
                    dx[n, c, h_lower + h_offset, w_lower + w_offset] += dout[n, c, h, w]

    return dx.reshape(shape)
