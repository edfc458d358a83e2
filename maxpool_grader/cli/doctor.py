"""``maxpool-grader doctor``: which of the grading guarantees hold on this machine, for the
user who runs it, each with the one step that would make it hold.

It asks exactly what grading asks (``box.bwrap_works``, ``cgroups.available``,
``cgroups.cpu_share_available``, the seccomp
filter, the gradebook's connection, ``glue.patches.mismatches``, and the control submission
every grading backend grades first), as the same user, so what it prints is what a grading
run here gets (tests/test_doctor.py runs it as root and as a normal user and compares). It
also says whether the course's nbgrader_config.py names the exercise and leaves none of its
plugins out (a course the exercise was added to: tests/test_add_to_course.py), whether git
tracks, or would offer for the next commit, a file that grants access (a student's link, the
service's secret, a private key), or whether one is readable by others, and whether students
reach the exchange and are told where it is (cli/exchange_check.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from sqlalchemy import create_engine, text

from ..backend.control import run_control
from ..course.directory import configured_db_url, course_config, exercise_in, notebook_path, read_course_config
from ..course.files import exposed_to_git
from ..glue.exercise_config import missing
from ..glue.patches import mismatches
from ..glue.thisexercise import exercise_notebooks
from ..names import ASSIGNMENT
from ..sandbox import box, cgroups, seccomp
from ..serve.signin import ACCESS_FILES
from .exchange_check import exchange_finding, students_config_finding


@dataclass(frozen=True)
class Guarantee:
    """One thing grading relies on: whether it holds here, what was seen, and the fix."""

    name: str
    holds: bool
    seen: str
    fix: str | None = None
    needed: bool = True  # False: what it says changes no guarantee (who runs it)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _user_namespaces() -> tuple[bool, str, str | None]:
    """Whether this kernel lets this user make user namespaces, which bubblewrap needs."""
    limit = _read("/proc/sys/user/max_user_namespaces")
    if limit == "0":
        return False, "user namespaces are off (user.max_user_namespaces = 0)", \
            "sysctl -w user.max_user_namespaces=15000 (as root; in /etc/sysctl.d/ to keep it)"
    if os.geteuid() != 0 and _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return False, "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)", \
            "sysctl -w kernel.unprivileged_userns_clone=1 (as root), or grade as root"
    if os.geteuid() != 0 and _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return False, "AppArmor restricts unprivileged user namespaces", \
            "give bwrap an AppArmor profile that allows userns (Ubuntu 24.04 and later), or grade as root"
    return True, "user namespaces allowed", None


def _sandbox() -> list[Guarantee]:
    if box.BWRAP is None:
        return [Guarantee("sandbox", False, "bubblewrap (bwrap) is not installed: student code would run with "
                        "your rights (GRADING UNSANDBOXED)", "apt-get install bubblewrap")]
    if os.geteuid() == 0 and box.SETPRIV is None:
        return [Guarantee("sandbox", False, "as root the sandbox drops to an unprivileged uid with setpriv, "
                        "which is missing", "apt-get install util-linux")]
    if box.bwrap_works():
        return [Guarantee("sandbox", True, f"bubblewrap ({box.BWRAP}) makes the sandbox: no network, no files of "
                        "yours, its own PID namespace, no capability")]
    allowed, seen, fix = _user_namespaces()
    return [Guarantee("sandbox", False, f"{box.BWRAP} is installed but cannot make the sandbox: {seen}",
                    fix or "run `bwrap --unshare-all --bind / / true` to see bubblewrap's own error")]


def _cgroup() -> Guarantee:
    kinds = sorted({kind for _, kind, _ in cgroups.mounts() if kind in ("cgroup", "cgroup2")})
    kind = {"cgroup": "v1", "cgroup2": "v2"}
    seen = "cgroup " + "+".join(kind[k] for k in kinds) if kinds else "no cgroup file system mounted"
    if cgroups.available():
        return Guarantee("cgroup", True, f"{seen}: each submission gets a cgroup capping memory and processes "
                                       "for all its processes together")
    v1_memory = any(kind == "cgroup" and "memory" in options for _, kind, options in cgroups.mounts())
    if os.geteuid() == 0:
        fix = "mount the memory and pids controllers (cgroup v1) or cgroup v2 with both enabled"
    elif v1_memory:  # the memory controller is in a v1 hierarchy: a v2 delegation cannot have it
        fix = "grade as root, or have an administrator chown a subtree of the memory and pids hierarchies to you"
    else:
        fix = "run the grading command under systemd-run --user --scope -p Delegate=yes"
    return Guarantee("cgroup", False, f"{seen}, but {cgroups.why_unavailable()}: memory is capped per process "
                                    "only, processes by RLIMIT_NPROC (GRADING WITHOUT A CGROUP)", fix)


def _cpu_share() -> Guarantee:
    """Whether each box gets its share of the CPU (docs/security.md#cpu-share)."""
    if cgroups.cpu_share_available():
        return Guarantee("cpu", True, "each submission's cgroup has the cpu controller: its processes share "
                                    "at most c.SealedBox.cpus CPUs (1 by default), and a time limit that runs "
                                    "out while its box was starved of CPU is graded again, never failed")
    fix = ("grade as root, or delegate the cpu controller to your user (systemctl edit user@.service: "
           "Delegate=cpu memory pids) and grade under systemd-run --user --scope -p Delegate=yes")
    return Guarantee("cpu", False, "no cpu controller for the submissions' cgroups here: a submission's "
                                 "processes may take every CPU, and the time limits hold on the wall clock "
                                 "alone, so a starved run can still cost a slow student points "
                                 "(NO CPU SHARE PER SUBMISSION)", fix)


def _user() -> Guarantee:
    if os.geteuid() == 0:
        return Guarantee("user", True, "root: student code runs as an unprivileged uid in the sandbox", needed=False)
    return Guarantee("user", True, f"uid {os.geteuid()}: student code runs as you, without any capability, in the "
                                 "sandbox's user namespace", needed=False)


def _gradebook(course: Path, db_url: str | None) -> Guarantee:
    if db_url is None and not (course / "nbgrader_config.py").is_file():
        return Guarantee("gradebook", True, f"not checked: {course} is no course (pass --course-dir or --db)",
                       needed=False)
    url = db_url or configured_db_url(course)
    shown = url.split("@")[-1] if "@" in url else url  # no password on the terminal
    options = {"connect_args": {"connect_timeout": 5}} if url.startswith("postgresql") else {}
    if url.startswith("sqlite:///"):
        folder = Path(url[len("sqlite:///"):]).parent
        if not os.access(folder, os.W_OK):
            return Guarantee("gradebook", False, f"{shown}: {folder} is not writable for you",
                           f"grade as the owner of {folder}, or pass --db")
    try:
        engine = create_engine(url, **options)
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        engine.dispose()
    except Exception as problem:  # noqa: BLE001  a driver's own error, named
        first = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        return Guarantee("gradebook", False, f"{shown}: {first[:200]}",
                       "start the database server, or correct --db / CourseDirectory.db_url")
    return Guarantee("gradebook", True, f"{shown} answers")


def _patches() -> Guarantee:
    problems = mismatches()
    if problems:
        return Guarantee("nbgrader", False, f"{len(problems)} patch(es) written for other versions: "
                       + problems[0].split(";")[0],
                       "pip install -e . in the course (the versions pyproject.toml names)")
    return Guarantee("nbgrader", True, "every patch of nbgrader fits the installed versions")


def _seccomp() -> Guarantee:
    if seccomp.filter_program() is None:
        return Guarantee("keyring", False, seccomp.why_unavailable(), "apt-get install libseccomp2; pip install -e .")
    return Guarantee("keyring", True, "a seccomp filter refuses the keyring, file lock and file watch calls in "
                                    "every sandbox: no submission can leave anything there for another "
                                    "(docs/security.md#shared)")


def _exercise(course: Path) -> Guarantee:
    """The course's nbgrader_config.py, loaded as nbgrader loads it, names one assignment as
    the exercise, that assignment's source notebook is the exercise's, and the course's own
    settings leave none of its plugins out (glue/exercise_config.py: ``missing``)."""
    if not (course / "nbgrader_config.py").is_file():
        return Guarantee("exercise", True, f"not checked: {course} has no nbgrader_config.py (pass --course-dir)",
                         needed=False)
    try:
        config = read_course_config(course)
        config.CourseDirectory.setdefault("root", str(course.resolve()))
        found = exercise_notebooks(config)
    except (Exception, SystemExit) as problem:  # noqa: BLE001  the course's own file, whatever it raises
        return Guarantee("exercise", False, f"nbgrader_config.py does not load: {type(problem).__name__}: "
                         f"{str(problem)[:200]}", "fix nbgrader_config.py: nbgrader cannot use it either")
    if not found:
        return Guarantee("exercise", True, "not checked: no assignment of this course is the max_pool_backward "
                         "exercise (maxpool-grader add-to-course puts it in)", needed=False)
    if len(found) > 1:
        return Guarantee("exercise", False, f"{len(found)} assignments are the exercise ("
                         + ", ".join(assignment for assignment, _ in found) + "): grade cannot tell which",
                         "set c.ThisExercise.assignment in nbgrader_config.py")
    assignment, notebook = found[0]
    where = Path(CourseDirectory(config=config).format_path("source", ".", assignment)) / f"{notebook}.ipynb"
    if not where.is_file():
        return Guarantee("exercise", False, f"c.ThisExercise names {assignment}, but {where} is missing",
                         "maxpool-grader add-to-course --as " + assignment)
    problems = missing(config)
    if problems:
        return Guarantee("exercise", False, "; ".join(problems) + ": the exercise is not graded with its "
                         "guarantees", "add them to your setting (maxpool_grader/glue/exercise_config.py "
                         "lists them), or delete your line: docs/instructor.md#your-course")
    return Guarantee("exercise", True, f"{assignment} is the exercise ({os.path.relpath(where, course)}), "
                     "graded with all of its plugins")


def _control(course: Path, db_url: str | None) -> Guarantee:
    """The control submission every grading backend runs first (backend/control.py)."""
    assignment = ASSIGNMENT
    if (course / "nbgrader_config.py").is_file():
        try:  # the exercise under the course's name for it (c.ThisExercise, or what source/ holds)
            assignment = exercise_in(course.resolve())[0]
        except ValueError:
            pass
    if not (course / "nbgrader_config.py").is_file() or not notebook_path(course, "release", ".", assignment).exists():
        return Guarantee("control", True, f"not checked: {course} has no released notebook (pass --course-dir, or "
                                        "release it: maxpool-grader grade does)", needed=False)
    found = run_control(course, course_config(course, db_url or configured_db_url(course)), assignment=assignment)
    if found.passed:
        return Guarantee("control", True, f"the reference solution gets every point and the blank release none, "
                                        f"graded in the sandbox, and its feedback page is made "
                                        f"({found.seconds:.1f} s)")
    return Guarantee("control", False, found.sentence(), "see docs/security.md#control")


# what git must never hold: every file that grants access (serve/signin.py), everything else of the
# service's state, and the private keys of the cluster's certificates (cluster-certs' *-key.pem)
KEPT_FROM_GIT = [*ACCESS_FILES, ".maxpool-grader", ":(glob)**/*-key.pem"]


def _secrets(course: Path) -> Guarantee:
    """No file that grants access is tracked by git, offered for its next commit, or readable by others."""
    exposed = exposed_to_git(course, KEPT_FROM_GIT)
    loose = [name for name in ACCESS_FILES if (course / name).is_file() and (course / name).stat().st_mode & 0o077]
    if exposed or loose:
        tracked = [name for name, how in exposed.items() if how == "tracked"]
        seen = "; ".join([*(f"git {'tracks' if how == 'tracked' else 'does not ignore'} {name}"
                            for name, how in exposed.items()), *(f"{name} is readable by others" for name in loose)])
        fixes = [*([f"git rm --cached {' '.join(tracked)} (a link or key ever committed is known: "
                    "maxpool-grader tokens --rotate, or make a new key)"] if tracked else []),
                 *(["list them in .gitignore"] if exposed else []),
                 *([f"chmod 600 {' '.join(loose)}"] if loose else [])]
        return Guarantee("secrets", False, seen[:400], "; ".join(fixes))
    return Guarantee("secrets", True, "no file that grants access (links, the service's secret, keys) is in git's "
                                    "way or readable by others")


def _exchange(course: Path, student: str | None) -> list[Guarantee]:
    """The exchange and the students' config, as a student's nbgrader meets them: what they say
    changes no grading guarantee (a course on one machine needs neither), so never the exit status."""
    if not (course / "nbgrader_config.py").is_file():
        return [Guarantee("exchange", True, f"not checked: {course} is no course (pass --course-dir)", needed=False)]
    return [Guarantee("exchange", *exchange_finding(course, student), needed=False),
            Guarantee("students", *students_config_finding(course), needed=False)]


def guarantees(course: Path, db_url: str | None = None, student: str | None = None) -> list[Guarantee]:
    return [*_sandbox(), _cgroup(), _cpu_share(), _seccomp(), _user(), _gradebook(course, db_url), _patches(),
            _exercise(course), *_exchange(course, student), _control(course, db_url), _secrets(course)]


def summary(found: list[Guarantee]) -> str:
    by_name = {finding.name: finding for finding in found}
    sandboxed = "yes" if by_name["sandbox"].holds else "NO"
    caps = "per submission (cgroup)" if by_name["cgroup"].holds else "per process only"
    cpu = "yes" if by_name["cpu"].holds else "NO (time limits on the wall clock alone)"
    return f"Student code sandboxed: {sandboxed}. Memory and process caps: {caps}. CPU share per submission: {cpu}."


def doctor(course: Path, db_url: str | None = None, as_json: bool = False, student: str | None = None) -> int:
    """Print the findings; 0 when every needed one holds, else 1."""
    found = guarantees(course, db_url, student)
    if as_json:
        print(json.dumps([asdict(finding) for finding in found], indent=1))
    else:
        for finding in found:
            mark = "ok  " if finding.holds else "FAIL" if finding.needed else "warn"  # warn: not a grading guarantee
            print(f"{mark} {finding.name:<10} {finding.seen}")
            if finding.fix and not finding.holds:
                print(f"     {'':<10} fix: {finding.fix}")
        print(summary(found))
    return 0 if all(finding.holds or not finding.needed for finding in found) else 1
