"""The sealed box under attack: hostile submissions (tests/hostile.py) graded by plain
``nbgrader autograde`` and by ``maxpool-grader grade`` (warm start), as root and as a
normal user, with correct classmates graded before, between and after them.

What must hold after each run: every file of the course outside ``autograded/``,
``feedback/`` and the gradebook is byte-identical, and so is the folder next to the
course; the classmates keep full marks; no planted secret (a key in the instructor's
home, a file of the neighbouring course, a variable in the grader's environment,
``/etc/shadow``) reaches a graded notebook or a feedback page; the caps held, by the
figures the attacks report about themselves; nothing is left running or on disk. The
two commands agree on every grade.

A run is told apart from any other grading on the machine by its own ``TMPDIR`` (where
its private directories live) and the cgroups it made; the checks look only at those,
so another grading run on the same machine does not disturb this test.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import hostile
import nbformat
import pytest
from corpus import FULL, notebook_with
from helpers import ASSIGNMENT, BIN, as_instructor, cmdline, copy_course, digests, instructor
from make_sample_class import LOOP_CORRECT, VECTORIZED_CORRECT
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import box as sealed_box
from maxpool_grader.sandbox import cgroups

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

CLASSMATES = {"aaa_first_correct": LOOP_CORRECT, "mmm_middle_correct": VECTORIZED_CORRECT,
              "ppp_shadows_kernel_modules": LOOP_CORRECT, "zzz_last_correct": LOOP_CORRECT}
# A correct classmate whose folder (the kernel's working directory) holds files named like
# modules a kernel imports while it starts: they must stop no kernel, cold or warm.
SHADOWS = {"ppp_shadows_kernel_modules": ("ipykernel_launcher", "pathlib", "numpy")}
# Smaller caps than the course's: the kernel runs each attack only after the verdict's run
# has ended, so each run must reach a cap alone, within its few seconds, on a busy 2-core
# machine (at the default 256 processes and 2 GiB, they reached 97 and 640 MiB here).
CAPS = sealed_box.Caps(memory_bytes=1 << 30, processes=64)
CAPS_CONFIG = f"""
c.SealedBox.memory_mib = {CAPS.memory_bytes >> 20}  # the sealed-box test's caps (tests/test_sealed_box.py)
c.SealedBox.processes = {CAPS.processes}
"""
ATTACK_SECONDS = 4.0


# ------------------------------------------------------------------ one graded batch
def _cgroup_folders(tag: str) -> set[Path]:
    """The cgroups of the grading runs whose names carry ``tag`` (cgroups.run_tag)."""
    folders = set()
    for base in (*(cgroups._v1_bases() or {}).values(), cgroups._v2_base()):
        if base is not None and base.is_dir():
            folders.update(path for path in base.iterdir()
                           if path.name.startswith(cgroups.PREFIX) and tag in path.name.rsplit("-", 1)[-1])
    return folders


# Plain ``nbgrader autograde``, in the same process as nbgrader's own command, writing its
# peak memory (MiB) when it exits: what the kernels send must not land in the grader's memory.
# (VmHWM, not ru_maxrss: after vfork and exec, ru_maxrss starts at the parent's peak.)
MEASURED_NBGRADER = """
import atexit, os, re, sys
atexit.register(lambda: open(os.environ["MAXPOOL_PEAK_FILE"], "w").write(
    str(int(re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read())[1]) >> 10)))
from nbgrader.apps.nbgraderapp import main

