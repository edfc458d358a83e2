"""The attack corpus and the fault corpus: submissions built from the release notebook.

Each entry says what the submission does, how to build its folder in ``submitted/``,
the autograded score it must get (attacks: no more than a solution returning zeros) and
a phrase its feedback must show (the reason a student reads).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from make_sample_class import LOOP_CORRECT  # noqa: E402

from maxpool_grader.exercise.checks import HIDDEN_CHECKS  # noqa: E402
from maxpool_grader.names import ASSIGNMENT, grade_id  # noqa: E402
from maxpool_grader.verdict.process import Limits  # noqa: E402

FULL, ZERO = 15, 0
SIGNATURE = "def max_pool_backward(d_output, x, pool_size, stride=None):\n"
ZEROS = SIGNATURE + "    return np.zeros(x.shape)\n"
# Files an attack tries to change; the test checks they are unchanged afterwards.
# Paths are relative to the submission's working directory, autograded/<student>/<assignment>.
COURSE_FROM_KERNEL = "../../.."
PASSED_LAST = f"Passed: {list(HIDDEN_CHECKS.values())[-1].title}"  # the last test: every test ran


@dataclass(frozen=True)
class Submission:
    name: str
    what: str
    build: Callable[[Path, nbformat.NotebookNode], None]  # (folder, release notebook)
    score: float
    reason: str  # shown in the feedback (whitespace-insensitive)


_grade_id = grade_id


def notebook_with(release: nbformat.NotebookNode, solution: str) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in nb.cells:
        if _grade_id(cell) == ASSIGNMENT:
            cell.source = solution.strip("\n")
    return nb


def solution(code: str) -> Callable[[Path, nbformat.NotebookNode], None]:
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
    return build


def edited(change: Callable[[nbformat.NotebookNode], None], code: str = LOOP_CORRECT):
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nb = notebook_with(release, code)
        change(nb)
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
    return build


# ------------------------------------------------------------------ attacks
PATCH_ASSERTS = """
import numpy
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.testing.assert_array_equal = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
numpy.array_equal = lambda *args, **kwargs: True
numpy.isclose = lambda a, b, *args, **kwargs: numpy.ones(numpy.shape(a), dtype=bool)
""" + ZEROS

AGREEABLE_ARRAY = """
class Agreeable(np.ndarray):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.ones(np.broadcast(*[np.asarray(i) for i in inputs if hasattr(i, 'shape')]).shape, dtype=bool) \\
            if ufunc in (np.equal, np.isclose) else np.zeros(self.shape, dtype=bool) if ufunc is np.not_equal \\
            else super().__array_ufunc__(ufunc, method, *[np.asarray(i) for i in inputs], **kwargs)


""" + SIGNATURE + "    return np.zeros(x.shape).view(Agreeable)\n"

FRAME_READER = """
import inspect


""" + SIGNATURE + """    for frame_info in inspect.stack():
        for scope in (frame_info.frame.f_locals, frame_info.frame.f_globals):
            for name in ("expected", "expected_dx", "reference"):
                value = scope.get(name)
                if isinstance(value, np.ndarray) and value.shape == np.shape(x):
                    return value.astype(float)
    return np.zeros(x.shape)
"""

BORROW_MODULES = """
import gc
import sys


""" + SIGNATURE + """    for name, module in list(sys.modules.items()):
        if name.startswith("maxpool" + "_grader") and hasattr(module, "max_pool_backward"):
            return module.max_pool_backward(d_output, x, pool_size, stride)
    for thing in gc.get_objects():
        if callable(thing) and getattr(thing, "__name__", "") == "max_pool_backward" \\
                and getattr(thing, "__module__", "") != "__main__":
            return thing(d_output, x, pool_size, stride)
    return np.zeros(x.shape)
"""

HOOKS = """
import builtins
import sys

