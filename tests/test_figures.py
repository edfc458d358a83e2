"""Figure 1 and Figure 2 do not depend on colour (WCAG 1.4.1): rendered in greyscale, every
two neighbouring windows still look different, and each output cell looks like the window
it is the maximum of (the pattern is what ties them, as the colour does).

A window's look is read off the PNG the notebook and the feedback carry, turned grey: a
small square in a corner of each cell (clear of its number and of a maximum's frame), by
its grey level, its contrast and how much it changes along each of four directions (the
hatch's orientation). The control draws the figures with their colours alone and must
fail the same check: grey levels alone do not tell these windows apart.
"""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image

from maxpool_grader.exercise import part_a

DIFFERENT = 15.0  # grey levels (0-255), over the look's six numbers: far above the noise within a window


def _look(patch: np.ndarray) -> np.ndarray:
    p = patch.astype(float)
    return np.array([p.mean(), p.std(), np.abs(np.diff(p, axis=1)).mean(), np.abs(np.diff(p, axis=0)).mean(),
                     np.abs(p[1:, 1:] - p[:-1, :-1]).mean(), np.abs(p[1:, :-1] - p[:-1, 1:]).mean()])


def _looks(fig, grey: np.ndarray) -> list[dict]:
    """For each grid of the figure, {(row, col): the look of that cell}."""
    fig.canvas.draw()
    height = grey.shape[0]
    grids = []
    for axes in fig.axes:
        rows = round(axes.get_ylim()[1] - 0.1)
        found = {}
        for r, c in itertools.product(range(rows), repeat=2):
            y = rows - 1 - r
            (x0, y0), (x1, y1) = axes.transData.transform([(c + .15, y + .15), (c + .35, y + .35)])
            found[r, c] = _look(grey[int(height - y1):int(height - y0), int(x0):int(x1)])
        grids.append(found)
    return grids


def _window(r: int, c: int, size: int) -> int:
    return 2 * (r // 2) + c // 2 if size == 4 else 2 * r + c


def _grey(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


def _closest_neighbours(grids: list[dict]) -> float:
    """The smallest difference between the looks of two cells of neighbouring windows."""
    closest = np.inf
    for grid in grids:
        size = round(len(grid) ** 0.5)
        for (r, c), look in grid.items():
            for other in ((r + 1, c), (r, c + 1)):
                if other in grid and _window(r, c, size) != _window(*other, size):
                    closest = min(closest, float(np.linalg.norm(look - grid[other])))
    return closest


@pytest.mark.parametrize("backward", [False, True], ids=["figure1", "figure2"])
def test_in_greyscale_neighbouring_windows_still_differ(backward, tmp_path):
    png = part_a.figure_png(backward)
    grey = _grey(png)
    Image.fromarray(grey).save(tmp_path / "greyscale.png")
    print(f"the figure in greyscale: {tmp_path / 'greyscale.png'}")
    grids = _looks(part_a._figure(backward), grey)
    assert _closest_neighbours(grids) > DIFFERENT
    # an output cell looks like its window: closer to it than to any other window
    windows = [[look for (r, c), look in grids[0].items() if _window(r, c, 4) == w] for w in range(4)]
    for (row, col), look in grids[1].items():
        distances = [min(np.linalg.norm(look - other) for other in cells) for cells in windows]
        assert int(np.argmin(distances)) == 2 * row + col, distances


def test_with_colours_alone_the_check_fails(monkeypatch):
    """The control: the same figures without hatches, told apart by colour only."""
    monkeypatch.setattr(part_a, "WINDOW_HATCHES", [""] * 4)
    for backward in (False, True):
        fig = part_a._figure(backward)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=part_a.DPI)
        assert _closest_neighbours(_looks(fig, _grey(buffer.getvalue()))) < DIFFERENT


def test_the_figures_keep_their_windows_framed_and_maxima_bold():
    """Beside the patterns: a thick border around each window, a frame and bold type on each
    maximum of Figure 2 (the arg-max the backward pass sends the gradient to)."""
    fig = part_a._figure(backward=True)
    thick = [line for line in fig.axes[0].lines if line.get_linewidth() >= 3]
    assert len(thick) == 4 * 4 + 2 * 4  # the grid's outside (4 sides x 4 cells), the two lines between windows
    bold = sorted(text.get_text() for text in fig.axes[0].texts if text.get_fontweight() == "bold")
    assert bold == ["2", "4", "6", "8"]
