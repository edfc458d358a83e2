"""The process that holds a student's code for the out-of-process verdict, and its limits.

It runs ``untrusted.py`` (a separate Python, in a sandbox of the submission's box when
one is available, with a memory cap and no output) and talks to it over two pipes:
each request and reply is a frame read with a deadline (``Limits``) and with bounds
(replies.py), and an answer that does not come in time, a process that ends, or a reply
that cannot be read is an exception the verdict reports. A third descriptor is a shared
memory the grader writes each call's inputs to and reads them back from itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..sandbox import box, filesystem, zygote
from ..sandbox.limits import PRLIMIT, prlimit, rlimits
from . import replies, untrusted
from .fairness import CpuWatch, Starved
from .inputs import SharedInputs


@dataclass(frozen=True)
class Limits:
    """Time and memory limits of the out-of-process verdict. These defaults are the course's:
    ``OutOfProcessVerdicts`` and ``SealedBox.verdict_memory_mib`` (glue/) take theirs from
    here, and docs/settings.md lists them."""

    check_seconds: float = 5.0  # the graded inputs of one test
    search_seconds: float = 5.0  # looking for the smallest failing input of one test
    load_seconds: float = 10.0  # running the solution cell (imports, definitions)
    total_seconds: float = 40.0  # everything, for one notebook
    memory_bytes: int = 2 << 30  # RLIMIT_AS of the untrusted process
    file_bytes: int = 16 << 20  # RLIMIT_FSIZE: no disk bombs

    @property
    def cpu_seconds(self) -> int:
        """RLIMIT_CPU of the untrusted process: the notebook's whole budget, and a margin."""
        return int(self.total_seconds) + CPU_MARGIN_SECONDS


CPU_MARGIN_SECONDS = 5  # a verdict process's CPU time beyond ``total_seconds``


class Timeout(BaseException):
    """The untrusted process did not answer in time (BaseException: student code paths
    catch Exception and must not swallow it)."""


class ProcessEnded(BaseException):
    """The untrusted process ended while it was running student code."""


def describe_exit(returncode: int | None, limits: Limits) -> str:
    if returncode is None:
        return "stopped answering"
    number = -returncode if returncode < 0 else returncode - 128  # bwrap exits 128 + signal
    try:
        name = signal.Signals(number).name
    except ValueError:  # an ordinary exit status
        name = None
    if name is not None:
        if number == signal.SIGSEGV:
            return f"crashed with a segmentation fault ({name})"
        if number in (signal.SIGKILL, signal.SIGXCPU):
            return (f"was killed ({name}): it used too much memory (limit "
                    f"{limits.memory_bytes >> 20} MiB) or CPU time")
        return f"was ended by signal {name}"
    return f"ended the Python process with exit status {returncode} (os._exit or a crash)"


def untrusted_process_wrapper(mode: str, log: logging.Logger, sealed: box.Box | None = None,
                              warm: bool = False) -> Callable | None:
    """A function (private dir, program) -> Launch that starts a sandbox of ``box`` for the
    out-of-process verdict (its program bound read-only under filesystem.VERDICT_DIR), or None
    without a sandbox. Its attributes: ``box``, and ``warm`` (fork it from the verdict
    zygote)."""
    if not box.use_sandbox(mode, log):
        return None
    sealed = sealed or box.Box(mode=mode, log=log)

    def wrap(private: Path, program: Path | None = None) -> box.Launch:
        files = [(str(program), f"{filesystem.VERDICT_DIR}/{program.name}")] if program else []
        return sealed.sandbox(private, files)
    wrap.warm, wrap.box = warm, sealed
    return wrap


_the_verdict_zygote: zygote.Zygote | None = None


def verdict_zygote() -> zygote.Zygote:
    """This process's verdict zygote (started on first use, again if it died)."""
    global _the_verdict_zygote
    if _the_verdict_zygote is None or not _the_verdict_zygote.alive():
        _the_verdict_zygote = start_verdict_zygote()
    return _the_verdict_zygote


def start_verdict_zygote(holders: int = 1) -> zygote.Zygote:
    """A new verdict zygote: untrusted.py with NumPy imported, run like the cold verdict
    process (``python -P``, a private copy of the script, no grader package on its path,
    the sandbox's clean environment); ``holders``: the processes that share it (Zygote)."""
    directory = box.private_directory("zygote-")
    for module in (untrusted, zygote):
        shutil.copyfile(module.__file__, directory / Path(module.__file__).name)
    return zygote.Zygote(zygote.program_argv(filesystem.PYTHON, "untrusted.py", "-P") + ["--zygote"],
                         env=dict(filesystem.environment(home=str(directory)), TMPDIR=str(directory)),
                         cwd=str(directory), holders=holders)


def adopt_verdict_zygote(found: zygote.Zygote, index: int = 0) -> None:
    """Fork this process's verdict processes from ``found``, started by the process this one
    was forked from, through its socket ``index`` (Zygote.adopt)."""
    global _the_verdict_zygote
    found.adopt(index)
    _the_verdict_zygote = found


