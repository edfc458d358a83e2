"""Part A's answer: the model answer, the rubric, Figure 1 and Figure 2 (its backward pass).

They exist only here, never in the release notebook: the derivation is what Part A asks
for, and the hidden tests check what it implies. The grader's view (the autograded
notebook that formgrader shows) gets the rubric next to the student's answer
(``showrubric.ShowRubric``); the final feedback, made after the deadline, gets the rubric, the
model answer and the full figure (``modelanswer.ModelAnswer``). The source notebook holds
the same text in Part A's solution region, which nbgrader strips from the release.
"""

from __future__ import annotations

import functools
import io

import numpy as np

PART_A_POINTS = 5

MODEL_ANSWER = r"""
**Model answer.** Let $(i^*, j^*) = \mathrm{arg\,max}_{(i,j) \in \Omega(k,l)} x_{ij}$, the unique maximum.
Every other element of the window is smaller by some margin $\delta > 0$, so a change of any input by
less than $\delta/2$ leaves $(i^*, j^*)$ the maximum: near $\boldsymbol{x}$, $f_{kl}(\boldsymbol{x}) = x_{i^*j^*}$
(max is locally linear in the element that attains it). Hence

$$ \frac{\partial f_{kl}}{\partial x_{ij}} = \begin{cases} 1 & (i,j) = (i^*, j^*) \\ 0 & \text{otherwise:} \end{cases} $$

nudging the maximum moves $f_{kl}$ by the same amount, nudging a non-maximal input or one outside
$\Omega(k,l)$ does not move it at all. If several inputs tie for the maximum, $f_{kl}$ is not
differentiable (the one-sided derivatives differ); any convex combination of the tied indicator
vectors is a subgradient (split it, or give it all to one maximum, e.g. the first, as PyTorch does),
but giving every tied maximum a 1 is not. Chain rule: $\frac{\partial L}{\partial x_{ij}} =
\sum_{(k,l):\,(i,j) \in \Omega(k,l)} \frac{\partial L}{\partial f_{kl}}\,[(i,j) = (i^*,j^*)(k,l)]$.
With stride = window size each $(i,j)$ is in one window only, so it receives $\partial L/\partial f_{kl}$
if it was its window's maximum and 0 otherwise; with a smaller stride windows overlap, and an input
that is the maximum of several windows receives the sum of their gradients.
""".strip()

# What Part A asks, item by item: (label, points, the question's words, the rubric's text). The
# question cell of the notebook states each item with its points (QUESTION_POINTS), the rubric
# grades the same items with the same points: tests/test_notebook.py reads both.
RUBRIC_ITEMS = (
    ("a", 2, "the backward message $\\partial f_{kl}/\\partial x_{ij}$, justified",
     r"""justification of $\partial f_{kl}/\partial x_{ij} = 1$ at the arg-max of $\Omega(k,l)$ and 0
  for every other $(i,j)$, including inputs outside the window: max is locally the identity in its
  arg-max (a small nudge does not change which element is the maximum), or a limit argument.
  1 p if only one of the two cases (1 at the maximum, 0 elsewhere) is justified."""),
    ("b", 1, "a window whose maximum is not unique: differentiable or not, and what the layer may pass back",
     r"""ties: max is not differentiable there (the one-sided derivatives differ); what the layer may pass
  back: a subgradient (split with weights summing to 1, or all to one of the maxima, e.g. the first)
  named; not every tied maximum receiving the full gradient."""),
    ("c", 2, "$\\partial L/\\partial x_{ij}$ for any stride, overlapping windows included",
     r"""the chain rule to $\partial L/\partial x_{ij}$ for any stride, as a sum over the windows
  that contain $(i,j)$, so an input that is the maximum of several overlapping windows receives the sum
  of their gradients. 1 p if it is only given for stride = window size (each input in one window)."""),
)
assert sum(points for _, points, _, _ in RUBRIC_ITEMS) == PART_A_POINTS

QUESTION_POINTS = "Points: " + "; ".join(
    f"({label}) {asked}, {points} point{'s' if points != 1 else ''}" for label, points, asked, _ in RUBRIC_ITEMS) + "."

