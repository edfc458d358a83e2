"""The notebook's kernel in a sandbox of the submission's box (the grader's client of it:
kernel_client.py).

The kernel talks to the grader over ZMQ ``ipc`` sockets that it creates in the sandbox
(``/run/kernel``). The grader opens each socket through ``/proc/<sandbox>/root`` before
any student code runs, and connects through the open descriptor
(``/proc/self/fd/N``), so nothing the student's code does to those paths later can
redirect the grader to another socket. What the kernel sends is capped before it
reaches the grader's memory (kernel_client.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum, Type

from . import zygote as zygote_program
from .box import Box, Launch, close_fds, private_directory, use_sandbox
from .filesystem import KERNEL_DIR, PYTHON, WORKDIR, environment
from .kernel_client import CappedKernelClient
from .limits import prlimit, rlimits
from .zygote import SpawnError, Zygote, program_argv

NBGRADER_VARIABLES = ("NBGRADER_EXECUTION", "NBGRADER_VALIDATING")  # nbgrader sets them while it runs a notebook


def nbgrader_variables() -> dict[str, str]:
    """What nbgrader tells a notebook it runs (``NBGRADER_EXECUTION=autograde`` while it
    grades, ``validate`` and ``NBGRADER_VALIDATING=1`` while it validates): instructors test
    for them to skip slow cells, so they reach the sandboxed kernel as they would reach
    nbgrader's own; nothing else of the grader's environment does."""
    return {name: os.environ[name] for name in NBGRADER_VARIABLES if name in os.environ}


class QuickShutdown:
    """A kernel manager that sees its kernel gone within 10 ms, not jupyter_client's 100 ms
    polls (a tenth of a second of every submission's grading)."""

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))


class LimitedKernelManager(QuickShutdown, AsyncKernelManager):
    """A kernel with an address-space limit (no sandbox)."""

    memory_bytes = 0

    async def _async_pre_start_kernel(self, **kw):
        command, kw = await super()._async_pre_start_kernel(**kw)
        return prlimit(rlimits(self.memory_bytes)) + command, kw

    pre_start_kernel = _async_pre_start_kernel


