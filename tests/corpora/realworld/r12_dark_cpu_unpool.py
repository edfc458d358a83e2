# adapted from dajuric/dark/dark-6/dark/tensor/cpu/pool.py
# refs: https://agustinus.kristia.de/techblog/2016/07/18/convnet-maxpool-layer/
# (numba's @njit dropped: numpy only in the notebook)
import numpy as np


def _unravel_index(idx, shape):
    h, w = shape
    r = idx // w
    c = idx % w

    return r, c


def _max_unpool2d_im(dldy, im, n):
    h, w = im.shape
    out = np.zeros(im.shape, dtype=np.float64)

    for y in range(0, h-n+1, n):
        for x in range(0, w-n+1, n):
            maxIdx = np.argmax(im[y:y+n, x:x+n])
            maxIdx = _unravel_index(maxIdx, (n, n))
            out[y:y+n, x:x+n][maxIdx] = dldy[y // n, x // n]

    return out


def maxpool2d_backward(dldy, tensor, n):
    assert len(dldy.shape) == 4 #b, c, w, h
    assert len(tensor.shape) == 4 #b, c, w, h

    sb, sc, sh, sw = tensor.shape
    # assert sh % n == 0 and sw % n == 0   (the forum example is 3x3 with pool 2)

    out = np.zeros(tensor.shape, dtype=np.float64)

    for bIdx in range(sb):
        for cIdx in range(sc):
           out[bIdx, cIdx, :, :] += _max_unpool2d_im(dldy[bIdx, cIdx, :, :], tensor[bIdx, cIdx, :, :], n)

    return out


def max_pool_backward(d_output, x, pool_size, stride=None):
    n = pool_size if np.isscalar(pool_size) else pool_size[0]
    x4 = x.reshape((-1, 1) + x.shape[-2:])
    d4 = d_output.reshape((-1, 1) + d_output.shape[-2:])
    return maxpool2d_backward(d4, x4, n).reshape(x.shape)
