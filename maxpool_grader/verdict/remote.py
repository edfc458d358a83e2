"""The student's code, seen from the grader: the notebook's cells the verdict process runs
(``Cell``, read as IPython reads them: ``as_python``), and their ``max_pool_backward`` called
across the pipe (``RemoteFunction``), with the same errors and messages as a call in the
notebook. What the process says is read through replies.py; what the function did to its
inputs the grader reads for itself from the memory it handed them in."""

from __future__ import annotations

import builtins
import functools
import inspect
from dataclasses import dataclass

import numpy as np

# imported here, not in as_python: verdicts run in a thread, and an import racing the
# main thread's imports can fail with KeyError (seen: KeyError 'IPython')
from IPython.core.inputtransformer2 import TransformerManager

from ..exercise.student_call import (
    CheckFailed,
    StudentError,
    line_of_code,
    not_an_array_message,
    not_numbers_message,
    raised_message,
)
from ..names import FUNCTION
from . import replies, untrusted
from .process import SolutionProcess


@dataclass(frozen=True)
class Cell:
    """A code cell the verdict process runs, in notebook order: a cell the assignment
    provides (its released source), the solution cell, or a cell the student added."""

    source: str
    kind: str = "student"  # "provided", "solution" or "student"

    def describe(self, capital: bool = False) -> str:
        """The cell, named for the student (``capital``: at the start of a sentence)."""
        if self.kind == "solution":
            text = "your solution cell"
        elif self.kind == "provided":
            text = "a cell the assignment provides"
        else:
            first = next((line.strip() for line in self.source.split("\n") if line.strip()), "")
            text = f"your cell that starts with `{first[:60]}{'...' if len(first) > 60 else ''}`"
        return text[0].upper() + text[1:] if capital else text


@functools.lru_cache(maxsize=256)  # the assignment's own cells are the same in every notebook: read once
def as_python(source: str) -> str:
    """The cell as the kernel runs it: IPython syntax (``%magic``, ``!command``) turned into
    ``get_ipython()`` calls, line for line. Source that IPython cannot transform is kept."""
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001  a syntax problem: compile_problems explains it
        return source


def notebook_cells(solution: str, helpers: str = "") -> list[Cell]:
    """The cells of a notebook whose only code is the provided helpers and the solution."""
    return [Cell(helpers, "provided"), Cell(solution, "solution")]


class _Shown:
    """A default value shown as the student wrote it (its repr, from the other process)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(parameters) -> inspect.Signature | None:
    try:
        return inspect.Signature([
            inspect.Parameter(name, inspect._ParameterKind(kind),
                              default=inspect.Parameter.empty if default is None else _Shown(default))
            for name, kind, default in parameters])
    except (TypeError, ValueError):
        return None


def _rebuilt(error: dict) -> BaseException:
    """An exception of the same type (builtin types only) and message as the student's,
    so the bug catalogue can recognise it."""
    name, message = str(error.get("type", "Exception")), str(error.get("message", ""))
    kind = getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        kind = type(name, (Exception,), {})
    try:
        return kind(message)
    except Exception:  # a builtin exception with a different constructor
        return type(name, (Exception,), {})(message)


class RemoteFunction:
    """Calls the student's ``max_pool_backward`` in the untrusted process, as
    ``call_student`` would call it in the notebook: the same errors, and changes the
    function makes to its inputs are made to the arrays passed here, as the grader reads
    them from the shared memory after the call (never as the process reports them)."""

    runs_elsewhere = True  # call_student has nothing of its output to capture in this process

    def __init__(self, process: SolutionProcess, parameters, cells: list[Cell]):
        self.process, self.cells = process, cells
        signature = _signature(parameters) if parameters is not None else None
        if signature is not None:
            self.__signature__ = signature
        self.__name__ = FUNCTION

    def __call__(self, d_output, x, pool_size, stride=None):
        given = (np.asarray(d_output), np.asarray(x))
        layout = self.process.inputs.write(given)
        most = replies.most_dx_bytes(given[1].size)
        header = {"op": "call", "pool_size": untrusted.encode_size(pool_size),
                  "stride": untrusted.encode_size(stride), "inputs": layout, "most": most}
        reply, blobs = self.process.request(header, cells=len(self.cells), most_bytes=most)
        kind, value = replies.call_reply(reply, blobs, len(self.cells))
        left = replies.inputs_left(reply, given)
        for before, after in zip((d_output, x), self.process.inputs.read(layout)):
            if isinstance(before, np.ndarray) and before.shape == after.shape and before.flags.writeable:
                np.copyto(before, after, casting="unsafe")
        for before, (shape, dtype) in zip((d_output, x), left or ()):
            _leave(before, shape, dtype)
        if kind == "raised":
            exception = _rebuilt(value)
            raise StudentError(raised_message(exception, _where(value, self.cells)), exception)
        if kind == "not_array":
            raise CheckFailed(not_an_array_message(value))
        if kind == "too_big":
            raise CheckFailed(f"dx has shape {value}, but it must have x's shape {np.shape(x)}.")
        if kind == "bad_dtype":
            raise CheckFailed(not_numbers_message(value))
        try:
            return untrusted.array_from_bytes(value)
        except ValueError as problem:
            raise CheckFailed(not_numbers_message(str(problem)[:100])) from None


def _leave(array, shape: tuple, dtype) -> None:
    """Give ``array`` the shape and dtype the call left its view in the process with (a
    ``x.shape = ...`` of the student's, replies.inputs_left), as it did to the caller's array."""
    if not isinstance(array, np.ndarray) or (array.shape, array.dtype) == (shape, dtype):
        return
    try:
        array.dtype = dtype
        array.shape = shape
    except (AttributeError, ValueError, TypeError):
        raise replies.Malformed("inputs left in a shape their memory cannot take") from None


def _where(error: dict, cells: list[Cell]) -> str:
    """Where in the notebook an error of the untrusted process was raised, for the student:
    the line, and the cell when the notebook has more than the solution."""
    if "line" not in error:
        return ""
    cell = error.get("cell")
    if not isinstance(cell, int) or not 0 <= cell < len(cells) or cells[cell].kind == "solution":
        return line_of_code(error["line"], error.get("text", ""))
    return f"\n  at line {error['line']} of {cells[cell].describe()}: {str(error.get('text', '')).strip()}"


def cell_error(error: dict, cells: list[Cell]) -> str:
    """A cell that raised when the notebook ran, for the student: the cell that was
    running, the error, and where it was raised (in that cell or in another one's code)."""
    def named(index, capital: bool = False) -> str | None:
        valid = isinstance(index, int) and 0 <= index < len(cells)
        return cells[index].describe(capital) if valid else None

    running, raised_in = named(error.get("ran"), capital=True) or "A cell", named(error.get("cell"))
    where = ""
    if "line" in error:
        of = f" of {raised_in}" if raised_in and error.get("cell") != error.get("ran") else ""
        where = f" (at line {error['line']}{of}: {str(error.get('text', '')).strip()})"
    return f"{running} raised {error.get('type')}: {str(error.get('message'))[:500]}{where}"
