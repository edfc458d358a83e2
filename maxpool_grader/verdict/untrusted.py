"""The process that runs a student's solution for the out-of-process verdict.

This file is both a module (the grader imports its framing functions) and the program
of the untrusted process: ``python -P untrusted.py <request fd> <reply fd> <memory fd>``,
started by ``maxpool_grader.verdict.process`` from a copy in a private temporary directory;
or, with ``--zygote <socket fd>``, the verdict zygote that forks such processes warm
(zygote.py). It imports only the standard library and NumPy, never the grader package
(which the sandbox hides and the import guard below refuses), and it holds no expected
result: it receives inputs and sends back the numbers the student's function returned.

Requests are frames: a 4-byte length and a JSON header, then the raw ``.npy`` bytes of the
arrays the header lists. A call's inputs are not sent: they lie in a shared memory the
grader wrote them to (``<memory fd>``), and the function is given arrays over that very
memory, so whatever it writes into its inputs the grader sees for itself. A reply is a
frame too, carrying dx only; the grader reads it with bounds and checks every field
(replies.py): nothing this process says decides a grade but the numbers of dx.
"""

from __future__ import annotations

import inspect
import io
import json
import linecache
import mmap
import os
import struct
import sys
import traceback

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
    """A plain ndarray of numbers, or ValueError; never unpickles anything, and never
    allocates more than ``data`` holds (its header is checked against its length first)."""
    stream = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(stream)
    except (ValueError, TypeError, SyntaxError, OverflowError) as problem:
        raise ValueError(f"not an array ({str(problem)[:80]})") from None
    if dtype.kind not in "biuf" or dtype.hasobject:
        raise ValueError(f"not a numeric array (dtype {dtype})")
    count = 1
    for size in shape:
        count *= size
    if count * dtype.itemsize != len(data) - stream.tell():
        raise ValueError(f"an array of shape {tuple(shape)[:8]} in {len(data)} bytes")
    # the header is read and checked: the numbers follow it (its order, as read_array would)
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return (flat.reshape(shape[::-1]).transpose() if fortran else flat.reshape(shape)).copy(order="K")


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


def inputs_over(memory, layout: list) -> tuple:
    """The arrays ``layout`` describes ([offset, shape, dtype, strides] each), over ``memory``."""
    return tuple(np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=memory, offset=offset, strides=tuple(strides))
                 for offset, shape, dtype, strides in layout)


def _call(function, request: dict, memory) -> tuple[dict, tuple]:
    """Call the student's function on the inputs in shared ``memory``; the reply, and dx."""
    inputs = inputs_over(memory, request["inputs"])
    pool_size, stride = decode_size(request["pool_size"]), decode_size(request["stride"])
    args = (*inputs, pool_size) if stride is None else (*inputs, pool_size, stride)
    try:
        result = function(*args)
    except BaseException as exc:  # noqa: BLE001  SystemExit and KeyboardInterrupt too
        return dict(_left(inputs, request["inputs"]), raised=_error(exc)), ()
    reply, out = _result(result, request["most"])
    return dict(_left(inputs, request["inputs"]), **reply), out


def _left(inputs: tuple, layout: list) -> dict:
    """The shape and dtype each input was left with, when the call changed them (``x.shape =
    ...`` changes the caller's array, never its memory): a change only costs the student."""
    if all(a.shape == tuple(shape) and a.dtype == np.dtype(dtype) for a, (_, shape, dtype, _) in zip(inputs, layout)):
        return {}
    return {"left": [[[int(n) for n in a.shape], a.dtype.str] for a in inputs]}


def _result(result, most: int) -> tuple[dict, tuple]:
    if type(result) is not np.ndarray:
        return {"not_array": type(result).__name__}, ()
    if result.dtype.kind not in "biuf":
        return {"bad_dtype": str(result.dtype)}, ()
    if result.nbytes > most:  # larger than any dx of this x can be: not sent
        return {"too_big": [int(n) for n in result.shape[:8]]}, ()
    return {"ok": True}, (result,)


def main(request_fd: int, reply_fd: int, memory_fd: int) -> None:
    sys.meta_path.insert(0, _ImportGuard())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # what the student prints goes nowhere: the replies have own fds
    os.dup2(devnull, 2)
    memory = mmap.mmap(memory_fd, 0)  # the grader's inputs, the size it made it
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
            reply, out = _call(function, request, memory)
            try:
                write_frame(reply_fd, dict(reply, id=request["id"]), out)
            except (ValueError, TypeError) as exc:  # an array that cannot be sent as numbers
                write_frame(reply_fd, {"bad_dtype": str(exc)[:200], "id": request["id"]})


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":  # the verdict zygote (zygote.py): forks one process per request
        import socket
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -P leaves it out
        import zygote  # the copy next to this one (zygote.LOADER loaded it); never the grader package
        del sys.path[0]
        zygote.serve([socket.socket(fileno=int(fd)) for fd in sys.argv[2].split(",")], lambda request, fds: main(*fds),
                     directory=os.getcwd())  # its private folder (zygote.LOADER)
    else:
        main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