class SolutionProcess:
    """One untrusted Python process holding the student's solution: in a sandbox of the
    submission's box (``wrap``, see untrusted_process_wrapper), or unsandboxed
    with limits when ``wrap`` is None."""

    def __init__(self, limits: Limits, wrap: Callable | None = None, watch: CpuWatch | None = None):
        self.limits, self.watch = limits, watch or CpuWatch(None)
        self.directory = box.private_directory("untrusted-")
        request_read, self._request = os.pipe()
        self._reply, reply_write = os.pipe()
        self.inputs = SharedInputs()
        own = rlimits(limits.memory_bytes, limits.file_bytes, limits.cpu_seconds)
        self.process = None
        script = self.directory / "untrusted.py"
        shutil.copyfile(untrusted.__file__, script)
        if wrap is None:
            self.process = subprocess.Popen(
                prlimit(own) + [sys.executable, "-P", str(script), str(request_read), str(reply_write),
                                str(self.inputs.fd)],
                pass_fds=(request_read, reply_write, self.inputs.fd), cwd=self.directory,
                env=dict(filesystem.environment(home=str(self.directory)), TMPDIR=str(self.directory)),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=None if PRLIMIT else lambda: zygote.set_rlimits(own))
        else:
            self._start_sandboxed(wrap, script, own, request_read, reply_write)
        os.close(request_read)
        os.close(reply_write)
        self._next_id = 0
        self.deadline = time.monotonic() + limits.load_seconds

    def _start_sandboxed(self, wrap: Callable, script: Path, rlimits: dict, request_read: int,
                         reply_write: int) -> None:
        box, environment = wrap.box, filesystem.environment()
        launch = wrap(self.directory, script)
        try:
            if wrap.warm:  # forked into the sandbox by the verdict zygote
                try:
                    self.process = verdict_zygote().spawn(
                        launch.argv, dict(box.warm_request(rlimits), cwd=filesystem.WORKDIR, env=environment),
                        fds=(request_read, reply_write, self.inputs.fd), bwrap_fds=tuple(launch.fds))
                except (zygote.SpawnError, OSError) as problem:
                    logging.getLogger(__name__).warning(
                        "Warm start of the verdict process failed (%s); starting it cold", problem)
            if self.process is None:
                # the limits by prlimit: no preexec_fn, so it is safe from the verdict thread
                info_read, info_write = os.pipe()  # bwrap writes the sandbox's init's pid there
                argv = launch.argv[:-1] + ["--info-fd", str(info_write), "--"] + box.command(rlimits) + [
                    filesystem.PYTHON, "-P", f"{filesystem.VERDICT_DIR}/{script.name}", str(request_read),
                    str(reply_write), str(self.inputs.fd)]
                try:
                    self.process = subprocess.Popen(
                        argv, pass_fds=(request_read, reply_write, self.inputs.fd, info_write, *launch.fds),
                        cwd=self.directory,
                        env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, start_new_session=True)
                except BaseException:
                    os.close(info_read)
                    raise
                finally:
                    os.close(info_write)
                with os.fdopen(info_read, "rb") as info:
                    self.process.sandbox_pid = json.loads(info.read() or b"{}").get("child-pid")
        finally:
            launch.close()

    # -------------------------------------------------------------- talking to it
    @property
    def deadline(self) -> float:
        return self._deadline

    @deadline.setter
    def deadline(self, when: float) -> None:
        """A new deadline starts an interval of the CPU watch (fairness.py)."""
        self._deadline = when
        self.watch.start(when - time.monotonic())

    def _wait(self, fd: int, event: int) -> None:
        """Until ``fd`` is ready; past the deadline, on while the box is starved (fairness.py)."""
        poller = select.poll()  # one system call a wait (an epoll selector takes four)
        poller.register(fd, (select.POLLOUT if event == selectors.EVENT_WRITE else select.POLLIN)
                        | select.POLLERR | select.POLLHUP)
        while (remaining := self._deadline - time.monotonic()) <= 0 or not poller.poll(math.ceil(remaining * 1000)):
            if (more := self.watch.more_time()) <= 0:
                interval = self.watch.stop()  # before its processes end
                self.close()
                raise Starved(interval) if interval is not None and interval.starved() else Timeout()
            self._deadline = time.monotonic() + more

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        os.set_blocking(self._request, False)
        while view:
            self._wait(self._request, selectors.EVENT_WRITE)
            try:
                view = view[os.write(self._request, view):]
            except BrokenPipeError:
                self._ended()

    def _receive(self, count: int) -> bytes:
        chunks, remaining = [], count
        while remaining:
            self._wait(self._reply, selectors.EVENT_READ)
            chunk = os.read(self._reply, min(remaining, 1 << 20))
            if not chunk:
                self._ended()
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def _ended(self):
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        code = self.process.returncode
        self.close()
        raise ProcessEnded(describe_exit(code, self.limits))

    def request(self, header: dict, arrays: tuple[np.ndarray, ...] = (), running: Callable[[int], None] | None = None,
                cells: int = 0, most_bytes: int = 0) -> tuple[dict, list[bytes]]:
        """Send a request, return its reply (with at most one array of ``most_bytes``);
        ``running`` is told which of the ``cells`` the process is running (a load request).
        A reply that cannot be read or checked ends the process: ``replies.Malformed``."""
        self._next_id += 1
        self._send(untrusted.frame_bytes(dict(header, id=self._next_id), arrays))
        try:
            while True:
                reply, blobs = replies.read_reply(self._receive, most_bytes)
                if reply.get("id") != self._next_id:  # each request has a process of its own: no other id comes
                    raise replies.Malformed("a reply to a request that was never made")
                if "running" not in reply:
                    return reply, blobs
                index = replies.running_index(reply, cells)
                if running is not None:
                    running(index)
        except replies.Malformed:
            self.close()
            raise

    def close(self) -> None:
        """Kill the process and everything it started (its session), remove its directory.
        A sandbox's init goes first, and its PID namespace with it: bwrap, its parent, then
        reaps it and ends. Killed the other way round, the init would wait for the machine's
        PID 1 to reap it (up to seconds), and the submission's box would count it until then
        (``Box.empty``, before the kernel starts, waits for a count of 0)."""
        sandbox = getattr(self.process, "sandbox_pid", None)
        if sandbox and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(sandbox, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the session outlives its leader
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        box.close_fds((self._request, self._reply))
        self._request = self._reply = -1
        self.inputs.close()
        shutil.rmtree(self.directory, ignore_errors=True)

