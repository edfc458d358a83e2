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
from maxpool_grader.names import PROVIDED_CELL, grade_id

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


INTRO = f"""
# Backpropagation through max pooling

A max-pooling layer keeps the largest value of each window of its input. In this
assignment you derive its backward message (Part A, on paper, {PART_A_POINTS} points, graded by
hand) and implement it in NumPy (Part B, graded automatically).

**Points.** Part A: {PART_A_POINTS}. Part B: {sum(c.points for c in VISIBLE_CHECKS.values())} for the visible tests below the
solution cell and {sum(c.points for c in HIDDEN_CHECKS.values())} for hidden tests that run when your notebook is graded.
Each hidden test's title is shown where it will run, so you know what is checked.

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

PART_B = """
## Part B: implement `max_pool_backward`

**The forward pass.** `x` has shape `(..., H, W)`: any number of leading batch/channel axes.
Window $(i, j)$ of the output covers rows `i*sh … i*sh+ph-1` and columns `j*sw … j*sw+pw-1`
of `x`, where `(ph, pw)` is the pool size and `(sh, sw)` the stride, and the output keeps each
window's maximum: `max_pool_forward` in the next cell does exactly this. The upstream gradient
`d_output` has the output's shape `(..., H_out, W_out)`, and your `dx` has `x`'s shape.

**Your function.** `max_pool_backward(d_output, x, pool_size, stride=None)` returns `dx`, the
gradient of the loss with respect to `x`, for the loss whose gradient with respect to the
output is `d_output`.
- `pool_size` and `stride` are an int or a pair `(rows, cols)`; `stride=None` means stride =
  pool size. Strides smaller than the pool size (overlapping windows) and larger are allowed.
- The output grid is `d_output`'s shape. Besides the usual grid of full windows
  (`H_out = (H - ph) // sh + 1`), `d_output` may have the *ceil-mode* grid, which adds windows
  that start inside `x` but run past its border; such a window is clipped to the part inside
  `x` (NumPy slicing does that for you). Example: `x` = 3×3, pool 2, `d_output` 2×2.
- **Ties, a convention.** When several elements of a window share its maximum, the forward pass
  is taken to have selected the first of them in row-major order (what `np.argmax` on the
  flattened window returns), as PyTorch's `max_pool2d` does. Your backward pass must agree
  with that choice.
- `dx` has a floating dtype (float64 for integer `x`), and the inputs are left unchanged.

**Checking a gradient yourself.** You do not need the answer to test your code. For
`L(x) = sum(d_output * max_pool_forward(x))` the exact gradient with respect to `x` is what your
function must return, and central differences approximate it:
`(L(x + h e) - L(x - h e)) / (2h)` for each element direction `e`. `numerical_gradient` in the
next cell computes that, and `gradient_check` compares it with your function on random inputs
whose values are at least 1 apart (so a small step never changes which element is a window's
maximum). Work out small cases by hand too: a 1×3 input with pool `(1, 2)` and stride 1, a 3×3
input with pool 2 and a 2×2 `d_output`, a window whose maximum is not unique. Then compare with
your function.

The next cell gives you `max_pool_forward`, `numerical_gradient`, `gradient_check` and
`call_quietly` (used by the tests). Run it before the rest.
"""

HELPERS = '''
import contextlib
import io
import warnings

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
    """Compare backward(d_output, x, pool_size, stride) with finite differences.

    x is random with all values at least 1 apart, so no window has a tie and a small step
    never changes which element is a window's maximum. Prints and returns the largest error.
    """
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(float)
    d_output = rng.standard_normal(max_pool_forward(x, pool_size, stride, ceil_mode).shape)
    analytic = backward(d_output, x, pool_size, stride)
    numeric = numerical_gradient(d_output, x, pool_size, stride)
    error = np.max(np.abs(analytic - numeric))
    print(f"largest difference from finite differences: {error:.2e}",
          "(looks right)" if error < 1e-6 else "(something is wrong)")
    return error


def call_quietly(function, *args):
    """Call function(*args) and show what it prints or warns on stdout.

    nbgrader gives 0 points to a test cell that writes anything to stderr; a correct
    solution must not lose points because NumPy warned or you printed to stderr.
    """
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer), \\
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args)
    text = buffer.getvalue() + "".join(f"{w.category.__name__}: {w.message}\\n" for w in caught)
    if text:
        print("Output of your code (it does not affect the grade):\\n" + text.rstrip())
    return result
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
Try your function here (this cell is not graded; change it as you like). A correct backward
pass gives differences below 1e-6 (finite differences are not exact). Try a stride smaller than
the pool size, and `ceil_mode=True`.
"""

TRY_IT_CODE = """
gradient_check(max_pool_backward)
gradient_check(max_pool_backward, shape=(6, 7), pool_size=(3, 2), stride=1)
gradient_check(max_pool_backward, shape=(5, 5), pool_size=2, ceil_mode=True);
"""

VISIBLE_TESTS = """
## Tests

The two tests below are visible: run them while you work. The hidden tests after them run
when your notebook is graded; each shows its title and points here.
"""

VISIBLE_2X2 = '''
# Visible test: 2x2 windows, stride 2 ({points})
x = np.array([[1, 3, 2, 1],
              [4, 2, 0, 1],
              [5, 1, 7, 8],
              [2, 6, 3, 0]], dtype=float)
d_output = np.array([[0.1, 0.2],
                     [0.3, 0.4]])
expected = np.array([[0.0, 0.0, 0.2, 0.0],
                     [0.1, 0.0, 0.0, 0.0],
                     [0.0, 0.0, 0.0, 0.4],
                     [0.0, 0.3, 0.0, 0.0]])
dx = call_quietly(max_pool_backward, d_output, x, 2)
assert isinstance(dx, np.ndarray), f"max_pool_backward must return a NumPy array, got {type(dx).__name__}"
assert dx.shape == x.shape, f"dx must have x's shape {x.shape}, got {dx.shape}"
assert np.allclose(dx, expected), f"expected dx =\\n{expected}\\nyour dx =\\n{dx}"
print("Passed: 2x2 windows, stride 2 (Figure 1).")
'''

VISIBLE_FORUM = '''
# Visible test: the forum example, a 3x3 input with pool 2 ({points})
# d_output is 2x2, so the grid has border windows: rows/columns 2..3 are clipped to row/column 2.
x = np.array([[1, 2, 3],
              [4, 5, 6],
              [7, 8, 9]])
d_output = np.array([[1, 1],
                     [1, 1]])
expected = np.array([[0, 0, 0],
                     [0, 1, 1],
                     [0, 1, 1]])
dx = call_quietly(max_pool_backward, d_output, x, 2)
assert isinstance(dx, np.ndarray), f"max_pool_backward must return a NumPy array, got {type(dx).__name__}"
assert dx.shape == x.shape, f"dx must have x's shape {x.shape}, got {dx.shape}"
assert np.allclose(dx, expected), f"expected dx =\\n{expected}\\nyour dx =\\n{dx}"
print("Passed: the forum example.")
'''


def points_label(check) -> str:
    return f"{check.points} point" + ("s" if check.points != 1 else "")


def visible_test_source(check, template: str) -> str:
    # The template's header names the test in words; the points come from VISIBLE_CHECKS.
    return template.replace("{points}", points_label(check))


def hidden_test_source(check) -> str:
    return (f"# Hidden test: {check.title} ({points_label(check)})\n"
            "### BEGIN HIDDEN TESTS\n"
            "from maxpool_grader.checks import run_check\n"
            f"run_check({check.grade_id!r}, globals())\n"
            "### END HIDDEN TESTS")


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
