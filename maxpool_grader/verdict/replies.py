"""What the box may say, read with bounds and checked field by field.

The verdict process runs the student's code, so the student controls every byte it sends:
its length, its nesting, its types, its indices. Each reply is read with a cap on its size
before any of it is kept (a header of at most ``MAX_HEADER_BYTES``, one array of at most
what the request allows), its nesting bounded before it is parsed (``nesting``: a cheap scan,
so a header 200 kB deep never reaches the JSON parser's recursion), and then rebuilt from the
fields the grader expects, each checked for its type, range and length. Anything else is
``Malformed``: the test (or, for the notebook's cells, every test) fails with a sentence,
the process is ended, and the run goes on. Nothing here raises anything else.
"""

from __future__ import annotations

import json
import math
import re
import struct

import numpy as np

MAX_HEADER_BYTES = 256 << 10  # a load reply: 20 cell errors of 4,000 characters, and the signature
MAX_TEXT = 4000  # characters kept of any text of the student's
MAX_PARAMETERS = 32
MAX_NESTING = 8  # brackets deep; the grader's own replies nest 3 ({"cell_errors": [{...}]}, parameters)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*+(?:(")|\\?\Z)', re.DOTALL)  # a string, or an unclosed one to the end
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
MALFORMED = ("the grader could not read what your code sent back ({what}): the process running it sent a "
             "reply that is not one the grader's own program writes, so the test could not be decided")


