"""Write the sample class: submitted/<student>/max_pool_backward/max_pool_backward.ipynb.

Each student is the release notebook with its solution cell (and Part A answer) filled in.
Student ids say what the submission is. Beside each notebook lie the two files nbgrader's
own ``submit`` leaves in a collected submission, ``timestamp.txt`` and
``submission_secret.txt`` (fixed here, so the class is the same on every machine):
``nbgrader release_feedback`` reads both. ``maxpool-grader check --fix`` runs it after it
regenerates the release (and grades the class again); on its own:

    python scripts/make_sample_class.py
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat

from maxpool_grader.names import ASSIGNMENT, PART_A_CELL, grade_id

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "sample_class"
RELEASE = ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"

# The last answer of the course forum's thread on this exercise, as printed: an
# indentation slip in the docstring and an assignment split after its "=".
FORUM_VERBATIM = (HERE / "forum_verbatim.txt").read_text()


def forum_made_to_compile(code: str) -> str:
    """The two smallest edits that make the forum answer compile, and nothing else."""
    code = re.sub(r"^   (?=\S)", "    ", code, flags=re.M)  # align the docstring's indentation
    return re.sub(r"=\n\s+d_output\[i, j\]", "= d_output[i, j]", code)  # join the split line


LOOP_CORRECT = '''
def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    ph, pw = (pool_size, pool_size) if isinstance(pool_size, int) else pool_size
    if stride is None:
        sh, sw = ph, pw
    else:
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else float)
    flat_x = x.reshape(-1, *x.shape[-2:])
    flat_dx = dx.reshape(-1, *x.shape[-2:])
    flat_d = np.asarray(d_output).reshape(-1, *d_output.shape[-2:])
    for n in range(flat_x.shape[0]):
        for i in range(flat_d.shape[1]):
            for j in range(flat_d.shape[2]):
                window = flat_x[n, i * sh:i * sh + ph, j * sw:j * sw + pw]
                k = np.argmax(window)
                r, c = divmod(k, window.shape[1])
                flat_dx[n, i * sh + r, j * sw + c] += flat_d[n, i, j]
    return dx
'''

VECTORIZED_CORRECT = '''
from numpy.lib.stride_tricks import sliding_window_view


def max_pool_backward(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw = np.broadcast_to(pool_size, 2)
    sh, sw = (ph, pw) if stride is None else np.broadcast_to(stride, 2)
    H, W = x.shape[-2:]
    Ho, Wo = d_output.shape[-2:]
    # pad the clipped border windows with -inf so they never win
    pad_h, pad_w = max(0, (Ho - 1) * sh + ph - H), max(0, (Wo - 1) * sw + pw - W)
    padded = np.pad(x.astype(float), [(0, 0)] * (x.ndim - 2) + [(0, pad_h), (0, pad_w)],
                    constant_values=-np.inf)
    windows = sliding_window_view(padded, (ph, pw), axis=(-2, -1))[..., ::sh, ::sw, :, :][..., :Ho, :Wo, :, :]
    k = windows.reshape(*windows.shape[:-2], -1).argmax(axis=-1)  # first maximum
    rows = np.arange(Ho)[:, None] * sh + k // pw
    cols = np.arange(Wo)[None, :] * sw + k % pw
    planes = int(np.prod(x.shape[:-2]))
    dx = np.zeros((planes, H * W), dtype=x.dtype if x.dtype.kind == "f" else float)
    index = (np.arange(planes)[:, None], (rows * W + cols).reshape(planes, -1))
    np.add.at(dx, index, d_output.reshape(planes, -1))
    return dx.reshape(x.shape)
'''

TIES_ALL_MAXIMA = '''
def max_pool_backward(d_output, x, pool_size, stride=None):
    x = np.asarray(x)
    ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    sh, sw = (ph, pw) if stride is None else ((stride, stride) if np.isscalar(stride) else stride)
    dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else float)
    for i in range(d_output.shape[-2]):
        for j in range(d_output.shape[-1]):
            window = x[..., i * sh:i * sh + ph, j * sw:j * sw + pw]
            mask = window == window.max(axis=(-2, -1), keepdims=True)  # every maximum
            dx[..., i * sh:i * sh + ph, j * sw:j * sw + pw] += mask * d_output[..., i, j, None, None]
    return dx
'''

TIES_SPLIT = TIES_ALL_MAXIMA.replace(
    "mask * d_output[..., i, j, None, None]",
    "mask / mask.sum(axis=(-2, -1), keepdims=True) * d_output[..., i, j, None, None]",
).replace("# every maximum", "# split equally between tied maxima")

NOISY_CORRECT = """
import sys


def max_pool_backward(d_output, x, pool_size, stride=None):
    print("debug: entering max_pool_backward", file=sys.stderr)
    np.log(np.array([-1.0]))  # a RuntimeWarning: invalid value encountered in log
""" + LOOP_CORRECT.split("def max_pool_backward(d_output, x, pool_size, stride=None):", 1)[1]

PART_A = ("The gradient of $f_{kl}$ is 1 for the input that is the maximum of the window "
          "$\\Omega(k, l)$ and 0 for every other input.")

STUDENTS = {
    "loop_correct": LOOP_CORRECT,
    "vectorized_correct": VECTORIZED_CORRECT,
    "forum_verbatim": FORUM_VERBATIM,
    "forum_compiles": forum_made_to_compile(FORUM_VERBATIM),
    "ties_all_maxima": TIES_ALL_MAXIMA,
    "ties_split": TIES_SPLIT,
    "noisy_correct": NOISY_CORRECT,
}


def fill(notebook: nbformat.NotebookNode, solution: str) -> nbformat.NotebookNode:
    for cell in notebook.cells:
        if grade_id(cell) == ASSIGNMENT:
            cell.source = solution.strip("\n")
        elif grade_id(cell) == PART_A_CELL:
            cell.source = PART_A
    return notebook


SUBMITTED_AT = "2026-11-20 09:00:00.000000 UTC"  # nbgrader's timestamp format


def submission_files(student: str) -> dict[str, str]:
    """What nbgrader submit writes beside the notebook: when, and the secret that names the
    student's released feedback (a fixed one here: 128 hex digits, as submit's are)."""
    secret = hashlib.sha512(f"sample class {student}".encode()).hexdigest()
    return {"timestamp.txt": SUBMITTED_AT, "submission_secret.txt": secret}


def main() -> None:
    for student, solution in STUDENTS.items():
        target = ROOT / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill(nbformat.read(RELEASE, as_version=4), solution), target)
        for name, text in submission_files(student).items():
            (target.parent / name).write_text(text)
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
