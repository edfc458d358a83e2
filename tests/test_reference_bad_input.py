"""Bad input gets a ValueError or TypeError whose message names the argument and what was expected."""

import numpy as np
import pytest

from maxpool_grader import max_pool_backward, max_pool_forward

X = np.arange(16.0).reshape(4, 4)


@pytest.mark.parametrize("d_output, x, pool, stride, error, words", [
    (np.ones((3, 2, 2)), np.ones((2, 4, 4)), 2, None, ValueError,
     ["d_output's leading axes (3,)", "x's (2,)", "(2, 'H_out', 'W_out')"]),
    (np.ones((3, 3)), X, 2, None, ValueError,
     ["d_output has shape (3, 3)", "cannot produce", "H_out = 2", "W_out = 2"]),
    (np.ones((1, 2)), X, 2, None, ValueError, ["d_output has shape (1, 2)", "H_out = 2"]),
    (np.ones((2, 2)), X, 0, None, ValueError, ["pool_size must be positive", "0"]),
    (np.ones((2, 2)), X, (2, -1), None, ValueError, ["pool_size must be positive"]),
    (np.ones((2, 2)), X, 2, 0, ValueError, ["stride must be positive"]),
    (np.ones((2, 2)), X, 2.0, None, TypeError, ["pool_size must be an int or a pair of ints"]),
    (np.ones((2, 2)), X, 2, (1, 2, 3), TypeError, ["stride must be an int or a pair of ints"]),
    (np.ones((2, 2)), X, True, None, TypeError, ["pool_size"]),
    (np.ones((1, 1)), X, 5, None, ValueError, ["pool_size (5, 5) is larger than x's last two dimensions (4, 4)"]),
    (np.ones((1, 1)), X, (1, 5), None, ValueError, ["pool_size (1, 5) is larger"]),
    (np.ones(2), X, 2, None, ValueError, ["d_output must have at least 2 dimensions", "(2,)"]),
    (np.ones((2, 2)), np.ones(4), 2, None, ValueError, ["x must have at least 2 dimensions", "(4,)"]),
    (np.ones((2, 2)), np.full((4, 4), "a"), 2, None, TypeError, ["x must be an array of real numbers", "<U1"]),
    (np.ones((2, 2)), X.astype(complex), 2, None, TypeError, ["x must be an array of real numbers", "complex128"]),
    (np.ones((2, 2), dtype=bool), X, 2, None, TypeError, ["d_output must be an array of real numbers", "bool"]),
    ([[1, 2], [3]], X, 2, None, TypeError, ["d_output must be an array of real numbers"]),
])
def test_backward_rejects_bad_input_with_a_message_naming_it(d_output, x, pool, stride, error, words):
    with pytest.raises(error) as raised:
        max_pool_backward(d_output, x, pool, stride)
    for word in words:
        assert word in str(raised.value)


def test_forward_rejects_a_pool_larger_than_x_and_bad_x():
    with pytest.raises(ValueError, match="pool_size .* is larger than x"):
        max_pool_forward(X, (5, 1))
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        max_pool_forward(np.array([["a", "b"], ["c", "d"]]), 1)


def test_backward_accepts_both_the_floor_and_the_ceil_grid():
    x = np.arange(25.0).reshape(5, 5)
    assert max_pool_backward(np.ones((2, 2)), x, 2).shape == (5, 5)
    assert max_pool_backward(np.ones((3, 3)), x, 2).shape == (5, 5)
    assert max_pool_backward(np.ones((2, 3)), x, 2).shape == (5, 5)
    with pytest.raises(ValueError, match="H_out = 2 or 3"):
        max_pool_backward(np.ones((4, 3)), x, 2)


def test_lists_are_accepted_as_arrays():
    dx = max_pool_backward([[1, 1], [1, 1]], [[1, 2, 3], [4, 5, 6], [7, 8, 9]], 2)
    assert dx.tolist() == [[0, 0, 0], [0, 1, 1], [0, 1, 1]]