ip = get_ipython()
ip.showtraceback = lambda *args, **kwargs: None
ip.set_custom_exc((BaseException,), lambda *args, **kwargs: None)
sys.excepthook = lambda *args: None
builtins.AssertionError = type("AssertionError", (Exception,), {})
""" + ZEROS

WRITE_FILES = """
import glob
import os
import sqlite3

COURSE = os.path.abspath("%s")
for target in [os.path.join(COURSE, "nbgrader_config.py")] \\
        + glob.glob(os.path.join(COURSE, "submitted", "*", "*", "*.ipynb")) \\
        + glob.glob(os.path.join(COURSE, "autograded", "*", "*", "*.ipynb")):
    try:
        with open(target, "a") as handle:
            handle.write("# tampered")
    except OSError as problem:
        print("could not write", target, problem)
try:
    import importlib
    reference = importlib.import_module("maxpool" + "_grader.exercise.reference")
    with open(reference.__file__, "a") as handle:
        handle.write("\\nmax_pool_backward = lambda d_output, x, *args: x * 0\\n")
except Exception as problem:
    print("could not write the grader:", problem)
try:
    db = sqlite3.connect(os.path.join(COURSE, "gradebook.db"))
    db.execute("UPDATE grade SET manual_score = 0")
    db.commit()
except Exception as problem:
    print("could not write the gradebook:", problem)
""" % COURSE_FROM_KERNEL + ZEROS

def beats_then_detaches(name: str, loop: str) -> str:
    """The end of a loop body of ``loop`` (at two indents) that writes a heartbeat file in the
    course and in /tmp every quarter second, then the code that starts ``loop`` as a daemon
    (forked twice, in a session of its own) and goes on."""
    return f"""        for path in (os.path.join(COURSE, "heartbeat_{name}"), "/tmp/heartbeat_{name}"):
            try:
                with open(path, "w") as handle:
                    handle.write(str(time.time()))
            except OSError:
                pass
        time.sleep(0.25)


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {loop}()
    os._exit(0)
"""


DETACHED_REWRITER = """
import os
import sqlite3
import time

COURSE = os.path.abspath("%s")


def rewrite_forever():
    for _ in range(240):
        try:
            db = sqlite3.connect(os.path.join(COURSE, "gradebook.db"), timeout=1)
            db.execute("UPDATE grade SET manual_score = 100 WHERE notebook_id IN (SELECT id FROM "
                       "submitted_notebook WHERE assignment_id IN (SELECT id FROM submitted_assignment "
                       "WHERE student_id = 'attack_detached_rewriter'))")
            db.commit()
            db.close()
        except Exception:
            pass
""" % COURSE_FROM_KERNEL + beats_then_detaches("detached_rewriter", "rewrite_forever") + ZEROS

# Right on its first call only, so that its report starts its cells again in fresh verdict
# processes (verdict/evidence.py: FreshStarts): each start runs the solution cell again, and each
# leaves a daemon behind that tries the gradebook and the course, as DETACHED_REWRITER's does.
FRESH_START_DAEMONS = """
import os
import time

import numpy as np

COURSE = os.path.abspath("%s")


def _haunt():
    for _ in range(240):
""" % COURSE_FROM_KERNEL + beats_then_detaches("fresh_start", "_haunt") + """
_calls = []


""" + LOOP_CORRECT.replace("def max_pool_backward(", "def _right(", 1) + """


def max_pool_backward(d_output, x, pool_size, stride=None):
    _calls.append(1)
    if len(_calls) > 1:
        return np.zeros(x.shape)
    return _right(d_output, x, pool_size, stride)
