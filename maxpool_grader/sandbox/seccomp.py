"""The system calls no sandboxed process may make: a seccomp filter, compiled once by
libseccomp (``pyseccomp``), given to bubblewrap (``--seccomp FD``) for a process it starts
and installed by the zygote's child for a process forked warm (zygote.py).

Why these. Every sandbox of every submission runs as the same uid (``nobody`` when root
grades, the instructor's own uid otherwise), and the kernel's keyrings belong to a uid, not
to a namespace: without this filter a submission stored its solution in the user keyring
and a classmate's, graded later in another course, loaded it and scored full marks. The
other channels a shared uid leaves are closed by the sandbox itself: System V IPC and POSIX
message queues (its own IPC namespace), abstract Unix sockets (its own network namespace),
``/dev/shm`` and every writable folder (its own tmpfs). The rest of the list is kernel
attack surface that no notebook needs (performance counters, BPF, userfaultfd, io_uring).
A blocked call fails with EPERM, as a container runtime's default profile answers.
"""

from __future__ import annotations

import errno
import functools
import os

BLOCKED = ("add_key", "keyctl", "request_key",  # the kernel keyrings: shared by every sandbox of one uid
           "perf_event_open", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register")


@functools.lru_cache(maxsize=1)
def filter_program() -> bytes | None:
    """The compiled filter (a cBPF program, as ``seccomp_export_bpf`` writes it), or None when
    libseccomp cannot be loaded here (``why_unavailable`` says why)."""
    try:
        import pyseccomp  # ctypes over libseccomp.so.2 (Debian's libseccomp2): loaded only where a box is made
    except (ImportError, OSError, RuntimeError):
        return None
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in BLOCKED:
        try:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):  # a call this architecture does not have
            continue
    with os.fdopen(os.memfd_create("maxpool-seccomp-export", os.MFD_CLOEXEC), "w+b") as exported:
        rules.export_bpf(exported)  # libseccomp writes to the descriptor itself
        exported.seek(0)
        return exported.read()


def why_unavailable() -> str:
    return ("libseccomp cannot be loaded (pip install pyseccomp; apt-get install libseccomp2), so the "
            "sandboxes' keyring calls are not blocked: one submission could leave its code for another")


def program_fd(program: bytes) -> int:
    """A descriptor bubblewrap reads the filter from (``--seccomp FD``), at its start."""
    fd = os.memfd_create("maxpool-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
