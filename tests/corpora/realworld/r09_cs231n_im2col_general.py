# adapted from alyssaq/cs231n-2017/assignment2/cs231n/fast_layers.py (max_pool_backward_im2col) and jianchao-li/cs231n/assignment2/cs231n/im2col.py
import numpy as np


def get_im2col_indices(x_shape, field_height, field_width, out_height, out_width,
                       stride_h=1, stride_w=1):
    # asserts removed: the grid comes from d_output (it may be a ceil-mode grid),
    # and the strides may differ along rows and columns
    N, C, H, W = x_shape

    i0 = np.repeat(np.arange(field_height), field_width)
    i0 = np.tile(i0, C)
    i1 = stride_h * np.repeat(np.arange(out_height), out_width)
    j0 = np.tile(np.arange(field_width), field_height * C)
    j1 = stride_w * np.tile(np.arange(out_width), out_height)
    i = i0.reshape(-1, 1) + i1.reshape(1, -1)
    j = j0.reshape(-1, 1) + j1.reshape(1, -1)

    k = np.repeat(np.arange(C), field_height * field_width).reshape(-1, 1)

    return (k, i, j)


def max_pool_backward(d_output, x, pool_size, stride=None):
    """
    An implementation of the backward pass for max pooling based on im2col.
    """
    pool_height, pool_width = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        stride_h, stride_w = pool_height, pool_width
    else:
        stride_h, stride_w = (stride, stride) if np.isscalar(stride) else tuple(stride)

    # float64 for integer x, x's dtype otherwise
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    H, W = x.shape[-2:]
    out_height, out_width = d_output.shape[-2:]
    x_split = np.asarray(x, dtype=dtype).reshape(-1, 1, H, W)
    N = x_split.shape[0]

    # ceil-mode grid: pad bottom/right with -inf so the clipped border windows
    # become full windows whose padding never wins the max
    H_padded = max(H, (out_height - 1) * stride_h + pool_height)
    W_padded = max(W, (out_width - 1) * stride_w + pool_width)
    x_padded = np.pad(x_split, ((0, 0), (0, 0), (0, H_padded - H), (0, W_padded - W)),
                      mode='constant', constant_values=-np.inf)

    k, i, j = get_im2col_indices(x_padded.shape, pool_height, pool_width,
                                 out_height, out_width, stride_h, stride_w)
    x_cols = x_padded[:, k, i, j]
    x_cols = x_cols.transpose(1, 2, 0).reshape(pool_height * pool_width, -1)
    x_cols_argmax = np.argmax(x_cols, axis=0)

    dout_reshaped = d_output.reshape(N, out_height, out_width).transpose(1, 2, 0).flatten()
    dx_cols = np.zeros_like(x_cols)
    dx_cols[x_cols_argmax, np.arange(dx_cols.shape[1])] = dout_reshaped

    # col2im_indices
    dx_padded = np.zeros(x_padded.shape, dtype=dx_cols.dtype)
    cols_reshaped = dx_cols.reshape(pool_height * pool_width, -1, N)
    cols_reshaped = cols_reshaped.transpose(2, 0, 1)
    np.add.at(dx_padded, (slice(None), k, i, j), cols_reshaped)

    dx = dx_padded[:, :, :H, :W]
    return dx.reshape(x.shape)
