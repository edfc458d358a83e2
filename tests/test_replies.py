"""The reader of what the box sends back (maxpool_grader/verdict/replies.py), fed every kind
of malformed reply a student who controls the verdict process can write: headers that are not
JSON or not an object, fields of the wrong type, a header 200 kB deep, sizes far beyond what
was asked, indices out of range, a dx larger than x's shape allows, frames cut short. Each
must end as ``Malformed`` with the sentence the student reads, and nothing else may escape:
the grading run goes on (docs/security.md#threat-model). The same replies sent by a real
process inside the sandbox are graded by tests/test_sealed_box.py (``inside_deep_header``,
``inside_bad_running_index``, ``inside_huge_reply``, ``inside_garbage_reply``, ``inside_huge_dx``)."""

from __future__ import annotations

import io
import json
import struct
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maxpool_grader.verdict import replies, untrusted

SENTENCE = "the grader could not read what your code sent back"
CELLS = 3  # code cells of the notebook the replies below speak of


class Pipe:
    """The reply pipe as the reader sees it: ``read_exactly(count)`` returns what is left, up
    to ``count`` bytes (a process that ended mid-frame leaves fewer); ``taken`` counts the bytes
    the reader asked for, so a test sees what was refused before it was read."""

    def __init__(self, data: bytes):
        self.stream, self.taken = io.BytesIO(data), 0

    def __call__(self, count: int) -> bytes:
        self.taken += count
        return self.stream.read(count)


