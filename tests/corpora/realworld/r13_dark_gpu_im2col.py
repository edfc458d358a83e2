# adapted from dajuric/dark/dark-6/dark/tensor/gpu/pool.py (+ dark-6/dark/tensor/gpu/util.py), cupy -> numpy
# refs: https://agustinus.kristia.de/techblog/2016/07/18/convnet-maxpool-layer/
import numpy as np


def get_indices(x_shape, field_height, field_width, padding=1, stride=1):
    N, C, H, W = x_shape
    assert (H + 2 * padding - field_height) % stride == 0
    assert (W + 2 * padding - field_height) % stride == 0

    out_height = int((H + 2 * padding - field_height) / stride + 1)
    out_width = int((W + 2 * padding - field_width) / stride + 1)

    i0 = np.repeat(np.arange(field_height), field_width)
    i0 = np.tile(i0, C)
    i1 = stride * np.repeat(np.arange(out_height), out_width)

    j0 = np.tile(np.arange(field_width), field_height * C)
    j1 = stride * np.tile(np.arange(out_width), out_height)

    i = i0.reshape(-1, 1) + i1.reshape(1, -1)
    j = j0.reshape(-1, 1) + j1.reshape(1, -1)
    k = np.repeat(np.arange(C), field_height * field_width).reshape(-1, 1)

    return (k.astype(int), i.astype(int), j.astype(int))


def im2col(x, field_height, field_width, padding=1, stride=1):
    p = padding
    x_padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode='constant')

    k, i, j = get_indices(x.shape, field_height, field_width, padding, stride)

    cols = x_padded[:, k, i, j]
    C = x.shape[1]
    cols = cols.transpose(1, 2, 0).reshape(field_height * field_width * C, -1)
    return cols


def col2im(cols, x_shape, field_height=3, field_width=3, padding=1, stride=1):
    N, C, H, W = x_shape

    H_padded, W_padded = H + 2 * padding, W + 2 * padding
    x_padded = np.zeros((N, C, H_padded, W_padded), dtype=cols.dtype)

    k, i, j = get_indices(x_shape, field_height, field_width, padding, stride)
    cols_reshaped = cols.reshape(C * field_height * field_width, -1, N)
    cols_reshaped = cols_reshaped.transpose(2, 0, 1)

    np.add.at(x_padded, (slice(None), k, i, j), cols_reshaped)
    if padding == 0:
        return x_padded

    return x_padded[:, :, padding:-padding, padding:-padding]


def maxpool2d_forward(X, size, stride):
    n, d, h, w = X.shape
    h_out = (h - size) / stride + 1
    w_out = (w - size) / stride + 1

    if not w_out.is_integer() or not h_out.is_integer():
        raise Exception('Invalid output dimension!')

    h_out, w_out = int(h_out), int(w_out)

    X_reshaped = X.reshape(n * d, 1, h, w)
    X_col = im2col(X_reshaped, size, size, padding=0, stride=stride)

    max_idx = np.argmax(X_col, axis=0)
    out = X_col[max_idx, range(max_idx.size)]

    out = out.reshape(h_out, w_out, n, d)
    out = out.transpose(2, 3, 0, 1)

    return out, max_idx


def maxpool2d_backward(dout, X, X_ind, size, stride):
    n, d, w, h = X.shape

    dX_col = np.zeros_like(X).reshape(size * size, -1)
    dout_col = dout.transpose(2, 3, 0, 1).ravel()

    dX_col[X_ind, range(dout_col.size)] = dout_col
    dX = col2im(dX_col, (n * d, 1, h, w), size, size, padding=0, stride=stride)
    dX = dX.reshape(X.shape)

    return dX


def max_pool_backward(d_output, x, pool_size, stride=None):
    size = pool_size if np.isscalar(pool_size) else pool_size[0]
    if stride is None:
        stride = size
    elif not np.isscalar(stride):
        stride = stride[0]
    X = x.reshape((-1, 1) + x.shape[-2:])
    dout = d_output.reshape((-1, 1) + d_output.shape[-2:])
    _, X_ind = maxpool2d_forward(X, size, stride)
    return maxpool2d_backward(dout, X, X_ind, size, stride).reshape(x.shape)
