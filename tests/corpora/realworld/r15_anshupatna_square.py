# adapted from anshupatna06/CNN-From-Scratch-Project/src/maxpool.py
import numpy as np


class MaxPool:
    def __init__(self, pool_size=2, stride=2):
        self.pool_size = pool_size
        self.stride = stride

    def backward(self, dout):
        X = self.cache
        N, C, H, W = X.shape
        PH = PW = self.pool_size
        stride = self.stride

        dX = np.zeros_like(X)

        out_h, out_w = dout.shape[2], dout.shape[3]

        for n in range(N):
            for c in range(C):
                out_i = 0
                for i in range(0, H - PH + 1, stride):
                    out_j = 0
                    for j in range(0, W - PW + 1, stride):
                        window = X[n, c, i:i+PH, j:j+PW]
                        mask = (window == np.max(window))
                        dX[n, c, i:i+PH, j:j+PW] += mask * dout[n, c, out_i, out_j]
                        out_j += 1
                    out_i += 1

        return dX


def max_pool_backward(d_output, x, pool_size, stride=None):
    if not np.isscalar(pool_size):
        pool_size = pool_size[0]
    if stride is None:
        stride = pool_size
    elif not np.isscalar(stride):
        stride = stride[0]
    layer = MaxPool(pool_size, stride)
    layer.cache = x.reshape((-1, 1) + x.shape[-2:])
    dX = layer.backward(d_output.reshape((-1, 1) + d_output.shape[-2:]))
    return dX.reshape(x.shape)
