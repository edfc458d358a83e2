"""``doctor``'s look at nbgrader's exchange from a student's side: whether a user who is not
the instructor can do what a student's ``nbgrader list``, ``fetch_assignment``, ``submit`` and
``fetch_feedback`` do there, and whether the students' nbgrader, which never reads the course's
``nbgrader_config.py``, is told where the exchange is (docs/operations.md#students).

As root the folders are asked of the kernel as a real unprivileged user (``os.access`` in a
child process that became that user: ``nobody`` with no groups, or ``--student NAME`` with
their groups), so ACLs and every folder on the way count. As anyone else no other user can be
become: the folders' permission bits for other users are read instead, and the line says so.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from jupyter_core.paths import jupyter_config_dir, jupyter_config_path
from nbgrader.exchange.default.exchange import Exchange
from traitlets.config.loader import Config

from ..course.directory import read_config_file, read_course_config

# what a student's nbgrader commands need of each folder: (path under the exchange, access, why)
NEEDS = [((), os.W_OK | os.X_OK, "every student command checks that it can write the exchange's root"),
         (("{course}",), os.X_OK, "the course's folder is on the way to the others"),
         (("{course}", "outbound"), os.R_OK | os.X_OK, "list and fetch_assignment read the released assignments"),
         (("{course}", "inbound"), os.W_OK | os.X_OK, "submit makes the student's folder there"),
         (("{course}", "feedback"), os.X_OK, "fetch_feedback opens the student's pages there by name")]
WORDS = {os.R_OK: "read", os.W_OK: "write", os.X_OK: "enter"}
BITS = {os.R_OK: stat.S_IROTH, os.W_OK: stat.S_IWOTH, os.X_OK: stat.S_IXOTH}


def exchange_of(course: Path) -> tuple[Path, str]:
    """The exchange's root and the course id as the instructor's nbgrader reads them in ``course``."""
    config = read_course_config(course)
    root = config.Exchange.get("root") or Exchange.class_traits()["root"].default()
    return Path(root), config.CourseDirectory.get("course_id", "")


def _folders(root: Path, course_id: str) -> list[tuple[Path, int, str]]:
    found = [(root.joinpath(*(part.format(course=course_id) for part in parts)), access, why)
             for parts, access, why in NEEDS]
    outbound = root / course_id / "outbound"
    if outbound.is_dir():
        for path in sorted(outbound.rglob("*")):  # each released assignment, its folders and files
            found.append((path, os.R_OK | (os.X_OK if path.is_dir() else 0), "fetch_assignment copies it"))
    return [(path, access, why) for path, access, why in found if path.exists()]


def _as_user(user: pwd.struct_passwd, checks: list[tuple[Path, int]], with_groups: bool) -> list[bool]:
    """``os.access`` of each check in a child process that is ``user`` (real and effective ids)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover  (the child's exit status says it)
        try:
            os.close(read)
            if with_groups:
                os.initgroups(user.pw_name, user.pw_gid)
            else:
                os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.write(write, bytes(int(os.access(path, access)) for path, access in checks))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        said = answer.read()
    os.waitpid(child, 0)
    return [bool(byte) for byte in said] if len(said) == len(checks) else [False] * len(checks)


def _by_bits(checks: list[tuple[Path, int]]) -> list[bool]:
    """Whether a user who is neither owner nor in the group may, by the permission bits alone."""
    def allowed(path: Path, access: int) -> bool:
        try:
            on_the_way = all(os.stat(folder).st_mode & stat.S_IXOTH for folder in path.parents)
            mode = os.stat(path).st_mode
        except OSError:
            return False
        return on_the_way and all(mode & bit for flag, bit in BITS.items() if access & flag)
    return [allowed(path, access) for path, access in checks]


def exchange_finding(course: Path, student: str | None = None) -> tuple[bool, str, str | None]:
    """(holds, what was seen, the fix) of the exchange, for a student."""
    root, course_id = exchange_of(course)
    if not root.is_dir():
        return True, f"not checked: the exchange {root} does not exist yet (release_assignment makes it)", None
    folders = _folders(root, course_id)
    checks = [(path, access) for path, access, _ in folders]
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam(student or "nobody")
        except KeyError:
            return False, f"not checked: this machine has no user {student or 'nobody'!r}", \
                "pass --student with the account name of a student of this machine"
        results = _as_user(user, checks, with_groups=student is not None)
        how = f"checked as {user.pw_name} (uid {user.pw_uid}{', their groups' if student else ', no groups'})"
    else:
        results = _by_bits(checks)
        how = "checked by the permission bits for other users (run doctor as root to check as a real user)"
    refused = [(path, access, why) for (path, access, why), ok in zip(folders, results) if not ok]
    if not refused:
        made = "" if (root / course_id / "inbound").is_dir() else "; no course folder yet (release_assignment makes it)"
        return True, f"{root}: a student can reach what nbgrader's student commands need, {how}{made}", None
    path, access, why = refused[0]
    words = " and ".join(word for flag, word in WORDS.items() if access & flag)
    seen = f"{root}: a student cannot {words} {path} ({why}), {how}" + (
        f"; {len(refused) - 1} more" if len(refused) > 1 else "")
    modes = {os.W_OK | os.X_OK: "1777" if path == root else "2733", os.R_OK | os.X_OK: "755", os.X_OK: "711",
             os.R_OK: "644"}
    fix = (f"chmod {modes.get(access, '755')} {path} (and o+x on every folder above it): the mode nbgrader gives "
           "the folder when it makes it, and never again to one that exists (docs/operations.md#exchange)")
    return False, seen, fix


def students_config() -> tuple[Config, list[str]]:
    """What every user's nbgrader reads outside a course folder, before their own ~/.jupyter:
    the nbgrader_config.py files of the system's and the environment's Jupyter config folders."""
    merged, read = Config(), []
    mine = os.path.realpath(jupyter_config_dir())
    for folder in reversed(jupyter_config_path()):  # lowest priority first
        if os.path.realpath(folder) == mine or not os.path.isfile(os.path.join(folder, "nbgrader_config.py")):
            continue
        try:
            merged.merge(read_config_file(folder))
        except Exception:  # noqa: BLE001, S112  a file students' nbgrader would stop at too: named as not read
            continue
        read.append(os.path.join(folder, "nbgrader_config.py"))
    return merged, read


def students_config_finding(course: Path) -> tuple[bool, str, str | None]:
    """Whether the system-wide config tells students' nbgrader this course's exchange and id."""
    root, course_id = exchange_of(course)
    config, read = students_config()
    theirs = (config.Exchange.get("root"), config.CourseDirectory.get("course_id"))
    where = ", ".join(read) or "no system-wide nbgrader_config.py"
    if theirs[0] and Path(theirs[0]) == root and theirs[1] == course_id:
        return True, f"students' nbgrader reads Exchange.root = {root} and course_id = {course_id} ({where})", None
    said = [f"{name} = {value!r}" if value else f"no {name}" for name, value in zip(("Exchange.root", "course_id"),
                                                                                     theirs)]
    return False, (f"students' nbgrader, run outside the course folder, reads {' and '.join(said)} ({where}); this "
                   f"course's are {str(root)!r} and {course_id!r}, so a student's nbgrader list finds nothing"), \
        (f"write c.Exchange.root = {str(root)!r} and c.CourseDirectory.course_id = {course_id!r} into "
         f"/etc/jupyter/nbgrader_config.py (docs/operations.md#students)")
