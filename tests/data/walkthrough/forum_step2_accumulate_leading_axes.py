import numpy as np


def max_pool_backward(d_output, input, pool_size, stride=None):
    """
    Perform back-propagation through a max-pooling layer.
    """
    d_input = np.zeros(input.shape, dtype=input.dtype if input.dtype.kind == "f" else np.float64)
    pool_height, pool_width = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    if stride is None:
        stride = pool_size
    stride_h, stride_w = (stride, stride) if np.isscalar(stride) else stride
    output_height, output_width = d_output.shape[-2:]

    for lead in np.ndindex(input.shape[:-2]):
        for i in range(output_height):
            for j in range(output_width):
                region = input[lead][i*stride_h:i*stride_h+pool_height, j*stride_w:j*stride_w+pool_width]
                max_index = np.unravel_index(np.argmax(region), region.shape)
                d_input[lead][i*stride_h + max_index[0], j*stride_w + max_index[1]] += d_output[lead][i, j]

    return d_input
