"""The sealed box under attack: hostile submissions (tests/hostile.py, and from inside the
box tests/inside.py) graded by plain ``nbgrader autograde`` and by ``maxpool-grader grade``
(warm start), as root and as a normal user, under a terminal the instructor types into,
with correct classmates graded before, between and after them.

What must hold after each run: every file of the course outside ``autograded/``,
``feedback/`` and the gradebook is byte-identical, and so is the folder next to the
course; the classmates keep full marks; no planted secret (a key in the instructor's
home, a file of the neighbouring course, a variable in the grader's environment,
``/etc/shadow``) reaches a graded notebook or a feedback page; nothing the box can read names
the private folder, the course, the run's temporary folder or the home beyond the trees it
mounts (``inside_host_layout``); the caps held, by the
figures the attacks report about themselves; nothing is left running or on disk. The
two commands agree on every grade.

A run is told apart from any other grading on the machine by its own ``TMPDIR`` (where
its private directories live) and the cgroups it made; the checks look only at those,
so another grading run on the same machine does not disturb this test.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import pwd
import re
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import hostile
import inside
import nbformat
import pytest
from corpus import FULL, ZERO, notebook_with
from helpers import ASSIGNMENT, BIN, ROOT, as_instructor, cmdline, copy_course, digests, instructor
from make_sample_class import LOOP_CORRECT, VECTORIZED_CORRECT
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import box as sealed_box
from maxpool_grader.sandbox import cgroups, filesystem

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
# inside_reads_answer scans a few hundred MiB of its own memory, in the kernel and in the verdict
c.SafeExecute.timeout = {int(inside.SCAN_SECONDS) + 20}
c.OutOfProcessVerdicts.load_seconds = {int(inside.SCAN_SECONDS) + 10}
"""
ATTACK_SECONDS = 4.0
LAYOUT_SECONDS = 15.0  # inside_host_layout reads a few thousand files and walks every folder it sees


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


class GraderPeaks:
    """The peak memory (VmHWM, MiB) of each process of ``maxpool-grader grade`` while it grades:
    the command and its forked workers, found by their command line and this run's TMPDIR in
    their environment. Zygotes, kernels and verdict processes (other programs, in the box, under
    the box's own caps) are not the grader's. VmHWM only grows, so sampling every 0.2 s misses
    at most what a process adds in its last 0.2 s; the workers live until the run ends."""

    def __init__(self, tmpdir: Path):
        self.marker = f"TMPDIR={tmpdir}".encode()
        self.peaks: dict[int, tuple[str, int]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stop.wait(0.2):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    if not any(Path(arg.decode(errors="replace")).name == "maxpool-grader" for arg in argv[:2]) or \
                            self.marker not in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                        continue
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:  # ended meanwhile
                    continue
                found = re.search(r"VmHWM:\s*(\d+)", status)
                if found:
                    peak = max(int(found[1]) >> 10, self.peaks.get(int(pid), ("", 0))[1])
                    self.peaks[int(pid)] = (b" ".join(argv).decode(errors="replace")[:120], peak)

    def finish(self) -> dict[int, tuple[str, int]]:
        self.stop.set()
        self.thread.join()
        return self.peaks


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
        self.inside = {attack.name: attack for attack in inside.build_inside_attacks(
            ATTACK_SECONDS, ZERO, FULL, hostile.PASSED)}
        self.host_paths = {"the checkout": str(ROOT), "the course": str(self.course), "the home": str(home),
                           "the grading run's temporary folder": str(self.tmpdir),
                           "the Python installation": sys.base_prefix}
        layout = inside.build_host_layout_attack(LAYOUT_SECONDS, FULL, hostile.PASSED, inside.host_layout_needles(
            self.host_paths["the checkout"], self.host_paths["the course"], str(self.tmpdir), str(home),
            sys.base_prefix))
        self.inside[layout.name] = layout
        self.typed = f"typed-by-the-instructor-{secrets.token_hex(6)}"  # into the terminal grading runs in
        for attack in self.attacks + list(self.inside.values()):
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
            self.graded = self.run(["python", "-c", MEASURED_NBGRADER, "autograde", ASSIGNMENT], terminal=True)
            self.feedback = self.run(["nbgrader", "generate_feedback", ASSIGNMENT])
        else:  # the grader's processes sampled meanwhile: what a worker reads from a box stays bounded
            sampler = GraderPeaks(self.tmpdir)
            self.graded = self.feedback = self.run(["maxpool-grader", "grade", "--workers", "2"], terminal=True)
            self.grade_peaks = sampler.finish()
        self.seconds = time.monotonic() - started
        time.sleep(1)
        self.after = digests(self.course, self.neighbour)
        self.left_cgroups = sorted(str(path) for path in _cgroup_folders(tag))
        self.survivors = self._survivors()
        self.left_in_tmpdir = sorted(str(path) for path in self.tmpdir.rglob("*"))

    def run(self, argv: list[str], check: bool = False, terminal: bool = False) -> subprocess.CompletedProcess:
        """``argv`` in the course, as the instructor; with ``terminal``, under a pseudo-terminal
        (its controlling terminal) into which the instructor types a line as it starts."""
        env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(self.tmpdir),
               "HOME": str(self.key.parent.parent), "LANG": "C.UTF-8",
               "MAXPOOL_TEST_SECRET": self.secrets["environment"], "MAXPOOL_PEAK_FILE": str(self.peak_file)}
        command = [str(BIN / argv[0]), *argv[1:]]
        if self.user:
            command = as_instructor(command, env)
            env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
        if terminal:
            result = in_a_terminal(command, self.course, env, self.typed + "\n")
        else:
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

    def outputs(self, student: str) -> str:
        """What every test cell of the student's graded notebook shows (the verdicts' messages)."""
        path = self.course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        texts = []
        for cell in json.loads(path.read_text()).get("cells", []) if path.exists() else []:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade") and cell.get("cell_type") == "code":
                for output in cell.get("outputs", []):
                    text = output.get("text") or output.get("evalue") or ""
                    texts.append("".join(text) if isinstance(text, list) else text)
        return "\n".join(texts)

    def report(self, student: str) -> dict:
        path = self.course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        return hostile.report_of(path) or {}

    def feedback_text(self, student: str) -> str:
        page = self.course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        return " ".join(page.read_text(errors="replace").split()) if page.exists() else ""


