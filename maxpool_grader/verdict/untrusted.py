"""The process that runs a student's solution for the out-of-process verdict.

This file is both a module (the grader imports its framing functions) and the program
of the untrusted process: ``python -I untrusted.py <request fd> <reply fd>``, started by
``maxpool_grader.verdict.process`` from a copy in a private temporary directory; or, with
``--zygote <socket fd>``, the verdict zygote that forks such processes warm (zygote.py). It imports
only the standard library and NumPy, never the grader package (which the sandbox hides
and the import guard below refuses), and it holds no expected result: it receives
inputs and sends back the numbers the student's function returned.

Messages are frames: a 4-byte length and a JSON header, then the raw ``.npy`` bytes
of the arrays the header lists. The grader reads arrays with ``allow_pickle=False``
and never trusts anything else in a reply.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import linecache
import os
import struct
import sys
import tempfile
import traceback
import warnings

import numpy as np

CELL_FILENAME = "<cell {}>"  # the student's code, by its index in the load request
MAX_HEADER = 1 << 20
MAX_ARRAY = 256 << 20
BLOCKED_MODULES = ("maxpool_grader", "torch", "tensorflow", "jax", "jaxlib", "autograd",
                   "mxnet", "paddle", "nbgrader")


# ---------------------------------------------------------------- framing (both sides)
def _read_exactly(fd: int, count: int) -> bytes:
    chunks, remaining = [], count
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def array_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def array_from_bytes(data: bytes) -> np.ndarray:
    """A plain ndarray of numbers, or ValueError; never unpickles anything."""
    array = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
    if type(array) is not np.ndarray or array.dtype.kind not in "biuf":
        raise ValueError(f"not a numeric array (dtype {array.dtype})")
    return array


def frame_bytes(header: dict, arrays: tuple[np.ndarray, ...] = ()) -> bytes:
    """A frame: 4-byte length, the JSON header (listing the arrays' sizes), the arrays."""
    blobs = [array_bytes(array) for array in arrays]
    text = json.dumps(dict(header, arrays=[len(blob) for blob in blobs])).encode()
    return struct.pack("<I", len(text)) + text + b"".join(blobs)


def write_frame(fd: int, header: dict, arrays: tuple[np.ndarray, ...] = ()) -> None:
    _write_all(fd, frame_bytes(header, arrays))


def read_frame(read_exactly) -> tuple[dict, list[bytes]]:
    """One frame read through ``read_exactly(count) -> bytes``: its header (a dict) and the
    raw bytes of each array, bounded in size; ValueError when it is malformed."""
    (length,) = struct.unpack("<I", read_exactly(4))
    if length > MAX_HEADER:
        raise ValueError(f"header of {length} bytes")
    header = json.loads(read_exactly(length))  # JSONDecodeError is a ValueError
    sizes = header.get("arrays", []) if isinstance(header, dict) else None
    if not isinstance(sizes, list) or len(sizes) > 3 or not all(
            isinstance(size, int) and 0 <= size <= MAX_ARRAY for size in sizes):
        raise ValueError("malformed frame")
    return header, [read_exactly(size) for size in sizes]


def encode_size(value):
    """pool_size / stride for JSON, keeping int apart from tuple (students test for both)."""
    if value is None or isinstance(value, int):
        return value
    return {"tuple": [int(v) for v in value]}


def decode_size(value):
    return tuple(value["tuple"]) if isinstance(value, dict) else value


# ---------------------------------------------------------------- the untrusted side
class _ImportGuard:
    """Refuses the grader package and autograd libraries, however they are imported."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED_MODULES:
            raise ImportError(f"importing {name.split('.')[0]} is not allowed in a solution")
        return None


def _cell_of(filename: str | None) -> int | None:
    prefix, suffix = CELL_FILENAME.split("{}")
    if filename and filename.startswith(prefix) and filename.endswith(suffix):
        try:
            return int(filename[len(prefix):-len(suffix)])
        except ValueError:
            return None
    return None


def _where(exc: BaseException) -> dict:
    """The cell and line of the notebook where ``exc`` was raised (the innermost frame in
    a cell), or {}."""
    if isinstance(exc, SyntaxError) and _cell_of(exc.filename) is not None:  # the cell did not compile
        return {"cell": _cell_of(exc.filename), "line": exc.lineno or 1, "text": (exc.text or "").strip()}
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if _cell_of(frame.filename) is not None]
    if not frames:
        return {}
    return {"cell": _cell_of(frames[-1].filename), "line": frames[-1].lineno, "text": (frames[-1].line or "").strip()}


def _error(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "message": str(exc)[:4000], **_where(exc)}


def _parameters(function) -> list | None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), None if p.default is p.empty else repr(p.default)[:200]]
            for p in signature.parameters.values()]


class _NoIPython:
    """What ``get_ipython()`` returns here: magics in the solution cell do nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _load(request: dict, running) -> tuple[dict, object]:
    """Run the notebook's cells (``request["cells"]``, their sources in order) as a kernel
    would: a cell that raises stops there, and the next cell runs. ``running(index)`` is
    called before each cell; the cells in ``request["skip"]`` are left out."""
    namespace = {"__name__": "__main__", "get_ipython": _NoIPython}
    skip = set(request.get("skip", []))
    errors = []
    for index, source in enumerate(request["cells"]):
        if index in skip:
            continue
        running(index)
        filename = CELL_FILENAME.format(index)
        # registered so that tracebacks can show the student's line
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            exec(compile(source, filename, "exec"), namespace)
        except BaseException as exc:  # noqa: BLE001  anything a cell raises is the student's
            errors.append(dict(_error(exc), ran=index))
    found = {"cell_errors": errors[:20]}
    function = namespace.get("max_pool_backward")  # names.FUNCTION: this program imports nothing of the grader
    if function is None:
        return dict(found, missing=True), None
    if not callable(function):
        return dict(found, not_callable=type(function).__name__), None
    return dict(found, ok=True, parameters=_parameters(function)), function


class _Heard(io.TextIOBase):
    """A stream that keeps nothing, and notes whether anything was written to it."""

    heard = False

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        self.heard = self.heard or bool(text)
        return len(text)


class _Listening:
    """While the student's function runs, what it writes (sys.stdout, sys.stderr, descriptors
    1 and 2) or warns still goes nowhere, but is noticed: in the kernel, the test would show
    it (quiet_student_code: every warning, NumPy's floating-point ones included). ``quiet``:
    nothing was. A notebook that changed the warning filters or NumPy's error handling is
    never quiet: what the kernel would show cannot be told from here."""

    _scratch: int | None = None  # a file of this process's own, empty between calls

    def __enter__(self):
        self.quiet, self._saved = False, []
        self._custom = tuple(warnings.filters) != _FILTERS or np.geterr() != _NUMPY_ERRORS
        self._heard = _Heard()
        try:
            if _Listening._scratch is None:
                _Listening._scratch, path = tempfile.mkstemp()
                os.unlink(path)
            self._saved = [os.dup(1), os.dup(2)]
            os.dup2(_Listening._scratch, 1)
            os.dup2(_Listening._scratch, 2)
        except OSError:
            self._custom = True
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(self._heard))
        self._stack.enter_context(contextlib.redirect_stderr(self._heard))
        self._caught = self._stack.enter_context(warnings.catch_warnings(record=True))
        if not self._custom:
            warnings.simplefilter("always")
            self._stack.enter_context(np.errstate(all="warn"))
        return self

    def __exit__(self, *_):
        self._stack.close()
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        written = bool(self._saved) and os.fstat(_Listening._scratch).st_size > 0
        if self._saved:
            os.ftruncate(_Listening._scratch, 0)
        self.quiet = not (self._custom or self._heard.heard or self._caught or written)


