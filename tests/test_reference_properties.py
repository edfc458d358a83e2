"""Properties every correct max-pool backward has, checked on the reference with Hypothesis."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import pooling_configs

from maxpool_grader import max_pool_backward, max_pool_forward
from maxpool_grader.exercise.geometry import backward_geometry
from maxpool_grader.exercise.reference import windows

settings.register_profile("course", max_examples=150, deadline=None, derandomize=True)
settings.load_profile("course")


@given(pooling_configs(values="any"), st.data())
def test_each_window_sends_its_whole_gradient_to_one_of_its_maxima(config, data):
    x, pool, stride = config["x"], config["pool"], config["stride"]
    grid = config["d_out"].shape
    window = tuple(data.draw(st.integers(0, n - 1)) for n in grid)
    one_hot = np.zeros(grid)
    one_hot[window] = 1.0
    dx = max_pool_backward(one_hot, x, pool, stride)
    assert dx.sum() == 1.0 and np.count_nonzero(dx) == 1
    target = np.unravel_index(np.argmax(dx), dx.shape)
    *lead, i, j = window
    assert tuple(target[:-2]) == tuple(lead)
    row, col = target[-2:]
    assert i * stride[0] <= row < i * stride[0] + pool[0]
    assert j * stride[1] <= col < j * stride[1] + pool[1]
    assert x[target] == max_pool_forward(x, pool, stride, config["ceil_mode"])[window]


@given(pooling_configs(values="ties"))
def test_total_gradient_mass_equals_d_outputs_total(config):
    dx = max_pool_backward(config["d_out"], config["x"], config["pool"], config["stride"])
    np.testing.assert_allclose(dx.sum(axis=(-2, -1)), config["d_out"].sum(axis=(-2, -1)), atol=1e-9)


@given(pooling_configs(values="float"), st.floats(-3, 3), st.floats(-3, 3))
def test_backward_is_linear_in_d_output(config, a, b):
    x, pool, stride, g1 = config["x"], config["pool"], config["stride"], config["d_out"]
    g2 = config["rng"].standard_normal(g1.shape)
    combined = max_pool_backward(a * g1 + b * g2, x, pool, stride)
    separate = a * max_pool_backward(g1, x, pool, stride) + b * max_pool_backward(g2, x, pool, stride)
    np.testing.assert_allclose(combined, separate, rtol=1e-12, atol=1e-12)


@given(pooling_configs(values="distinct", max_leading=1))
def test_matches_central_finite_differences_at_tie_free_points(config):
    x, pool, stride, ceil_mode, d_out = (config[k] for k in ("x", "pool", "stride", "ceil_mode", "d_out"))
    step = 1e-3  # values are at least 0.5 apart, so no window changes its arg-max

    def loss(values):
        return float(np.sum(d_out * max_pool_forward(values, pool, stride, ceil_mode)))

    numeric = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        shifted = x.copy()
        shifted[index] += step
        up = loss(shifted)
        shifted[index] -= 2 * step
        numeric[index] = (up - loss(shifted)) / (2 * step)
    np.testing.assert_allclose(max_pool_backward(d_out, x, pool, stride), numeric, atol=1e-8)


@given(pooling_configs(values="ties"))
def test_inputs_are_never_modified_and_read_only_inputs_work(config):
    x, d_out = config["x"], config["d_out"]
    x_before, d_before = x.copy(), d_out.copy()
    x.setflags(write=False)
    d_out.setflags(write=False)
    dx = max_pool_backward(d_out, x, config["pool"], config["stride"])
    max_pool_forward(x, config["pool"], config["stride"], config["ceil_mode"])
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(d_out, d_before)
    assert dx.dtype == np.float64 and dx.shape == x.shape


def test_integer_inputs_never_truncate_the_gradient():
    x = np.arange(1, 10).reshape(3, 3)
    dx = max_pool_backward(np.full((2, 2), 0.25), x, 2)
    np.testing.assert_array_equal(dx, [[0, 0, 0], [0, 0.25, 0.25], [0, 0.25, 0.25]])


def test_dx_has_x_s_dtype_when_x_is_floating_and_float64_for_integer_x():
    """As PyTorch returns the gradient in x's dtype (it casts the upstream gradient to it)."""
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert max_pool_backward(np.ones((2, 2), np.float32), x, 2).dtype == np.float32
    assert max_pool_backward(np.full((2, 2), 0.1), x, 2).dtype == np.float32
    assert max_pool_backward(np.ones((2, 2), np.float32), x.astype(np.float64), 2).dtype == np.float64
    assert max_pool_backward(np.ones((2, 2), np.int64), x.astype(np.int8), 2).dtype == np.float64
    assert max_pool_backward(np.full((2, 2), 0.5, np.float32), x.astype(np.int8), 2).dtype == np.float64


def test_overlapping_windows_accumulate():
    x = np.array([[0, 0, 0], [0, 9, 0], [0, 0, 0]])
    dx = max_pool_backward(np.array([[1.0, 2.0], [3.0, 4.0]]), x, 2, 1)
    np.testing.assert_array_equal(dx, [[0, 0, 0], [0, 10, 0], [0, 0, 0]])


def test_ties_go_to_the_first_maximum_in_row_major_order():
    x = np.array([[1, 7], [7, 7]])
    np.testing.assert_array_equal(max_pool_backward(np.ones((1, 1)), x, 2), [[0, 1], [0, 0]])


def test_border_windows_of_a_ceil_grid_are_clipped():
    x = np.arange(1, 10).reshape(3, 3)
    geometry = backward_geometry((2, 2), x.shape, 2, 2)
    assert geometry.padded_shape == (4, 4)
    assert windows(x, geometry).max(axis=-1).tolist() == [[5, 6], [8, 9]]
    np.testing.assert_array_equal(max_pool_backward(np.ones((2, 2)), x, 2),
                                  [[0, 0, 0], [0, 1, 1], [0, 1, 1]])


def test_reference_is_vectorised_without_python_loops_over_windows():
    import ast
    import inspect

    import maxpool_grader.exercise.reference as reference
    loops = [node for node in ast.walk(ast.parse(inspect.getsource(reference)))
             if isinstance(node, (ast.For, ast.While))]
    assert loops == []
