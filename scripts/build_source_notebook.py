"""Write source/max_pool_backward/max_pool_backward.ipynb, the instructor notebook.

The notebook's text lives here so that its hidden test cells are generated from
maxpool_grader.exercise.checks.HIDDEN_CHECKS (grade ids, titles, points in one place) and its
figure (the forward pass only) is drawn by maxpool_grader.exercise.part_a. Edit this script, then run

    python scripts/build_source_notebook.py && nbgrader generate_assignment max_pool_backward --force

(`maxpool-grader grade` regenerates the release too). tests/test_notebook.py checks
that the committed notebook is what this script writes.
"""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from maxpool_grader.exercise.checks import HIDDEN_CHECKS, VISIBLE_CHECKS
from maxpool_grader.exercise.part_a import MODEL_ANSWER, PART_A_POINTS, RUBRIC, figure_png
from maxpool_grader.names import PROVIDED_CELL, PROVIDED_TOOLS_CELL, grade_id

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "source" / "max_pool_backward" / "max_pool_backward.ipynb"


def nbgrader(grade_id, *, grade=False, solution=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def md(grade_id, text, **kwargs):
    return new_markdown_cell(text.strip(), metadata=nbgrader(grade_id, locked=True, **kwargs))


def code(grade_id, text, **kwargs):
    return new_code_cell(text.strip(), metadata=nbgrader(grade_id, locked=True, **kwargs))


VISIBLE_POINTS = sum(check.points for check in VISIBLE_CHECKS.values())
HIDDEN_POINTS = sum(check.points for check in HIDDEN_CHECKS.values())
PART_B_POINTS = VISIBLE_POINTS + HIDDEN_POINTS


INTRO = f"""
# Backpropagation through max pooling

A max-pooling layer keeps the largest value of each window of its input. You derive its
backward message (Part A, on paper, {PART_A_POINTS} points, graded by hand) and implement it in NumPy
(Part B, {PART_B_POINTS} points: {VISIBLE_POINTS} for the visible tests below the solution cell, {HIDDEN_POINTS} for
hidden tests that run when your notebook is graded; each shows its title and points where it runs).

Before you submit: *Kernel → Restart & Run All*, and check that no cell raises an error.
"""

PART_A = f"""
## Part A: the backward message ({PART_A_POINTS} points)

Consider the max-pooling layer which reduces the dimensionality of a two-dimensional input.
Its forward message is

$$ f_{{kl}}(\\boldsymbol{{x}}) = \\max_{{(i, j) \\in \\Omega(k, l)}} x_{{ij}}, $$

where $(i, j)$ denotes the coordinates of the input, $(k, l)$ the coordinates of the output
and $\\Omega(k, l)$ is the set of input coordinates covered by the receptive field of the
output $(k, l)$, as in Figure 1 (2×2 max pooling with stride 2).

![Figure 1](attachment:figure1.png)

**Derive the backward message $\\dfrac{{\\partial f_{{kl}}}}{{\\partial x_{{ij}}}}$ of the layer.**
Say what happens when the maximum of a window is not unique, and write the gradient
$\\dfrac{{\\partial L}}{{\\partial x_{{ij}}}}$ that the layer passes back given
$\\dfrac{{\\partial L}}{{\\partial f_{{kl}}}}$. Write your answer (Markdown and LaTeX) in the next cell.
"""

# The model answer and the rubric: in the solution region, which the release never has
# (the feedback and the grader's view get them from maxpool_grader.exercise.part_a).
PART_A_ANSWER = "### BEGIN SOLUTION\n" + MODEL_ANSWER + "\n\n" + RUBRIC + "\n### END SOLUTION"

PART_B = f"""
## Part B: implement `max_pool_backward` ({PART_B_POINTS} points)

**The forward pass.** `x` has shape `(..., H, W)`: any number of leading batch/channel axes.
Window $(i, j)$ covers rows `i*sh … i*sh+ph-1` and columns `j*sw … j*sw+pw-1` of `x`, where
`(ph, pw)` is the pool size and `(sh, sw)` the stride; the output keeps each window's maximum
(`max_pool_forward` in the next cell). `d_output` has the output's shape `(..., H_out, W_out)`.

**Your function.** `max_pool_backward(d_output, x, pool_size, stride=None)` returns `dx`, the
gradient of the loss with respect to `x`, given `d_output`, its gradient with respect to the output.
The rules:
- `pool_size` and `stride` are an int or a pair `(rows, cols)`; `stride=None` means stride =
  pool size. Strides smaller (overlapping windows) and larger than the pool are allowed.
- The grid is `d_output`'s shape. Besides the grid of full windows (`H_out = (H - ph) // sh + 1`),
  `d_output` may have the *ceil-mode* grid, which adds windows that start inside `x` but run past
  its border; such a window is clipped to the part inside `x` (NumPy slicing does that). Example:
  `x` = 3×3, pool 2, `d_output` 2×2 (asked about on the course forum: test titles call it *the forum example*).
- `x` may be negative, and may be an integer array.
- **Ties, a convention.** When several elements share a window's maximum, the forward pass is
  taken to have selected the first of them in row-major order (what `np.argmax` on the flattened
  window returns), as PyTorch's `max_pool2d` does. Your backward pass must agree.
- `dx` has `x`'s shape and a floating dtype (float64 for integer `x`); the inputs are left unchanged.

**Checking your work.** You do not need the answer to test your code. The collapsed cell below
`max_pool_forward` holds tools (run it; click it to read them):
- `gradient_check(max_pool_backward, ...)` compares your `dx` with central finite differences of
  `L(x) = sum(d_output * max_pool_forward(x))`, whose gradient your function returns, on random
  inputs without ties; `numerical_gradient` computes those differences.
- `check_rules(max_pool_backward)` checks each rule above on small inputs of its own, one line per
  rule. It compares your function's results with each other, never with an answer.

Work out small cases by hand too: a 1×3 input with pool `(1, 2)` and stride 1, a window whose
maximum is not unique.
"""

HELPERS = '''
# The forward pass (read it), and the tools for checking your work in the next cell.
import numpy as np


def _pair(value):
    return (value, value) if np.isscalar(value) else tuple(value)


def output_size(size, pool, stride, ceil_mode=False):
    """Number of windows along one axis; ceil mode adds clipped windows that start inside x."""
    if not ceil_mode:
        return (size - pool) // stride + 1
    count = -(-(size - pool) // stride) + 1
    return count - 1 if (count - 1) * stride >= size else count


def max_pool_forward(x, pool_size, stride=None, ceil_mode=False):
    """Max pooling over the last two axes.

    x: array of shape (..., H, W); pool_size, stride: int or (rows, cols), stride None = pool_size.
    Returns out of shape (..., H_out, W_out), the maximum of each window.
    """
    x = np.asarray(x)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    out_h = output_size(x.shape[-2], ph, sh, ceil_mode)
    out_w = output_size(x.shape[-1], pw, sw, ceil_mode)
    out = np.empty(x.shape[:-2] + (out_h, out_w), dtype=x.dtype)
    for i in range(out_h):
        for j in range(out_w):
            window = x[..., i * sh:i * sh + ph, j * sw:j * sw + pw]  # slicing clips at the border
            out[..., i, j] = window.max(axis=(-2, -1))
    return out
'''

# The tools: a collapsed cell (students run it; reading it is optional). check_rules checks
# the rules Part B states by relations between calls of the student's function, never
# against an answer (README: "What the self-check checks").
TOOLS = '''
# Tools for checking your work, provided: run this cell (you need not read it).
#   gradient_check(backward, ...)  compares your dx with finite differences on random inputs
#   numerical_gradient(d_output, x, pool_size, stride)  those finite differences
#   check_rules(backward)          checks the rules stated in Part B, one line per rule
#   call_quietly(function, *args)  used by the tests: prints and NumPy warnings cost no points
import contextlib
import io
import warnings


def numerical_gradient(d_output, x, pool_size, stride=None, step=1e-6):
    """Central finite differences of L(x) = sum(d_output * max_pool_forward(x)) with respect to x."""
    x = np.array(x, dtype=float)
    ceil_mode = d_output.shape[-2:] != max_pool_forward(x, pool_size, stride).shape[-2:]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        shifted = x.copy()
        shifted[index] += step
        up = np.sum(d_output * max_pool_forward(shifted, pool_size, stride, ceil_mode))
        shifted[index] -= 2 * step
        down = np.sum(d_output * max_pool_forward(shifted, pool_size, stride, ceil_mode))
        grad[index] = (up - down) / (2 * step)
    return grad


def gradient_check(backward, shape=(2, 5, 6), pool_size=2, stride=None, ceil_mode=False, seed=0):
    """Largest difference between backward(d_output, x, pool_size, stride) and finite
    differences, on x with values at least 1 apart (no ties; a small step never changes a
    window's maximum). Prints and returns it."""
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(float)
    d_output = rng.standard_normal(max_pool_forward(x, pool_size, stride, ceil_mode).shape)
    error = np.max(np.abs(backward(d_output, x, pool_size, stride) - numerical_gradient(d_output, x, pool_size, stride)))
    print(f"largest difference from finite differences: {error:.2e}",
          "(looks right)" if error < 1e-6 else "(something is wrong)")
    return error


def call_quietly(function, *args):
    """function(*args), with what it prints or warns shown on stdout: nbgrader gives 0 points
    to a test cell that writes to stderr."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer), \\
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args)
    text = buffer.getvalue() + "".join(f"{w.category.__name__}: {w.message}\\n" for w in caught)
    if text:
        print("Output of your code (it does not affect the grade):\\n" + text.rstrip())
    return result


def check_rules(backward):
    """Check the rules stated in Part B on small inputs of its own; print one line per rule.

    Each rule is checked by comparing calls of your function with each other (never with an
    answer), so passing does not mean dx is right: which elements receive the gradient is
    yours to derive, and the hidden tests check it. Prints of your function are hidden here.
    """
    for rule, problem in rule_problems(backward).items():
        print(f"{'ok  ' if problem is None else 'FAIL'}  {rule}" + ("" if problem is None else f": {problem}"))


def rule_problems(backward):
    """{rule: None if it holds, else a one-line reason}."""
    found = {}
    for rule, check in _RULES.items():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \\
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                found[rule] = check(backward)
            except Exception as error:  # noqa: BLE001  any exception of your function is a reason
                message = str(error).strip().splitlines()[0] if str(error).strip() else ""
                found[rule] = f"raised {type(error).__name__}: {message}"[:160]
    return found


def _distinct(shape, seed, low=1.0):
    """Values low, low + 1, ... in a fixed random order: no ties."""
    return np.random.default_rng(100 + seed).permutation(int(np.prod(shape))).reshape(shape) + low


def _upstream(x, pool_size, stride=None, ceil_mode=False, seed=0):
    shape = max_pool_forward(x, pool_size, stride, ceil_mode).shape
    rng = np.random.default_rng(200 + seed)
    return rng.integers(1, 9, size=shape) / 4 * rng.choice([-1, 1], size=shape)


def _dx(backward, d_output, x, pool_size, stride=None):
    return np.asarray(backward(np.array(d_output), np.array(x), pool_size, stride), dtype=float)


def _same(a, b):
    return a.shape == b.shape and np.allclose(a, b, atol=1e-9)


def _rule_shape(backward):
    for shape, pool_size, stride in [((4, 6), 2, None), ((2, 5, 6), (2, 3), 1)]:
        x = _distinct(shape, 1)
        dx = backward(_upstream(x, pool_size, stride), x.copy(), pool_size, stride)
        if not isinstance(dx, np.ndarray):
            return f"it returned {type(dx).__name__}, not a NumPy array"
        if dx.shape != x.shape:
            return f"for x of shape {x.shape}, pool_size={pool_size!r}, stride={stride!r}, dx has shape {dx.shape}"
    return None


def _rule_dtype(backward):
    x = np.array([[3, -1, 4, 1, -5], [9, 2, -6, 5, 3], [-4, 8, 7, -9, 0], [6, -2, 1, -8, 2]])
    d_output = _upstream(x, 2, 1)
    dx = np.asarray(backward(d_output.copy(), x.copy(), 2, 1))
    if dx.dtype != np.float64:
        return f"for integer x, dx has dtype {dx.dtype}, not float64"
    if not _same(dx, _dx(backward, d_output, x.astype(float), 2, 1)):
        return "integer x gives another dx than the same values as floats"
    single = np.asarray(backward(d_output.astype(np.float32), x.astype(np.float32), 2, 1))
    if single.dtype.kind != "f":
        return f"for float32 inputs, dx has dtype {single.dtype}"
    return None


def _rule_inputs_unchanged(backward):
    for x in [_distinct((5, 6), 2), _distinct((2, 4, 5), 3).astype(np.int64)]:
        d_output = _upstream(x, 2, 1)
        x_given, d_given = x.copy(), d_output.copy()
        backward(d_given, x_given, 2, 1)
        if not np.array_equal(x_given, x):
            return f"x ({x.dtype}, shape {x.shape}) was changed by the call"
        if not np.array_equal(d_given, d_output):
            return "d_output was changed by the call"
    return None


def _rule_pairs(backward):
    x = _distinct((5, 6), 4)
    d_output = _upstream(x, 2, 1)
    if not _same(_dx(backward, d_output, x, 2, 1), _dx(backward, d_output, x, (2, 2), (1, 1))):
        return "pool_size=(2, 2), stride=(1, 1) gives another dx than pool_size=2, stride=1"
    if not _same(_dx(backward, d_output, x, 2, 1), _dx(backward, d_output, x, (2, 2), 1)):
        return "pool_size=(2, 2), stride=1 gives another dx than pool_size=2, stride=1"
    d_output = _upstream(x, (2, 3), (1, 2))
    if _dx(backward, d_output, x, (2, 3), (1, 2)).shape != x.shape:
        return "pool_size=(2, 3), stride=(1, 2) gives dx of another shape than x"
    return None


def _rule_stride_none(backward):
    x = _distinct((6, 6), 5)
    for pool_size in [2, (2, 3), (3, 1)]:
        d_output = _upstream(x, pool_size)
        if not _same(_dx(backward, d_output, x, pool_size, None), _dx(backward, d_output, x, pool_size, pool_size)):
            return f"stride=None gives another dx than stride={pool_size!r} for pool_size={pool_size!r}"
    return None


def _rule_leading_axes(backward):
    x = _distinct((2, 3, 4, 5), 6)
    for stack in [x, x[1], x[1, 2:]]:
        d_output = _upstream(stack, 2, 1)
        whole = _dx(backward, d_output, stack, 2, 1)
        for index in np.ndindex(stack.shape[:-2]):
            if not _same(whole[index], _dx(backward, d_output[index], stack[index], 2, 1)):
                return f"for x of shape {stack.shape}, plane {index} of dx differs from dx of that plane alone"
    return None


def _rule_windows(backward):
    for shape, pool_size, stride, ceil_mode in [((5, 7), 2, 1, False), ((7, 5), 2, 3, False),
                                                ((4, 7), (1, 3), None, False), ((7, 6), (3, 2), (2, 1), False),
                                                ((5, 5), (3, 2), (2, 2), True)]:
        (ph, pw), (sh, sw) = _pair(pool_size), _pair(pool_size if stride is None else stride)
        size = int(np.prod(shape))
        for x in [np.arange(size, dtype=float).reshape(shape), -np.arange(size, dtype=float).reshape(shape),
                  _distinct(shape, 7)]:
            grid = max_pool_forward(x, pool_size, stride, ceil_mode).shape
            for i, j in np.ndindex(grid):
                d_output = np.zeros(grid)
                d_output[i, j] = 1.0
                outside = _dx(backward, d_output, x, pool_size, stride) != 0
                outside[i * sh:i * sh + ph, j * sw:j * sw + pw] = False
                if outside.any():
                    where = tuple(int(k) for k in np.argwhere(outside)[0])
                    return (f"pool_size={pool_size!r}, stride={stride!r}, x of shape {shape}: d_output "
                            f"nonzero only at window {(i, j)} gives dx nonzero at {where}, outside that window")
    return None


def _rule_clipped(backward):
    for shape, pool_size, stride, low in [((5, 5), 2, None, 1.0), ((3, 3), 2, None, -20.0),
                                          ((4, 6), 3, 2, -40.0), ((2, 5, 4), (2, 3), (2, 3), 1.0)]:
        (ph, pw), (sh, sw) = _pair(pool_size), _pair(pool_size if stride is None else stride)
        x = _distinct(shape, 8, low)
        d_output = _upstream(x, pool_size, stride, ceil_mode=True)
        rows, cols = d_output.shape[-2:]
        height, width = max(shape[-2], (rows - 1) * sh + ph), max(shape[-1], (cols - 1) * sw + pw)
        extended = np.full(shape[:-2] + (height, width), x.min() - 1.0)
        extended[..., :shape[-2], :shape[-1]] = x
        if not _same(_dx(backward, d_output, x, pool_size, stride),
                     _dx(backward, d_output, extended, pool_size, stride)[..., :shape[-2], :shape[-1]]):
            return (f"pool_size={pool_size!r}, stride={stride!r}, x of shape {shape}, d_output of shape "
                    f"{d_output.shape}: dx differs from dx for x extended past its border with values below all of x")
    return None


def _rule_negative(backward):
    for shape, pool_size, stride, ceil_mode in [((4, 6), 2, None, False), ((2, 5, 5), 2, None, True),
                                                ((5, 6), (2, 3), 1, False)]:
        x = _distinct(shape, 9)
        d_output = _upstream(x, pool_size, stride, ceil_mode)
        if not _same(_dx(backward, d_output, x, pool_size, stride), _dx(backward, d_output, x - 100, pool_size, stride)):
            return (f"pool_size={pool_size!r}, stride={stride!r}, d_output of shape {d_output.shape}: dx for "
                    "x - 100 (all negative) differs from dx for x, yet no window's maximum moved")
    return None


_TIES = [  # (x with tied maxima, the same x with each window's first maximum raised by 0.5, pool_size)
    ([[5, 5, 1, 2], [0, 3, 2, 2], [4, 1, 7, 0], [4, 4, 7, 7]],
     [[5.5, 5, 1, 2.5], [0, 3, 2, 2], [4.5, 1, 7.5, 0], [4, 4, 7, 7]], 2),
    ([[1, 4, 4, 0, 2, 2], [4, 0, 4, 2, 2, 1]], [[1, 4.5, 4, 0, 2.5, 2], [4, 0, 4, 2, 2, 1]], (2, 3)),
    ([[-2, -2, -2], [-2, -2, -2], [-2, -2, -2]], [[-1.5, -2, -1.5], [-2, -2, -2], [-1.5, -2, -1.5]], 2),
]


def _rule_ties(backward):
    for tied, first, pool_size in _TIES:
        tied, first = np.array(tied, dtype=float), np.array(first, dtype=float)
        d_output = _upstream(tied, pool_size, ceil_mode=True)
        if not _same(_dx(backward, d_output, tied, pool_size), _dx(backward, d_output, first, pool_size)):
            return (f"x with tied maxima gives another dx than the same x with each window's first maximum "
                    f"(row-major) raised by 0.5 (pool_size={pool_size!r})")
    return None


_RULES = {
    "dx is a NumPy array of x's shape": _rule_shape,
    "dx is floating point, float64 for integer x": _rule_dtype,
    "x and d_output are left unchanged": _rule_inputs_unchanged,
    "pool_size and stride are an int or a pair": _rule_pairs,
    "stride=None means stride = pool_size": _rule_stride_none,
    "any number of leading axes": _rule_leading_axes,
    "window (i, j) covers rows i*sh .. i*sh+ph-1 and columns j*sw .. j*sw+pw-1": _rule_windows,
    "border windows of d_output's grid are clipped to x": _rule_clipped,
    "x may be negative": _rule_negative,
    "ties: the first maximum in row-major order": _rule_ties,
}
'''

SOLUTION = '''
def max_pool_backward(d_output, x, pool_size, stride=None):
    """Gradient of the loss with respect to the input of a max-pooling layer.

    Args:
        d_output: array of shape (..., H_out, W_out), the gradient of the loss with
            respect to the pooled output. Its grid decides which windows exist:
            window (i, j) covers rows i*sh .. i*sh+ph-1 and columns j*sw .. j*sw+pw-1
            of x, clipped at x's border.
        x: array of shape (..., H, W), the layer's input (same leading axes).
        pool_size: int or (ph, pw), the window size.
        stride: int or (sh, sw); None means stride = pool_size.

    Returns:
        dx: array of x's shape and a floating dtype (float64 for integer inputs), the
        gradient of the loss with respect to x. On ties the forward pass selected a
        window's first maximum in row-major order. x and d_output are unchanged.
    """
    ### BEGIN SOLUTION
    x = np.asarray(x)
    d_output = np.asarray(d_output)
    ph, pw = _pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _pair(stride)
    dx = np.zeros(x.shape, dtype=np.result_type(x.dtype, d_output.dtype, np.float64))
    for index in np.ndindex(x.shape[:-2]):
        plane, grad_plane = x[index], dx[index]
        for i in range(d_output.shape[-2]):
            for j in range(d_output.shape[-1]):
                window = plane[i * sh:i * sh + ph, j * sw:j * sw + pw]
                r, c = np.unravel_index(np.argmax(window), window.shape)  # first maximum
                grad_plane[i * sh + r, j * sw + c] += d_output[index + (i, j)]
    return dx
    ### END SOLUTION
'''

TRY_IT = """
Try your function here (not graded; change it as you like). A correct backward pass gives
differences below 1e-6 and `ok` for every rule.
"""

TRY_IT_CODE = """
gradient_check(max_pool_backward)
gradient_check(max_pool_backward, shape=(6, 7), pool_size=(3, 2), stride=1)
gradient_check(max_pool_backward, shape=(5, 5), pool_size=2, ceil_mode=True)
check_rules(max_pool_backward)
"""

VISIBLE_TESTS = """
## Tests

The two visible tests below compare your `dx` with finite differences on small inputs; run them
while you work. The hidden tests after them run when your notebook is graded.
"""

# The visible tests' inputs are VISIBLE_CHECKS' (maxpool_grader/exercise/checks.py), and a test
# checks that they agree. Their expected dx is numerical_gradient's, never written out: a
# literal dx would show where each window's gradient lands, which Part A asks for.
VISIBLE_2X2 = '''
# Visible test: {title} ({points})
x = np.array([[2, 9, 4, 1],
              [6, 3, 8, 5],
              [1, 7, 0, 2],
              [4, 5, 3, 6]], dtype=float)
d_output = np.array([[0.5, -1.0],
                     [2.0, 0.25]])
dx = call_quietly(max_pool_backward, d_output, x, 2)
assert isinstance(dx, np.ndarray), f"max_pool_backward must return a NumPy array, got {type(dx).__name__}"
assert dx.shape == x.shape, f"dx must have x's shape {x.shape}, got {dx.shape}"
expected = numerical_gradient(d_output, x, 2)
assert np.allclose(dx, expected, atol=1e-6), f"finite differences give\\n{expected.round(6)}\\nyour dx =\\n{dx}"
print("Passed: {title}.")
'''

VISIBLE_FORUM = '''
# Visible test: {title} ({points})
# d_output is 2x2, so the grid has border windows: rows/columns 2..3 are clipped to row/column 2.
x = np.array([[2, -3, 5],
              [-1, 4, -6],
              [7, 0, -2]])
d_output = np.array([[1, -2],
                     [3, 4]])
dx = call_quietly(max_pool_backward, d_output, x, 2)
assert isinstance(dx, np.ndarray), f"max_pool_backward must return a NumPy array, got {type(dx).__name__}"
assert dx.shape == x.shape, f"dx must have x's shape {x.shape}, got {dx.shape}"
expected = numerical_gradient(d_output, x, 2)
assert np.allclose(dx, expected, atol=1e-6), f"finite differences give\\n{expected.round(6)}\\nyour dx =\\n{dx}"
print("Passed: {title}.")
'''


def points_label(check) -> str:
    return f"{check.points} point" + ("s" if check.points != 1 else "")


def visible_test_source(check, template: str) -> str:
    # The title and points come from VISIBLE_CHECKS (the verdict's report uses the same title).
    return template.replace("{title}", check.title).replace("{points}", points_label(check))


def hidden_test_source(check) -> str:
    return (f"# Hidden test: {check.title} ({points_label(check)})\n"
            "### BEGIN HIDDEN TESTS\n"
            "from maxpool_grader.checks import run_check\n"
            f"run_check({check.grade_id!r}, globals())\n"
            "### END HIDDEN TESTS")


def collapsed(cell):
    """A cell whose source JupyterLab and Notebook 7 show folded (a click unfolds it)."""
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def build() -> nbformat.NotebookNode:
    part_a = md("part_a_question", PART_A)
    part_a.attachments = {"figure1.png": {"image/png": base64.b64encode(figure_png()).decode()}}
    cells = [
        md("intro", INTRO),
        part_a,
        new_markdown_cell(PART_A_ANSWER.strip(), metadata=nbgrader(
            "part_a_derivation", grade=True, solution=True, points=PART_A_POINTS)),
        md("part_b_explanation", PART_B),
        code(PROVIDED_CELL, HELPERS),
        collapsed(code(PROVIDED_TOOLS_CELL, TOOLS)),
        new_code_cell(SOLUTION.strip(), metadata=nbgrader("max_pool_backward", solution=True)),
        new_markdown_cell(TRY_IT.strip()),
        new_code_cell(TRY_IT_CODE.strip()),
        md("tests_header", VISIBLE_TESTS),
    ]
    cells += [code(check_id, visible_test_source(VISIBLE_CHECKS[check_id], template), grade=True,
                   points=VISIBLE_CHECKS[check_id].points)
              for check_id, template in [("visible_2x2_stride_2", VISIBLE_2X2),
                                         ("visible_forum_example", VISIBLE_FORUM)]]
    cells += [code(check.grade_id, hidden_test_source(check), grade=True, points=check.points)
              for check in HIDDEN_CHECKS.values()]
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    for number, cell in enumerate(notebook.cells):  # stable ids: the committed file never churns
        cell.id = (grade_id(cell) or f"cell-{number}").replace("_", "-")
    return notebook


def main() -> None:
    NOTEBOOK.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(build(), NOTEBOOK)
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
