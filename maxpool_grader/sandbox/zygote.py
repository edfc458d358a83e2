"""Warm start: fork a new process into a fresh bubblewrap sandbox instead of starting Python.

A grading worker starts thousands of short Python processes (a kernel and a verdict
process per submission); most of their CPU time is Python's start-up and the imports
of NumPy, IPython and ipykernel. A *zygote* is a process that has done those imports
once and never runs anything else: for each new process it forks a child that joins
the namespaces of a freshly started sandbox (bubblewrap sets up the sandbox as usual:
read-only root, hidden paths, no network, its own PID namespace), chroots into it,
takes on the limits, drops every capability, and only then runs its program.

The sandbox's own command is a tiny shell (the *holder*) that waits for the child's exit
status and exits with it, so the sandbox lives exactly as long as the child, bwrap's
exit status is the child's (128 + signal, as for a sandboxed program), and killing bwrap
ends the child with everything it started (its PID namespace).

This file imports only the standard library: the verdict's zygote runs it next to
``untrusted.py``, outside the grader package (student code there must not find the
grader in ``sys.modules``). It runs past 300 lines because both ends of the protocol
live in it, so that the two can never disagree. ``maxpool-grader grade`` starts its
workers' zygotes itself, while it prepares the run, and each worker adopts its own.

    zygote process:   serve(socket, run, directory)      (loops until the socket closes)
    grading worker:   Zygote(argv, env).spawn(bwrap argv, request, fds) -> Popen (the sandbox)
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

# A zygote's programs (its own and this file) are private copies in its private folder, whose
# name holds the pid of the grader's process: every process it forks holds its command line and
# its modules' file names. So it is started as ``python -c LOADER <program> ...`` in that folder,
# which compiles both under ``PROGRAMS`` (a name of no folder of the host) and runs the program.
PROGRAMS = "/run/zygote"
LOADER = """
import sys, types
def _zygote_load(name, file):
    module = types.ModuleType(name)
    module.__file__ = "%s/" + file
    sys.modules[name] = module
    with open(file) as handle:
        exec(compile(handle.read(), module.__file__, "exec"), module.__dict__)
_zygote_load("zygote", "zygote.py")
sys.argv = ["%s/" + sys.argv[1], *sys.argv[2:]]
__file__ = sys.argv[0]
with open(__file__.rsplit("/", 1)[1]) as _zygote_handle:
    _zygote_code = compile(_zygote_handle.read(), __file__, "exec")
del _zygote_load, _zygote_handle
exec(_zygote_code)
""" % (PROGRAMS, PROGRAMS)


def program_argv(python: str, program: str, *flags: str) -> list[str]:
    """How a zygote whose ``program`` (a file name) and zygote.py are in its working directory
    starts (``LOADER``)."""
    return [python, *flags, "-c", LOADER, program]


# The holder: says it is ready, then waits for the child's exit status on its stdin.
HOLDER = ["sh", "-c", 'echo ready; read -r code; exit "${code:-1}"']
_NAMESPACES = ("cgroup", "ipc", "uts", "net", "pid", "mnt", "user")  # see _join for the order
_NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
_libc = ctypes.CDLL(None, use_errno=True)


class SpawnError(RuntimeError):
    """The zygote could not start a process in the sandbox."""


# ---------------------------------------------------------------- the zygote's side
def forget_the_graders_finder() -> None:
    """An editable install of the grader puts its finder on ``sys.meta_path`` of every Python
    of its environment (its ``.pth``), and the finder holds the checkout's path: every child
    would hold it too. The sandbox shows the ``.pth`` empty (filesystem.grader_records), so a
    process started there has none; a zygote drops its own."""
    for name in [name for name in sys.modules if name.startswith("__editable__") and "maxpool_grader" in name]:
        module = sys.modules.pop(name)
        sys.meta_path[:] = [finder for finder in sys.meta_path
                            if getattr(finder, "__module__", getattr(type(finder), "__module__", "")) != name
                            and finder is not module]
        sys.path_hooks[:] = [hook for hook in sys.path_hooks if getattr(hook, "__module__", "") != name]
        sys.path_importer_cache.clear()
    sys.path[:] = [entry for entry in sys.path if not (entry.startswith("__editable__") and "maxpool_grader" in entry)]


def serve(socks, run, directory: str | None = None) -> None:
    """Answer spawn requests on each socket of ``socks`` (one socket, or one per worker it
    serves) until every one has closed or the process that started it is no longer this
    process's parent (it ended, however it ended), then remove ``directory`` (the zygote's
    own private one); ``run(request, fds)`` is what each child runs, in the sandbox, once it
    is ready (it should not return)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the worker's to handle
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forked children reap themselves
    forget_the_graders_finder()
    socks = list(socks) if isinstance(socks, (list, tuple)) else [socks]
    starter = os.getppid()
    try:
        while socks:
            # a socket closes when its worker ends; the parent changing says that the whole
            # run ended, if anything else still holds a worker's end (no thread: this forks)
            ready = select.select(socks, [], [], 1.0)[0]
            if not ready and os.getppid() != starter:
                break
            for sock in ready:
                try:
                    _answer(sock, socks, run)
                except (OSError, EOFError):  # that worker is gone
                    socks.remove(sock)
                    sock.close()
                    end_orphaned_sandboxes()
    finally:
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
        # killed with its starter: a sandbox it was starting may lose its bwrap a moment later
        end_orphaned_sandboxes(ORPHAN_GRACE if os.getppid() != starter else 0)
    os._exit(0)


