"""Running student code in a bubblewrap (``bwrap``) sandbox during autograde.

Inside the sandbox the whole file system is read-only except the directories bound
read-write (the submission's own autograded folder and a private temporary
directory); there is no network (a new, empty network namespace), no capability, no
Unix socket under /run (a read-only bind would not stop ``connect``), and a private PID
namespace: when the sandbox's main process ends or bwrap is killed, every process
started inside, daemonised or not, is killed with it.

The kernel cannot use ZMQ over TCP without a network, so ``SandboxedKernelManager``
uses ZMQ's ``ipc`` transport: socket files in a private directory bound into the
sandbox at the same path.

Where bwrap is missing or does not work (an instructor's laptop), grading still runs,
with limits but unsandboxed, and says so loudly once per run.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir  # other kernels' connection files
from traitlets import CaselessStrEnum

from .zygote import SpawnError, Zygote

BWRAP = shutil.which("bwrap")
PRLIMIT = shutil.which("prlimit")
PACKAGE_DIR = Path(__file__).resolve().parent
# What a sandbox must not see of the course: the solution (source/), the other
# students' work and the grades. Paths relative to the course directory.
COURSE_PRIVATE = ("source", "release", "submitted", "autograded", "feedback", "gradebook.db")
_warned = False


def private_directory(prefix: str) -> Path:
    """A new directory for one sandbox's sockets and temporary files. All of them live in
    one parent that every sandbox hides, so no sandbox can reach another's (a Unix socket
    on a read-only path can still be connected to). Its name holds the pid of the process
    that made it (and removes it when done), for ``sweep_private_root``."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=_private_root()))


def abandoned_private_directories() -> list[Path]:
    """The private directories whose process ended without removing them (a grading worker
    killed by Ctrl-C or SIGKILL)."""
    return sorted(entry for entry in _private_root().iterdir()
                  if (owner := re.fullmatch(r".+?-(\d+)-\w{8}", entry.name))  # <prefix><pid>-<mkdtemp's 8>
                  and not Path(f"/proc/{owner[1]}").exists())


def sweep_private_root() -> None:
    """Remove the abandoned private directories; those of running processes stay."""
    for entry in abandoned_private_directories():
        shutil.rmtree(entry, ignore_errors=True)


def _private_root() -> Path:
    parent = Path(tempfile.gettempdir()) / f"maxpool-grader-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    return parent