def in_a_terminal(command: list[str], cwd: Path, env: dict, typed: str) -> subprocess.CompletedProcess:
    """Run ``command`` with a new pseudo-terminal as its controlling terminal and its 0, 1 and
    2, as an instructor's shell would; type ``typed`` into it at once (it waits there for
    whoever reads the terminal); return what the terminal showed."""
    master, slave = pty.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                               preexec_fn=controlling_terminal)
    os.close(slave)
    os.write(master, typed.encode())
    shown, deadline = b"", time.monotonic() + 1200
    while time.monotonic() < deadline:
        if select.select([master], [], [], 1.0)[0]:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every holder of the terminal closed it
                chunk = b""
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(master)
    returncode = process.wait(timeout=60)
    return subprocess.CompletedProcess(command, returncode, shown.decode(errors="replace").replace("\r\n", "\n"))


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
    else:  # the grade command and its two workers, each under the same bound (a worker reached 1.6 GB
        # reading an honest 4 MiB dx, and 4.2 GB reading a forged 3 x 256 MiB reply, before replies were capped)
        peaks = batch.grade_peaks
        print(f"grade ({'root' if batch.as_root else 'user'}): peak MiB per grader process "
              f"{sorted(peak for _, peak in peaks.values())}")
        assert len(peaks) >= 3, peaks  # it saw the command and both workers
        assert max(peak for _, peak in peaks.values()) < GRADER_PEAK_MIB, peaks


# ------------------------------------------------------------------ from inside the box
GRADER_MODULES = ("maxpool_grader",)  # an import of any of these, in the box, would hold the answer


def test_every_attack_from_inside_gets_a_grade_and_a_reason(batch):
    scores = batch.scores()
    for attack in batch.inside.values():
        score, pending = scores[attack.name]
        assert not pending and batch.feedback_text(attack.name), attack.name
        assert score <= attack.score, (attack.name, score, attack.what)
        assert attack.reason in batch.outputs(attack.name), (attack.name, attack.reason)


SCAN_WHERE_THE_ANSWER_IS = """
import json, sys
import nbformat
from maxpool_grader.exercise import checks
cases = [case for check in checks.HIDDEN_CHECKS.values() for case in check.cases()]  # hidden inputs in memory
source = nbformat.read(sys.argv[1], as_version=4)  # the solution's lines too
exec(compile(sys.argv[2], "<attack>", "exec"))
"""