# bwrap's option that every grading sandbox has (filesystem.WORKDIR), and how long a zygote
# whose run was killed keeps ending the sandboxes that run left starting
SANDBOX_MARK = (b"--chdir", b"/scratch/submission")
ORPHAN_GRACE = 1.5


def end_orphaned_sandboxes(grace: float = 0, mark: tuple[bytes, bytes] = SANDBOX_MARK) -> int:
    """End (and count) the orphaned sandboxes (see ``_end_orphans``) now, and again every
    0.1 s for ``grace`` seconds; ``mark``: the two arguments of bwrap's that make a sandbox
    a grading one."""
    deadline, ended = time.monotonic() + grace, 0
    while True:
        ended += _end_orphans(mark)
        if time.monotonic() >= deadline:
            return ended
        time.sleep(0.1)


def _end_orphans(mark: tuple[bytes, bytes]) -> int:
    """Kill (and count) each grading sandbox whose bwrap is gone before it was set up.

    bwrap starts the sandbox's init, which then waits, with no death signal of its own yet,
    for bwrap to finish setting it up. If bwrap dies in that moment (its parent, a grading
    worker, was killed: bwrap dies with it or fails to write its --info-fd), the init waits
    for ever. Such an init is the first process of its PID namespace, runs bwrap with the
    grading sandbox's options, and its parent is no longer a bwrap."""
    ended = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if b"(bwrap)" not in stat.read(64):
                    continue
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            levels = fields["NSpid"].split()  # its pid in each PID namespace, ours first
            if fields["State"].split()[0] in "ZX" or len(levels) < 2 or levels[-1] != "1" or not any(
                    tuple(argv[i:i + 2]) == mark for i in range(len(argv))):
                continue
            parent = fields["PPid"].strip()
            with contextlib.suppress(OSError):  # a parent out of sight is not its bwrap either
                with open(f"/proc/{parent}/stat", "rb") as stat:
                    if b"(bwrap)" in stat.read(64):
                        continue
            os.kill(int(entry), signal.SIGKILL)
            ended += 1
        except (OSError, KeyError, ValueError):  # ended meanwhile, or not ours to see or kill
            continue
    return ended


def _answer(sock: socket.socket, socks: list[socket.socket], run) -> None:
    """One spawn request of ``sock``: fork the child, send back what it reports."""
    message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
    if not message:
        raise EOFError
    reply_read, reply_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:  # never returns, never reaches the zygote's own clean-up
            for each in socks:
                each.close()
            os.close(reply_read)
            _first_child(json.loads(message), fds, reply_write, run)
        finally:
            os._exit(1)
    os.close(reply_write)
    for fd in fds:
        os.close(fd)
    reply = b""
    while chunk := os.read(reply_read, 4096):
        reply += chunk
    os.close(reply_read)
    sock.sendall((reply or b'{"error": "the child ended before it started"}') + b"\n")