"""

# What an attack that returns zeros is told: the same as a function not written yet (exercise/explain.py)
RETURNS_ZEROS = "max_pool_backward is not implemented yet (it returns 0.0 at every position of dx"
ATTACKS = [
    Submission("attack_patched_asserts", "patches NumPy's asserts and comparisons, returns zeros",
               solution(PATCH_ASSERTS), ZERO, RETURNS_ZEROS),
    Submission("attack_agreeable_array", "returns an ndarray subclass whose == always agrees",
               solution(AGREEABLE_ARRAY), ZERO, "must return a NumPy array, but it returned Agreeable"),
    Submission("attack_frame_reader", "reads the expected arrays from the caller's frames",
               solution(FRAME_READER), ZERO, RETURNS_ZEROS),
    Submission("attack_borrowed_reference", "borrows the grader's max_pool_backward via sys.modules / gc",
               solution(BORROW_MODULES), ZERO, RETURNS_ZEROS),
    Submission("attack_patched_hooks", "patches IPython's traceback hooks, excepthook and builtins",
               solution(HOOKS), ZERO, RETURNS_ZEROS),
    Submission("attack_writes_files", "writes to the gradebook, the config, other students' and the grader's files",
               solution(WRITE_FILES), ZERO, RETURNS_ZEROS),
    Submission("attack_detached_rewriter", "leaves a daemon that rewrites its grades in gradebook.db",
               solution(DETACHED_REWRITER), ZERO, RETURNS_ZEROS),
    Submission("attack_fresh_start_daemons", "right on a first call only, and leaves a daemon at every start of "
               "its cells (the report's fresh starts too)", solution(FRESH_START_DAEMONS), ZERO,
               "it keeps something from one call to the next"),
    Submission("attack_imports_torch", "imports torch to let autograd do the work",
               solution("import torch\n\n\n" + SIGNATURE + "    return np.zeros(x.shape)\n"), ZERO,
               "your solution imports torch (PyTorch)"),
    Submission("attack_imports_grader", "imports the grader's reference under another name",
               solution("from maxpool_grader.exercise.reference import max_pool_backward as reference\n\n\n"
                        + SIGNATURE + "    return reference(d_output, x, pool_size, stride)\n"),
               ZERO, "imports maxpool_grader (the grader's own package)"),
]


# ------------------------------------------------------------------ faults
def _drop_cells(*grade_ids: str):
    def change(nb):
        nb.cells = [cell for cell in nb.cells if _grade_id(cell) not in grade_ids]
    return change


def _edit_tests(nb):
    for cell in nb.cells:
        if _grade_id(cell) in ("visible_2x2_stride_2", "hidden_overlapping_windows"):
            cell.source = "print('all good')"


def _solution_last(nb):
    solution_cell = next(cell for cell in nb.cells if _grade_id(cell) == ASSIGNMENT)
    nb.cells = [cell for cell in nb.cells if cell is not solution_cell] + [solution_cell]


def _invalid_json(folder: Path, release) -> None:
    text = nbformat.writes(notebook_with(release, LOOP_CORRECT))
    (folder / f"{ASSIGNMENT}.ipynb").write_text(text[: len(text) // 2])


def _missing_notebook(folder: Path, release) -> None:
    (folder / "max_pool_backward.py").write_text(LOOP_CORRECT)


def _extra_notebook(folder: Path, release) -> None:
    solution(LOOP_CORRECT)(folder, release)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), folder / "scratch.ipynb")


def _renamed_notebook(folder: Path, release) -> None:
    nbformat.write(notebook_with(release, LOOP_CORRECT), folder / f"{ASSIGNMENT} (1).ipynb")


PRINTS = """
import sys
for line in range(100_000):
    print("line", line)


""" + LOOP_CORRECT.replace("    x = np.asarray(x)\n", "    x = np.asarray(x)\n    print('called with', x.shape)\n", 1)

STDERR_AND_WARNINGS = """
import os
import sys
import warnings


""" + LOOP_CORRECT.replace("    x = np.asarray(x)\n", """    x = np.asarray(x)
    os.write(2, b"fd-level stderr\\n")
    print("sys.__stderr__", file=sys.__stderr__)
    print("sys.stderr", file=sys.stderr)
    warnings.warn("a UserWarning")
    np.float64(1.0) / np.float64(0.0)