def test_the_answer_scan_finds_the_answer_where_it_is():
    """The scan of inside_reads_answer is no empty gesture: run in a process that imported
    the grader and read the source notebook, it finds every kind of secret."""
    params = {"seconds": inside.SCAN_SECONDS, "targets": inside.hashed(inside.answer_secrets())}
    code = hostile.GUARD + inside.SEARCH + inside.READS_ANSWER + f"\n_hostile_attack({params!r})\n"
    result = subprocess.run([str(BIN / "python"), "-c", SCAN_WHERE_THE_ANSWER_IS, str(inside.SOURCE_NOTEBOOK), code],
                            capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout.split(hostile.REPORT_PREFIX, 1)[1].splitlines()[0])
    kinds = {label.rsplit(" ", 1)[0].split(" hidden_")[0] for label in report["found"]}
    assert kinds == {"solution line", "reference line", "model answer", "rubric", "hidden input"}, report


FILE_SCANNER = """
import json, os, stat, sys
secrets = {label: bytes.fromhex(data) for label, data in json.loads(sys.stdin.read()).items()}
found, files, read = {}, 0, 0
tops = [entry for entry in sys.path if entry and os.path.isdir(entry)] + [
    "/etc", "/run", "/opt", "/srv", "/home", "/root", "/tmp", "/scratch", "/var", "/usr/local", "/usr/share/jupyter"]
seen = set()
for top in tops:
    for folder, dirnames, filenames in os.walk(top):
        if folder in ("/proc", "/sys", "/dev"):
            dirnames[:] = []
            continue
        key = os.stat(folder).st_ino, os.stat(folder).st_dev
        if key in seen:
            dirnames[:] = []
            continue
        seen.add(key)
        for name in filenames:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode) or info.st_size > 8 << 20:  # no file of the grader's is larger
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(64 << 20)
            except OSError:
                continue
            files, read = files + 1, read + len(data)
            for label, secret in secrets.items():
                if secret in data:
                    found.setdefault(label, path)
print(json.dumps({"found": found, "files": files, "read_mib": read >> 20}))
"""


def test_no_file_a_sandbox_sees_holds_the_answer():
    """Every regular file a sandboxed process can read where a package could be installed or
    a course could lie (every folder its Python imports from, the installation with it, and
    /etc, /run, /opt, /srv, /home, /root, /tmp, /scratch, /var, /usr/local), up to 8 MiB (no
    file of the grader's is larger), holds none of the answer's secrets (tests/inside.py's): a
    scanner in a sandbox like the students' reads them all. Its own memory may hold the
    secrets: it only reads files."""
    sealed = sealed_box.Box(mode="required")
    private = sealed_box.private_directory("scan-")
    try:
        launch = sealed.sandbox(private)
        argv = launch.argv + sealed.command({}) + [filesystem.PYTHON, "-P", "-c", FILE_SCANNER]
        secrets_hex = json.dumps({label: data.hex() for label, data in inside.answer_secrets().items()})
        done = subprocess.run(argv, pass_fds=tuple(launch.fds), env=filesystem.environment(), input=secrets_hex,
                              capture_output=True, text=True, timeout=600)
        launch.close()
    finally:
        sealed.close()
        shutil.rmtree(private, ignore_errors=True)
    report = json.loads(done.stdout or "{}")
    assert report.get("files", 0) > 5_000 and report["found"] == {}, (report, done.stderr[-2000:])


def test_no_process_of_the_box_holds_the_answer(batch):
    """Neither the kernel nor the verdict process can import the grader, find its files, or
    hold in memory a line of the solution, the reference, the model answer or the rubric, or
    a hidden test's input (before it is called with it): the attack's function, which raises
    INSIDE-FOUND when its process found one, keeps full marks."""
    found = batch.report("inside_reads_answer")
    assert found.get("found") == [] and "errors" not in found.get("where", {}), found
    assert not [name for name in found["imported"] if name.split(": ")[-1].startswith(GRADER_MODULES)], found
    assert found["memory_mib"] > 20, found  # it did read its memory
    assert batch.scores()["inside_reads_answer"] == (FULL, False)
    assert inside.FOUND + " " not in batch.outputs("inside_reads_answer")


