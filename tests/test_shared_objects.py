"""What two boxes share (docs/security.md#shared): a sender and a receiver per kernel object,
graded in one ``maxpool-grader grade`` run on workers of their own, so that the receiver
listens while the sender sends (tests/shared.py builds them).

What must hold, as root and as a normal user: the sender keeps its merit (15/15) and learns
its call was refused, by an errno it reads; the receiver finds nothing and scores what
returning zeros scores (what it earns alone); the course is byte-identical; nothing is left
running. A probe in a bare box checks every refused call and the hidden /proc/locks
directly, and that NumPy and a kernel's history still work there.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import shared
from corpus import FULL, ZERO
from helpers import ASSIGNMENT, BIN, as_instructor, copy_course, digests, instructor
from hostile import PASSED, report_of
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import box as sealed_box
from maxpool_grader.sandbox import filesystem

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader

SECONDS = 8.0  # how long each sender sends and each receiver listens (load_seconds is 10)


class Run:
    """A course holding one channel's sender and receiver, graded once by ``grade``."""

    def __init__(self, channel: str, as_root: bool):
        self.base = Path(tempfile.mkdtemp(prefix="maxpool-shared-", dir="/tmp"))
        self.base.chmod(0o755)
        self.course, self.tmpdir = self.base / "course", self.base / "tmp"
        copy_course(self.course, with_submissions=False)
        self.tmpdir.mkdir()
        self.user = None if as_root else instructor()
        self.chown()
        self.run("nbgrader", "generate_assignment", ASSIGNMENT, check=True)
        release = nbformat.read(self.course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        self.sender, self.receiver = shared.pair(channel, SECONDS, ZERO, FULL, PASSED)
        for submission in (self.sender, self.receiver):
            folder = self.course / "submitted" / submission.name / ASSIGNMENT
            folder.mkdir(parents=True)
            submission.build(folder, release)
        self.chown()
        self.before = digests(self.course)
        # three workers: one grades the control, the other two the pair, side by side
        self.graded = self.run("maxpool-grader", "grade", "--workers", "3")
        self.after = digests(self.course)
        self.survivors = self._survivors()

    def _survivors(self, seconds: float = 10) -> list[str]:
        """This run's processes (their command line names its TMPDIR) still alive ``seconds`` after
        it ended (a zygote notices its run ended within a second or two)."""
        deadline = time.monotonic() + seconds
        while True:
            found = [_cmdline(pid).replace(b"\0", b" ").decode(errors="replace")[:200]
                     for pid in filter(str.isdigit, os.listdir("/proc")) if str(self.tmpdir).encode() in _cmdline(pid)]
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    def chown(self) -> None:
        if self.user:
            for path in (self.base, *self.base.rglob("*")):
                os.lchown(path, self.user.pw_uid, self.user.pw_gid)

    def run(self, *argv: str, check: bool = False) -> subprocess.CompletedProcess:
        home = self.user.pw_dir if self.user else pwd.getpwuid(os.getuid()).pw_dir
        env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(self.tmpdir),
               "HOME": home, "LANG": "C.UTF-8"}
        command = [str(BIN / argv[0]), *argv[1:]]
        if self.user:
            command = as_instructor(command, env)
            env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
        result = subprocess.run(command, cwd=self.course, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=900)
        if check and result.returncode != 0:
            raise AssertionError(f"{argv} failed:\n{result.stdout[-4000:]}")
        return result

    def score(self, student: str) -> float:
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            return gradebook.find_submission(ASSIGNMENT, student).code_score

    def report(self, student: str) -> dict:
        return report_of(self.course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb") or {}


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture(scope="module", params=[(channel, as_root) for as_root in (True, False) for channel in shared.CHANNELS],
                ids=lambda param: f"{param[0]}-{'root' if param[1] else 'user'}")
def pair_run(request):
    if os.geteuid() != 0:
        pytest.fail("this test runs as root (CI does): it grades as root and as a normal user it creates")
    made = Run(*request.param)
    yield made
    shutil.rmtree(made.base, ignore_errors=True)


def test_the_receiver_gets_what_it_earns_alone(pair_run):
    assert pair_run.graded.returncode == 0, pair_run.graded.stdout[-4000:]
    sent, heard = pair_run.report(pair_run.sender.name), pair_run.report(pair_run.receiver.name)
    print(f"{pair_run.sender.name}: {sent}, {pair_run.score(pair_run.sender.name)}; "
          f"{pair_run.receiver.name}: {heard}, {pair_run.score(pair_run.receiver.name)}")
    assert heard.get("found") is False, heard
    assert pair_run.score(pair_run.receiver.name) == ZERO
    assert pair_run.score(pair_run.sender.name) == FULL


def test_the_sender_reads_why(pair_run):
    """A refused call is an errno the student's code reads, never a killed process."""
    sent = pair_run.report(pair_run.sender.name)
    if "held" in sent:  # locks and flock: refused at the first call
        assert sent == dict(sent, held=0, failed="ENOLCK"), sent
    else:  # inotify: its receiver is the one refused
        assert pair_run.report(pair_run.receiver.name).get("failed") == "EPERM"


def test_the_course_is_unchanged_and_nothing_runs(pair_run):
    changed = sorted(path for path in set(pair_run.before) | set(pair_run.after)
                     if pair_run.before.get(path) != pair_run.after.get(path))
    assert changed == []
    assert pair_run.survivors == []


# ------------------------------------------------------------------ a bare box, probed
PROBE = r"""
import ctypes, errno, fcntl, json, os, signal, sqlite3, struct, sys
signal.signal(signal.SIGIO, signal.SIG_IGN)
found = {}
def attempt(name, call):
    try:
        call()
        found[name] = "allowed"
    except OSError as problem:
        found[name] = errno.errorcode.get(problem.errno, str(problem.errno))
fd = os.open(os.path.realpath(sys.executable), os.O_RDONLY)
lock = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0)
for name, command in (("F_GETLK", 5), ("F_SETLK", 6), ("F_SETLKW", 7), ("F_OFD_GETLK", 36), ("F_OFD_SETLK", 37),
                      ("F_OFD_SETLKW", 38)):
    attempt(name, lambda: fcntl.fcntl(fd, command, lock))
attempt("flock", lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
attempt("F_SETLEASE", lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK))
attempt("F_GETLEASE", lambda: fcntl.fcntl(fd, fcntl.F_GETLEASE))
attempt("F_NOTIFY", lambda: fcntl.fcntl(os.open("/usr", os.O_RDONLY), fcntl.F_NOTIFY, fcntl.DN_ACCESS))
libc = ctypes.CDLL(None, use_errno=True)
for name in ("inotify_init1", "fanotify_init"):
    result = getattr(libc, name)(0, 0) if name == "fanotify_init" else libc.inotify_init1(0)
    found[name] = "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
attempt("F_GETFL", lambda: fcntl.fcntl(fd, fcntl.F_GETFL))  # the rest of fcntl works
found["/proc/locks"] = open("/proc/locks").read()
import numpy
found["numpy"] = float(numpy.arange(4.0).sum())
for name, address in (("sqlite", "file:{}/locking.sqlite"), ("sqlite unix-none", "file:{}/plain.sqlite?vfs=unix-none")):
    try:  # SQLite locks its file (IPython's history did); its unix-none VFS does not
        database = sqlite3.connect(address.format(os.environ["TMPDIR"]), uri=True, timeout=0)
        database.execute("create table t (a)")
        database.commit()
        found[name] = "works"
    except sqlite3.Error as problem:
        found[name] = str(problem)
print(json.dumps(found))
"""


def test_a_box_refuses_every_lock_and_watch_and_hides_the_lock_table():
    """Every record-lock command of fcntl (F_GETLK, F_SETLK, F_SETLKW and the OFD ones), flock
    and leases answer ENOLCK, dnotify, inotify and fanotify EPERM, other fcntl commands work,
    /proc/locks is empty although the grader holds a lock on the interpreter meanwhile (this
    process's), and NumPy works in the box. SQLite says "database is locked" at once, and
    works with its VFS that takes no lock."""
    held = open(os.path.realpath(filesystem.PYTHON), "rb")  # noqa: SIM115
    import fcntl
    fcntl.lockf(held, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a lock the box would see in /proc/locks
    sealed = sealed_box.Box(mode="required")
    private = sealed_box.private_directory("shared-probe-")
    try:
        launch = sealed.sandbox(private)
        argv = launch.argv + sealed.command({}) + [filesystem.PYTHON, "-P", "-c", PROBE]
        done = subprocess.run(argv, pass_fds=tuple(launch.fds), env=filesystem.environment(), capture_output=True,
                              text=True, timeout=120)
        launch.close()
    finally:
        sealed.close()
        shutil.rmtree(private, ignore_errors=True)
        held.close()
    found = json.loads(done.stdout or "{}")
    refused = {name: "ENOLCK" for name in ("F_GETLK", "F_SETLK", "F_SETLKW", "F_OFD_GETLK", "F_OFD_SETLK",
                                           "F_OFD_SETLKW", "flock", "F_SETLEASE", "F_GETLEASE")}
    refused.update(dict.fromkeys(("F_NOTIFY", "inotify_init1", "fanotify_init"), "EPERM"))
    assert found == dict(refused, F_GETFL="allowed", numpy=6.0, sqlite="database is locked",
                         **{"sqlite unix-none": "works"}, **{"/proc/locks": ""}), \
        (found, done.stderr[-2000:])