def _first_child(request: dict, fds: list[int], reply: int, run) -> None:
    """Joins the sandbox, forks the process that runs in it (a member of the sandbox's PID
    namespace), reports its pid, then waits for it and hands its exit status to the holder."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    holder, passed = fds[0], fds[1:]
    try:
        for procs in request.get("cgroup_procs", []):  # the submission's caps, before anything forks
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))
        _join(int(request["sandbox_pid"]))
        pid = os.fork()
    except BaseException as problem:  # noqa: BLE001  reported to the worker, which fails the spawn
        os.write(reply, json.dumps({"error": f"{type(problem).__name__}: {problem}"}).encode())
        os._exit(1)
    if pid == 0:
        os.close(reply)
        os.close(holder)
        status = 1
        try:
            _become(request, passed)
            run(request, passed)
            status = 0
        except BaseException:  # noqa: BLE001  as an uncaught exception ends Python
            traceback.print_exc()
        finally:
            os._exit(status)
    os.write(reply, json.dumps({"pid": pid}).encode())
    os.close(reply)
    for fd in passed:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    try:
        os.write(holder, f"{128 - code if code < 0 else code}\n".encode())  # as bwrap reports it
    except OSError:
        pass  # the sandbox is gone already
    os._exit(0)


def _join(pid: int) -> None:
    """Enter the namespaces and the root directory of the sandbox whose init is ``pid``.

    Unprivileged bwrap may nest two user namespaces: the outer one owns the sandbox's
    other namespaces, the inner one is its processes'. Joining the inner one first would
    leave no capability over the others, so: the owner of the others first, then them,
    then the sandbox's own user namespace."""
    root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY)
    ipc = os.open(f"/proc/{pid}/ns/ipc", os.O_RDONLY)
    try:
        owner = fcntl.ioctl(ipc, _NS_GET_USERNS)
    finally:
        os.close(ipc)
    # all looked at first: joining the mount namespace changes what /proc is
    ours = {name: os.stat(f"/proc/self/ns/{name}").st_ino for name in _NAMESPACES}
    targets = [(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY), name) for name in _NAMESPACES]
    for fd, name in [(owner, "user"), *targets]:
        try:
            joined = os.fstat(fd).st_ino
            if joined != ours[name]:  # the same as ours: not unshared
                _check(_libc.setns(fd, 0), f"setns {name}")
                ours[name] = joined
        finally:
            os.close(fd)
    os.fchdir(root)
    os.chroot(".")
    os.close(root)


_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = \
    1, 24, 38, 47, 4


def die_with_parent(parent: int) -> None:
    """Be killed (SIGKILL) when ``parent`` ends, however it ends; exit now if it already has.

    The kernel sends the signal when the *thread* that forked this process ends: call it
    only in a process forked by a thread that lives as long as its process (the main one)."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")
    if os.getppid() != parent:  # it died before prctl: nothing would ever send the signal
        os._exit(1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def set_rlimits(limits: dict[str, int]) -> None:
    """Set each limit (soft and hard) by its name in ``resource``: RLIMIT_AS, RLIMIT_CPU ..."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def drop_capabilities(uid: int | None = None, gid: int | None = None) -> None:
    """What ``bwrap --cap-drop ALL`` leaves (and, given ``uid``/``gid``, what ``setpriv
    --reuid --regid --clear-groups`` adds): no capability in any set, none to gain by
    exec, and that uid and gid with no supplementary groups."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for capability in range(last + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0), "drop from the bounding set")
    if uid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _become(request: dict, passed: list[int]) -> None:
    """The child in the sandbox: its own session, limits, directory, environment and
    descriptors (only ``passed``, and /dev/null as 0, 1 and 2: nothing of the grader's, its
    terminal or its log, which the zygote itself never holds either); no capabilities; the
    seccomp filter of a sandboxed process (seccomp.py), as bwrap would install it."""
    os.setsid()
    set_rlimits(request.get("rlimits", {}))
    os.chdir(request["cwd"])
    drop_capabilities(request.get("uid"), request.get("gid"))
    if request.get("seccomp"):
        install_filter(bytes.fromhex(request["seccomp"]))
    os.environ.clear()
    os.environ.update(request["env"])
    blank_inherited_environment()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, *passed})
    for low, high in zip(keep, keep[1:] + [os.sysconf("SC_OPEN_MAX")]):
        os.closerange(low + 1, high)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def blank_inherited_environment() -> None:
    """Zero the environment block this process got from the zygote's start, which
    ``/proc/self/environ`` shows whatever ``os.environ`` holds now: the zygote's own (its
    private folder as HOME and TMPDIR). Once ``os.environ`` was cleared nothing points into it."""
    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()  # fields from the 3rd on
    start, end = int(fields[50 - 3]), int(fields[51 - 3])  # env_start, env_end
    if 0 < start < end:
        ctypes.memset(start, 0, end - start)


class _SockFilterProgram(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def install_filter(program: bytes) -> None:
    """Install a compiled seccomp filter (8 bytes an instruction) on this process, for good:
    every process it starts inherits it. Needs no_new_privs (``drop_capabilities`` set it)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    header = _SockFilterProgram(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(header), 0, 0), "seccomp filter")