RUBRIC = (f"**Rubric ({PART_A_POINTS} points).** The points are on the derivation, not on the result: \"each "
          "window's\ngradient goes to its maximum, 0 elsewhere\" stated without its reason earns nothing on its own.\n"
          + "\n".join(f"- ({label}) {points} p: {text}" for label, points, _, text in RUBRIC_ITEMS))

EXPLANATION = r"""
**Why only the arg-max gets gradient.** Nudging a non-maximal element by a small amount does not
change the window's maximum, so its partial derivative is 0; nudging the maximum changes the
output by the same amount, so its partial derivative is 1. The backward pass sends each window's
upstream gradient `d_output[..., k, l]` to the position of that window's maximum, and nothing
anywhere else (Figure 2, right).

**Ties.** When several elements share the maximum, max is not differentiable there. Any way of
distributing the window's gradient over the tied maxima with non-negative weights summing to 1 is
a valid subgradient; giving *every* tied maximum the full gradient is not (it creates gradient
mass). PyTorch, and this assignment, give it all to the first maximum in row-major order.

**Overlapping windows.** With a stride smaller than the pool size, one element can be the maximum
of several windows; it receives the **sum** of their gradients (`+=`, or `np.add.at`, never `=`).
""".strip()

# Figure 1's example: 2x2 max pooling with stride 2
X = np.array([[1, 3, 2, 1],
              [4, 2, 0, 1],
              [5, 1, 7, 8],
              [2, 6, 3, 0]])
D_OUTPUT = np.array([[0.1, 0.2],
                     [0.3, 0.4]])


def _figure_1_alt() -> str:
    """Figure 1 in words, from its numbers: what a reader who cannot see the picture needs."""
    rows = " / ".join(" ".join(str(v) for v in row) for row in X)
    out = X.reshape(2, 2, 2, 2).max(axis=(1, 3))
    places = ["top-left", "top-right", "bottom-left", "bottom-right"]
    windows = ", ".join(f"the {places[2 * r + c]} ({', '.join(map(str, X[2 * r:2 * r + 2, 2 * c:2 * c + 2].ravel()))})"
                        f" gives {out[r, c]}" for r in range(2) for c in range(2))
    return (f"Figure 1: 2×2 max pooling with stride 2. The 4×4 input x, row by row {rows}, is split into four "
            f"2×2 windows, each framed and with its own colour and hatch pattern. Each output f_kl is the "
            f"maximum of its window, so the output is {' / '.join(' '.join(str(v) for v in row) for row in out)}: "
            f"{windows.replace(', the bottom-right', ', and the bottom-right')}.")


FIGURE_1_ALT = _figure_1_alt()  # the notebook's ![...](attachment:figure1.png); check --fix keeps it so
# Each window is told apart three ways, so that none depends on colour (WCAG 1.4.1) and the
# figure reads in greyscale: its colour, its hatch pattern (the same in the output cell it
# makes), and a thick border around it. tests/test_figures.py renders both figures in greyscale.
WINDOW_COLOURS = ["#9ecae1", "#fdae6b", "#a1d99b", "#d4b9da"]
WINDOW_HATCHES = ["////", "....", "\\\\\\\\", "++"]
WINDOW_EDGES = ["#08519c", "#a63603", "#006d2c", "#7a0177"]  # the hatch, darker than its window
DPI = 80


