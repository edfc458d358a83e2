"""Figure 1 of the notebook: 2x2 max pooling with stride 2, forward and backward.

``figure_png()`` returns the PNG bytes; build_source_notebook.py embeds them in the
notebook as a cell attachment (no file next to the notebook, no run-time cost).
Run directly to write the PNG for a look:  python scripts/make_figure.py out.png
"""

from __future__ import annotations

import io
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

X = np.array([[1, 3, 2, 1],
              [4, 2, 0, 1],
              [5, 1, 7, 8],
              [2, 6, 3, 0]])
D_OUTPUT = np.array([[0.1, 0.2],
                     [0.3, 0.4]])
WINDOW_COLOURS = ["#8ecae6", "#ffb703", "#90be6d", "#f4a6c6"]


def _grid(ax, values, colours, title, highlight=None, fmt="{}"):
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            bold = highlight is not None and highlight[r, c]
            ax.add_patch(plt.Rectangle((c, rows - 1 - r), 1, 1, facecolor=colours[r][c],
                                       edgecolor="black", linewidth=2.5 if bold else 0.8))
            ax.text(c + 0.5, rows - 0.5 - r, fmt.format(values[r, c]), ha="center", va="center",
                    fontsize=13, fontweight="bold" if bold else "normal")
    ax.set_xlim(-0.1, cols + 0.1)
    ax.set_ylim(-0.1, rows + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=12)


def figure_png() -> bytes:
    window_of = lambda r, c: 2 * (r // 2) + c // 2  # noqa: E731
    in_colours = [[WINDOW_COLOURS[window_of(r, c)] for c in range(4)] for r in range(4)]
    out_colours = [[WINDOW_COLOURS[2 * r + c] for c in range(2)] for r in range(2)]
    is_max = np.zeros_like(X, dtype=bool)
    dx = np.zeros(X.shape)
    for r in range(2):
        for c in range(2):
            window = X[2 * r:2 * r + 2, 2 * c:2 * c + 2]
            i, j = np.unravel_index(np.argmax(window), window.shape)
            is_max[2 * r + i, 2 * c + j] = True
            dx[2 * r + i, 2 * c + j] = D_OUTPUT[r, c]
    fig, axes = plt.subplots(1, 4, figsize=(12, 3.8), gridspec_kw={"width_ratios": [4, 2, 2, 4]})
    _grid(axes[0], X, in_colours, r"forward: input $x_{ij}$", is_max)
    _grid(axes[1], X.reshape(2, 2, 2, 2).max(axis=(1, 3)), out_colours, r"output $f_{kl}$")
    _grid(axes[2], D_OUTPUT, out_colours, r"backward: $\partial L/\partial f_{kl}$")
    _grid(axes[3], dx, in_colours, r"$\partial L/\partial x_{ij}$", is_max,
          fmt="{:g}")
    fig.suptitle("Figure 1: 2x2 max pooling, stride 2. Each output is the maximum of its window (bold).\n"
                 "Backward, each window's gradient goes to that maximum; every other input gets 0.",
                 fontsize=11)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


if __name__ == "__main__":
    with open(sys.argv[1] if len(sys.argv) > 1 else "figure1.png", "wb") as out:
        out.write(figure_png())
