"""The sealed box: where a submission's code runs during autograde.

One ``Box`` per submission holds every process that runs the student's code: the
notebook's kernel and each out-of-process verdict process, each in its own bubblewrap
(``bwrap``) sandbox that sees only what filesystem.py allows:

* **No privilege.** Run by root, the sandbox drops to an unprivileged uid
  (``STUDENT_UID``, "nobody") and every capability; run by a normal user, the code keeps
  that user's uid inside a user namespace, with no capability. No network (an empty
  network namespace), its own PID namespace: killing the sandbox kills everything in it.
* **Caps for the submission as a whole** (``Caps``): one cgroup (cgroups.py) holds all
  its sandboxes: memory (no swap), processes, CPUs (cpushare.py) for all of them together; each
  process has rlimits too (limits.py). Without a cgroup, processes fall back to RLIMIT_NPROC and memory
  to a per-process cap, loudly; ``sandbox = "required"`` refuses to grade then.

Where bwrap is missing or does not work (an instructor's laptop), grading still runs,
with limits but unsandboxed, and says so loudly once per run.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import cgroups, cpushare, seccomp
from .filesystem import (
    AS_ROOT,
    HOME,
    KERNEL_DIR,
    SCRATCH,
    STUDENT_GID,
    STUDENT_UID,
    TMPDIR,
    WORKDIR,
    identity_file,
    masked_proc,
    read_only_trees,
    regular_files,
    system_binds,
)
from .limits import prlimit

BWRAP = shutil.which("bwrap")
SETPRIV = shutil.which("setpriv")
_warned: set[str] = set()


class GraderFault(RuntimeError):
    """Grading could not be done for a reason that is not the student's: a sandbox that does
    not start, a kernel that never came up, a verdict process that died before it ran a line
    of the notebook. Never a grade: the submission stays to grade, and the run says why."""


@dataclass(frozen=True)
class Caps:
    """The caps of one submission: the course's defaults (glue/sealedbox.py, docs/settings.md)."""

    memory_bytes: int = 2 << 30  # all its processes together, no swap
    processes: int = 256  # all its processes together
    cpus: float = 1.0  # CPUs all its processes together may use at once (the cgroup's cpu quota; 0: none)
    scratch_bytes: int = 256 << 20  # /scratch of each sandbox
    shm_bytes: int = 16 << 20  # /dev/shm of each sandbox
    output_bytes: int = 1 << 20  # what one cell of the notebook may print
    notebook_output_bytes: int = 8 << 20  # what all the cells of the notebook together may print


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


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """Whether bwrap is installed and can create the sandbox here."""
    if BWRAP is None or (AS_ROOT and SETPRIV is None):
        return False
    try:
        probe = subprocess.run(_bwrap_base() + system_binds() + ["--", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _warn_once(key: str, log: logging.Logger, text: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("\n%s\n%s\n%s", "!" * 78, text, "!" * 78)


def use_sandbox(mode: str, log: logging.Logger) -> bool:
    """Whether to sandbox; 'required' without a working bwrap is an error."""
    if mode == "off":
        return False
    if bwrap_works():
        return True
    if mode == "required":
        raise RuntimeError("The sandbox is required (sandbox = 'required' in nbgrader_config.py) "
                           "but bwrap is missing or does not work here: apt-get install bubblewrap.")
    _warn_once("bwrap", log, without_sandbox_warning())
    return False


def without_sandbox_warning() -> str:
    return ("GRADING UNSANDBOXED: bwrap (Debian package bubblewrap) is missing or does not work here.\n"
            "Student code runs with time and memory limits, but it can read and write your files\n"
            "(the gradebook too) and reach the network. Install bubblewrap to grade safely.")


@dataclass
class Launch:
    """The start of a sandboxed command line, up to bwrap's ``--``, and the descriptors it
    needs passed (the copies of the submission's files, read by bwrap)."""

    argv: list[str]
    fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        close_fds(self.fds)
        self.fds = []

    def copy_in(self, host, inside: str) -> None:
        """The grader's file ``host`` at ``inside``, copied in from a descriptor (security.md#host-layout)."""
        self.fds.append(os.open(host, os.O_RDONLY | os.O_CLOEXEC))
        self.argv.extend(["--perms", "0444", "--ro-bind-data", str(self.fds[-1]), inside])


def close_fds(fds) -> None:
    """Close every descriptor of ``fds``; one already closed is no error."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Box:
    """One submission's sandboxes share its cgroup, its caps and its files (module doc)."""

    def __init__(self, caps: Caps = Caps(), files_from: Path | None = None, mode: str = "auto",
                 log: logging.Logger | None = None):
        self.caps = caps
        self.log = log or logging.getLogger(__name__)
        self.files = regular_files(files_from) if files_from else []
        self.cgroup = cgroups.open_cgroup(caps.memory_bytes, caps.processes, caps.cpus)
        if self.cgroup is None:
            self._without("cgroup", mode, f"no cgroup can be made here for the caps of a submission "
                          f"({cgroups.why_unavailable()}). See docs/security.md#where-the-caps-come-from",
                          cgroups.without_cgroup_warning(caps.processes))
        elif caps.cpus > 0 and not self.cgroup.cpus:
            _warn_once("cpu", self.log, cpushare.WITHOUT_CPU_SHARE)
        self.seccomp = seccomp.filter_program()
        if self.seccomp is None:
            self._without("seccomp", mode, seccomp.why_unavailable(),
                          "GRADING WITHOUT A SECCOMP FILTER: " + seccomp.why_unavailable() + ".")

    def _without(self, what: str, mode: str, why: str, banner: str) -> None:
        """A part of the box missing here: an error when the sandbox is required, else a banner."""
        if mode == "required":
            raise RuntimeError(f"The sandbox is required (sandbox = 'required' in nbgrader_config.py), but {why}.")
        _warn_once(what, self.log, banner)

    def sandbox(self, private: Path, files: list[tuple[str, str]] = (), kernel: bool = False) -> Launch:
        """bwrap's argv, up to its ``--``, for one sandbox of this submission; ``files`` are
        (host file, path inside) bound read-only (a connection file, a program)."""
        launch = Launch(self.cgroup.enter_argv() if self.cgroup else [])
        argv = launch.argv
        argv += _bwrap_base() + system_binds()
        for path in masked_proc(private):  # what every box would share (seccomp.py): empty
            launch.copy_in(private / "empty", path)
        if self.seccomp is not None:
            launch.fds.append(seccomp.program_fd(self.seccomp))
            argv += ["--seccomp", str(launch.fds[-1])]
        argv += ["--perms", "1777", "--size", str(self.caps.scratch_bytes), "--tmpfs", SCRATCH]
        for directory in (WORKDIR, HOME, TMPDIR):
            argv += ["--perms", "1777", "--dir", directory]
        if not any(tree == "/tmp" or tree.startswith("/tmp/") for tree in read_only_trees()):
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
            if parent := os.path.dirname(relative):
                argv += ["--perms", "1777", "--dir", f"{WORKDIR}/{parent}"]
            launch.fds.append(fd)
            argv += ["--perms", "0666", "--file", str(fd), f"{WORKDIR}/{relative}"]
        if kernel:
            argv += ["--perms", "1777", "--size", str(1 << 20), "--tmpfs", KERNEL_DIR]
        for host, inside in files:
            if not os.path.dirname(inside).startswith(KERNEL_DIR):  # a tmpfs of its own, searchable
                argv += ["--perms", "0755", "--dir", os.path.dirname(inside)]
            launch.copy_in(host, inside)
        for name in ("passwd", "group"):
            launch.copy_in(identity_file(private, name), f"/etc/{name}")
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKDIR, "--"]
        return launch

    def _rlimits(self, rlimits: dict[str, int]) -> dict[str, int]:
        """A process's own limits, and the processes cap when no cgroup holds it."""
        return dict(rlimits, **({} if self.cgroup else {"RLIMIT_NPROC": self.caps.processes}))

    def command(self, rlimits: dict[str, int]) -> list[str]:
        """What runs a command inside the sandbox (after bwrap's ``--``): its rlimits, and as
        root the drop to the unprivileged uid without any capability."""
        prefix = prlimit(self._rlimits(rlimits))
        if AS_ROOT:
            prefix += [SETPRIV or "setpriv", f"--reuid={STUDENT_UID}", f"--regid={STUDENT_GID}",
                       "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        return prefix

    def warm_request(self, rlimits: dict[str, int]) -> dict:
        """The same for a process forked by a zygote (zygote.py does what ``command`` says, and
        installs the seccomp filter bwrap installs for a command)."""
        request = {"rlimits": self._rlimits(rlimits), "cgroup_procs": self.cgroup.enter_files() if self.cgroup else [],
                   "seccomp": self.seccomp.hex() if self.seccomp else ""}
        if AS_ROOT:
            request.update(uid=STUDENT_UID, gid=STUDENT_GID)
        return request

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

    def empty(self) -> None:
        """Kill every process of the submission and wait until its cgroup counts none: the
        kernel starts with the caps to itself, whatever the verdict's processes left behind."""
        if self.cgroup is not None and not self.cgroup.empty():
            self.log.warning("A submission's box still counts processes 10 s after they were killed")

    def close(self) -> None:
        """Kill whatever is left of the submission, remove its cgroup."""
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None


def _size(count: int) -> str:
    return f"{count >> 30} GiB" if count >= 1 << 30 and not count % (1 << 30) else f"{count >> 20} MiB"


def disk_hit(text: str, caps: Caps) -> str | None:
    """The words for a full scratch folder, when ``text`` (a cell's output) shows one."""
    if "No space left on device" in text or "[Errno 28]" in text:
        return (f"wrote more than {_size(caps.scratch_bytes)} to its scratch folder "
                "(writes failed with 'No space left on device')")
    return None


def _bwrap_base() -> list[str]:
    """bwrap's options that make the sandbox: namespaces, and a root with /proc and /dev.
    As root there is no user namespace: the command drops to ``STUDENT_UID`` (setpriv or
    the zygote), so it has no kernel uid of root's, which a user namespace would give it."""
    argv = [BWRAP or "bwrap", "--die-with-parent", *(f"--unshare-{name}" for name in ("ipc", "pid", "net", "uts",
            "cgroup")), "--new-session"] + ([] if AS_ROOT else ["--unshare-user", "--cap-drop", "ALL"])
    return argv + ["--proc", "/proc", "--dev", "/dev"]