""", 1)

FAULTS = [
    Submission("fault_forum_verbatim", "the forum answer verbatim: IndentationError and SyntaxError",
               solution((Path(__file__).resolve().parent.parent / "scripts" / "sample_class"
                         / "forum_verbatim.txt").read_text()), ZERO, "does not compile"),
    Submission("fault_renamed_function", "the function renamed (NameError)",
               solution(LOOP_CORRECT.replace("def max_pool_backward", "def maxpool_backward")), ZERO,
               "your code defines maxpool_backward"),
    Submission("fault_infinite_loop", "an endless loop in the function",
               solution(SIGNATURE + "    while True:\n        pass\n"), ZERO,
               f"did not return within {Limits.check_seconds:g} s"),  # the course's default
    Submission("fault_os_exit", "os._exit in the function kills the kernel",
               solution("import os\n\n\n" + SIGNATURE + "    os._exit(1)\n"), ZERO,
               "ended the Python process with exit status 1"),
    Submission("fault_segfault", "a segfault through ctypes",
               solution("import ctypes\n\n\n" + SIGNATURE + "    ctypes.string_at(0)\n"), ZERO,
               "segmentation fault"),
    Submission("fault_memory_bomb", "allocates until memory runs out",
               solution(SIGNATURE + "    hoard = []\n    while True:\n        hoard.append(np.ones(10**7))\n"),
               ZERO, "MemoryError"),
    Submission("fault_prints_100000_lines", "a correct solution printing 100 000 lines",
               solution(PRINTS), FULL, "line 99"),
    Submission("fault_stderr_and_warnings", "a correct solution writing to stderr and warning",
               solution(STDERR_AND_WARNINGS), FULL, "a UserWarning"),
    Submission("fault_deleted_test_cells", "a correct solution with test cells deleted",
               edited(_drop_cells("visible_forum_example", "hidden_gradient_check", "hidden_ceil_border_windows")),
               FULL, "Passed: Numerical gradient check"),
    Submission("fault_edited_test_cells", "a correct solution with test cells edited",
               edited(_edit_tests), FULL, "Passed: Overlapping windows (stride smaller than the pool)"),
    Submission("fault_invalid_json", "a notebook file cut in half (not valid JSON)",
               _invalid_json, ZERO, "could not be read"),
    Submission("fault_missing_notebook", "no notebook, only a .py file", _missing_notebook, ZERO,
               "No notebook named max_pool_backward.ipynb was submitted"),
    Submission("fault_extra_notebook", "a correct notebook and an extra scratch notebook",
               _extra_notebook, FULL, "Passed: Border windows of a ceil-mode grid"),
    Submission("fault_renamed_notebook", "a correct notebook saved as 'max_pool_backward (1).ipynb'",
               _renamed_notebook, FULL, "was graded in its place"),
    Submission("fault_reordered_cells", "a correct solution cell moved below the tests",
               edited(_solution_last), FULL, "put back in the assignment's order"),
    Submission("fault_empty_solution", "the solution cell emptied",
               solution(""), ZERO, "seems to be empty"),
]

# ------------------------------------------------------------------ layouts: correct, or wrong, on merit
# A student may add cells: the grader runs them as a kernel does (in order, up to the tests).
TO_PAIR = """import numpy as np


def to_pair(value):
    return (value, value) if np.isscalar(value) else tuple(value)
"""

SPLIT_SOLUTION = SIGNATURE + """    ph, pw = to_pair(pool_size)
    sh, sw = (ph, pw) if stride is None else to_pair(stride)
    return route(np.asarray(d_output), np.asarray(x), ph, pw, sh, sw)