def _grid(ax, values, window_of, title, highlight=None, fmt="{}"):
    """One grid of numbers, each cell in its window's colour and hatch (``window_of(r, c)``),
    each window framed; a maximum (``highlight``) framed inside its cell, in bold."""
    import matplotlib.pyplot as plt  # matplotlib: only to draw the figures (see _figure)
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            window, y = window_of(r, c), rows - 1 - r
            ax.add_patch(plt.Rectangle((c, y), 1, 1, facecolor=WINDOW_COLOURS[window], edgecolor=WINDOW_EDGES[window],
                                       hatch=WINDOW_HATCHES[window], linewidth=0))
            bold = highlight is not None and highlight[r, c]
            if bold:
                ax.add_patch(plt.Rectangle((c + 0.1, y + 0.1), 0.8, 0.8, fill=False, edgecolor="black", linewidth=2.5))
            ax.text(c + 0.5, y + 0.5, fmt.format(values[r, c]), ha="center", va="center", fontsize=13,
                    fontweight="bold" if bold else "normal",
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none"})
            ax.add_patch(plt.Rectangle((c, y), 1, 1, fill=False, edgecolor="#555555", linewidth=0.6))
            for dr, dc, line in ((-1, 0, ([c, c + 1], [y + 1, y + 1])), (1, 0, ([c, c + 1], [y, y])),
                                 (0, -1, ([c, c], [y, y + 1])), (0, 1, ([c + 1, c + 1], [y, y + 1]))):
                inside = 0 <= r + dr < rows and 0 <= c + dc < cols  # a window's own border, each side once:
                if not inside or (dr + dc < 0 and window_of(r + dr, c + dc) != window):  # inner ones from below
                    ax.plot(*line, color="black", linewidth=3, solid_capstyle="projecting")
    ax.set_xlim(-0.1, cols + 0.1)
    ax.set_ylim(-0.1, rows + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=12)


def _figure(backward: bool = False):
    """Figure 1 (or with ``backward`` Figure 2) as a matplotlib figure, before it is saved."""
    # matplotlib: 0.3 s to import, only to draw the figures; the glue plugins and `check` read this
    # module's texts (the rubric, the model answer) without it
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # drawn with Agg: no window, whatever the environment says

    window_of = lambda r, c: 2 * (r // 2) + c // 2  # noqa: E731
    own = lambda r, c: 2 * r + c  # noqa: E731  an output cell is its window's
    output = X.reshape(2, 2, 2, 2).max(axis=(1, 3))
    if not backward:
        fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.8), dpi=DPI, gridspec_kw={"width_ratios": [4, 2]})
        _grid(axes[0], X, window_of, r"input $x_{ij}$")
        _grid(axes[1], output, own, r"output $f_{kl}$")
        fig.suptitle("Figure 1: 2x2 max pooling, stride 2. Each output $f_{kl}$ is the\n"
                     r"maximum of its receptive field $\Omega(k, l)$ (same colour and pattern).", fontsize=11)
    else:
        is_max = np.zeros_like(X, dtype=bool)
        dx = np.zeros(X.shape)
        for r in range(2):
            for c in range(2):
                window = X[2 * r:2 * r + 2, 2 * c:2 * c + 2]
                i, j = np.unravel_index(np.argmax(window), window.shape)
                is_max[2 * r + i, 2 * c + j] = True
                dx[2 * r + i, 2 * c + j] = D_OUTPUT[r, c]
        fig, axes = plt.subplots(1, 4, figsize=(12, 3.8), dpi=DPI, gridspec_kw={"width_ratios": [4, 2, 2, 4]})
        _grid(axes[0], X, window_of, r"forward: input $x_{ij}$", is_max)
        _grid(axes[1], output, own, r"output $f_{kl}$")
        _grid(axes[2], D_OUTPUT, own, r"backward: $\partial L/\partial f_{kl}$")
        _grid(axes[3], dx, window_of, r"$\partial L/\partial x_{ij}$", is_max, fmt="{:g}")
        fig.suptitle("Figure 2: Figure 1's example, forward and backward. Each output is the maximum of its\n"
                     "window (bold). "
                     "Backward, each window's gradient goes to that maximum; every other input gets 0.",
                     fontsize=11)
    fig.tight_layout()
    return fig


@functools.lru_cache(maxsize=2)  # drawn once per process: matplotlib takes most of a second
def figure_png(backward: bool = False) -> bytes:
    """Figure 1 as PNG bytes: the forward pass (the notebook's), or with ``backward`` Figure 2:
    the same example's forward and backward passes (the feedback's)."""
    import matplotlib.pyplot as plt  # matplotlib: only to draw the figures (see _figure)
    fig = _figure(backward)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()
