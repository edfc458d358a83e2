import numpy as np


def max_pool_backward(d_output, x, pool_size, stride=None):
    """Max-pool backward pass.

    The gradient is accumulated in a float32 buffer (enough precision for
    gradients and half the memory) and cast to the required dtype at the end:
    x's dtype for floating x, float64 for integer x.
    """
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]

    x3 = x.reshape(-1, H, W)
    g3 = d_output.reshape(-1, Ho, Wo)
    n = x3.shape[0]
    buf = np.zeros((n, H, W), dtype=np.float32)
    planes = np.arange(n)
    for k in range(Ho):
        for l in range(Wo):
            win = x3[:, k * sh:k * sh + ph, l * sw:l * sw + pw]
            h, w = win.shape[1:]
            a = win.reshape(n, h * w).argmax(axis=1)
            buf[planes, k * sh + a // w, l * sw + a % w] += g3[:, k, l]

    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    return buf.astype(out_dtype).reshape(x.shape)