"""

ROUTE = """def route(d_output, x, ph, pw, sh, sw):
    dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else float)
    for lead in np.ndindex(x.shape[:-2]):
        for i in range(d_output.shape[-2]):
            for j in range(d_output.shape[-1]):
                window = x[lead][i * sh:i * sh + ph, j * sw:j * sw + pw]
                r, c = np.unravel_index(np.argmax(window), window.shape)
                dx[lead + (i * sh + r, j * sw + c)] += d_output[lead + (i, j)]
    return dx
"""

PRINTS_EVERY_CALL = LOOP_CORRECT.replace("    return dx\n", "    print('dx =', dx)\n    return dx\n")

FANCY_INDEX = SIGNATURE + """    ph, pw = (pool_size, pool_size) if np.isscalar(pool_size) else pool_size
    sh, sw = (ph, pw) if stride is None else (stride, stride) if np.isscalar(stride) else stride
    dx = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind == "f" else float)
    out_h, out_w = d_output.shape[-2:]
    for lead in np.ndindex(x.shape[:-2]):
        rows = np.zeros((out_h, out_w), dtype=int)
        cols = np.zeros((out_h, out_w), dtype=int)
        for i in range(out_h):
            for j in range(out_w):
                window = x[lead][i * sh:i * sh + ph, j * sw:j * sw + pw]
                r, c = np.unravel_index(np.argmax(window), window.shape)
                rows[i, j], cols[i, j] = i * sh + r, j * sw + c
        dx[lead][rows, cols] += d_output[lead]
    return dx
"""


def with_cells(solution_code: str, above: tuple[str, ...] = (), below: tuple[str, ...] = ()):
    """The release with ``solution_code`` and new cells (as Jupyter makes them: no nbgrader
    metadata) right above and below the solution cell."""
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nb = notebook_with(release, solution_code)
        at = next(index for index, cell in enumerate(nb.cells) if _grade_id(cell) == ASSIGNMENT)
        new = lambda sources: [nbformat.v4.new_code_cell(source) for source in sources]  # noqa: E731
        nb.cells = nb.cells[:at] + new(above) + [nb.cells[at]] + new(below) + nb.cells[at + 1:]
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
    return build


LAYOUTS = [
    Submission("layout_helpers_below", "the solution's helpers in a cell below the solution cell",
               with_cells(SPLIT_SOLUTION, below=(TO_PAIR + "\n\n" + ROUTE,)), FULL, PASSED_LAST),
    Submission("layout_helpers_above", "imports and a helper in a cell above the solution cell",
               with_cells(SPLIT_SOLUTION.replace("return route(", "return route_here(") + "\n\n"
                          + ROUTE.replace("def route(", "def route_here("), above=(TO_PAIR,)), FULL, PASSED_LAST),
    Submission("layout_two_helper_cells", "two helper cells below, and a scratch cell that raises",
               with_cells(SPLIT_SOLUTION, below=("max_pool_backward(np.ones((1, 1)), np.ones((2, 2)), 2)",
                                                 TO_PAIR, ROUTE)), FULL, PASSED_LAST),
    Submission("layout_prints_every_call", "a correct solution cell that prints dx on every call",
               solution(PRINTS_EVERY_CALL), FULL, PASSED_LAST),
    Submission("layout_helper_cell_deleted", "correct only with a helper from a cell it deleted",
               solution(SPLIT_SOLUTION + "\n\n" + ROUTE), ZERO, "name 'to_pair' is not defined"),
    Submission("layout_fancy_index", "accumulates with dx[rows, cols] += d (repeated indices add once)",
               solution(FANCY_INDEX), 13, "Likely mistake: `dx[rows, cols] += d` with repeated indices adds only once"),
]

CORPUS = {submission.name: submission for submission in ATTACKS + FAULTS + LAYOUTS}


def build(course: Path, release_notebook: Path, names=None) -> None:
    release = nbformat.read(release_notebook, as_version=4)
    for name in names or CORPUS:
        folder = course / "submitted" / name / ASSIGNMENT
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        CORPUS[name].build(folder, release)
