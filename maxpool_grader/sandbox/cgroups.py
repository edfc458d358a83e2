"""Caps for a whole submission: one control group (cgroup) holds the kernel, every
verdict process and everything they start, with a memory limit (no swap) and a process
limit for all of them together.

Two kinds of machine are supported:

* **cgroup v2** (a typical systemd machine): the submission's cgroup is made in the
  nearest ancestor of this process's own cgroup that this user may write to and that
  offers the ``memory`` and ``pids`` controllers: for root that is always the case; for
  a normal user it is the subtree systemd delegates to the user's manager
  (``user@UID.service``), or a scope made with ``systemd-run --user --scope -p
  Delegate=yes``.
* **cgroup v1** (the ``memory`` and ``pids`` hierarchies mounted separately): the
  submission's cgroup is made below this process's own cgroup in each hierarchy; that
  needs write access there (root, or a subtree an administrator gave to the user).

Where they are offered, the ``cpu`` controller (v1: its hierarchy, and ``cpuacct``'s where that
is mounted apart) gives each box at most its share of the CPU (``cpu.max``, v1
``cpu.cfs_quota_us``) and counts the CPU time it received (``cpu_seconds``); without them a box
has no CPU cap, and a verdict's time limits are judged on the wall clock alone (cpushare.py,
docs/security.md#cpu-share).

Where neither works, ``open_cgroup`` returns None and the sandbox falls back to
per-process limits (see box.py), which the grading run says loudly.

A process enters the cgroup by writing its pid to ``cgroup.procs`` files (``enter_files``)
before it starts anything: ``enter_argv`` does that for a command line, and the warm
start's zygote does it in the child it forks. The names of the directories made here
hold the pid of the grading process, so a later run can remove those of a process that
was killed (``sweep``).

The module runs past 300 lines because v1 and v2 share ``Cgroup``, the kill and the
sweep, and differ only in where the directories go; split, each half would reach into
the other's private helpers.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import secrets
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids")
CPU_CONTROLLERS = ("cpu", "cpuacct")  # optional: each where it is offered and writable
CPU_PERIOD_US = 100_000  # the period of a box's CPU quota
PREFIX = "maxpool-grader-"


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's cgroup of one hierarchy lives: v2 has one for all controllers."""

    version: int
    directory: Path  # this process's own cgroup (v1: of the controller in ``controller``)
    controller: str = ""  # v1 only


def mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, options) of the cgroup file systems."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" the v2 one."""
    paths = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _writable(directory: Path) -> bool:
    return os.access(directory, os.W_OK | os.X_OK) and os.access(directory / "cgroup.procs", os.W_OK)


def _v2_base() -> Path | None:
    """The nearest ancestor of this process's v2 cgroup where boxes can be made: writable,
    and with memory and pids enabled for its children (or enabling them works)."""
    mount = next((point for point, kind, _ in mounts() if kind == "cgroup2"), None)
    own = _own_paths().get("")
    if mount is None or own is None:
        return None
    candidate = Path(mount + own.rstrip("/"))
    # Our own cgroup holds processes (this one at least), and a v2 cgroup with processes
    # cannot give controllers to children: start at its parent.
    while True:
        candidate = candidate.parent
        if not str(candidate).startswith(mount):
            return None
        try:
            available = (candidate / "cgroup.controllers").read_text().split()
        except OSError:
            return None
        if set(CONTROLLERS) <= set(available) and _writable(candidate):
            _enable_v2_cpu(candidate)
            enabled = (candidate / "cgroup.subtree_control").read_text().split()
            if set(CONTROLLERS) <= set(enabled):
                return candidate
            with contextlib.suppress(OSError):
                (candidate / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
                return candidate
        if candidate == Path(mount):
            return None


def _enable_v2_cpu(directory: Path) -> None:
    """Give the children of a v2 cgroup the cpu controller, where it offers it (else nothing)."""
    with contextlib.suppress(OSError):
        if "cpu" in (directory / "cgroup.controllers").read_text().split():
            (directory / "cgroup.subtree_control").write_text("+cpu")


def _v1_bases() -> dict[str, Path] | None:
    """This process's own cgroup in the v1 memory and pids hierarchies, if writable, and in the
    cpu and cpuacct ones where they are mounted and writable (one entry for the two mounted together)."""
    own = _own_paths()
    bases = {}
    for controller in CONTROLLERS + CPU_CONTROLLERS:
        mount = next((point for point, kind, options in mounts()
                      if kind == "cgroup" and controller in options), None)
        if controller in CPU_CONTROLLERS and (mount is None or controller not in own
                                              or Path(mount + own[controller].rstrip("/")) in bases.values()):
            continue  # not offered here, or the hierarchy it shares with cpu
        if mount is None or controller not in own:
            return None
        base = Path(mount + own[controller].rstrip("/"))
        if not _writable(base):
            if controller in CPU_CONTROLLERS:
                continue
            return None
        bases[controller] = base
    return bases


class Cgroup:
    """One submission's cgroup (one directory per v1 hierarchy, one in v2)."""

    def __init__(self, directories: dict[str, Path], version: int):
        self.directories = directories  # controller (v2: "") -> directory
        self.version = version
        self.cpus = 0.0  # the CPUs its quota allows at once (``limit``); 0: no quota here

    # ---------------------------------------------------------------- limits
    def limit(self, memory_bytes: int, processes: int, cpus: float = 0.0) -> None:
        """Its caps; ``cpus``: the CPU quota, in CPUs (0: none), set where the cpu controller is."""
        quota = f"{max(1000, round(cpus * CPU_PERIOD_US))}"
        if self.version == 2:
            directory = self.directories[""]
            _write(directory / "memory.max", memory_bytes)
            _write(directory / "memory.swap.max", 0, optional=True)
            _write(directory / "pids.max", processes)
            if cpus > 0 and (directory / "cpu.max").exists():
                _write(directory / "cpu.max", f"{quota} {CPU_PERIOD_US}")
                self.cpus = cpus
            return
        memory = self.directories["memory"]
        _write(memory / "memory.limit_in_bytes", memory_bytes)
        _write(memory / "memory.memsw.limit_in_bytes", memory_bytes, optional=True)  # no swap
        _write(memory / "memory.swappiness", 0, optional=True)
        _write(self.directories["pids"] / "pids.max", processes)
        if cpus > 0 and "cpu" in self.directories:
            _write(self.directories["cpu"] / "cpu.cfs_period_us", CPU_PERIOD_US)
            _write(self.directories["cpu"] / "cpu.cfs_quota_us", quota)
            self.cpus = cpus

    def cpu_seconds(self) -> float | None:
        """The CPU time all its processes received so far, or None where it is not counted."""
        if self.version == 2:
            used = _keyed(self.directories[""] / "cpu.stat").get("usage_usec")
            return None if used is None else used / 1e6
        accounting = self.directories.get("cpuacct") or self.directories.get("cpu")
        used = _number(accounting / "cpuacct.usage") if accounting else None
        return None if used is None else used / 1e9

    def pids(self) -> list[int]:
        """The processes inside now (their threads are in /proc/PID/task)."""
        with contextlib.suppress(OSError, ValueError):
            directory = self.directories["" if self.version == 2 else "pids"]
            return [int(pid) for pid in (directory / "cgroup.procs").read_text().split()]
        return []

    def enter_files(self) -> list[str]:
        """The files a process writes its pid to, to enter this cgroup."""
        return [str(directory / "cgroup.procs") for directory in self.directories.values()]

    def enter_argv(self) -> list[str]:
        """An argv prefix that moves the command into this cgroup, then runs it."""
        files = self.enter_files()
        script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
                  'n=$((n - 1)); done; exec "$@"')
        return ["/bin/sh", "-c", script, "enter-cgroup", str(len(files)), *files]

    # ---------------------------------------------------------------- what happened
    def events(self) -> dict[str, int]:
        """How often each cap was hit: {"oom_kill": n, "pids_max": n}."""
        if self.version == 2:
            directory = self.directories[""]
            memory = _keyed(directory / "memory.events")
            oom = memory.get("oom_kill", 0) or memory.get("oom", 0)
            return {"oom_kill": oom, "pids_max": _keyed(directory / "pids.events").get("max", 0)}
        control = _keyed(self.directories["memory"] / "memory.oom_control")
        oom = control.get("oom_kill", 0)
        if not oom:  # older kernels have no oom_kill counter: the limit was reached at least
            oom = _number(self.directories["memory"] / "memory.memsw.failcnt") or 0
        return {"oom_kill": oom, "pids_max": _keyed(self.directories["pids"] / "pids.events").get("max", 0)}

    def processes(self) -> int | None:
        """How many processes (threads included) the cgroup counts now: an ended process
        counts until its parent has reaped it. None when the count cannot be read."""
        return _number(self.directories["" if self.version == 2 else "pids"] / "pids.current")

    # ---------------------------------------------------------------- the end
    def empty(self, seconds: float = 10.0) -> bool:
        """Kill every process inside and wait until the cgroup counts none, so that what
        starts next has the caps to itself; False if some are still counted after
        ``seconds`` (a parent that does not reap them)."""
        deadline = time.monotonic() + seconds
        while True:
            if self.version == 2:
                with contextlib.suppress(OSError):
                    (self.directories[""] / "cgroup.kill").write_text("1")
            for directory in self.directories.values():
                _kill_all(directory, rounds=1)
            if self.processes() in (0, None) or time.monotonic() > deadline:
                return self.processes() in (0, None)
            time.sleep(0.005)

    def close(self) -> None:
        """Kill whatever is still inside, then remove the cgroup."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.directories[""] / "cgroup.kill").write_text("1")
        for directory in self.directories.values():
            _remove(directory)


def _write(path: Path, value, optional: bool = False) -> None:
    """Write a control file; an ``optional`` one may be missing (swap accounting off)."""
    if optional and not path.exists():
        return
    path.write_text(str(value))


def _keyed(path: Path) -> dict[str, int]:
    values = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                values[key] = int(value)
    return values


def _number(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _kill_all(directory: Path, rounds: int = 50) -> None:
    for _ in range(rounds):
        try:
            pids = [int(pid) for pid in (directory / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _remove(directory: Path) -> None:
    """Kill what is left in a cgroup directory and the cgroups below it, then remove them."""
    if not directory.is_dir():
        return
    for child in directory.iterdir():
        if child.is_dir():
            _remove(child)
    _kill_all(directory)
    for _ in range(20):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # busy: a process is still leaving
            time.sleep(0.05)


# ---------------------------------------------------------------- making them
# this process's own directory in each hierarchy (made once), and the cgroup version
_parents: tuple[dict[str, Path], int] | None = None
_unavailable: str | None = None


def _process_parents() -> tuple[dict[str, Path], int] | None:
    """This grading process's own directory in each hierarchy, where its boxes go."""
    global _parents, _unavailable
    name = f"{PREFIX}{os.getpid()}-"
    if _parents is not None and all(path.is_dir() and path.name.startswith(name)  # not a forked parent's
                                    for path in _parents[0].values()):
        return _parents
    name += run_tag(tempfile.gettempdir(), os.getuid()) + secrets.token_hex(2)
    v2 = _v2_base()
    attempts: list[tuple[dict[str, Path], int]] = []
    if v2 is not None:
        attempts.append(({"": v2}, 2))
    v1 = _v1_bases()
    if v1 is not None:
        attempts.append((v1, 1))
    for bases, version in attempts:
        made = {}
        try:
            for controller, base in bases.items():
                sweep(base)
                (base / name).mkdir()
                made[controller] = base / name
            if version == 2:
                (made[""] / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
                _enable_v2_cpu(made[""])
            _parents = made, version
            atexit.register(_remove_own, dict(made))
            return _parents
        except OSError as problem:
            _unavailable = f"{problem}"
            for directory in made.values():
                _remove(directory)
    if not attempts:
        _unavailable = ("no cgroup with the memory and pids controllers can be made here "
                        "(cgroup v2: no writable, delegated subtree; cgroup v1: not writable)")
    return None


def open_cgroup(memory_bytes: int, processes: int, cpus: float = 0.0) -> Cgroup | None:
    """A new cgroup for one submission with these caps, or None where none can be made
    (``why_unavailable`` says why); ``cpus``: its CPU quota, where the cpu controller is."""
    found = _process_parents()
    if found is None:
        return None
    parents, version = found
    box = f"box-{secrets.token_hex(6)}"
    directories = {}
    try:
        for controller, parent in parents.items():
            (parent / box).mkdir()
            directories[controller] = parent / box
        cgroup = Cgroup(directories, version)
        cgroup.limit(memory_bytes, processes, cpus)
        return cgroup
    except OSError as problem:
        global _unavailable
        _unavailable = str(problem)
        for directory in directories.values():
            _remove(directory)
        return None


def _remove_own(made: dict[str, Path]) -> None:
    if all(path.name.startswith(f"{PREFIX}{os.getpid()}-") for path in made.values()):
        for directory in made.values():
            _remove(directory)


def run_tag(tmpdir: str, uid: int) -> str:
    """Six hex digits in the names of a grading run's cgroups, the same for all processes of
    runs that share a temporary directory and a user: tells two runs' cgroups apart."""
    return hashlib.sha256(f"{os.path.realpath(tmpdir)}:{uid}".encode()).hexdigest()[:6]


def without_cgroup_warning(processes: int = 256) -> str:
    return ("GRADING WITHOUT A CGROUP: " + why_unavailable() + ".\n"
            f"A submission's processes are capped by RLIMIT_NPROC ({processes}) and its memory\n"
            "per process only, and it has no share of the CPU: time limits hold on the wall clock alone\n"
            "(docs/security.md#cpu-share). Grade as root, or in a delegated cgroup, for the full caps\n"
            "(docs/security.md#delegated-cgroup).")


def cpu_share_available() -> bool:
    """Whether the boxes made here get a CPU quota: the cpu controller is given to them."""
    found = _process_parents()
    if found is None:
        return False
    parents, version = found
    if version == 1:
        return "cpu" in parents
    try:
        return "cpu" in (parents[""] / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def why_unavailable() -> str:
    return _unavailable or "unknown"


def available() -> bool:
    """Whether this process can make a submission's cgroup here."""
    return _process_parents() is not None


def sweep_all() -> None:
    """Remove the cgroups of every ended grading process (a worker of ``maxpool-grader
    grade`` ends without running exit handlers)."""
    for base in [*(_v1_bases() or {}).values(), _v2_base()]:
        if base is not None:
            sweep(base)


def sweep(base: Path) -> None:
    """Remove the cgroups of grading processes that ended without removing them."""
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            owner = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\w+", entry.name)
            if owner and entry.is_dir() and not Path(f"/proc/{owner[1]}").exists():
                _remove(entry)