def hidden_paths(course: Path) -> list[Path]:
    """What every sandbox of a grading run in ``course`` hides."""
    candidates = [_private_root(), Path(jupyter_runtime_dir()),
                  *(course / name for name in COURSE_PRIVATE)]
    return [path for path in candidates if path.exists()]


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """Whether bwrap is installed and can create the sandbox here."""
    if BWRAP is None:
        return False
    try:
        probe = subprocess.run(bwrap_argv([]) + ["true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def bwrap_argv(writable: list[Path], hidden: list[Path] = (), chdir: Path | None = None,
               temporary: Path | None = None) -> list[str]:
    """The argv prefix that runs a command in the sandbox."""
    argv = [BWRAP or "bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
    if os.path.isdir("/var/run") and not os.path.islink("/var/run"):
        argv += ["--tmpfs", "/var/run"]
    for path in hidden:
        argv += ["--tmpfs", str(path)] if Path(path).is_dir() else ["--ro-bind", "/dev/null", str(path)]
    for path in writable:  # after the tmpfs mounts, so they show through
        real = os.path.realpath(path)
        argv += ["--bind", real, real]
    if temporary is not None:
        argv += ["--setenv", "TMPDIR", str(temporary), "--setenv", "HOME", str(temporary)]
    if chdir is not None:
        argv += ["--chdir", os.path.realpath(chdir)]
    return argv + ["--"]


def _use_sandbox(mode: str, log: logging.Logger) -> bool:
    """Whether to sandbox; 'required' without a working bwrap is an error."""
    global _warned
    if mode == "off":
        return False
    if bwrap_works():
        return True
    if mode == "required":
        raise RuntimeError("The sandbox is required (sandbox = 'required' in nbgrader_config.py) "
                           "but bwrap is missing or does not work here: apt-get install bubblewrap.")
    if not _warned:
        _warned = True
        banner = "!" * 78
        log.warning("\n%s\nGRADING UNSANDBOXED: bwrap (Debian package bubblewrap) is missing or does not "
                    "work here.\nStudent code runs with time and memory limits, but it can read and "
                    "write your files\n(the gradebook too) and reach the network. Install bubblewrap "
                    "to grade safely.\n%s", banner, banner)
    return False


def untrusted_process_wrapper(mode: str, course: Path, log: logging.Logger,
                              warm: bool = False) -> Callable | None:
    """A function (argv, private dir) -> argv that sandboxes the out-of-process verdict,
    or None without a sandbox. It sees neither the course nor the grader's package. Its
    attribute ``warm`` asks for the process to be forked from the verdict zygote."""
    if not _use_sandbox(mode, log):
        return None
    hidden = [*hidden_paths(course), PACKAGE_DIR]

    def wrap(argv: list[str], private: Path) -> list[str]:
        return bwrap_argv([private], hidden=hidden, chdir=private, temporary=private) + argv
    wrap.warm = warm
    return wrap


def rlimits(memory_bytes: int, file_bytes: int | None = None,
            cpu_seconds: int | None = None) -> dict[str, int]:
    """The limits of a process running student code, by their names in ``resource``: its
    address space, no core dumps, and optionally file size and CPU time ({} for none)."""
    if not memory_bytes:
        return {}
    limits = {"RLIMIT_AS": int(memory_bytes), "RLIMIT_CORE": 0}
    limits.update({"RLIMIT_FSIZE": int(file_bytes)} if file_bytes else {})
    limits.update({"RLIMIT_CPU": int(cpu_seconds)} if cpu_seconds else {})
    return limits


def prlimit(limits: dict[str, int]) -> list[str]:
    """The argv prefix that runs a command with ``limits`` (see ``rlimits``); [] without the
    prlimit program (the caller then sets them itself, or goes without)."""
    if not (PRLIMIT and limits):
        return []
    return [PRLIMIT, *(f"--{name[len('RLIMIT_'):].lower()}={value}" for name, value in limits.items()), "--"]


class LimitedKernelManager(AsyncKernelManager):
    """A kernel with an address-space limit (no sandbox)."""

    memory_bytes = 0

    async def _async_pre_start_kernel(self, **kw):
        command, kw = await super()._async_pre_start_kernel(**kw)
        return prlimit(rlimits(self.memory_bytes)) + command, kw

    pre_start_kernel = _async_pre_start_kernel


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel in the sandbox: its working directory (nbgrader: the submission's
    autograded folder) and a private directory for its sockets and temporary files are
    the only writable places. With ``warm`` the kernel is forked into the sandbox by the
    worker's kernel zygote instead of starting Python (see zygote.py); the sandbox is
    the same."""

    transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)
    memory_bytes = 0
    course = Path(".")
    warm = False
    _private: str | None = None
    _warm_launch: tuple | None = None

    async def _async_pre_start_kernel(self, **kw):
        if self._private is None:  # kept across restarts
            self._private = str(private_directory("kernel-"))
            self.connection_file = os.path.join(self._private, "kernel.json")
            self.ip = os.path.join(self._private, "ipc")  # sockets <dir>/ipc-1 ... (short paths)
        command, kw = await super()._async_pre_start_kernel(**kw)
        # bwrap dies on SIGINT (and the kernel with it): interrupt with a message instead
        self.kernel_spec.interrupt_mode = "message"
        cwd = kw.get("cwd") or os.getcwd()
        prefix = bwrap_argv([Path(self._private), Path(cwd)], hidden=hidden_paths(self.course),
                            chdir=Path(cwd), temporary=Path(self._private))
        # ipykernel exits when its parent's pid is gone, and the sandbox's pid namespace
        # does not show it; 1 means "no parent to watch" (the sandbox ends the kernel with
        # its parent anyway).
        prefix[-1:-1] = ["--setenv", "JPY_PARENT_PID", "1"]
        self._warm_launch = None
        if self.warm and _warm_kernel_command(command):
            env = dict(kw.get("env") or os.environ)  # and the prefix's --setenv, as bwrap sets them
            self._warm_launch = (prefix, {"argv": command, "cwd": os.path.realpath(cwd), "env": env,
                                          "rlimits": rlimits(self.memory_bytes)})
        return prefix + prlimit(rlimits(self.memory_bytes)) + command, kw

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        if self._warm_launch is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        sandbox_argv, request = self._warm_launch
        try:
            process = _kernel_zygote().spawn(sandbox_argv, request)
        except (SpawnError, OSError) as problem:
            self.log.warning("Warm start of the kernel failed (%s); starting it cold", problem)
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        provisioner = self.provisioner  # what LocalProvisioner.launch_kernel would record
        provisioner.process, provisioner.pid, provisioner.cwd = process, process.pid, request["cwd"]
        try:
            provisioner.pgid = os.getpgid(process.pid)
        except OSError:  # ended already: jupyter_client finds the kernel dead
            provisioner.pgid = None
        self._reconcile_connection_info(provisioner.connection_info)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self._private:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    pre_start_kernel = _async_pre_start_kernel
    cleanup_resources = _async_cleanup_resources
    _launch_kernel = _async_launch_kernel


def _warm_kernel_command(argv: list[str]) -> bool:
    """Whether a kernel command is the one the kernel zygote runs (python -m ipykernel_launcher)."""
    return len(argv) >= 3 and os.path.realpath(argv[0]) == os.path.realpath(sys.executable) \
        and argv[1:3] == ["-m", "ipykernel_launcher"]


_the_kernel_zygote: Zygote | None = None


def _kernel_zygote() -> Zygote:
    """This process's kernel zygote, started on first use (again if it died)."""
    global _the_kernel_zygote
    if _the_kernel_zygote is None or not _the_kernel_zygote.alive():
        # started in an empty private directory (python -m puts it first on sys.path), with
        # the sandboxed kernels' JPY_PARENT_PID: ipykernel reads it when it is imported
        _the_kernel_zygote = Zygote(
            [sys.executable, "-m", "maxpool_grader.kernel_zygote"], cwd=str(private_directory("zygote-")),
            env=dict(os.environ, JPY_PARENT_PID="1"))
    return _the_kernel_zygote


def kernel_manager(mode: str, memory_bytes: int, course: Path, log: logging.Logger,
                   warm: bool = False) -> type[AsyncKernelManager]:
    """The kernel manager class for one notebook of ``course``: sandboxed when possible,
    forked from a warm zygote with ``warm`` (sandboxed only)."""
    base = SandboxedKernelManager if _use_sandbox(mode, log) else LimitedKernelManager
    return type(base.__name__, (base,), {"memory_bytes": memory_bytes, "course": course, "warm": warm})


if __name__ == "__main__":  # python -m maxpool_grader.sandbox: is the sandbox available?
    print("bwrap:", BWRAP or "not installed", "| works:", bwrap_works())
    sys.exit(0 if bwrap_works() else 1)
