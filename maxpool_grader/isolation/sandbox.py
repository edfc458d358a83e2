"""The sealed box: where a submission's code runs during autograde.

One ``Box`` per submission holds every process that runs the student's code: the
notebook's kernel and each out-of-process verdict process, each in its own bubblewrap
(``bwrap``) sandbox:

* **Nothing of the course.** The file system is an allow-list, read-only: the system's
  programs and libraries (``/usr``, a minimal ``/etc``), the Python installation and its
  site-packages, and for the kernel the grader package (its hidden test cells call it).
  No home directory, no ``/tmp`` of the host, no course or neighbouring folder, no
  gradebook. Writable is only the sandbox's own scratch folder ``/scratch``, a fresh
  size-limited tmpfs that starts with a copy of the submission's regular files
  (symbolic links are never copied nor followed) and vanishes with the sandbox: nothing
  the code writes comes back.
* **No privilege.** Run by root, the sandbox drops to an unprivileged uid
  (``STUDENT_UID``, "nobody") and every capability; run by a normal user, the code keeps
  that user's uid inside a user namespace, with no capability. No network (an empty
  network namespace), its own PID namespace: killing the sandbox kills everything in it.
* **A clean environment.** Only ``environment()``'s variables, nothing of the grader's.
* **Caps for the submission as a whole** (``Caps``): one cgroup (cgroups.py) holds all
  its sandboxes: memory (no swap) and processes for all of them together. Per process
  there are rlimits too (address space, CPU time, file size). Where no cgroup can be
  made, the processes cap falls back to RLIMIT_NPROC and memory is capped per process
  only, and the run says so loudly; ``sandbox = "required"`` refuses to grade then.

The kernel talks to the grader over ZMQ ``ipc`` sockets that it creates in the sandbox
(``/run/kernel``). The grader opens each socket through ``/proc/<sandbox>/root`` before
any student code runs, and connects through the open descriptor
(``/proc/self/fd/N``), so nothing the student's code does to those paths later can
redirect the grader to another socket.

Where bwrap is missing or does not work (an instructor's laptop), grading still runs,
with limits but unsandboxed, and says so loudly once per run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Callable

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum, Type, default
from zmq.utils.monitor import parse_monitor_message

from . import cgroups
from .zygote import SpawnError, Zygote

BWRAP = shutil.which("bwrap")
PRLIMIT = shutil.which("prlimit")
SETPRIV = shutil.which("setpriv")
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the grader package, all of it
STUDENT_UID = STUDENT_GID = 65534  # "nobody": the student's code when grading runs as root
AS_ROOT = os.geteuid() == 0
# The interpreter by an absolute path without "..": a sandbox does not have the folder a
# Python started as tests/../.venv/bin/python was named from.
PYTHON = os.path.abspath(sys.executable)

# Inside every sandbox
SCRATCH = "/scratch"  # the only writable place (a size-limited tmpfs)
WORKDIR = SCRATCH + "/submission"  # working directory: a copy of the submission's files
HOME = SCRATCH + "/home"
TMPDIR = SCRATCH + "/tmp"  # /tmp points here
KERNEL_DIR = "/run/kernel"  # the kernel's connection file and sockets
VERDICT_DIR = "/run/verdict"  # the verdict process's program
# What the grader takes from a kernel: a message at most MAX_MESSAGE_BYTES (a bigger one
# drops the connection: RevivingChannel), at most QUEUED_MESSAGES of them waiting in a
# channel (a kernel faster than the grader is held back; the iopub channel then loses
# output, which can only cost the student). So a channel holds at most 256 MiB.
MAX_MESSAGE_BYTES = 4 << 20
QUEUED_MESSAGES = 64

# The little of /etc a Python process needs (dynamic linker, time zone); passwd and group
# are written for the sandbox.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "nsswitch.conf", "fonts")
_warned: set[str] = set()


@dataclass(frozen=True)
class Caps:
    """The caps of one submission (see nbgrader_config.py, ``SealedBox``)."""

    memory_bytes: int = 2 << 30  # all its processes together, no swap
    processes: int = 256  # all its processes together
    scratch_bytes: int = 256 << 20  # /scratch of each sandbox
    shm_bytes: int = 16 << 20  # /dev/shm of each sandbox
    output_bytes: int = 1 << 20  # what one cell of the notebook may print


# ---------------------------------------------------------------- private directories
def private_directory(prefix: str) -> Path:
    """A new directory, on the grader's side, for one sandbox's connection file and
    program copy. All of them live in one 0700 parent; no sandbox mounts any of them
    (only single files are bound in, read-only). Its name holds the pid of the process
    that made it (and removes it when done), for ``sweep_private_root``."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=private_root()))