def frame(header: bytes | dict, *blobs: bytes, length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<I", len(text) if length is None else length) + text + b"".join(blobs)


def refused(call, *args) -> replies.Malformed:
    """``call(*args)`` must raise Malformed, whose sentence is the one the student reads."""
    with pytest.raises(replies.Malformed) as caught:
        call(*args)
    sentence = caught.value.sentence()
    assert sentence.startswith(SENTENCE) and caught.value.what in sentence, sentence
    assert len(sentence) < 600, sentence  # a bounded sentence, whatever the reply held
    return caught.value


def test_an_honest_reply_with_dx_is_read_back_exactly():
    dx = np.arange(32, dtype=np.float64).reshape(2, 1, 4, 4)
    data = untrusted.frame_bytes({"id": 7, "ok": True}, (dx,))
    pipe = Pipe(data)
    header, blobs = replies.read_reply(pipe, replies.most_dx_bytes(dx.size))
    assert pipe.taken == len(data) and header["id"] == 7
    kind, value = replies.call_reply(header, blobs, CELLS)
    assert kind == "ok"
    np.testing.assert_array_equal(untrusted.array_from_bytes(value), dx)


@pytest.mark.parametrize("text", [
    b"not json", b"{'single': 'quotes'}", b'{"a": 1', b'{"a": 1}}', b"\xff\xfe\x00{}", b"",
    b'{"a": "unclosed}', b'{"a": "\\"}', b'{"a": NaN', b"[1, 2, 3]", b"null", b"42", b'"text"',
    b"1" * 5000,  # an integer past Python's 4,300 digits
], ids=lambda text: repr(text[:20]))
def test_a_header_that_is_not_a_json_object_is_refused(text):
    what = refused(replies.read_reply, Pipe(frame(text)), 0).what
    assert "JSON" in what or "object" in what


@pytest.mark.parametrize("sizes", [
    "3", 3, None, {"0": 1}, [1.5], [True], [-1], ["1"], [1, 1], [2**40], [2**64],
], ids=repr)
def test_array_sizes_of_the_wrong_type_or_count_are_refused_before_a_byte_of_them_is_read(sizes):
    header = json.dumps({"id": 1, "ok": True, "arrays": sizes}).encode()
    pipe = Pipe(frame(header, b"\0" * 64))
    refused(replies.read_reply, pipe, 64)
    assert pipe.taken == 4 + len(header)


@pytest.mark.parametrize("length", [replies.MAX_HEADER_BYTES + 1, 2**31, 2**32 - 1])
def test_a_huge_declared_header_is_refused_before_it_is_read(length):
    pipe = Pipe(frame(b"{}", length=length))
    assert "bytes" in refused(replies.read_reply, pipe, 0).what
    assert pipe.taken == 4


def test_a_dx_larger_than_x_s_shape_allows_is_refused_unread():
    x_size = 2 * 1 * 4 * 4
    most = replies.most_dx_bytes(x_size)
    assert most >= untrusted.array_bytes(np.zeros(x_size, np.complex128)).__len__()  # an honest dx fits
    for declared in (most + 1, 4 << 20, 3 * 256 << 20):  # one byte over; 4 MiB of zeros; the forged 3 x 256 MiB
        header = json.dumps({"id": 1, "ok": True, "arrays": [declared]}).encode()
        pipe = Pipe(frame(header))  # none of the array is even there: it must not be asked for
        assert str(most) in refused(replies.read_reply, pipe, most).what
        assert pipe.taken == 4 + len(header)


def test_an_array_whose_npy_header_lies_about_its_shape_is_not_an_array():
    honest = untrusted.array_bytes(np.zeros((2, 1, 4, 4)))
    lying = honest.replace(b"'shape': (2, 1, 4, 4)", b"'shape': (9, 9, 9, 9)")  # 6561 elements in 32's bytes
    assert lying != honest
    for blob in (lying, honest[:-8], honest + b"\0" * 8, b"\x93NUMPY" + b"\xff" * 40, b""):
        with pytest.raises(ValueError):
            untrusted.array_from_bytes(blob)


def test_a_header_200_kb_deep_is_refused_before_the_parser_sees_it():
    for text in (b"[" * 200_000, b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 40_000 + b"1" + b"}" * 40_000):
        started = time.perf_counter()
        assert not replies.nesting(text)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(100)  # the parser would need far more: it must not be reached
        try:
            what = refused(replies.read_reply, Pipe(frame(text)), 0).what
        finally:
            sys.setrecursionlimit(limit)
        assert "nested too deep" in what
        assert time.perf_counter() - started < 1, "the depth scan must stay cheap"


def test_the_depth_bound_lets_the_grader_s_own_replies_through_and_ignores_brackets_in_text():
    own = {"id": 1, "ok": True, "parameters": [["d_output", 1, None], ["stride", 1, "None"]],
           "cell_errors": [{"type": "ValueError", "message": "[[[[[[[[[[[[ {{{{ \" ]]", "cell": 0, "line": 3,
                            "text": "x[[0]] = {'a': [1]}"}]}
    text = json.dumps(own).encode()
    assert replies.nesting(text)
    assert replies.read_reply(Pipe(frame(text)), 0)[0] == own
    deep = 1
    for _ in range(replies.MAX_NESTING):
        deep = [deep]
    assert replies.nesting(json.dumps(deep).encode())
    assert not replies.nesting(json.dumps([deep]).encode())
    for broken in (b'"unclosed', b'"ends in a backslash\\', b"[1]]", b"[[1]", b'{"a": "b\\"}'):
        assert not replies.nesting(broken), broken
    quotes = b'"' + b'\\"' * 100_000  # an unclosed string of escaped quotes: no rescanning from each one
    started = time.perf_counter()
    assert not replies.nesting(quotes)
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize("cut", [0, 2, 4, 10, -1])
def test_a_frame_cut_short_is_refused(cut):
    """A process that ended mid-frame: fewer bytes than its length or its sizes say."""
    dx = np.zeros((2, 1, 4, 4))
    data = untrusted.frame_bytes({"id": 1, "ok": True}, (dx,))
    what = refused(replies.read_reply, Pipe(data[:cut]), replies.most_dx_bytes(dx.size)).what
    assert "cut short" in what


@pytest.mark.parametrize("index", [-1, CELLS, 10**30, "0", True, None, 1.0, [0]], ids=repr)
def test_an_index_out_of_range_or_not_an_index_is_refused(index):
    assert "running cell" in refused(replies.running_index, {"running": index}, CELLS).what
    for key in ("cell", "ran"):
        refused(replies.error, {"type": "ValueError", "message": "m", key: index}, CELLS)
    assert replies.running_index({"running": CELLS - 1}, CELLS) == CELLS - 1


@pytest.mark.parametrize("value", [
    "not an object", [], {"type": 3}, {"type": "not a name"}, {"type": "E", "message": 5},
    {"type": "E", "line": 0}, {"type": "E", "line": 2**31}, {"type": "E", "line": "3"}, {"type": "E", "line": True},
    {"type": "E", "line": 3, "text": 5},
], ids=repr)
def test_an_error_with_a_field_of_the_wrong_type_is_refused(value):
    refused(replies.error, value, CELLS)
    refused(replies.call_reply, {"raised": value}, [], CELLS)
    refused(replies.load_reply, {"cell_errors": [value], "ok": True}, CELLS)


def test_long_texts_in_an_honest_error_are_cut():
    checked = replies.error({"type": "ValueError", "message": "m" * 10**6, "line": 2, "text": "t" * 10**5,
                             "cell": 1, "ran": 2}, CELLS)
    assert len(checked["message"]) == replies.MAX_TEXT and len(checked["text"]) == 500
    assert (checked["cell"], checked["ran"], checked["line"]) == (1, 2, 2)


@pytest.mark.parametrize("reply", [
    {}, {"ok": False}, {"ok": 1}, {"cell_errors": "none", "ok": True}, {"cell_errors": [{}] * 21, "ok": True},
    {"not_callable": 3}, {"ok": True, "parameters": "x"}, {"ok": True, "parameters": [["x", 1, None]] * 33},
    {"ok": True, "parameters": [["x", 1]]}, {"ok": True, "parameters": [["1x", 1, None]]},
    {"ok": True, "parameters": [["x", 5, None]]}, {"ok": True, "parameters": [["x", 1, 3]]},
    {"ok": True, "parameters": [["x", True, None]]},
], ids=repr)
def test_a_load_reply_that_is_not_the_grader_s_is_refused(reply):
    refused(replies.load_reply, reply, CELLS)


@pytest.mark.parametrize("reply,blobs", [
    ({}, []), ({"ok": True}, []), ({"ok": True}, [b"a", b"b"]), ({"ok": "yes"}, [b"a"]), ({"not_array": 3}, []),
    ({"bad_dtype": None}, []), ({"too_big": "huge"}, []), ({"too_big": [1] * 9}, []), ({"too_big": [-1]}, []),
    ({"too_big": [1.5]}, []), ({"raised": None}, []),
], ids=repr)
def test_a_call_reply_that_is_not_the_grader_s_is_refused(reply, blobs):
    refused(replies.call_reply, reply, blobs, CELLS)


GIVEN = (np.zeros((1, 2)), np.zeros((2, 4)))  # d_output and x as a call was given them


@pytest.mark.parametrize("left", [
    "shape", [], [[[1, 2], "<f8"]], [[[1, 2], "<f8"], [[3, 3], "<f8"]], [[[1, 2], "<f8"], [[8], "<f4"]],
    [[[1, 2], "<f8"], [[2, 4], "O"]], [[[1, 2], "<f8"], [[2, 4], "no dtype"]], [[[1, 2], "<f8"], [[-8, -1], "<f8"]],
    [[[1, 2], "<f8"], [[1] * 33, "<f8"]], [[[1, 2], "<f8"], [[2, 4.0], "<f8"]], [[[1, 2], "<f8"], [[2, 4]]],
], ids=repr)
def test_inputs_left_in_a_size_their_memory_cannot_hold_are_refused(left):
    """What a call left of its inputs (untrusted._left) is a shape and a numeric dtype of the very
    bytes it was given, per input, or Malformed."""
    refused(replies.inputs_left, {"left": left}, GIVEN)


def test_inputs_left_as_a_view_of_their_own_bytes_are_read():
    assert replies.inputs_left({}, GIVEN) is None
    left = replies.inputs_left({"left": [[[2], "<f8"], [[1, 8, 2], "<f4"]]}, GIVEN)
    assert left == [((2,), np.dtype("<f8")), ((1, 8, 2), np.dtype("<f4"))]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["ok", "raised", "running", "cell_errors", "missing", "not_callable",
                                         "parameters", "too_big", "not_array", "bad_dtype", "type", "message",
                                         "cell", "ran", "line", "text", "arrays", "id"]) | st.text(max_size=5),
                        inner, max_size=6), max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=st.dictionaries(st.sampled_from(["ok", "raised", "running", "cell_errors", "missing",
                                              "not_callable", "parameters", "too_big", "not_array", "bad_dtype",
                                              "left"]),
                             JSON, max_size=5))
def test_any_json_reply_is_either_checked_or_malformed(reply):
    """Whatever JSON the process sends, the checkers return the grader's types or raise
    Malformed: no KeyError, TypeError, AttributeError or IndexError reaches the run."""
    for check in (lambda: replies.load_reply(reply, CELLS), lambda: replies.call_reply(reply, [b"x"], CELLS),
                  lambda: replies.running_index(reply, CELLS), lambda: replies.error(reply, CELLS),
                  lambda: replies.inputs_left(reply, (np.zeros((1, 2)), np.zeros((2, 4))))):
        try:
            check()
        except replies.Malformed as malformed:
            assert malformed.sentence().startswith(SENTENCE)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300) | JSON.map(lambda value: frame({"arrays": [4], "v": value}, b"abcd")))
def test_any_bytes_on_the_pipe_are_either_a_reply_or_malformed(data):
    try:
        header, blobs = replies.read_reply(Pipe(data), 16)
    except replies.Malformed as malformed:
        assert malformed.sentence().startswith(SENTENCE)
    else:
        assert isinstance(header, dict) and all(isinstance(blob, bytes) for blob in blobs)
