"""The system calls no sandboxed process may make: a seccomp filter, compiled once by
libseccomp (``pyseccomp``), given to bubblewrap (``--seccomp FD``) for a process it starts
and installed by the zygote's child for a process forked warm (zygote.py).

Why these. Every sandbox of every submission runs as the same uid (``nobody`` when root
grades, the instructor's own uid otherwise), and the kernel's keyrings belong to a uid, not
to a namespace: without this filter a submission stored its solution in the user keyring
and a classmate's, graded later in another course, loaded it and scored full marks. Every
sandbox also opens the same read-only files (the Python installation, NumPy, ``/usr``), and
what the kernel keeps per file is shared by all of them, whatever their namespaces: record
locks (``fcntl``'s F_GETLK, F_SETLK, F_SETLKW and their OFD variants), ``flock`` locks and
leases, and the watches of dnotify, inotify and fanotify. A submission held one read lock per
byte of its source on the Python binary and a classmate graded at the same time read them back
with F_GETLK: 15/15 for no code (tests/test_shared_objects.py; flock and inotify carried it as
well). So those calls are refused too: a lock with ENOLCK ("No locks available", what a file
system without locking answers; SQLite and Python's ``fcntl`` report it as such), a watch
with EPERM. No process of the box needs one: its writable files are its own, and the
kernel's IPython history keeps to memory (kernels.py). The other channels a shared uid
leaves are closed by the sandbox itself: System V IPC and POSIX message queues (its own IPC
namespace), abstract Unix sockets (its own network namespace), ``/dev/shm`` and every
writable folder (its own tmpfs), ``/proc/locks`` (an empty file in its place: filesystem.py).
The rest of the list is kernel attack surface that no notebook needs (performance counters,
BPF, userfaultfd, io_uring). Another blocked call fails with EPERM, as a container
runtime's default profile answers. docs/security.md#shared lists what boxes still share.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os

BLOCKED = ("add_key", "keyctl", "request_key",  # the kernel keyrings: shared by every sandbox of one uid
           "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",  # watches of files
           "perf_event_open", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register")
# fcntl's commands on what belongs to a file, not to a box (values of <fcntl.h> on every Linux
# architecture; F_GETLK64 and its kin are these on 64-bit ones)
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
LOCK_COMMANDS = (fcntl.F_GETLK, fcntl.F_SETLK, fcntl.F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW,
                 fcntl.F_SETLEASE, fcntl.F_GETLEASE)
WATCH_COMMANDS = (fcntl.F_NOTIFY,)


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
    rules.add_rule(pyseccomp.ERRNO(errno.ENOLCK), "flock")
    for commands, answer in ((LOCK_COMMANDS, errno.ENOLCK), (WATCH_COMMANDS, errno.EPERM)):
        for command in commands:  # the command is fcntl's second argument (an int: its low 32 bits)
            rules.add_rule(pyseccomp.ERRNO(answer), "fcntl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, command))
    with os.fdopen(os.memfd_create("maxpool-seccomp-export", os.MFD_CLOEXEC), "w+b") as exported:
        rules.export_bpf(exported)  # libseccomp writes to the descriptor itself
        exported.seek(0)
        return exported.read()


def why_unavailable() -> str:
    return ("libseccomp cannot be loaded (pip install pyseccomp; apt-get install libseccomp2), so the "
            "sandboxes' keyring, lock and watch calls are not blocked: one submission could leave its code "
            "for another")


def program_fd(program: bytes) -> int:
    """A descriptor bubblewrap reads the filter from (``--seccomp FD``), at its start."""
    fd = os.memfd_create("maxpool-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
