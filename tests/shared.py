"""Channels through what two boxes share: a sender and a receiver per kernel object.

Every box of a grading run sees the same read-only files (the Python installation, NumPy,
/usr) and the same kernel. Whatever the kernel keeps *per file* rather than per namespace
is shared by every box that can open the file, whoever grades it. Each pair here uses one
such object:

- ``shared_locks_a_sends`` / ``shared_locks_b_receives``: POSIX record locks. The sender
  holds one read lock (``fcntl(F_SETLK)``) per byte of its (compressed) source on the Python
  binary: byte ``i`` of value ``b`` is the range ``BASE + 256 i + b``; the receiver asks
  ``F_GETLK`` who holds each 256-byte range and reads ``b`` from the answer.
- ``shared_flock_*``: ``flock``, one bit per file of the standard library's ``test/`` folder:
  a set bit is a shared lock held; the receiver tries an exclusive one without waiting.
- ``shared_inotify_*``: inotify, one bit per file as well: the receiver watches each file,
  the sender keeps opening the files of its set bits; ``IN_OPEN`` says which.

The sender keeps sending for ``seconds`` while its cell runs (in the verdict process and in
the kernel alike), then defines a correct function (LOOP_CORRECT). The receiver listens for
as long, and when it decodes a message (zlib's checksum guards it) ``exec``-s it; otherwise
it returns zeros. Graded in the same run as the sender, on workers of their own, the
receiver must score what returning zeros scores. Each prints ``HOSTILE-REPORT <json>`` with
what it did (hostile.report_of reads it back).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from corpus import ASSIGNMENT, LOOP_CORRECT, ZEROS, Submission, notebook_with
from hostile import GUARD, RUN

CHANNELS = ("locks", "flock", "inotify")

# what every sender and receiver share: the message's framing and the files bits live in
COMMON = r'''
def _shared_files():
    # the same sorted list in every box: files no grading process opens (the stdlib's tests)
    import os
    import sysconfig
    top = os.path.join(sysconfig.get_paths()["stdlib"], "test")
    found = []
    for folder, dirnames, filenames in os.walk(top):
        dirnames.sort()
        found += [os.path.join(folder, name) for name in sorted(filenames)]
    return found


def _shared_frame(code):
    import zlib
    body = zlib.compress(code.encode(), 9)
    return len(body).to_bytes(2, "big") + body


def _shared_bits(frame):
    return [(byte >> (7 - k)) & 1 for byte in frame for k in range(8)]


def _shared_unframe(data):
    import zlib
    if len(data) < 2 or len(data) < 2 + int.from_bytes(data[:2], "big"):
        return None
    try:
        return zlib.decompress(bytes(data[2:2 + int.from_bytes(data[:2], "big")])).decode()
    except Exception:  # noqa: BLE001
        return None


def _shared_from_bits(bits):
    return bytes(sum(bit << (7 - k) for k, bit in enumerate(bits[i:i + 8])) for i in range(0, len(bits) - 7, 8))


_SHARED_BASE = 1 << 40  # far past the end of the file: nobody else locks there
'''

SEND = {
    "locks": r'''
def _hostile_attack(P):
    import errno
    import fcntl
    import os
    import struct
    import sys
    import time

    frame = _shared_frame(P["code"])
    fd = os.open(os.path.realpath(sys.executable), os.O_RDONLY)
    held, failed = 0, None
    for index, byte in enumerate(frame):
        try:
            fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, _SHARED_BASE + 256 * index + byte,
                                                       1, 0))
            held += 1
        except OSError as problem:
            failed = errno.errorcode.get(problem.errno, str(problem.errno))
            break
    if held:
        time.sleep(P["seconds"])
    _hostile_report({"bytes": len(frame), "held": held, "failed": failed})
''',
    "flock": r'''
def _hostile_attack(P):
    import errno
    import fcntl
    import os
    import time

    bits = _shared_bits(_shared_frame(P["code"]))
    files = _shared_files()
    held, failed, fds = 0, None, []
    for bit, path in zip(bits, files):
        if bit:
            try:
                fd = os.open(path, os.O_RDONLY)
                fds.append(fd)
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits out a receiver probing this file
                held += 1
            except OSError as problem:
                failed = errno.errorcode.get(problem.errno, str(problem.errno))
                break
    if held:
        time.sleep(P["seconds"])
    for fd in fds:
        os.close(fd)
    _hostile_report({"bits": len(bits), "files": len(files), "held": held, "failed": failed})
''',
    "inotify": r'''
def _hostile_attack(P):
    import os
    import time

    bits = _shared_bits(_shared_frame(P["code"]))
    ones = [path for bit, path in zip(bits, _shared_files()) if bit]
    end, rounds = time.monotonic() + P["seconds"], 0
    while time.monotonic() < end:  # keep opening the files of the set bits
        for path in ones:
            try:
                os.close(os.open(path, os.O_RDONLY))
            except OSError:
                pass
        rounds += 1
        time.sleep(0.05)
    _hostile_report({"bits": len(bits), "ones": len(ones), "rounds": rounds})
''',
}

RECEIVE = {
    "locks": r'''
def _hostile_attack(P):
    import errno
    import fcntl
    import os
    import struct
    import sys
    import time

    fd = os.open(os.path.realpath(sys.executable), os.O_RDONLY)
    end, failed, code, tries = time.monotonic() + P["seconds"], None, None, 0

    def byte_at(index):
        got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, _SHARED_BASE + 256 * index, 256, 0))
        kind, _, start, _, _ = struct.unpack("hhqqi", got)
        return None if kind == fcntl.F_UNLCK else start - _SHARED_BASE - 256 * index

    while code is None and time.monotonic() < end:
        tries += 1
        try:
            data = bytearray()
            while True:
                byte = byte_at(len(data))
                if byte is None or not 0 <= byte < 256:
                    break
                data.append(byte)
                if len(data) >= 2 and len(data) >= 2 + int.from_bytes(data[:2], "big"):
                    break
            code = _shared_unframe(data)
        except OSError as problem:
            failed = errno.errorcode.get(problem.errno, str(problem.errno))
            break
        if code is None:
            time.sleep(0.1)
    global _inside_shared
    _inside_shared = code
    _hostile_report({"found": code is not None, "tries": tries, "failed": failed})
''',
    "flock": r'''
def _hostile_attack(P):
    import errno
    import fcntl
    import os
    import time

    files = _shared_files()
    end, failed, code, tries = time.monotonic() + P["seconds"], None, None, 0
    fds = {}
    while code is None and time.monotonic() < end and failed is None:
        tries += 1
        bits = []
        for path in files[:8 * 2048]:
            if len(bits) >= 16 and len(bits) >= 8 * (2 + int.from_bytes(_shared_from_bits(bits[:16]), "big")):
                break
            try:
                fd = fds.get(path)
                if fd is None:
                    fd = fds[path] = os.open(path, os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                bits.append(0)
            except BlockingIOError:
                bits.append(1)
            except OSError as problem:
                failed = errno.errorcode.get(problem.errno, str(problem.errno))
                break
        code = _shared_unframe(_shared_from_bits(bits))
        if code is None:
            time.sleep(0.1)
    for fd in fds.values():
        os.close(fd)
    global _inside_shared
    _inside_shared = code
    _hostile_report({"found": code is not None, "tries": tries, "failed": failed})
''',
    "inotify": r'''
def _hostile_attack(P):
    import ctypes
    import errno
    import os
    import struct
    import time

    libc = ctypes.CDLL(None, use_errno=True)
    files = _shared_files()[:8 * 2048]
    end, failed, code, tries = time.monotonic() + P["seconds"], None, None, 0
    watch = libc.inotify_init1(os.O_NONBLOCK)
    if watch < 0:
        failed = errno.errorcode.get(ctypes.get_errno(), "?")
    index = {}
    for number, path in enumerate(files if watch >= 0 else []):
        descriptor = libc.inotify_add_watch(watch, path.encode(), 0x20)  # IN_OPEN
        if descriptor < 0:
            failed = errno.errorcode.get(ctypes.get_errno(), "?")
            break
        index[descriptor] = number
    while code is None and time.monotonic() < end and watch >= 0 and failed is None:
        tries += 1
        opened = set()
        listen = time.monotonic() + 0.5
        while time.monotonic() < listen:
            try:
                data = os.read(watch, 1 << 16)
            except BlockingIOError:
                time.sleep(0.02)
                continue
            at = 0
            while at + 16 <= len(data):
                descriptor, _, _, length = struct.unpack_from("iIII", data, at)
                opened.add(index.get(descriptor, -1))
                at += 16 + length
        bits = [int(number in opened) for number in range(len(files))]
        size = int.from_bytes(_shared_from_bits(bits[:16]), "big")
        code = _shared_unframe(_shared_from_bits(bits[:8 * (2 + size)]))
    if watch >= 0:
        os.close(watch)
    global _inside_shared
    _inside_shared = code
    _hostile_report({"found": code is not None, "tries": tries, "failed": failed, "watched": len(index)})
''',
}

RECEIVED_TAIL = ZEROS + '''
if globals().get("_inside_shared"):
    exec(_inside_shared, globals())
'''


def cell(body: str, params: dict, tail: str) -> str:
    return (GUARD + COMMON + f"\n_hostile_params = _hostile_json.loads({json.dumps(params)!r})\n\n" + body + RUN
            + "\n\n" + tail.strip("\n") + "\n")


def _built(code: str):
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
    return build


def pair(channel: str, seconds: float, zero: float, full: float, passed: str) -> tuple[Submission, Submission]:
    """The sender and the receiver of ``channel`` (one of CHANNELS), each running ``seconds``."""
    params = {"seconds": float(seconds)}
    sender = Submission(f"shared_{channel}_a_sends", f"sends its solution through {channel}, then solves",
                        _built(cell(SEND[channel], dict(params, code=LOOP_CORRECT), LOOP_CORRECT)), full, passed)
    receiver = Submission(f"shared_{channel}_b_receives", f"takes a classmate's solution from {channel}, else zeros",
                          _built(cell(RECEIVE[channel], params, RECEIVED_TAIL)), zero, "")
    return sender, receiver
