# adapted from cpeng78/Deep-Learning-for-Visual-Recognition/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    kernel_h, kernel_w = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        stride = (kernel_h, kernel_w)
    stride_h, stride_w = (stride, stride) if np.isscalar(stride) else tuple(stride)
    shape = x.shape
    x = x.reshape((-1, 1) + shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])
    H_out, W_out = dout.shape[-2:]
    N, C = x.shape[:2]

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    output = np.zeros(x.shape, dtype=dtype)
    for i in range(H_out):
        for j in range(W_out):
            h_start = i * stride_h
            h_end = h_start + kernel_h
            w_start = j * stride_w
            w_end = w_start + kernel_w
            pool = x[:, :, h_start:h_end, w_start:w_end]
            # mask = pool == np.max(pool, axis=(2, 3), keepdims=True)
            # ^ gives every tied maximum the gradient; keep only the first one (row-major)
            first = np.argmax(pool.reshape(N, C, -1), axis=2)
            mask = np.zeros((N, C, pool.shape[2] * pool.shape[3]), dtype=bool)
            np.put_along_axis(mask, first[:, :, None], True, axis=2)
            mask = mask.reshape(pool.shape)
            output[:, :, h_start:h_end, w_start:w_end] += dout[:, :, i:i + 1, j:j + 1] * mask
    return output.reshape(shape)
