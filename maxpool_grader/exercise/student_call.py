"""Calling the student's function so that only its results can cost points.

nbgrader scores a test cell 0 when anything reaches stderr. A correct solution that
prints to stderr, or whose NumPy code raises a RuntimeWarning, must not lose points,
so every call into student code goes through ``call_student``: it captures Python-
and file-descriptor-level stdout/stderr and warnings, and re-shows what it captured on
stdout (students still see their debugging prints, nbgrader does not count them).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import traceback
import warnings

import numpy as np

from ..names import PACKAGE_DIR

_PACKAGE_DIR = str(PACKAGE_DIR)  # the grader, all of it
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))


class CheckFailed(AssertionError):
    """A hidden or visible check failed; the message is written for the student.

    IPython shows an exception through ``_render_traceback_`` when it has one: a failed
    check shows its message only, never a traceback into the grader's code (which would
    reveal the hidden test in the notebook and in nbgrader's feedback).
    """

    def _render_traceback_(self) -> list[str]:
        return str(self).split("\n")


class StudentError(CheckFailed):
    """The student's function raised; ``exception`` is what it raised."""

    def __init__(self, message: str, exception: BaseException):
        super().__init__(message)
        self.exception = exception


def where_in_student_code(exception: BaseException) -> str:
    """' (line N of your code: <source>)' for the innermost frame outside NumPy and the grader."""
    frames = traceback.extract_tb(exception.__traceback__)
    theirs = [frame for frame in frames
              if not frame.filename.startswith((_PACKAGE_DIR, _NUMPY_DIR)) and frame.line]
    if not theirs:
        return ""
    return line_of_code(theirs[-1].lineno, theirs[-1].line)


def line_of_code(number: int, text: str) -> str:
    return f"\n  at line {number} of your code: {text.strip()}"


@contextlib.contextmanager
def _fd_captured(fd: int):
    """Point file descriptor ``fd`` at a temporary file for the duration; yield the file."""
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            saved = os.dup(fd)
        except OSError:  # no such descriptor: nothing to capture
            yield sink
            return
        try:
            os.dup2(sink.fileno(), fd)
            yield sink
        finally:
            os.dup2(saved, fd)
            os.close(saved)


@contextlib.contextmanager
def quiet_student_code():
    """Capture everything student code writes or warns; yield a list that receives it."""
    captured: list[str] = []
    stdout, stderr = io.StringIO(), io.StringIO()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.ExitStack() as stack:
        fd_err = stack.enter_context(_fd_captured(2))
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(np.errstate(all="warn"))
        try:
            yield captured
        finally:
            fd_err.seek(0)
            fd_text = fd_err.read().decode(errors="replace")
            captured.extend(text for text in (stdout.getvalue(), stderr.getvalue(), fd_text) if text)
            captured.extend(f"{w.category.__name__}: {w.message}\n" for w in caught)


def show_captured(captured: list[str], limit: int = 2000) -> None:
    """Re-show captured output on stdout (never stderr), shortened to ``limit`` characters."""
    text = "".join(captured)
    if not text:
        return
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters not shown)\n"
    print("Output of your code during this test (it does not affect the grade):")
    print(text.rstrip())


def call_student(function, d_output, x, pool_size, stride=None, *,
                 output: list[str] | None = None):
    """Call ``function(d_output, x, pool_size[, stride])`` quietly; return a plain ndarray.

    stride is passed only when it is not None, so a function written without the
    optional argument is still graded on its results. What the function prints or
    warns goes to ``output`` when given, else it is shown on stdout at once.
    Raises CheckFailed, with a message for the student, when the function is not
    implemented, raises, or returns something that is not a numeric array.
    """
    if not callable(function):
        raise CheckFailed(f"max_pool_backward is not a function (it is {type(function).__name__}).")
    error = None
    # a function that runs in another process (verdict/remote.py) prints nothing here to capture
    elsewhere = getattr(type(function), "runs_elsewhere", False)
    with contextlib.nullcontext([]) if elsewhere else quiet_student_code() as captured:
        try:
            args = (d_output, x, pool_size) if stride is None else (d_output, x, pool_size, stride)
            result = function(*args)
        except CheckFailed as failure:  # already explained (a call run in another process)
            error = failure
        except Exception as exc:  # student code may raise anything; report it, do not crash
            error = StudentError(raised_message(exc, where_in_student_code(exc)), exc)
    if output is None:
        show_captured(captured)
    else:
        output.extend(captured)
    if error:
        raise error
    if type(result) is not np.ndarray:
        raise CheckFailed(not_an_array_message(shortened(type(result).__name__, 100)))
    if result.dtype.kind not in "biuf":
        raise CheckFailed(not_numbers_message(shortened(str(result.dtype), 100)))
    return np.array(result, copy=True)


def raised_message(exception: BaseException, where: str) -> str:
    """What a student reads when their function raised ``exception`` (``where``: see
    ``where_in_student_code``)."""
    if isinstance(exception, NotImplementedError) and not str(exception).strip() and not where:
        return "max_pool_backward raised NotImplementedError."
    message = f"max_pool_backward raised {shortened(type(exception).__name__, 100)}: {shortened(str(exception))}{where}"
    if type(exception) is NameError:
        message += ("\nThe notebook is graded in a fresh kernel that runs its cells from the top: a name "
                    "defined only in a cell you deleted, renamed or ran by hand does not exist there. "
                    "Define it in the solution cell, or in a cell of your own above the tests.")
    return message


MESSAGE_SHOWN = 600  # characters of an exception's message a report shows (a student's can be any length)


def shortened(text: str, limit: int = MESSAGE_SHOWN) -> str:
    """``text`` up to ``limit`` characters, and how many more were left out."""
    return text if len(text) <= limit else f"{text[:limit]}\u2026 ({len(text) - limit} more characters not shown)"


def not_an_array_message(type_name: str) -> str:
    return f"max_pool_backward must return a NumPy array, but it returned {type_name}."


def not_numbers_message(dtype: str) -> str:
    return f"max_pool_backward returned an array of dtype {dtype}; dx must hold numbers."
