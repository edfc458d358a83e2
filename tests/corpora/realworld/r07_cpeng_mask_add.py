# adapted from cpeng78/Deep-Learning-for-Visual-Recognition/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    kernel_h, kernel_w = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        stride = (kernel_h, kernel_w)
    stride_h, stride_w = (stride, stride) if np.isscalar(stride) else stride
    shape = x.shape
    x = x.reshape((-1, 1) + shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])
    H_out, W_out = dout.shape[-2:]

    output = np.zeros_like(x)
    for i in range(H_out):
        for j in range(W_out):
            h_start = i * stride_h
            h_end = h_start + kernel_h
            w_start = j * stride_w
            w_end = w_start + kernel_w
            pool = x[:, :, h_start:h_end, w_start:w_end]
            mask = pool == np.max(pool, axis=(2, 3), keepdims=True)
            output[:, :, h_start:h_end, w_start:w_end] += dout[:, :, i:i + 1, j:j + 1] * mask
    return output.reshape(shape)
