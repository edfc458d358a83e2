# adapted from yanyan0207/DL_STUDY_PYTHON/layer/pooling.py
import numpy as np

class MaxPooling:
    def __init__(self,shape):
        self.shape = shape
        pass

    def forward(self,x,train):
        row = self.shape[0]
        col = self.shape[1]
        out = x.copy().reshape(x.shape[0],x.shape[1]//row,row,x.shape[2]//col,col,x.shape[3])
        out = out.transpose(0,1,3,5,2,4)
        out = out.reshape(-1,row*col)
        maxpos = np.argmax(out,axis=1)
        out = out[np.arange(maxpos.size),maxpos]
        out = out.reshape(x.shape[0],x.shape[1]//row,x.shape[2]//col,x.shape[3])
        if train:
            self.maxpos = maxpos
        return out

    def backward(self,out,input,output):
        row = self.shape[0]
        col = self.shape[1]
        grad = np.zeros((out.size,row*col))
        grad[np.arange(self.maxpos.size),self.maxpos] = out.reshape(-1)
        grad = grad.reshape(out.shape[0],out.shape[1],out.shape[2],out.shape[3],row,col)
        grad = grad.transpose(0,1,4,2,5,3)
        grad = grad.reshape(input.shape)
        return grad


def max_pool_backward(d_output, x, pool_size, stride=None):
    shape = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    layer = MaxPooling(shape)
    # (..., H, W) -> (N, H, W, C=1), the layout of this layer
    x_nhwc = x.reshape((-1,) + x.shape[-2:] + (1,))
    d_nhwc = d_output.reshape((-1,) + d_output.shape[-2:] + (1,))
    out = layer.forward(x_nhwc, True)
    grad = layer.backward(d_nhwc, x_nhwc, out)
    return grad.reshape(x.shape)
