# adapted from mjfox314/Deep_Learning-CS7643/assignment2/part1-convnet/modules/max_pool.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    # notebook -> MaxPooling(kernel_size, stride).backward(dout)
    kernel_h, kernel_w = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        stride = pool_size
    stride_h, stride_w = (stride, stride) if np.isscalar(stride) else stride
    input_shape = x.shape
    x = x.reshape((-1, 1) + x.shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])

    kernels, channels, height, width = dout.shape
    dx = np.zeros(x.shape)

    for kernel in range(kernels):

        for channel in range(channels):

            for h in range(height):
                height_start = h * stride_h
                height_end = height_start + kernel_h

                for w in range(width):
                    width_start = w * stride_w
                    width_end = width_start + kernel_w

                    max_pool = x[kernel, channel, height_start:height_end, width_start:width_end]
                    mask = (max_pool == np.max(max_pool))

                    dx[kernel, channel, height_start:height_end, width_start:width_end] = mask * dout[kernel, channel, h, w]

    return dx.reshape(input_shape)
