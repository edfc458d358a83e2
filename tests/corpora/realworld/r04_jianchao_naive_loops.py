# adapted from jianchao-li/cs231n/assignment2/cs231n/layers.py
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    """
    A naive implementation of the backward pass for a max pooling layer.
    (max_pool_backward_naive, with the notebook's arguments instead of a cache)
    """
    pool_height, pool_width = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        stride = (pool_height, pool_width)
    stride_h, stride_w = (stride, stride) if np.isscalar(stride) else stride
    x_shape = x.shape
    x = x.reshape((-1, 1) + x.shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])

    dx = None
    ###########################################################################
    # TODO: Implement the max pooling backward pass                           #
    ###########################################################################
    N, C, H, W = x.shape
    N, C, H_prime, W_prime = dout.shape
    dx = np.zeros(x.shape)
    for n in range(N):
        for c in range(C):
            for hh in range(H_prime):
                for ww in range(W_prime):
                    h_start = hh * stride_h
                    h_end = min(h_start + pool_height, H)
                    w_start = ww * stride_w
                    w_end = min(w_start + pool_width, W)
                    out = np.max(x[n, c, h_start : h_end, w_start : w_end])
                    for hhh in range(h_start, h_end):
                        for www in range(w_start, w_end):
                            if x[n, c, hhh, www] == out:
                                dx[n, c, hhh, www] = dout[n, c, hh, ww]
    ###########################################################################
    #                             END OF YOUR CODE                            #
    ###########################################################################
    return dx.reshape(x_shape)