sys.argv[0] = "nbgrader"
sys.exit(main())
"""
GRADER_PEAK_MIB = 600  # about 150 MiB grading the whole batch; 3.6 GB before the channels were capped


class Batch:
    """A course with the hostile corpus and correct classmates, graded once."""

    def __init__(self, as_root: bool, command: str):
        self.as_root, self.command = as_root, command
        self.base = Path(tempfile.mkdtemp(prefix="maxpool-sealed-", dir="/tmp"))
        self.base.chmod(0o755)
        self.course, self.neighbour = self.base / "course", self.base / "other_course"
        self.peak_file = self.base / "grader-peak-mib"
        self.tmpdir = self.base / "tmp"
        user = None if as_root else instructor()
        home = Path(user.pw_dir) if user else Path(pwd.getpwuid(os.getuid()).pw_dir)
        self.secrets = {"home": f"home-secret-{secrets.token_hex(8)}",
                        "neighbour": f"neighbour-secret-{secrets.token_hex(8)}",
                        "environment": f"environment-secret-{secrets.token_hex(8)}"}
        self.key = home / ".ssh" / f"id_maxpool_test_{secrets.token_hex(4)}"
        self.key.parent.mkdir(mode=0o700, exist_ok=True)
        self.key.write_text(self.secrets["home"] + "\n")
        self.key.chmod(0o600)
        self.neighbour.mkdir()
        (self.neighbour / "secret.txt").write_text(self.secrets["neighbour"] + "\n")
        self.shadow = [line for line in Path("/etc/shadow").read_text().splitlines() if line.count(":") >= 2] \
            if os.access("/etc/shadow", os.R_OK) else []

        copy_course(self.course, with_submissions=False)
        with open(self.course / "nbgrader_config.py", "a") as config:
            config.write(CAPS_CONFIG)
        self.tmpdir.mkdir()
        if user:
            for path in (self.base, *self.base.rglob("*")):
                os.lchown(path, user.pw_uid, user.pw_gid)
            os.chown(self.key, user.pw_uid, user.pw_gid)
            os.chown(self.key.parent, user.pw_uid, user.pw_gid)
        self.user = user
        self.run(["nbgrader", "generate_assignment", ASSIGNMENT], check=True)
        release = nbformat.read(self.course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        for student, code in CLASSMATES.items():
            folder = self.course / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
            for module in SHADOWS.get(student, ()):
                (folder / f"{module}.py").write_text("import os\nos._exit(7)\n")
        classmate = self.course / "submitted" / "aaa_first_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        self.attacks = hostile.build_attacks(
            self.secrets, str(self.course), str(self.neighbour), [str(self.key), str(self.neighbour / "secret.txt")],
            secret_file=str(self.key), classmate_notebook=str(classmate), home=str(home),
            seconds=ATTACK_SECONDS)
        for attack in self.attacks:
            folder = self.course / "submitted" / attack.name / ASSIGNMENT
            folder.mkdir(parents=True)
            attack.build(folder, release)
        if user:
            for path in (self.course, *self.course.rglob("*")):
                os.lchown(path, user.pw_uid, user.pw_gid)

        self.before = digests(self.course, self.neighbour)
        tag = cgroups.run_tag(str(self.tmpdir), user.pw_uid if user else os.getuid())
        started = time.monotonic()
        if command == "nbgrader autograde":  # nbgrader itself, measuring its own peak memory
            self.graded = self.run(["python", "-c", MEASURED_NBGRADER, "autograde", ASSIGNMENT])
            self.feedback = self.run(["nbgrader", "generate_feedback", ASSIGNMENT])
        else:
            self.graded = self.feedback = self.run(["maxpool-grader", "grade", "--workers", "2"])
        self.seconds = time.monotonic() - started
        time.sleep(1)
        self.after = digests(self.course, self.neighbour)
        self.left_cgroups = sorted(str(path) for path in _cgroup_folders(tag))
        self.survivors = self._survivors()
        self.left_in_tmpdir = sorted(str(path) for path in self.tmpdir.rglob("*"))

    def run(self, argv: list[str], check: bool = False) -> subprocess.CompletedProcess:
        env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(self.tmpdir),
               "HOME": str(self.key.parent.parent), "LANG": "C.UTF-8",
               "MAXPOOL_TEST_SECRET": self.secrets["environment"], "MAXPOOL_PEAK_FILE": str(self.peak_file)}
        command = [str(BIN / argv[0]), *argv[1:]]
        if self.user:
            command = as_instructor(command, env)
            env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
        result = subprocess.run(command, cwd=self.course, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=1200)
        if check and result.returncode != 0:
            raise AssertionError(f"{argv} failed:\n{result.stdout[-4000:]}")
        return result

    def _survivors(self) -> list[str]:
        """Processes of this run still alive: a sandbox (bwrap's command line names this run's
        private directories; everything in a sandbox dies with it) or a zygote (its working
        directory is one of them)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
            if str(self.tmpdir) in cmdline(pid) or cwd.startswith(str(self.tmpdir)):
                found.append(f"{pid}: {cmdline(pid)[:200]}")
        return found

    def cleanup(self) -> None:
        self.key.unlink(missing_ok=True)
        shutil.rmtree(self.base, ignore_errors=True)

    # ---------------------------------------------------------------- reading the results
    def scores(self) -> dict[str, tuple[float, bool]]:
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            result = {}
            for student in gradebook.students:
                submission = gradebook.find_submission(ASSIGNMENT, student.id)
                pending = any(grade.needs_manual_grade for notebook in submission.notebooks
                              for grade in notebook.grades if grade.cell_type == "code")
                result[student.id] = (submission.code_score, pending)
            return result

    def cells(self) -> dict[tuple[str, str], float]:
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            return {(student.id, grade.name): grade.score
                    for student in gradebook.students
                    for notebook in gradebook.find_submission(ASSIGNMENT, student.id).notebooks
                    for grade in notebook.grades if grade.cell_type == "code"}

    def report(self, student: str) -> dict:
        path = self.course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        return hostile.report_of(path) or {}

    def feedback_text(self, student: str) -> str:
        page = self.course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        return " ".join(page.read_text(errors="replace").split()) if page.exists() else ""