class SandboxedKernelManager(QuickShutdown, AsyncKernelManager):
    """A kernel in a sandbox of the submission's box. Its ZMQ sockets are made inside the
    sandbox (KERNEL_DIR); the grader reaches them through descriptors it opened before any
    student code ran (module doc). With ``warm`` the kernel is forked into the sandbox by
    the worker's kernel zygote instead of starting Python (zygote.py); the sandbox is the
    same."""

    transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)
    memory_bytes = 0
    cpu_seconds = 0
    box: Box | None = None
    warm = False
    _private: str | None = None
    _socket_fds: list[int] = []

    client_factory = Type(CappedKernelClient, klass=AsyncKernelClient)

    async def _async_pre_start_kernel(self, **kw):
        if self._private is None:  # kept across restarts
            self._private = str(private_directory("kernel-"))
            self.connection_file = os.path.join(self._private, "kernel.json")
            self.ip = os.path.join(self._private, "ipc")  # the grader's side: links to the sockets
        command, kw = await super()._async_pre_start_kernel(**kw)
        self.kernel_spec.interrupt_mode = "message"  # bwrap dies on SIGINT (and the kernel with it)
        inside = Path(self._private) / "kernel-inside.json"
        info = json.loads(Path(self.connection_file).read_text())
        inside.write_text(json.dumps(dict(info, ip=f"{KERNEL_DIR}/ipc")))
        inside.chmod(0o644)  # the sandbox's uid reads it; its directory is the grader's alone
        command = [f"{KERNEL_DIR}/kernel.json" if arg == self.connection_file else arg for arg in command]
        if command and os.path.realpath(command[0]) == os.path.realpath(PYTHON):
            command[0] = PYTHON
        if _warm_kernel_command(command) and MEMORY_HISTORY not in command:  # a restart's command has it
            command.append(MEMORY_HISTORY)
        # ipykernel exits when its parent's pid is gone, and the sandbox's pid namespace does
        # not show it; 1 means "no parent to watch" (the sandbox ends the kernel anyway)
        kw["env"] = environment(JPY_PARENT_PID="1", **nbgrader_variables())
        kw["cwd"] = WORKDIR
        self._command = command
        return command, kw

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        box = self.box
        private = Path(self._private)
        launch = box.sandbox(private, [(str(private / "kernel-inside.json"), f"{KERNEL_DIR}/kernel.json")],
                             kernel=True)
        limits = rlimits(self.memory_bytes, None, self.cpu_seconds or None)
        process = None
        try:
            if self.warm and _warm_kernel_command(kernel_cmd):
                request = dict(box.warm_request(limits), argv=kernel_cmd, cwd=WORKDIR, env=kw["env"])
                try:
                    process = kernel_zygote().spawn(launch.argv, request, bwrap_fds=tuple(launch.fds))
                except (SpawnError, OSError) as problem:
                    self.log.warning("Warm start of the kernel failed (%s); starting it cold", problem)
            if process is None:
                process = _start_cold(launch, box.command(limits) + _safe_path(kernel_cmd), kw["env"])
        finally:
            launch.close()
        provisioner = self.provisioner  # what LocalProvisioner.launch_kernel would record
        provisioner.process, provisioner.pid, provisioner.cwd = process, process.pid, WORKDIR
        try:
            provisioner.pgid = os.getpgid(process.pid)
        except OSError:  # ended already: jupyter_client finds the kernel dead
            provisioner.pgid = None
        await self._link_sockets(process)
        self._reconcile_connection_info(provisioner.connection_info)

    async def _link_sockets(self, process) -> None:
        """Open each socket the kernel made inside its sandbox, and point the grader's
        connection paths at the open descriptors: a path the student's code changes later
        can no longer redirect the grader."""
        info = json.loads(Path(self.connection_file).read_text())
        ports = [info[name] for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
        root = f"/proc/{process.sandbox_pid}/root"
        deadline = time.monotonic() + 60
        self._socket_fds = []
        for port in ports:
            inside = f"{root}{KERNEL_DIR}/ipc-{port}"
            while True:
                try:
                    fd = os.open(inside, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
                except OSError:
                    fd = None
                if fd is not None:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        break
                    os.close(fd)
                if process.poll() is not None or time.monotonic() > deadline:
                    return  # the kernel died or never came up: jupyter_client reports it
                await asyncio.sleep(0.01)
            self._socket_fds.append(fd)
            link = f"{self.ip}-{port}"
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(f"/proc/{os.getpid()}/fd/{fd}", link)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        close_fds(self._socket_fds)
        self._socket_fds = []
        if not restart and self._private:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    pre_start_kernel = _async_pre_start_kernel
    cleanup_resources = _async_cleanup_resources
    _launch_kernel = _async_launch_kernel


def _start_cold(launch: Launch, command: list[str], env: dict) -> subprocess.Popen:
    """Start bwrap with ``command``; the process knows its sandbox's pid (``sandbox_pid``)."""
    info_read, info_write = os.pipe()
    argv = launch.argv[:-1] + ["--info-fd", str(info_write), "--"] + command
    try:
        process = subprocess.Popen(argv, pass_fds=(info_write, *launch.fds), env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.close(info_write)
    with os.fdopen(info_read, "rb") as info:
        process.sandbox_pid = json.loads(info.read() or b"{}").get("child-pid", 0)
    return process


# ``python -m ipykernel_launcher`` puts the working directory (the student's folder) first on
# sys.path, so a file there named ``ipykernel_launcher.py``, ``pathlib.py`` or ``numpy.py`` ran
# instead of the module, and a cold kernel failed where a warm one (whose zygote imported
# them before the fork) did not. A cold kernel starts as a warm one does: its folder off the
# path, the zygote's imports done, then the launcher; IPython puts the folder back (after the
# standard library) once the kernel is up, so the student's own modules import, as in Jupyter.
COLD_START = ("import sys; del sys.path[0]; import numpy, numpy.random; import runpy; "
              "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)")


# The box refuses every file lock (seccomp.py): IPython's history database, SQLite on disk,
# would wait out SQLite's busy timeout twice before IPython fell back to memory by itself.
MEMORY_HISTORY = "--HistoryManager.hist_file=:memory:"


def _safe_path(argv: list[str]) -> list[str]:
    """``python -m ipykernel_launcher ARGS`` as ``python -c COLD_START ARGS``."""
    if _warm_kernel_command(argv):
        return [argv[0], "-c", COLD_START, *argv[3:]]
    return argv


def _warm_kernel_command(argv: list[str]) -> bool:
    """Whether a kernel command is the one the kernel zygote runs (python -m ipykernel_launcher)."""
    return len(argv) >= 3 and os.path.realpath(argv[0]) == os.path.realpath(sys.executable) \
        and argv[1:3] == ["-m", "ipykernel_launcher"]


_the_kernel_zygote: Zygote | None = None
# the zygote's program: a file to copy and run, never imported here (it imports ipykernel, and
# ``zygote`` as a module of its own folder)
KERNEL_ZYGOTE_PROGRAM = Path(__file__).with_name("kernel_zygote.py")


def kernel_zygote() -> Zygote:
    """This process's kernel zygote, started on first use (again if it died)."""
    global _the_kernel_zygote
    if _the_kernel_zygote is None or not _the_kernel_zygote.alive():
        _the_kernel_zygote = start_kernel_zygote()
    return _the_kernel_zygote


def start_kernel_zygote(cells: list[str] = (), holders: int = 1) -> Zygote:
    """A new kernel zygote: a private copy of its program (kernel_zygote.py, and zygote.py
    beside it: never the grader package, which no kernel may hold) started in its private
    directory, with the sandboxed kernels' environment (ipykernel reads some of it when
    imported); ``cells``: the released notebook's code cells, which every kernel will run,
    read once by the zygote (kernel_zygote.remember_pure_steps); ``holders``: the processes
    that share it (Zygote)."""
    directory = private_directory("zygote-")
    for program in (KERNEL_ZYGOTE_PROGRAM, Path(zygote_program.__file__)):
        shutil.copyfile(program, directory / program.name)
    if cells:
        (directory / "warm-cells.json").write_text(json.dumps(list(cells)))
    return Zygote(program_argv(PYTHON, "kernel_zygote.py"), cwd=str(directory),
                  env=dict(environment(home=str(directory), JPY_PARENT_PID="1"), TMPDIR=str(directory)),
                  holders=holders)


def adopt_kernel_zygote(zygote: Zygote, index: int = 0) -> None:
    """Fork this process's kernels from ``zygote``, started by the process this one was
    forked from, through its socket ``index`` (Zygote.adopt)."""
    global _the_kernel_zygote
    zygote.adopt(index)
    _the_kernel_zygote = zygote


def kernel_manager(mode: str, memory_bytes: int, log: logging.Logger, box: Box | None = None,
                   warm: bool = False, cpu_seconds: int = 0) -> type[AsyncKernelManager]:
    """The kernel manager class for one notebook: sandboxed in ``box`` when possible,
    forked from a warm zygote with ``warm`` (sandboxed only)."""
    if not use_sandbox(mode, log):
        return type("LimitedKernelManager", (LimitedKernelManager,), {"memory_bytes": memory_bytes})
    return type("SandboxedKernelManager", (SandboxedKernelManager,), {
        "memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds, "warm": warm,
        "box": box or Box(mode=mode, log=log)})
