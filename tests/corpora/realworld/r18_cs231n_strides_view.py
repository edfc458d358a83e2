# adapted from alyssaq/cs231n-2017/assignment2/cs231n/fast_layers.py (conv_forward_strides: "im2col by picking clever strides")
import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    if stride is None:
        sh, sw = ph, pw
    else:
        sh, sw = (stride, stride) if np.isscalar(stride) else tuple(stride)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)

    H, W = x.shape[-2:]
    out_h, out_w = d_output.shape[-2:]
    lead = x.shape[:-2]

    # Pad the input (only needed for the ceil-mode grid: -inf never wins the max)
    H_pad = max(H, (out_h - 1) * sh + ph)
    W_pad = max(W, (out_w - 1) * sw + pw)
    if H_pad > H or W_pad > W:
        pad = [(0, 0)] * len(lead) + [(0, H_pad - H), (0, W_pad - W)]
        x = np.pad(x, pad, mode='constant', constant_values=-np.inf)

    # Perform an im2col operation by picking clever strides
    shape = lead + (out_h, out_w, ph, pw)
    lead_strides = tuple(int(np.prod(x.shape[i + 1:])) for i in range(len(lead)))
    strides = lead_strides + (sh * W_pad, sw, W_pad, 1)
    strides = x.itemsize * np.array(strides)
    x_stride = np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
    x_cols = np.ascontiguousarray(x_stride)
    x_cols.shape = lead + (out_h, out_w, ph * pw)

    # first maximum of each window (row-major), as PyTorch
    idx = np.argmax(x_cols, axis=-1)
    rows = np.arange(out_h)[:, None] * sh + idx // pw
    cols = np.arange(out_w)[None, :] * sw + idx % pw
    lead_idx = tuple(a[..., None, None] for a in np.indices(lead))

    dx = np.zeros(x.shape, dtype=x.dtype)
    np.add.at(dx, lead_idx + (rows, cols), d_output)
    return np.ascontiguousarray(dx[..., :H, :W])
