import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Backward pass for max pooling.

    Args:
        d_output: upstream gradient of shape (..., H_out, W_out).
        x: input of shape (..., H, W).
        pool_size: int or (ph, pw).
        stride: int or (sh, sw); None means stride = pool_size.

    Returns:
        dx with the shape of x.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]

    # If the windows don't tile x exactly, the forward pass used ceil mode
    # (the extra windows are clipped at the border).
    ceil_mode = (H - ph) % sh != 0 or (W - pw) % sw != 0
    H_out = output_size(H, ph, sh, ceil_mode)
    W_out = output_size(W, pw, sw, ceil_mode)

    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    dx = np.zeros(x.shape, dtype=dtype)
    for k in range(H_out):
        for l in range(W_out):
            r0, c0 = k * sh, l * sw
            window = x[..., r0:r0 + ph, c0:c0 + pw]
            h, w = window.shape[-2:]
            flat = window.reshape(window.shape[:-2] + (h * w,))
            best = np.argmax(flat, axis=-1)
            one_hot = (np.arange(h * w) == best[..., None]).reshape(window.shape)
            dx[..., r0:r0 + h, c0:c0 + w] += one_hot * d_output[..., k, l][..., None, None]
    return dx
