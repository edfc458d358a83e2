"""The out-of-process verdict: the student's solution runs in a fresh, limited process;
the comparison with the reference and the score are computed here, in the grader.

Nothing the student's code does can reach this process: it runs the solution cell's
source in ``untrusted.py`` (a separate Python, in the sandbox when one is available,
with a memory cap and no output), receives each test input as ``.npy`` bytes and sends
back the numbers its function returned, which are read without unpickling. The
reports are built by the same code as in the notebook (``checks.explain``), so a
student reads the same message whichever side found the mistake.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
# imported here, not in as_python: verdicts run in a thread, and an import racing the
# main thread's imports can fail with KeyError (seen: KeyError 'IPython')
from IPython.core.inputtransformer2 import TransformerManager

from . import sandbox, untrusted, zygote
from ..checks import GRADED_CHECKS, HiddenCheck, _report, explain, graded_failure, passed_message
from ..diagnosis import FUNCTION, compile_problems, explain_missing
from .shortcuts import find_shortcuts, shortcut_message
from ..student_call import (CheckFailed, StudentError, line_of_code, not_an_array_message,
                           not_numbers_message, raised_message)


@dataclass(frozen=True)
class Limits:
    """Time and memory limits of the out-of-process verdict (see nbgrader_config.py)."""

    check_seconds: float = 5.0  # the graded inputs of one test
    search_seconds: float = 5.0  # looking for the smallest failing input of one test
    load_seconds: float = 10.0  # running the solution cell (imports, definitions)
    total_seconds: float = 40.0  # everything, for one notebook
    memory_bytes: int = 2 << 30  # RLIMIT_AS of the untrusted process
    file_bytes: int = 16 << 20  # RLIMIT_FSIZE: no disk bombs


@dataclass(frozen=True)
class Verdict:
    grade_id: str
    passed: bool
    message: str  # the report (failed) or the "Passed: ..." line
    # why it failed, for the class report: "wrong" (a wrong dx or an exception), "timeout",
    # "crash", "not defined" (the solution cell did not give a function), "shortcut"
    kind: str = "passed"
    bugs: tuple[str, ...] = ()  # the catalogue mistakes its report names as likely


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


def notebook_cells(solution: str, helpers: str = "") -> list[Cell]:
    """The cells of a notebook whose only code is the provided helpers and the solution."""
    return [Cell(helpers, "provided"), Cell(solution, "solution")]


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


_the_verdict_zygote: zygote.Zygote | None = None


def _verdict_zygote() -> zygote.Zygote:
    """This process's verdict zygote (started on first use, again if it died): untrusted.py
    with NumPy imported, run like the cold verdict process (``python -I``, a private copy
    of the script, no grader package on its path, the sandbox's clean environment)."""
    global _the_verdict_zygote
    if _the_verdict_zygote is None or not _the_verdict_zygote.alive():
        directory = sandbox.private_directory("zygote-")
        for module in (untrusted, zygote):
            shutil.copyfile(module.__file__, directory / Path(module.__file__).name)
        _the_verdict_zygote = zygote.Zygote(
            [sandbox.PYTHON, "-I", str(directory / "untrusted.py"), "--zygote"],
            env=dict(sandbox.environment(home=str(directory)), TMPDIR=str(directory)), cwd=str(directory))
    return _the_verdict_zygote


class SolutionProcess:
    """One untrusted Python process holding the student's solution: in a sandbox of the
    submission's box (``wrap``, see sandbox.untrusted_process_wrapper), or unsandboxed
    with limits when ``wrap`` is None."""

    def __init__(self, limits: Limits, wrap: Callable | None = None):
        self.limits = limits
        self.directory = sandbox.private_directory("untrusted-")
        request_read, self._request = os.pipe()
        self._reply, reply_write = os.pipe()
        rlimits = sandbox.rlimits(limits.memory_bytes, limits.file_bytes, int(limits.total_seconds) + 5)
        self.process = None
        script = self.directory / "untrusted.py"
        shutil.copyfile(untrusted.__file__, script)
        if wrap is None:
            self.process = subprocess.Popen(
                sandbox.prlimit(rlimits) + [sys.executable, "-I", str(script), str(request_read), str(reply_write)],
                pass_fds=(request_read, reply_write), cwd=self.directory,
                env=dict(sandbox.environment(home=str(self.directory)), TMPDIR=str(self.directory)),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=None if sandbox.PRLIMIT else lambda: zygote.set_rlimits(rlimits))
        else:
            self._start_sandboxed(wrap, script, rlimits, request_read, reply_write)
        os.close(request_read)
        os.close(reply_write)
        self._next_id = 0
        self.deadline = time.monotonic() + limits.load_seconds

    def _start_sandboxed(self, wrap: Callable, script: Path, rlimits: dict, request_read: int,
                         reply_write: int) -> None:
        box, environment = wrap.box, sandbox.environment()
        launch = wrap(self.directory, script)
        try:
            if wrap.warm:  # forked into the sandbox by the verdict zygote
                try:
                    self.process = _verdict_zygote().spawn(
                        launch.argv, dict(box.warm_request(rlimits), cwd=sandbox.WORKDIR, env=environment,
                                          quiet=True),
                        fds=(request_read, reply_write), bwrap_fds=tuple(launch.fds))
                except (zygote.SpawnError, OSError) as problem:
                    logging.getLogger(__name__).warning(
                        "Warm start of the verdict process failed (%s); starting it cold", problem)
            if self.process is None:
                # the limits by prlimit: no preexec_fn, so it is safe from the verdict thread
                argv = launch.argv + box.command(rlimits) + [
                    sandbox.PYTHON, "-I", f"{sandbox.VERDICT_DIR}/{script.name}", str(request_read),
                    str(reply_write)]
                self.process = subprocess.Popen(
                    argv, pass_fds=(request_read, reply_write, *launch.fds), cwd=self.directory,
                    env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            launch.close()

    # -------------------------------------------------------------- talking to it
    def _wait(self, fd: int, event: int) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, event)
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                self.close()
                raise Timeout()

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

    def request(self, header: dict, arrays: tuple[np.ndarray, ...] = (),
                running: Callable[[int], None] | None = None) -> tuple[dict, list[bytes]]:
        """Send a request, return its reply; ``running`` is told which cell the process is
        running (a load request)."""
        self._next_id += 1
        self._send(untrusted.frame_bytes(dict(header, id=self._next_id), arrays))
        while True:  # replies to earlier (abandoned) requests cannot come: each gets its own process
            try:
                reply, blobs = untrusted.read_frame(self._receive)
            except ValueError:
                self.close()
                raise ProcessEnded("sent a malformed reply") from None
            if reply.get("id") != self._next_id:
                continue
            if "running" in reply:
                if running is not None and isinstance(reply["running"], int):
                    running(reply["running"])
                continue
            return reply, blobs

    def close(self) -> None:
        """Kill the process and everything it started (its session), remove its directory."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the session outlives its leader
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._request, self._reply):
            try:
                os.close(fd)
            except OSError:
                pass
        self._request = self._reply = -1
        shutil.rmtree(self.directory, ignore_errors=True)


# ------------------------------------------------------------------ the student's function, remote
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
    function makes to its inputs are made to the arrays passed here."""

    def __init__(self, process: SolutionProcess, parameters, cells: list[Cell]):
        self.process, self.cells = process, cells
        signature = _signature(parameters) if parameters is not None else None
        if signature is not None:
            self.__signature__ = signature
        self.__name__ = FUNCTION

    def __call__(self, d_output, x, pool_size, stride=None):
        header = {"op": "call", "pool_size": untrusted.encode_size(pool_size),
                  "stride": untrusted.encode_size(stride)}
        reply, blobs = self.process.request(header, (np.asarray(d_output), np.asarray(x)))
        if "raised" in reply:
            error = reply["raised"]
            exception = _rebuilt(error)
            raise StudentError(raised_message(exception, _where(error, self.cells)), exception)
        if "not_array" in reply:
            raise CheckFailed(not_an_array_message(str(reply["not_array"])[:100]))
        if "too_big" in reply:
            raise CheckFailed(f"dx has shape {tuple(reply['too_big'])[:8]}, but it must have x's "
                              f"shape {np.shape(x)}.")
        if "bad_dtype" in reply or len(blobs) != 3:
            raise CheckFailed(not_numbers_message(str(reply.get("bad_dtype", "unknown"))[:100]))
        try:
            dx, x_after, d_output_after = (untrusted.array_from_bytes(blob) for blob in blobs)
        except ValueError as problem:
            raise CheckFailed(not_numbers_message(str(problem)[:100])) from None
        for given, after in ((x, x_after), (d_output, d_output_after)):
            if isinstance(given, np.ndarray) and given.shape == after.shape and given.flags.writeable:
                np.copyto(given, after, casting="unsafe")
        return dx


def _where(error: dict, cells: list[Cell]) -> str:
    """Where in the notebook an error of the untrusted process was raised, for the student:
    the line, and the cell when the notebook has more than the solution."""
    if "line" not in error:
        return ""
    cell = error.get("cell")
    if not isinstance(cell, int) or not 0 <= cell < len(cells) or cells[cell].kind == "solution":
        return line_of_code(error["line"], error.get("text", ""))
    return f"\n  at line {error['line']} of {cells[cell].describe()}: {str(error.get('text', '')).strip()}"


def _cell_error(error: dict, cells: list[Cell]) -> str:
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


# ------------------------------------------------------------------ verdicts
@dataclass
class _Session:
    """The untrusted process of one notebook's verdicts, restarted after a timeout or crash."""

    cells: list[Cell]
    limits: Limits
    wrap: Callable | None
    started: float = field(default_factory=time.monotonic)
    process: SolutionProcess | None = None
    function: RemoteFunction | None = None
    load_failure: str = "not defined"  # or "timeout", "crash"
    skipped: dict[int, str] = field(default_factory=dict)  # student cells left out: why
    notes: list[str] = field(default_factory=list)  # what went wrong running the cells

    def budget_left(self) -> float:
        return self.limits.total_seconds - (time.monotonic() - self.started)

    def load(self) -> str | None:
        """Start a process and run the notebook's cells in it; None when max_pool_backward
        is ready, else why not (for the student). A cell the student added that does not
        finish or ends the process is left out, and the cells run again without it (a
        kernel would interrupt it and go on)."""
        while True:
            problem = self._load_once()
            if problem is not _AGAIN:
                return problem

    def _load_once(self):
        self.close()
        self.process = SolutionProcess(self.limits, self.wrap)
        self.process.deadline = time.monotonic() + min(self.limits.load_seconds, max(self.budget_left(), 0))
        running: list[int] = []
        request = {"op": "load", "cells": [cell.source for cell in self.cells], "skip": sorted(self.skipped)}
        try:
            reply, _ = self.process.request(request, running=running.append)
        except (Timeout, ProcessEnded) as stopped:
            cell = running[-1] if running else None
            timeout = isinstance(stopped, Timeout)
            if (cell is not None and self.cells[cell].kind == "student" and cell not in self.skipped
                    and self.budget_left() > 0):
                self.skipped[cell] = (f"did not finish within {self.limits.load_seconds:g} s" if timeout
                                      else str(stopped))
                return _AGAIN
            self.load_failure = "timeout" if timeout else "crash"
            if timeout:
                return (f"Your solution cell did not finish running within {self.limits.load_seconds:g} s "
                        f"(is there an endless loop outside the function?), so {FUNCTION} could not be "
                        "tested.")
            return (f"Running your solution cell {stopped} before {FUNCTION} was defined, so it could "
                    "not be tested.")
        self.load_failure = "not defined"
        errors = reply.get("cell_errors") if isinstance(reply.get("cell_errors"), list) else []
        self.notes = [f"{self.cells[cell].describe(capital=True)} {why}, so it was left out."
                      for cell, why in sorted(self.skipped.items())]
        self.notes += [_cell_error(error, self.cells) for error in errors if isinstance(error, dict)]
        if reply.get("missing"):
            return self._with_notes(explain_missing([cell.source for cell in self.cells
                                                     if cell.kind != "provided"]))
        if "not_callable" in reply:
            return self._with_notes(f"{FUNCTION} is not a function (it is {str(reply['not_callable'])[:100]}).")
        self.function = RemoteFunction(self.process, reply.get("parameters"), self.cells)
        return None

    def source(self) -> str:
        """The student's code (not the provided cells), for the diagnosis."""
        return "\n\n".join(cell.source for cell in self.cells if cell.kind != "provided")

    def _with_notes(self, text: str) -> str:
        """``text`` and what went wrong when the notebook's cells ran."""
        if not self.notes:
            return text
        return (text + "\n\nWhen the grader ran your notebook's cells from the top (as a fresh kernel "
                "does):\n" + "\n".join(f"- {note}" for note in self.notes)).lstrip("\n")

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
        self.process = self.function = None


_AGAIN = object()  # _Session._load_once: run the cells again, without the one that stopped


def _stopped(check: HiddenCheck, limits: Limits, what: str, failure: BaseException,
             seconds: float) -> str:
    if isinstance(failure, Timeout):
        # the limit that stopped it, in words that do not depend on how busy the machine was
        limit = (f"within {limits.check_seconds:g} s" if seconds >= limits.check_seconds else
                 f"before the {limits.total_seconds:g} s for all tests of one notebook ran out")
        body = (f"{FUNCTION} did not return {limit} on {what} (an endless loop, or "
                f"far too slow: a correct solution needs well under a second).")
    else:
        body = f"The process running {FUNCTION} {failure} while it was running on {what}."
    return _report(check, body + " The test gives no points when it cannot finish.")


def verdict_of(check: HiddenCheck, session: _Session) -> Verdict:
    """Run one check against the remote function, within its time limits."""
    limits = session.limits
    if session.budget_left() <= 0:
        return Verdict(check.grade_id, False, _report(check, (
            f"Not run: your function used up the {limits.total_seconds:g} s that grading one "
            "notebook may take (see the tests above that timed out).")), "timeout")
    if session.function is None:
        problem = session.load()
        if problem:
            return Verdict(check.grade_id, False, _report(check, problem), session.load_failure)
    process, function = session.process, session.function
    seconds = min(limits.check_seconds, session.budget_left())
    process.deadline = time.monotonic() + seconds
    try:
        failed = graded_failure(check, function, [])
    except (Timeout, ProcessEnded) as failure:
        session.close()
        return Verdict(check.grade_id, False, _stopped(check, limits, "this test's inputs", failure, seconds),
                       "timeout" if isinstance(failure, Timeout) else "crash")
    if failed is None:
        return Verdict(check.grade_id, True, passed_message(check))
    if isinstance(failed, str):
        return Verdict(check.grade_id, False, _report(check, failed), "wrong")
    process.deadline = time.monotonic() + min(limits.search_seconds, max(session.budget_left(), 0))
    named: list[str] = []
    # what went wrong running the cells matters when a name is missing (the cell that should
    # have defined it may have stopped early); else the notebook's own outputs show it
    missing_name = isinstance(failed.error, StudentError) and type(failed.error.exception) is NameError
    after = session._with_notes("") if missing_name else ""
    try:
        message = explain(check, function, failed, named, after=after, source=session.source())
    except (Timeout, ProcessEnded):  # the search for a smaller input ran out: report the graded one
        session.close()
        named.clear()
        message = explain(check, None, failed, named, after=after, source=session.source())
    return Verdict(check.grade_id, False, message, "wrong", tuple(named))


def as_python(source: str) -> str:
    """The cell as the kernel runs it: IPython syntax (``%magic``, ``!command``) turned into
    ``get_ipython()`` calls, line for line. Source that IPython cannot transform is kept."""
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001  a syntax problem: compile_problems explains it
        return source


def verdicts(solution: str | list[Cell], helpers: str = "", grade_ids=None, limits: Limits = Limits(),
             wrap: Callable | None = None) -> dict[str, Verdict]:
    """The out-of-process verdict of each graded check on the notebook's code: ``solution``
    is its code cells up to the tests, in order (``Cell``), or the solution cell's source
    alone (run after the provided ``helpers`` cell)."""
    cells = notebook_cells(solution, helpers) if isinstance(solution, str) else list(solution)
    cells = [replace(cell, source=as_python(cell.source)) for cell in cells]
    checks = [GRADED_CHECKS[grade_id] for grade_id in (grade_ids or GRADED_CHECKS)]

    def everywhere(body: str, kind: str) -> dict[str, Verdict]:
        return {check.grade_id: Verdict(check.grade_id, False, _report(check, body), kind) for check in checks}

    shortcuts = [replace(shortcut, cell="" if cell.kind == "solution" else cell.describe())
                 for cell in cells if cell.kind != "provided" for shortcut in find_shortcuts(cell.source)]
    if shortcuts:
        return everywhere(shortcut_message(shortcuts), "shortcut")
    solution_cell = next((cell.source for cell in cells if cell.kind == "solution"), "")
    if compile_problems(solution_cell):
        return everywhere(explain_missing([solution_cell]), "not defined")
    session = _Session(cells, limits, wrap)
    try:
        problem = session.load()
        if problem:
            return everywhere(problem, session.load_failure)
        return {check.grade_id: _guarded(check, session) for check in checks}
    finally:
        session.close()


def _guarded(check: HiddenCheck, session: _Session) -> Verdict:
    """verdict_of, except that a failure of the grader's own code on strange output fails
    the test with a message (and a loud log line) instead of losing the submission."""
    try:
        return verdict_of(check, session)
    except Exception as problem:  # noqa: BLE001
        logging.getLogger(__name__).error("grader error in %s: %r", check.grade_id, problem, exc_info=True)
        session.close()
        return Verdict(check.grade_id, False, _report(check, (
            f"The grader could not evaluate what your function returned ({type(problem).__name__}: "
            f"{str(problem)[:200]}). Make sure it returns a float array of x's shape; if it does, "
            "tell your instructor.")), "grader error")