MODES = [(True, "nbgrader autograde"), (True, "maxpool-grader grade"),
         (False, "nbgrader autograde"), (False, "maxpool-grader grade")]


GRADED: dict[tuple[bool, str], dict] = {}  # every cell's score, per mode, for the last test


@pytest.fixture(scope="module", params=MODES, ids=lambda mode: f"{'root' if mode[0] else 'user'}-{mode[1].split()[0]}")
def batch(request):
    as_root, command = request.param
    if os.geteuid() != 0:
        pytest.fail("the sealed-box test runs as root (CI does): it grades as root and as a normal user it creates")
    made = Batch(as_root, command)
    GRADED[request.param] = made.cells() if (made.course / "gradebook.db").exists() else {}
    yield made
    made.cleanup()


# ------------------------------------------------------------------ what must hold
def test_grading_finished_without_a_failed_submission(batch):
    assert batch.graded.returncode == 0, batch.graded.stdout[-5000:]
    assert "There was an error processing" not in batch.graded.stdout
    assert batch.feedback.returncode == 0, batch.feedback.stdout[-3000:]
    assert "Warm start of" not in batch.graded.stdout  # warm start works as root and as a normal user
    print(f"{batch.command} ({'root' if batch.as_root else 'user'}): {len(batch.attacks) + len(CLASSMATES)} "
          f"submissions in {batch.seconds:.0f} s")


def test_every_course_file_is_unchanged(batch):
    changed = sorted(path for path in set(batch.before) | set(batch.after)
                     if batch.before.get(path) != batch.after.get(path))
    assert changed == []


def test_classmates_keep_full_marks_and_every_attack_is_graded(batch):
    scores = batch.scores()
    assert {student: scores.get(student) for student in CLASSMATES} == dict.fromkeys(CLASSMATES, (FULL, False))
    for attack in batch.attacks:
        assert attack.name in scores and scores[attack.name][1] is False, attack.name
        assert batch.feedback_text(attack.name), f"no feedback for {attack.name}"
    assert scores["hostile_symlinked_notebook"] == (0, False)
    assert "symbolic link" in batch.feedback_text("hostile_symlinked_notebook")


def test_no_secret_reaches_a_graded_notebook_or_a_feedback_page(batch):
    planted = list(batch.secrets.values()) + [line for line in batch.shadow if len(line) > 12]
    leaks = []
    for folder in ("autograded", "feedback"):
        for path in (batch.course / folder).rglob("*"):
            if path.is_symlink():
                leaks.append(f"{path} is a symbolic link")
            elif path.is_file():
                text = path.read_text(errors="replace")
                leaks += [f"{path}: {secret[:20]}" for secret in planted if secret in text]
    assert leaks == []
    found = batch.report("hostile_reads_secrets")
    assert found and found.get("found") == [] and found.get("uid") != 0


