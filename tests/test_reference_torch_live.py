"""Live comparison with PyTorch's max_pool2d (runs where torch is importable; .ci/run installs it)."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import pooling_configs

from maxpool_grader import max_pool_backward, max_pool_forward

if os.environ.get("CI"):  # .ci/run installs torch==2.13.0: a missing torch there is a failure
    import torch
else:
    torch = pytest.importorskip("torch", reason="pip install torch==2.13.0 to compare live")
F = torch.nn.functional


def torch_forward_backward(x, pool, stride, ceil_mode, d_out):
    tensor = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    batched = tensor.reshape((-1,) + tuple(tensor.shape[-2:]))
    out = F.max_pool2d(batched, pool, stride, ceil_mode=ceil_mode)
    out = out.reshape(tuple(tensor.shape[:-2]) + tuple(out.shape[-2:]))
    out.backward(torch.tensor(d_out, dtype=torch.float64))
    return out.detach().numpy(), tensor.grad.numpy()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(pooling_configs(values="any"))
def test_reference_equals_torch_max_pool2d(config):
    x, pool, stride, ceil_mode, d_out = (config[k] for k in ("x", "pool", "stride", "ceil_mode", "d_out"))
    expected_out, expected_dx = torch_forward_backward(x, pool, stride, ceil_mode, d_out)
    np.testing.assert_array_equal(max_pool_forward(x, pool, stride, ceil_mode), expected_out)
    np.testing.assert_array_equal(max_pool_backward(d_out, x, pool, stride), expected_dx)


@pytest.mark.parametrize("special", [np.nan, -np.inf, np.inf])
def test_reference_equals_torch_with_special_values(special):
    rng = np.random.default_rng(7)
    for _ in range(50):
        x = rng.integers(-1, 2, size=(2, 5, 6)).astype(float)
        x[rng.random(x.shape) < 0.3] = special
        d_out = rng.standard_normal((2, 3, 3))
        expected_out, expected_dx = torch_forward_backward(x, (2, 3), (2, 2), True, d_out)
        np.testing.assert_array_equal(max_pool_forward(x, (2, 3), (2, 2), True), expected_out)
        np.testing.assert_array_equal(max_pool_backward(d_out, x, (2, 3), (2, 2)), expected_dx)