_FILTERS = tuple(warnings.filters)  # as Python starts, before any student code
_NUMPY_ERRORS = np.geterr()


def _call(function, request: dict, arrays: list[bytes]) -> tuple[dict, tuple]:
    d_output, x = (np.lib.format.read_array(io.BytesIO(blob)).copy() for blob in arrays)
    pool_size, stride = decode_size(request["pool_size"]), decode_size(request["stride"])
    args = (d_output, x, pool_size) if stride is None else (d_output, x, pool_size, stride)
    listening = _Listening()
    try:
        with listening:
            result = function(*args)
    except BaseException as exc:  # noqa: BLE001  SystemExit and KeyboardInterrupt too
        return {"raised": _error(exc)}, (x, d_output)
    if type(result) is not np.ndarray:
        return {"not_array": type(result).__name__}, (x, d_output)
    if result.dtype.kind not in "biuf":
        return {"bad_dtype": str(result.dtype)}, (x, d_output)
    if result.nbytes > MAX_ARRAY // 4:  # far larger than any x here: not sent
        return {"too_big": [int(n) for n in result.shape]}, (x, d_output)
    return {"ok": True, "quiet": listening.quiet}, (result, x, d_output)


def main(request_fd: int, reply_fd: int) -> None:
    sys.meta_path.insert(0, _ImportGuard())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # what the student prints goes nowhere: the replies have own fds
    os.dup2(devnull, 2)
    function = None
    while True:
        try:
            request, arrays = read_frame(lambda count: _read_exactly(request_fd, count))
        except EOFError:
            return
        if request["op"] == "load":
            reply, function = _load(request, lambda index, asked=request["id"]: write_frame(
                reply_fd, {"id": asked, "running": index}))
            write_frame(reply_fd, dict(reply, id=request["id"]))
        else:
            reply, out = _call(function, request, arrays)
            try:
                write_frame(reply_fd, dict(reply, id=request["id"]), out)
            except (ValueError, TypeError) as exc:  # an array that cannot be sent as numbers
                write_frame(reply_fd, {"bad_dtype": str(exc)[:200], "id": request["id"]})


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":  # the verdict zygote (zygote.py): forks one process per request
        import socket
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves it out
        import zygote  # the copy next to this one; never the grader package
        del sys.path[0]
        zygote.serve([socket.socket(fileno=int(fd)) for fd in sys.argv[2].split(",")], lambda request, fds: main(*fds),
                     directory=os.path.dirname(os.path.abspath(__file__)))
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))
