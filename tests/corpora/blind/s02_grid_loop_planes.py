import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Backward pass of max pooling over the last two axes.

    Loops over the output grid (given by d_output) and handles all leading
    batch/channel axes at once for each window.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2], x.shape[-1]
    H_out, W_out = d_output.shape[-2], d_output.shape[-1]

    # dx keeps x's dtype for floating x, float64 otherwise (as PyTorch does)
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=out_dtype)

    # Flatten leading axes: (N, H, W)
    x_flat = x.reshape((-1, H, W))
    d_flat = d_output.reshape((-1, H_out, W_out))
    dx_flat = dx.reshape((-1, H, W))  # a view, dx is freshly allocated and contiguous
    planes = np.arange(x_flat.shape[0])

    for k in range(H_out):
        r0 = k * sh
        r1 = min(r0 + ph, H)  # clipped at the border (ceil mode)
        for l in range(W_out):
            c0 = l * sw
            c1 = min(c0 + pw, W)
            window = x_flat[:, r0:r1, c0:c1].reshape(x_flat.shape[0], -1)
            # np.argmax returns the first maximum in row-major order
            idx = np.argmax(window, axis=1)
            rows = r0 + idx // (c1 - c0)
            cols = c0 + idx % (c1 - c0)
            # one position per plane, so no repeated indices here
            dx_flat[planes, rows, cols] += d_flat[:, k, l]

    return dx
