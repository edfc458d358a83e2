"""What a sandbox sees: the allow-list file system, the paths inside, the environment.

Read-only, only the system's programs and libraries (``/usr``, a minimal ``/etc``), the
Python installation and its site-packages, and for the kernel the grader package (its
hidden test cells call it): no home directory, no ``/tmp`` of the host, no course or
neighbouring folder, no gradebook. Writable is only the sandbox's own scratch folder
``/scratch``, a fresh size-limited tmpfs that starts with a copy of the submission's
regular files (symbolic links are never copied nor followed). The environment holds
nothing of the grader's.
"""

from __future__ import annotations

import functools
import os
import site
import stat
import sys
from pathlib import Path

from ..names import PACKAGE_DIR

AS_ROOT = os.geteuid() == 0
STUDENT_UID = STUDENT_GID = 65534  # "nobody": the student's code when grading runs as root
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
# The little of /etc a Python process needs (dynamic linker, time zone); passwd and group
# are written for the sandbox.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "nsswitch.conf", "fonts")


def regular_files(folder: Path, most: int = 200, total: int = 64 << 20) -> list[tuple[str, str]]:
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


def identity_file(private: Path, name: str) -> Path:
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


@functools.lru_cache(maxsize=2)
def read_only_trees(kernel: bool) -> tuple[str, ...]:
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


def system_binds(kernel: bool) -> list[str]:
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
    for tree in read_only_trees(kernel):
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


def kernel_search_path(*more: str) -> dict[str, str]:
    """PYTHONPATH for the student's kernel and the kernel zygote it is forked from: the folder
    that holds PACKAGE_DIR first, so the hidden test cells import the very package this
    process grades with (the sandbox binds it read-only at its own path). Without it the
    kernel's Python finds the package its environment knows, which is another folder when
    the course carries its own copy and the virtual environment is another clone's: that
    folder is not in the sandbox, and every hidden test cell failed to import."""
    folder = str(PACKAGE_DIR.parent)
    if folder in {os.path.realpath(path) for path in site.getsitepackages()}:
        folder = ""  # an installed package: on the path already (and site-packages must not go first)
    path = os.pathsep.join(part for part in (folder, *more) if part)
    return {"PYTHONPATH": path} if path else {}


def environment(home: str = HOME, **extra: str) -> dict[str, str]:
    """The whole environment of a sandboxed process: nothing of the grader's."""
    bin_dir = os.path.dirname(PYTHON)
    return {"PATH": os.pathsep.join([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": home, "TMPDIR": TMPDIR, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "MPLCONFIGDIR": f"{home}/.config/matplotlib",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", **extra}
