# adapted from oreilly-japan/deep-learning-from-scratch/common/layers.py (class Pooling) and common/util.py (im2col, col2im)
import numpy as np


def im2col(input_data, filter_h, filter_w, out_h, out_w, stride_h=1, stride_w=1):
    """
    input_data : (N, C, H, W), already padded so that every window fits
    returns col : (N*out_h*out_w, C*filter_h*filter_w)
    """
    N, C, H, W = input_data.shape
    img = input_data
    col = np.zeros((N, C, filter_h, filter_w, out_h, out_w), dtype=input_data.dtype)

    for y in range(filter_h):
        y_max = y + stride_h*out_h
        for x in range(filter_w):
            x_max = x + stride_w*out_w
            col[:, :, y, x, :, :] = img[:, :, y:y_max:stride_h, x:x_max:stride_w]

    col = col.transpose(0, 4, 5, 1, 2, 3).reshape(N*out_h*out_w, -1)
    return col


def col2im(col, input_shape, filter_h, filter_w, out_h, out_w, stride_h=1, stride_w=1):
    N, C, H, W = input_shape
    col = col.reshape(N, out_h, out_w, C, filter_h, filter_w).transpose(0, 3, 4, 5, 1, 2)

    img = np.zeros((N, C, H + stride_h - 1, W + stride_w - 1), dtype=col.dtype)
    for y in range(filter_h):
        y_max = y + stride_h*out_h
        for x in range(filter_w):
            x_max = x + stride_w*out_w
            img[:, :, y:y_max:stride_h, x:x_max:stride_w] += col[:, :, y, x, :, :]

    return img[:, :, :H, :W]


def max_pool_backward(d_output, x, pool_size, stride=None):
    pool_h, pool_w = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        stride_h, stride_w = pool_h, pool_w
    else:
        stride_h, stride_w = (stride, stride) if np.isscalar(stride) else tuple(stride)

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    shape = x.shape
    N, C, H, W = (-1, 1) + shape[-2:]
    out_h, out_w = d_output.shape[-2:]
    x = np.asarray(x, dtype=dtype).reshape(N, C, H, W)
    N = x.shape[0]

    # d_output may be the ceil-mode grid: extend x with -inf past its border
    H_ext = max(H, (out_h - 1) * stride_h + pool_h)
    W_ext = max(W, (out_w - 1) * stride_w + pool_w)
    x_ext = np.full((N, C, H_ext, W_ext), -np.inf, dtype=dtype)
    x_ext[:, :, :H, :W] = x

    # forward (Pooling.forward) to get arg_max
    col = im2col(x_ext, pool_h, pool_w, out_h, out_w, stride_h, stride_w)
    col = col.reshape(-1, pool_h*pool_w)
    arg_max = np.argmax(col, axis=1)

    # backward (Pooling.backward)
    dout = d_output.reshape(N, C, out_h, out_w).transpose(0, 2, 3, 1)

    pool_size = pool_h * pool_w
    dmax = np.zeros((dout.size, pool_size), dtype=dtype)
    dmax[np.arange(arg_max.size), arg_max.flatten()] = dout.flatten()
    dmax = dmax.reshape(dout.shape + (pool_size,))

    dcol = dmax.reshape(dmax.shape[0] * dmax.shape[1] * dmax.shape[2], -1)
    dx = col2im(dcol, x_ext.shape, pool_h, pool_w, out_h, out_w, stride_h, stride_w)

    return dx[:, :, :H, :W].reshape(shape)