class Malformed(BaseException):
    """A reply the grader cannot read or check (BaseException: student code paths catch
    Exception, and this one must end the call)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what

    def sentence(self) -> str:
        return MALFORMED.format(what=self.what)


def nesting(text: bytes, most: int = MAX_NESTING) -> bool:
    """Whether the JSON ``text`` nests at most ``most`` brackets deep (False too when its
    brackets or quotes do not pair up, which JSON would refuse anyway). Linear and without
    recursion: strings are cut out by one regular expression that never backtracks or
    rescans (an unclosed string runs to the end), then each pass removes every innermost
    ``[]`` and ``{}``; what is left after ``most`` passes is deeper than that. (Where the two
    kinds alternate a pass may remove two levels: at most 2 × ``most`` get through, far below
    the parser's recursion.)"""
    closed = []

    def blank(match: re.Match) -> bytes:
        closed.append(match[1] is not None)
        return b""

    brackets = _STRING.sub(blank, text).translate(None, _NOT_BRACKETS)
    if not all(closed):
        return False
    for _ in range(most):
        if not brackets:
            return True
        brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
    return not brackets


def most_dx_bytes(x_size: int) -> int:
    """The most bytes a dx for an x of ``x_size`` elements may take: complex or not, and its
    .npy header. A reply declaring more is refused before any of it is read."""
    return max(x_size, 1) * 16 + 4096


def _exactly(read_exactly, count: int) -> bytes:
    data = read_exactly(count)
    if len(data) != count:
        raise Malformed(f"a reply cut short ({len(data)} of {count} bytes)")
    return data


def read_reply(read_exactly, most_array_bytes: int) -> tuple[dict, list[bytes]]:
    """One reply read through ``read_exactly(count) -> bytes``: its header (a dict) and at
    most one array of at most ``most_array_bytes``, refused before it is read when larger."""
    (length,) = struct.unpack("<I", _exactly(read_exactly, 4))
    if length > MAX_HEADER_BYTES:
        raise Malformed(f"a header of {length} bytes")
    text = _exactly(read_exactly, length)
    if not nesting(text):
        raise Malformed("a header that is not JSON, or nested too deep")
    try:
        header = json.loads(text)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise Malformed("a header that is not JSON, or nested too deep") from None
    if not isinstance(header, dict):
        raise Malformed("a header that is not an object")
    sizes = header.get("arrays", [])
    if not isinstance(sizes, list) or len(sizes) > 1 or not all(
            type(size) is int and 0 <= size <= most_array_bytes for size in sizes):
        raise Malformed(f"arrays of {str(sizes)[:80]} bytes, where at most one of {most_array_bytes} may come")
    return header, [_exactly(read_exactly, size) for size in sizes]


def _text(value, what: str, most: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{what} that is not text")
    return value[:most]


def _index(value, count: int, what: str) -> int:
    if type(value) is not int or not 0 <= value < count:
        raise Malformed(f"{what} {str(value)[:40]} (the notebook has {count} code cells here)")
    return value


def running_index(reply: dict, count: int) -> int:
    """The cell the process says it is running, one of ``count``."""
    return _index(reply.get("running"), count, "a running cell")


def error(value, count: int) -> dict:
    """An error the student's code raised: its type, message, and where (cell, line, text)."""
    if not isinstance(value, dict):
        raise Malformed("an error that is not an object")
    checked = {"type": _text(value.get("type", "Exception"), "an error type", 100),
               "message": _text(value.get("message", ""), "an error message")}
    if not checked["type"].isidentifier():
        raise Malformed("an error type that is not a name")
    for key in ("cell", "ran"):
        if key in value:
            checked[key] = _index(value[key], count, f"an error's {key}")
    if "line" in value:
        if type(value["line"]) is not int or not 0 < value["line"] < 1 << 31:
            raise Malformed("an error's line that is not a line number")
        checked["line"] = value["line"]
        checked["text"] = _text(value.get("text", ""), "an error's line of code", 500)
    return checked


def parameters(value) -> list | None:
    """The function's signature: [name, kind, default's repr or None] for each parameter."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_PARAMETERS:
        raise Malformed("a signature that is not a short list")
    checked = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and item[0].isidentifier()
                and type(item[1]) is int and 0 <= item[1] <= 4 and (item[2] is None or isinstance(item[2], str))):
            raise Malformed("a parameter that is not [name, kind, default]")
        checked.append([item[0][:100], item[1], None if item[2] is None else item[2][:200]])
    return checked


def load_reply(reply: dict, count: int) -> dict:
    """What running the notebook's ``count`` cells gave: the cells' errors, and the function
    (``ok`` with its parameters), or that it is ``missing`` or ``not_callable``."""
    errors = reply.get("cell_errors", [])
    if not isinstance(errors, list) or len(errors) > 20:
        raise Malformed("cell errors that are not a short list")
    checked = {"cell_errors": [error(item, count) for item in errors]}
    if reply.get("missing") is True:
        return dict(checked, missing=True)
    if "not_callable" in reply:
        return dict(checked, not_callable=_text(reply["not_callable"], "a type name", 100))
    if reply.get("ok") is True:
        return dict(checked, ok=True, parameters=parameters(reply.get("parameters")))
    raise Malformed("a reply to running the cells that says neither what was defined nor what was missing")


def call_reply(reply: dict, blobs: list[bytes], count: int) -> tuple[str, object]:
    """What a call gave, as (kind, value): ("raised", error), ("not_array", type name),
    ("bad_dtype", dtype), ("too_big", shape) or ("ok", dx's bytes)."""
    if "raised" in reply:
        return "raised", error(reply["raised"], count)
    for kind in ("not_array", "bad_dtype"):
        if kind in reply:
            return kind, _text(reply[kind], "a type name", 100)
    if "too_big" in reply:
        shape = reply["too_big"]
        if not (isinstance(shape, list) and len(shape) <= 8 and all(type(n) is int and n >= 0 for n in shape)):
            raise Malformed("a shape that is not a list of sizes")
        return "too_big", tuple(shape)
    if reply.get("ok") is True and len(blobs) == 1:
        return "ok", blobs[0]
    raise Malformed("a reply to a call that carries no result")


def inputs_left(reply: dict, given: tuple) -> list[tuple[tuple[int, ...], np.dtype]] | None:
    """The shape and dtype a call left each of the ``given`` arrays with (untrusted._left), or
    None when it changed neither. A box can only report a change of the student's own
    inputs: one of another size in bytes, or not a shape and a dtype, is Malformed."""
    if "left" not in reply:
        return None
    left = reply["left"]
    if not (isinstance(left, list) and len(left) == len(given)):
        raise Malformed("inputs left that are not one shape and dtype per input")
    found = []
    for entry, array in zip(left, given):
        try:
            shape, dtype = entry
            if not (isinstance(shape, list) and len(shape) <= 32 and all(type(n) is int and n >= 0 for n in shape)):
                raise ValueError
            dtype = np.dtype(str(dtype)[:20])
        except (TypeError, ValueError):
            raise Malformed("inputs left that are not a shape and a dtype") from None
        if dtype.kind not in "biuf" or math.prod(shape) * dtype.itemsize != array.nbytes:
            raise Malformed("inputs left with another size than the memory they were given")
        found.append((tuple(shape), dtype))
    return found
