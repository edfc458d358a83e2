# adapted from oreilly-japan/deep-learning-from-scratch/common/layers.py (class Pooling) and common/util.py (im2col, col2im)
import numpy as np


def im2col(input_data, filter_h, filter_w, stride=1, pad=0):
    N, C, H, W = input_data.shape
    out_h = (H + 2*pad - filter_h)//stride + 1
    out_w = (W + 2*pad - filter_w)//stride + 1

    img = np.pad(input_data, [(0,0), (0,0), (pad, pad), (pad, pad)], 'constant')
    col = np.zeros((N, C, filter_h, filter_w, out_h, out_w))

    for y in range(filter_h):
        y_max = y + stride*out_h
        for x in range(filter_w):
            x_max = x + stride*out_w
            col[:, :, y, x, :, :] = img[:, :, y:y_max:stride, x:x_max:stride]

    col = col.transpose(0, 4, 5, 1, 2, 3).reshape(N*out_h*out_w, -1)
    return col


def col2im(col, input_shape, filter_h, filter_w, stride=1, pad=0):
    N, C, H, W = input_shape
    out_h = (H + 2*pad - filter_h)//stride + 1
    out_w = (W + 2*pad - filter_w)//stride + 1
    col = col.reshape(N, out_h, out_w, C, filter_h, filter_w).transpose(0, 3, 4, 5, 1, 2)

    img = np.zeros((N, C, H + 2*pad + stride - 1, W + 2*pad + stride - 1))
    for y in range(filter_h):
        y_max = y + stride*out_h
        for x in range(filter_w):
            x_max = x + stride*out_w
            img[:, :, y:y_max:stride, x:x_max:stride] += col[:, :, y, x, :, :]

    return img[:, :, pad:H + pad, pad:W + pad]


def max_pool_backward(d_output, x, pool_size, stride=None):
    pool_h, pool_w = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        stride = pool_h
    elif not np.isscalar(stride):
        stride = stride[0]
    pad = 0
    shape = x.shape
    x = x.reshape((-1, 1) + shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])

    # forward (Pooling.forward) to get arg_max
    N, C, H, W = x.shape
    out_h = int(1 + (H - pool_h) / stride)
    out_w = int(1 + (W - pool_w) / stride)

    col = im2col(x, pool_h, pool_w, stride, pad)
    col = col.reshape(-1, pool_h*pool_w)

    arg_max = np.argmax(col, axis=1)

    # backward (Pooling.backward)
    dout = dout.transpose(0, 2, 3, 1)

    pool_size = pool_h * pool_w
    dmax = np.zeros((dout.size, pool_size))
    dmax[np.arange(arg_max.size), arg_max.flatten()] = dout.flatten()
    dmax = dmax.reshape(dout.shape + (pool_size,))

    dcol = dmax.reshape(dmax.shape[0] * dmax.shape[1] * dmax.shape[2], -1)
    dx = col2im(dcol, x.shape, pool_h, pool_w, stride, pad)

    return dx.reshape(shape)
