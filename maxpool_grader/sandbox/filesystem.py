"""What a sandbox sees: the allow-list file system, the paths inside, the environment.

Read-only, only the system's programs and libraries (``/usr``, a minimal ``/etc``), the
Python installation and every folder it imports from, with the grader package hidden
wherever it lies: no home directory, no ``/tmp`` of the host, no course or neighbouring
folder, no gradebook, no reference or hidden test. Writable is only the sandbox's own scratch folder
``/scratch``, a fresh size-limited tmpfs that starts with a copy of the submission's
regular files (symbolic links are never copied nor followed). The environment holds
nothing of the grader's.
"""

from __future__ import annotations

import contextlib
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


# What the kernel shows every box of the whole machine that a box could write to: the lock
# table (who holds which range of which file). An empty file is put in its place.
MASKED_PROC = ("/proc/locks",)


def masked_proc(private: Path) -> tuple[str, ...]:
    """``MASKED_PROC``, once ``private`` holds the empty file (``empty``) box.py copies over each."""
    empty = private / "empty"
    if not empty.exists():
        empty.write_bytes(b"")
        empty.chmod(0o444)
    return MASKED_PROC


def _private_places() -> set[str]:
    """The home directory and the directory grading runs in (the course): a tree that holds
    either is never the sandbox's to see."""
    return {os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.getcwd())}


def _holds(tree: str, path: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _library_directory(entry: str) -> bool:
    """A folder packages are installed into (site-packages, ``pip install --target``): it
    holds their ``*.dist-info`` (or ``*.egg-info``) records. A course folder does not."""
    if entry in {os.path.realpath(path) for path in [*site.getsitepackages(), site.getusersitepackages()]}:
        return True
    with contextlib.suppress(OSError):
        return any(name.endswith((".dist-info", ".egg-info")) for name in os.listdir(entry))
    return False


@functools.lru_cache(maxsize=1)
def import_paths() -> tuple[str, ...]:
    """The library folders this Python imports from beyond its own installation, as real
    paths, in its order: a virtual environment's or the system's site-packages, the user's
    (``pip install --user``), a ``pip install --target`` folder on ``PYTHONPATH``, a conda
    environment's. So every install that works for the grader works in the sandbox. Only
    library folders (``_library_directory``): a folder of loose modules on ``sys.path`` (the
    tests', a course folder) is not the sandbox's, nor is any folder that holds the course or
    the home directory; one that holds the grader package is seen without it
    (``hidden_paths``)."""
    found: list[str] = []
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if not real or not os.path.isdir(real) or real in found or not _library_directory(real):
            continue
        if _holds(os.path.realpath(sys.base_prefix), real):  # the installation's own: found there anyway
            continue
        if any(_holds(real, place) for place in _private_places()):
            continue
        found.append(real)
    return tuple(found)


@functools.lru_cache(maxsize=1)
def read_only_trees() -> tuple[str, ...]:
    """The directories the sandbox sees (read-only): the Python installation and every folder
    it imports from (``import_paths``); nothing that holds the course."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), *site.getsitepackages(), *import_paths()}
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        candidates.add(site.getusersitepackages())
    trees = sorted({os.path.realpath(path) for path in candidates if path and os.path.isdir(path)})
    private = _private_places()
    kept: list[str] = []
    for tree in sorted(set(trees), key=len):  # a tree inside one already kept needs no bind
        inside_kept = any(_holds(top, tree) for top in ["/usr", *kept])
        if not (inside_kept or any(_holds(tree, path) for path in private)):
            kept.append(tree)
    return tuple(kept)


@functools.lru_cache(maxsize=1)
def hidden_paths() -> tuple[str, ...]:
    """What the sandbox must not see inside the trees it sees: the grader package (the
    reference, the hidden tests, Part A's answer), wherever an import could find it (an
    installed copy in site-packages as well as the one this process runs)."""
    candidates = {str(PACKAGE_DIR)} | {os.path.join(os.path.realpath(entry), PACKAGE_DIR.name)
                                       for entry in sys.path if entry}
    trees = ["/usr", *read_only_trees()]
    return tuple(sorted(path for path in candidates
                        if os.path.isdir(path) and any(_holds(tree, path) for tree in trees)))


@functools.lru_cache(maxsize=1)
def grader_records() -> tuple[str, ...]:
    """What pip wrote down of the grader's install in the library folders the sandbox sees: its
    ``*.dist-info`` (``direct_url.json`` names the checkout of an editable install) and an
    editable install's ``.pth`` and finder (which name the checkout's path). A folder is shown
    empty, a file unreadable (Python's ``site`` skips a ``.pth`` it cannot read)."""
    name = PACKAGE_DIR.name
    found = set()
    for folder in {*site.getsitepackages(), *import_paths()}:
        with contextlib.suppress(OSError):
            for entry in os.listdir(folder):
                project = entry.split("-", 1)[0].rsplit(".", 1)[0].replace("-", "_").lower()
                if (entry.startswith("__editable__") and name in entry) or (project == name and entry.endswith(
                        (".dist-info", ".egg-info", ".egg-link"))):
                    found.add(os.path.join(os.path.realpath(folder), entry))
    trees = ["/usr", *read_only_trees()]
    return tuple(sorted(path for path in found if any(_holds(tree, path) for tree in trees)))


def system_binds() -> list[str]:
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
    for tree in read_only_trees():
        # the folders on the way, searchable by the sandbox's uid (bwrap would copy root's 0700)
        for ancestor in reversed(Path(tree).parents[:-1]):
            if str(ancestor) not in made:
                made.add(str(ancestor))
                argv += ["--perms", "0755", "--dir", str(ancestor)]
        argv += ["--ro-bind", tree, tree]
    for path in hidden_paths():  # an empty, read-only folder in its place
        argv += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    for path in grader_records():  # an empty folder; a file is /dev/null, which a nodev mount never opens
        argv += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path] if os.path.isdir(path) \
            else ["--ro-bind", os.devnull, path]
    # the interpreter's path as the grader knows it (a virtualenv's bin/python is a link)
    for path in {os.path.abspath(sys.prefix), os.path.dirname(PYTHON)}:
        real = os.path.realpath(path)
        if path != real and os.path.isdir(real):
            argv += ["--symlink", real, path]
    return argv


def python_path() -> dict[str, str]:
    """What every sandboxed Python (the kernel, the verdict process, their zygotes) needs in
    its environment to import what the grader's does, where its own installation does not
    say so already: ``PYTHONPATH`` (``pip install --target``), and the user's base
    (``pip install --user``; its ``.pth`` files are read as the grader's are). Only folders
    of ``import_paths`` (none holds the grader package or the course)."""
    seen = set(import_paths())
    extra: dict[str, str] = {}
    given = [os.path.realpath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    kept = list(dict.fromkeys(entry for entry in given if entry in seen))
    if kept:
        extra["PYTHONPATH"] = os.pathsep.join(kept)
    if site.ENABLE_USER_SITE and os.path.realpath(site.getusersitepackages()) in seen:
        extra["PYTHONUSERBASE"] = site.getuserbase()
    return extra


def environment(home: str = HOME, **extra: str) -> dict[str, str]:
    """The whole environment of a sandboxed process: nothing of the grader's, but where its
    Python finds the packages the grader's does (``python_path``)."""
    bin_dir = os.path.dirname(PYTHON)
    return {"PATH": os.pathsep.join([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": home, "TMPDIR": TMPDIR, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "MPLCONFIGDIR": f"{home}/.config/matplotlib",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", **python_path(), **extra}