def test_the_box_holds_no_descriptor_of_the_grader(batch):
    """The kernel's descriptors are its own channels and /dev/null: no terminal, no log, no
    file of the grader's. Its marker, written to each of them and past sys.stdout, never
    reaches the instructor's terminal; the line the instructor typed is read by nobody."""
    held = batch.report("inside_descriptors")
    assert held.get("fds"), held
    foreign = {fd: target for fd, target in held["fds"].items()
               if not target.startswith(("pipe:", "socket:", "anon_inode:", "/dev/null", "/scratch/", "/proc/"))}
    assert foreign == {}, foreign
    assert held["heard"] == [], held
    assert inside.MARKER not in batch.graded.stdout
    leaked = [str(path) for folder in ("autograded", "feedback") for path in (batch.course / folder).rglob("*")
              if path.is_file() and batch.typed in path.read_text(errors="replace")]
    assert leaked == []
    assert batch.scores()["inside_descriptors"] == (FULL, False)


def test_no_channel_carries_a_solution_between_submissions(batch):
    """The writer's keyring calls are refused; every other channel it wrote (IPC, an abstract
    socket with a daemon, /dev/shm, /tmp, HOME, its folder) is its own sandbox's. The reader,
    graded after it in this course and after every earlier course of this test, finds none
    and scores what returning zeros scores."""
    stored = batch.report("inside_channels_a_writes")["stored"]
    assert all(str(stored[key]).startswith("errno") for key in stored if key.startswith("keyring")), stored
    assert batch.report("inside_channels_b_reads") == {"found": []}
    assert batch.scores()["inside_channels_b_reads"] == (ZERO, False)


def test_no_word_of_the_box_raises_a_grade(batch):
    """A function that changes x in place loses "Inputs left unmodified" (the grader reads x
    back from the memory it handed in); the same function with a harness that says "quiet"
    and sends the inputs back unchanged scores no more (its replies are refused)."""
    scores = batch.scores()
    honest, forged = scores["inside_modifies_inputs"][0], scores["inside_forges_reports"][0]
    assert honest < FULL and forged <= honest, (honest, forged)


def test_what_comes_back_from_the_box_is_bounded(batch):
    """4 MiB of zeros for dx: refused unread (it cannot be x's shape); the graded notebook and
    the page stay small."""
    graded = batch.course / "autograded" / "inside_huge_dx" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    page = batch.course / "feedback" / "inside_huge_dx" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert graded.stat().st_size < 1 << 20 and page.stat().st_size < 2 << 20


def test_the_box_names_nothing_of_the_hosts_layout_but_the_trees_it_mounts(batch):
    """The audit of a name of the host readable inside the box (docs/security.md#host-layout):
    the private folder (with the grader's pid), the course, the run's temporary folder and
    the home are named nowhere. What is still named is the host path of the trees the box
    mounts where they are (the Python installation, its library folders), in mountinfo, the
    interpreter's paths and the environment; a host path is found only if it holds or lies in one."""
    report = batch.report("inside_host_layout")
    assert report.get("read", 0) > 1000 and report.get("folders", 0) > 100, report
    trees = filesystem.read_only_trees()
    mounted = {label for label, path in batch.host_paths.items()
               if any(tree == path or tree.startswith(path.rstrip("/") + "/") or path.startswith(tree + "/")
                      for tree in trees)}
    found = report["found"]
    assert "private folder" not in found, found["private folder"]
    assert set(found) <= mounted, {label: found[label] for label in set(found) - mounted}
    print("host paths named inside the box (the trees it mounts at their own paths):", sorted(found))


def test_a_daemon_shaped_like_an_orphaned_sandbox_ends_with_its_box(batch):
    """The box sees no process of the grader's (none is a bwrap of a sandbox's outside), and a
    daemon it leaves that looks like a sandbox whose bwrap died (what grade's sweep kills) is
    its own: it ends with the box (``test_nothing_is_left_running_or_on_disk``), the
    submission keeps its full marks, and its classmates theirs."""
    seen = batch.report("inside_poses_as_orphan")
    assert seen.get("made"), seen
    who = "root" if batch.as_root else "user"
    print(f"inside_poses_as_orphan ({who}): made {seen['made']}, saw {seen['processes_seen']}")
    others = [name for name in seen["processes_seen"].values() if name not in ("bwrap", "sh", "setpriv", "prlimit")
              and not name.startswith("python")]
    assert others == [] and len(seen["processes_seen"]) < 10, seen  # its own sandbox's, nothing of the grader's
    assert batch.scores()["inside_poses_as_orphan"] == (FULL, False)


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