def private_root() -> Path:
    """This user's parent of private directories, under the temporary directory
    (``TMPDIR``: give each grading run its own to keep them apart)."""
    parent = Path(tempfile.gettempdir()) / f"maxpool-grader-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    return parent


def abandoned_private_directories() -> list[Path]:
    """The private directories whose process ended without removing them (a grading worker
    killed by Ctrl-C or SIGKILL)."""
    return sorted(entry for entry in private_root().iterdir()
                  if (owner := re.fullmatch(r".+?-(\d+)-\w{8}", entry.name))  # <prefix><pid>-<mkdtemp's 8>
                  and not Path(f"/proc/{owner[1]}").exists())


def sweep_private_root() -> None:
    """Remove the abandoned private directories; those of running processes stay."""
    for entry in abandoned_private_directories():
        shutil.rmtree(entry, ignore_errors=True)


# ---------------------------------------------------------------- is there a sandbox?
@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """Whether bwrap is installed and can create the sandbox here."""
    if BWRAP is None or (AS_ROOT and SETPRIV is None):
        return False
    try:
        probe = subprocess.run(_bwrap_base() + _system_binds(False) + ["--", "true"], capture_output=True,
                               timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _warn_once(key: str, log: logging.Logger, text: str) -> None:
    if key not in _warned:
        _warned.add(key)
        banner = "!" * 78
        log.warning("\n%s\n%s\n%s", banner, text, banner)


def use_sandbox(mode: str, log: logging.Logger) -> bool:
    """Whether to sandbox; 'required' without a working bwrap is an error."""
    if mode == "off":
        return False
    if bwrap_works():
        return True
    if mode == "required":
        raise RuntimeError("The sandbox is required (sandbox = 'required' in nbgrader_config.py) "
                           "but bwrap is missing or does not work here: apt-get install bubblewrap.")
    _warn_once("bwrap", log, (
        "GRADING UNSANDBOXED: bwrap (Debian package bubblewrap) is missing or does not work here.\n"
        "Student code runs with time and memory limits, but it can read and write your files\n"
        "(the gradebook too) and reach the network. Install bubblewrap to grade safely."))
    return False


# ---------------------------------------------------------------- the box
@dataclass
class Launch:
    """The start of a sandboxed command line, up to bwrap's ``--``, and the descriptors it
    needs passed (the copies of the submission's files, read by bwrap)."""

    argv: list[str]
    fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


class Box:
    """One submission's sandboxes share its cgroup, its caps and its files (module doc)."""

    def __init__(self, caps: Caps = Caps(), files_from: Path | None = None, mode: str = "auto",
                 log: logging.Logger | None = None):
        self.caps = caps
        self.log = log or logging.getLogger(__name__)
        self.files = submission_files(files_from) if files_from else []
        self.cgroup = cgroups.open_cgroup(caps.memory_bytes, caps.processes)
        if self.cgroup is None:
            if mode == "required":
                raise RuntimeError(
                    "The sandbox is required (sandbox = 'required' in nbgrader_config.py), but no "
                    f"cgroup can be made here for the caps of a submission ({cgroups.why_unavailable()}). "
                    "See README.md, 'Grading: what is guaranteed'.")
            _warn_once("cgroup", self.log, without_cgroup_warning(caps))

    # ---------------------------------------------------------------- starting a sandbox
    def sandbox(self, private: Path, files: list[tuple[str, str]] = (), kernel: bool = False) -> Launch:
        """bwrap's argv, up to its ``--``, for one sandbox of this submission; ``files`` are
        (host file, path inside) bound read-only (a connection file, a program)."""
        launch = Launch(self.cgroup.enter_argv() if self.cgroup else [])
        argv = launch.argv
        argv += _bwrap_base() + _system_binds(kernel)
        argv += ["--perms", "1777", "--size", str(self.caps.scratch_bytes), "--tmpfs", SCRATCH]
        for directory in (WORKDIR, HOME, TMPDIR):
            argv += ["--perms", "1777", "--dir", directory]
        if not any(tree == "/tmp" or tree.startswith("/tmp/") for tree in _read_only_trees(kernel)):
            argv += ["--symlink", TMPDIR, "/tmp"]  # else Python lives under /tmp: TMPDIR says where
        argv += ["--perms", "1777", "--size", str(self.caps.shm_bytes), "--tmpfs", "/dev/shm"]
        for relative, host in self.files:
            try:
                fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
            parent = os.path.dirname(relative)
            if parent:
                argv += ["--perms", "1777", "--dir", f"{WORKDIR}/{parent}"]
            launch.fds.append(fd)
            argv += ["--perms", "0666", "--file", str(fd), f"{WORKDIR}/{relative}"]
        if kernel:
            argv += ["--perms", "1777", "--size", str(1 << 20), "--tmpfs", KERNEL_DIR]
        for host, inside in files:
            if not os.path.dirname(inside).startswith(KERNEL_DIR):  # a tmpfs of its own, searchable
                argv += ["--perms", "0755", "--dir", os.path.dirname(inside)]
            argv += ["--ro-bind", host, inside]
        argv += ["--ro-bind", str(_identity_file(private, "passwd")), "/etc/passwd",
                 "--ro-bind", str(_identity_file(private, "group")), "/etc/group"]
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKDIR, "--"]
        return launch

    def command(self, rlimits: dict[str, int]) -> list[str]:
        """What runs a command inside the sandbox (after bwrap's ``--``): its rlimits, and as
        root the drop to the unprivileged uid without any capability."""
        rlimits = dict(rlimits)
        if self.cgroup is None:
            rlimits["RLIMIT_NPROC"] = self.caps.processes
        prefix = prlimit(rlimits)
        if AS_ROOT:
            prefix += [SETPRIV or "setpriv", f"--reuid={STUDENT_UID}", f"--regid={STUDENT_GID}",
                       "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return prefix

    def warm_request(self, rlimits: dict[str, int]) -> dict:
        """The same for a process forked by a zygote (zygote.py does what ``command`` says)."""
        rlimits = dict(rlimits)
        if self.cgroup is None:
            rlimits["RLIMIT_NPROC"] = self.caps.processes
        request = {"rlimits": rlimits, "cgroup_procs": self.cgroup.enter_files() if self.cgroup else []}
        if AS_ROOT:
            request.update(uid=STUDENT_UID, gid=STUDENT_GID)
        return request

    # ---------------------------------------------------------------- after grading
    def hits(self) -> list[str]:
        """The caps the submission ran into, in words for the student."""
        if self.cgroup is None:
            return []
        events = self.cgroup.events()
        found = []
        if events.get("oom_kill"):
            found.append(f"used more than {_size(self.caps.memory_bytes)} of memory (all its processes "
                         "together), and a process was stopped")
        if events.get("pids_max"):
            found.append(f"tried to start more than {self.caps.processes} processes")
        return found

    def close(self) -> None:
        """Kill whatever is left of the submission, remove its cgroup."""
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None


def without_cgroup_warning(caps: Caps = Caps()) -> str:
    return ("GRADING WITHOUT A CGROUP: " + cgroups.why_unavailable() + ".\n"
            f"A submission's processes are capped by RLIMIT_NPROC ({caps.processes}) and its memory\n"
            "per process only. Grade as root, or in a delegated cgroup (README.md) for the full caps.")


def _size(count: int) -> str:
    return f"{count >> 30} GiB" if count >= 1 << 30 and not count % (1 << 30) else f"{count >> 20} MiB"


def disk_hit(text: str, caps: Caps) -> str | None:
    """The words for a full scratch folder, when ``text`` (a cell's output) shows one."""
    if "No space left on device" in text or "[Errno 28]" in text:
        return (f"wrote more than {_size(caps.scratch_bytes)} to its scratch folder "
                "(writes failed with 'No space left on device')")
    return None


def submission_files(folder: Path, most: int = 200, total: int = 64 << 20) -> list[tuple[str, str]]:
    """(path inside the submission, host path) of the regular files of ``folder``: symbolic
    links are skipped, not followed, and so are folders reached through them."""
    found, size = [], 0
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return found
    for directory, subdirectories, names in os.walk(folder, followlinks=False):
        subdirectories[:] = sorted(name for name in subdirectories
                                   if not os.path.islink(os.path.join(directory, name)))
        for name in sorted(names):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or len(found) >= most or size + info.st_size > total:
                continue
            size += info.st_size
            found.append((os.path.relpath(path, folder), path))
    return found


def _identity_file(private: Path, name: str) -> Path:
    """/etc/passwd or /etc/group of the sandbox: its one user."""
    uid = STUDENT_UID if AS_ROOT else os.getuid()
    gid = STUDENT_GID if AS_ROOT else os.getgid()
    path = private / name
    if not path.exists():
        text = (f"student:x:{uid}:{gid}:student:{HOME}:/bin/sh\n" if name == "passwd"
                else f"student:x:{gid}:\n")
        path.write_text(text)
        path.chmod(0o644)
    return path


def _bwrap_base() -> list[str]:
    """bwrap's options that make the sandbox: namespaces, and a root with /proc and /dev.
    As root there is no user namespace: the command drops to ``STUDENT_UID`` (setpriv or
    the zygote), so it has no kernel uid of root's, which a user namespace would give it."""
    argv = [BWRAP or "bwrap", "--die-with-parent", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--new-session"]
    if not AS_ROOT:
        argv += ["--unshare-user", "--cap-drop", "ALL"]
    return argv + ["--proc", "/proc", "--dev", "/dev"]


@functools.lru_cache(maxsize=2)
def _read_only_trees(kernel: bool) -> tuple[str, ...]:
    """The directories the sandbox sees (read-only): the Python installation, its
    site-packages, and for the kernel the grader package; nothing that holds the course."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), *site.getsitepackages()}
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        candidates.add(site.getusersitepackages())
    trees = sorted({os.path.realpath(path) for path in candidates if path and os.path.isdir(path)})
    if kernel:
        trees.append(str(PACKAGE_DIR))
    # Never a tree that holds the home directory or the directory grading runs in (a
    # Python installed in one of them): those are not the sandbox's to see.
    private = {os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.getcwd())}
    kept: list[str] = []
    for tree in sorted(set(trees), key=len):  # a tree inside one already kept needs no bind
        inside_kept = any(tree == top or tree.startswith(top + "/") for top in ["/usr", *kept])
        holds_private = any(path == tree or path.startswith(tree.rstrip("/") + "/") for path in private)
        if not (inside_kept or holds_private):
            kept.append(tree)
    return tuple(kept)


def _system_binds(kernel: bool) -> list[str]:
    argv = []
    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + top
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/run"]
    for name in ETC:
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    made: set[str] = set()
    for tree in _read_only_trees(kernel):
        # the folders on the way, searchable by the sandbox's uid (bwrap would copy root's 0700)
        for ancestor in reversed(Path(tree).parents[:-1]):
            if str(ancestor) not in made:
                made.add(str(ancestor))
                argv += ["--perms", "0755", "--dir", str(ancestor)]
        argv += ["--ro-bind", tree, tree]
    # the interpreter's path as the grader knows it (a virtualenv's bin/python is a link)
    for path in {os.path.abspath(sys.prefix), os.path.dirname(PYTHON)}:
        real = os.path.realpath(path)
        if path != real and os.path.isdir(real):
            argv += ["--symlink", real, path]
    return argv


def environment(home: str = HOME, **extra: str) -> dict[str, str]:
    """The whole environment of a sandboxed process: nothing of the grader's."""
    bin_dir = os.path.dirname(PYTHON)
    return {"PATH": os.pathsep.join([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": home, "TMPDIR": TMPDIR, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "MPLCONFIGDIR": f"{home}/.config/matplotlib",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", **extra}


# ---------------------------------------------------------------- limits per process
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


# ---------------------------------------------------------------- the verdict process
def untrusted_process_wrapper(mode: str, log: logging.Logger, box: Box | None = None,
                              warm: bool = False) -> Callable | None:
    """A function (private dir, program) -> Launch that starts a sandbox of ``box`` for the
    out-of-process verdict (its program bound read-only under VERDICT_DIR), or None
    without a sandbox. Its attributes: ``box``, and ``warm`` (fork it from the verdict
    zygote)."""
    if not use_sandbox(mode, log):
        return None
    box = box or Box(mode=mode, log=log)

    def wrap(private: Path, program: Path | None = None) -> Launch:
        files = [(str(program), f"{VERDICT_DIR}/{program.name}")] if program else []
        return box.sandbox(private, files)
    wrap.warm, wrap.box = warm, box
    return wrap


# ---------------------------------------------------------------- the kernel
class LimitedKernelManager(AsyncKernelManager):
    """A kernel with an address-space limit (no sandbox)."""

    memory_bytes = 0

    async def _async_pre_start_kernel(self, **kw):
        command, kw = await super()._async_pre_start_kernel(**kw)
        return prlimit(rlimits(self.memory_bytes)) + command, kw

    pre_start_kernel = _async_pre_start_kernel


class RevivingChannel(AsyncZMQSocketChannel):
    """A channel from a sandboxed kernel that survives a message over MAX_MESSAGE_BYTES.

    ZMQ drops a connection that brings a message over ZMQ_MAXMSGSIZE and never connects
    it again (a protocol error): every later output of the notebook would be lost. This
    channel watches its socket and, when the connection drops, opens a new one to the
    same kernel socket and counts the drop (``take_dropped``), so the grader can say
    that output was cut."""

    def __init__(self, connect: Callable[[], zmq.asyncio.Socket], session) -> None:
        self._connect, self._dropped = connect, 0
        super().__init__(connect(), session)
        self._monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def take_dropped(self) -> int:
        """How many connections dropped since the last call."""
        dropped, self._dropped = self._dropped, 0
        return dropped

    def _revive(self) -> None:
        self._close_socket()
        self._dropped += 1
        self.socket = self._connect()
        self._monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def _close_socket(self) -> None:
        if self.socket is None:
            return
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self._monitor.close(linger=0)
        self.socket.close(linger=0)
        self.socket = None

    async def get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            poller = zmq.asyncio.Poller()
            poller.register(self.socket, zmq.POLLIN)
            poller.register(self._monitor, zmq.POLLIN)
            left = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            ready = dict(await poller.poll(left))
            if self.socket in ready:
                return await self._recv()
            if self._monitor not in ready:
                raise Empty
            event = parse_monitor_message(await self._monitor.recv_multipart())
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self._revive()

    async def msg_ready(self) -> bool:
        return bool(await self.socket.poll(timeout=0))

    def close(self) -> None:
        self._close_socket()

    stop = close


class CappedKernelClient(AsyncKernelClient):
    """The grader's client of a sandboxed kernel: a message bigger than MAX_MESSAGE_BYTES
    drops the connection instead of landing in the grader's memory (the kernel may send
    one huge message; a cell's output is cut at SealedBox.output_kib anyway), and the
    shell and iopub channels connect again after such a drop (RevivingChannel)."""

    @default("context")
    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)
        return context

    @property
    def shell_channel(self) -> RevivingChannel:
        if self._shell_channel is None:
            self._shell_channel = RevivingChannel(lambda: self.connect_shell(identity=self.session.bsession),
                                                  self.session)
        return self._shell_channel

    @property
    def iopub_channel(self) -> RevivingChannel:
        if self._iopub_channel is None:
            self._iopub_channel = RevivingChannel(self.connect_iopub, self.session)
        return self._iopub_channel


class SandboxedKernelManager(AsyncKernelManager):
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
        # ipykernel exits when its parent's pid is gone, and the sandbox's pid namespace does
        # not show it; 1 means "no parent to watch" (the sandbox ends the kernel anyway)
        kw["env"] = environment(JPY_PARENT_PID="1")
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
                    process = _kernel_zygote().spawn(launch.argv, request, bwrap_fds=tuple(launch.fds))
                except (SpawnError, OSError) as problem:
                    self.log.warning("Warm start of the kernel failed (%s); starting it cold", problem)
            if process is None:
                process = _start_cold(launch, box.command(limits) + kernel_cmd, kw["env"])
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
        for fd in self._socket_fds:
            try:
                os.close(fd)
            except OSError:
                pass
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
        # the sandboxed kernels' environment (ipykernel reads some of it when imported)
        directory = private_directory("zygote-")
        _the_kernel_zygote = Zygote(
            [PYTHON, "-m", "maxpool_grader.isolation.kernel_zygote"], cwd=str(directory),
            env=dict(environment(home=str(directory), JPY_PARENT_PID="1"), TMPDIR=str(directory),
                     **{key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}))
    return _the_kernel_zygote


def kernel_manager(mode: str, memory_bytes: int, log: logging.Logger, box: Box | None = None,
                   warm: bool = False, cpu_seconds: int = 0) -> type[AsyncKernelManager]:
    """The kernel manager class for one notebook: sandboxed in ``box`` when possible,
    forked from a warm zygote with ``warm`` (sandboxed only)."""
    if not use_sandbox(mode, log):
        return type("LimitedKernelManager", (LimitedKernelManager,), {"memory_bytes": memory_bytes})
    return type("SandboxedKernelManager", (SandboxedKernelManager,), {
        "memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds, "warm": warm,
        "box": box or Box(mode=mode, log=log)})


if __name__ == "__main__":  # python -m maxpool_grader.sandbox: is the sandbox available?
    print("bwrap:", BWRAP or "not installed", "| works:", bwrap_works())
    sys.exit(0 if bwrap_works() else 1)