def test_the_caps_held(batch):
    bombs = batch.report("hostile_fork_bomb")
    assert bombs and bombs["processes"] <= CAPS.processes, bombs
    disk = batch.report("hostile_fills_disk")
    assert disk and 0 < disk["bytes_written"] <= CAPS.scratch_bytes + CAPS.shm_bytes + (4 << 20), disk
    memory = batch.report("hostile_memory_spread")
    assert memory, "the memory attack reported nothing"
    if batch.as_root:  # a cgroup caps the submission as a whole (a normal user here has none: README)
        # the attack sums what its living children last reported holding: a child the cgroup's
        # OOM killer just ended still counts its last 64 MiB chunk until it is reaped
        assert memory["peak_mib"] <= (CAPS.memory_bytes >> 20) + 64, memory
        assert f"more than {CAPS.memory_bytes >> 30} GiB of memory" in batch.feedback_text("hostile_memory_spread")
        assert f"more than {CAPS.processes} processes" in batch.feedback_text("hostile_fork_bomb")
    else:
        assert "GRADING WITHOUT A CGROUP" in batch.graded.stdout
    assert f"more than {CAPS.scratch_bytes >> 20} MiB" in batch.feedback_text("hostile_fills_disk")
    for flood in ("hostile_floods_output", "hostile_kernel_messages"):
        graded = batch.course / "autograded" / flood / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert graded.stat().st_size < 4 << 20, flood
        assert f"printed more than {CAPS.output_bytes >> 10} KiB" in batch.feedback_text(flood), flood
    assert batch.report("hostile_kernel_messages").get("kernel") is True
    # what a kernel sends (hostile_kernel_messages: 200 MB in one message, 360 MB of fake
    # errors, widget states and display updates, 50,000 empty outputs) never fills the
    # grader's memory; measured on plain nbgrader, which grades the whole batch in one process
    if batch.command == "nbgrader autograde":
        assert int(batch.peak_file.read_text()) < GRADER_PEAK_MIB


def test_nothing_is_left_running_or_on_disk(batch):
    assert batch.survivors == []
    assert [path for path in batch.left_in_tmpdir if not Path(path).name.startswith("maxpool-grader-")] == []
    assert batch.left_cgroups == []


def test_both_commands_grade_the_corpus_alike():
    """Cell for cell, as root and as a normal user: plain nbgrader (cold kernels) and
    maxpool-grader grade (warm start) give every cell the same score."""
    for as_root in (True, False):
        cold, warm = GRADED.get((as_root, "nbgrader autograde")), GRADED.get((as_root, "maxpool-grader grade"))
        assert cold and warm, "a batch above did not finish"
        differing = sorted(key for key in set(cold) | set(warm) if cold.get(key) != warm.get(key))
        assert differing == [], [(key, cold.get(key), warm.get(key)) for key in differing[:5]]


def test_a_required_sandbox_refuses_to_grade_without_the_caps():
    """A normal user on this machine can make no cgroup: with sandbox = "required" nbgrader
    refuses to grade (the submission is not graded), instead of grading with fewer caps."""
    if cgroups._v2_base() is not None:
        pytest.skip("a delegated cgroup v2 subtree is writable here: the caps can be had")  # not on CI's v1
    user = instructor()
    base = Path(tempfile.mkdtemp(prefix="maxpool-required-", dir="/tmp"))
    try:
        course = copy_course(base / "course", with_submissions=False)
        folder = course / "submitted" / "a_student" / ASSIGNMENT
        folder.mkdir(parents=True)
        (base / "tmp").mkdir()
        for path in (base, *base.rglob("*")):
            os.lchown(path, user.pw_uid, user.pw_gid)
        env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(base / "tmp"),
               "HOME": user.pw_dir, "LANG": "C.UTF-8"}

        def run(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run(as_instructor([str(BIN / "nbgrader"), *argv], env), cwd=course, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        assert run("generate_assignment", ASSIGNMENT).returncode == 0
        release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        nbformat.write(notebook_with(release, LOOP_CORRECT), folder / f"{ASSIGNMENT}.ipynb")
        os.lchown(folder / f"{ASSIGNMENT}.ipynb", user.pw_uid, user.pw_gid)
        refused = run("autograde", ASSIGNMENT, "--SealedBox.sandbox=required")
        assert refused.returncode != 0 and "no cgroup can be made here" in refused.stdout, refused.stdout[-3000:]
        assert not (course / "autograded" / "a_student" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)
