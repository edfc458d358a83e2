"""A process's own limits (rlimits), beside the submission's cgroup: what ``prlimit`` sets
before a command runs, or the zygote sets in a process it forks."""

from __future__ import annotations

import shutil

PRLIMIT = shutil.which("prlimit")


def rlimits(memory_bytes: int, file_bytes: int | None = None, cpu_seconds: int | None = None) -> dict[str, int]:
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