# ---------------------------------------------------------------- the worker's side
class Zygote:
    """A zygote process (``argv`` gets its sockets' fd numbers appended, comma-separated) and
    spawning from it; with ``holders``, one socket for each of that many processes forked
    from this one (each ``adopt``s its own)."""

    def __init__(self, argv: list[str], env: dict | None = None, cwd: str | None = None, holders: int = 1):
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(holders)]
        theirs = [their.fileno() for _, their in pairs]
        # no descriptor of the grader's (its terminal, its log) reaches the zygote, whose
        # children would inherit it
        self.process = subprocess.Popen(argv + [",".join(map(str, theirs))], pass_fds=theirs,
                                        env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        for _, their in pairs:
            their.close()
        self._ends = [(ours, ours.makefile("rb")) for ours, _ in pairs]
        self.sock, self.file = self._ends[0]
        self.holders = holders
        self._lock = threading.Lock()  # one request at a time on the socket
        self._adopted = False

    def alive(self) -> bool:
        if not self._adopted:
            return self.process.poll() is None
        with contextlib.suppress(OSError, IndexError):  # not our child: its state, as the system shows it
            return Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
        return False

    def adopt(self, index: int = 0) -> None:
        """Use it from a process forked from its starter (a grading worker), through socket
        ``index``: the zygote serves whoever holds a socket, and ends when every holder let go."""
        for number, (sock, file) in enumerate(self._ends):
            if number != index:
                file.close()
                sock.close()
        self.sock, self.file = self._ends[index]
        self._ends, self._adopted = [self._ends[index]], True

    def let_go(self) -> None:
        for sock, file in self._ends:
            file.close()
            sock.close()

    def spawn(self, sandbox: list[str], request: dict, fds: tuple[int, ...] = (),
              bwrap_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        """Start the sandbox ``sandbox`` (bwrap's argv up to its ``--``, which reads
        ``bwrap_fds``), fork a child of the zygote into it (passing it ``fds``), and return
        the sandbox's process: it ends when the child ends, with its exit status, and
        killing it kills the child. Its ``sandbox_pid`` is the sandbox's init."""
        # what bwrap sets for a command it runs: --setenv NAME VALUE, and PWD
        env = dict(request.get("env", {}))
        env.update({sandbox[i + 1]: sandbox[i + 2] for i, arg in enumerate(sandbox) if arg == "--setenv"})
        env["PWD"] = request["cwd"]
        request = dict(request, env=env)
        holder_read, holder_write = os.pipe()
        info_read, info_write = os.pipe()
        argv = sandbox[:-1] + ["--info-fd", str(info_write), "--"] + HOLDER
        try:
            process = subprocess.Popen(argv, stdin=holder_read, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, pass_fds=(info_write, *bwrap_fds),
                                       env=request["env"], start_new_session=True)
        finally:
            os.close(holder_read)
            os.close(info_write)
        try:
            with os.fdopen(info_read, "rb") as info:
                sandbox_pid = json.loads(info.read() or b"{}").get("child-pid")
            ready = process.stdout.readline()
            process.stdout.close()
            if not sandbox_pid or ready.strip() != b"ready":
                raise SpawnError(f"the sandbox did not start (bwrap exit status {process.poll()})")
            with self._lock:
                try:
                    socket.send_fds(self.sock, [json.dumps(dict(request, sandbox_pid=sandbox_pid)).encode()],
                                    [holder_write, *fds])
                    reply = json.loads(self.file.readline() or b'{"error": "the zygote is gone"}')
                except OSError as problem:
                    raise SpawnError(f"the zygote is gone ({problem})") from None
            if "pid" not in reply:
                raise SpawnError(reply.get("error", "no pid"))
        except BaseException:
            process.kill()
            process.wait()
            raise
        finally:
            os.close(holder_write)
        process.child_pid, process.sandbox_pid = reply["pid"], sandbox_pid
        return process

    def close(self) -> None:
        self.let_go()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

