"""A fair share of the CPU (docs/security.md#cpu-share): a box that spins cannot starve a
classmate graded beside it.

One ``maxpool-grader grade --workers 2`` run grades three submissions, two at a time:

- ``cpu_a_spinner``: correct and fast. Once its verdict is decided, its kernel forks
  ``SPINNERS`` processes that spin (each ends itself after ``SPIN_SECONDS``), stops them
  while its own function runs (its visible tests stay fast), and sleeps in its solution cell
  and in cells it added at the end, so that its box stays open meanwhile (45 s).
- ``cpu_b_slow_classmate`` and ``cpu_c_slow_classmate``: correct but slow, about
  ``CALL_SECONDS`` of CPU per call (some 200 calls: 6 s on an idle core). A cell each added
  sleeps ``HEAD_START`` s before the solution cell, so that its function's calls begin when
  the spinners spin.

The run is started in a cgroup of the ``cpu`` controller of its own (``own_cpu_cgroup``), as
systemd starts every service and login session: the kernel's autogroups, which share the CPU
by session among the processes of the root cgroup alone, do not apply there, so the boxes get
what the grader gives them and nothing more.

What must hold: the classmates keep full marks, the spinner too (the test wants no point of
either moved), none of the spinners outlives the run (its box's cgroup ends them), and the
course is byte-identical. Without the box's CPU share, the classmate lost most of its points
on this machine (the commit that added this test says by how much).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from corpus import FULL, LOOP_CORRECT, Submission, notebook_with
from helpers import ASSIGNMENT, BIN, copy_course, digests
from hostile import GUARD, PASSED, RUN, report_of
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import cgroups

pytestmark = pytest.mark.integration  # real kernels, sandboxes, cgroups, nbgrader

SPINNERS = 60  # the box's process cap is 256, threads included; more starve its own kernel too
SPIN_SECONDS = 60.0  # after all are forked: each spinner's own end, should its box not end it
SLEEP_SECONDS = 10.0  # each of the spinner's sleeping cells (under a cell's 15 s), 45 s in all (of 60)
SLEEPING_CELLS = 4  # added at the notebook's end (the verdict runs none), after the solution cell's 5 s
CALL_SECONDS = 0.03  # the classmate's CPU time per call
HEAD_START = 7.0  # the classmate's added cell: its calls begin once the spinners spin

SPIN = r'''
def _hostile_attack(P):
    import os
    import signal
    import sys
    import time

    if "ipykernel" not in sys.modules:  # the verdict process: behave
        _hostile_report({"where": "verdict"})
        return
    hold, go = os.pipe()  # the children spin once all are forked (and the report is out): the forks stay quick
    end, children = time.monotonic() + P["spin_seconds"], []
    for _ in range(P["spinners"]):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                os.close(go)
                os.read(hold, 1)
                while time.monotonic() < end:
                    pass
            finally:
                os._exit(0)
        children.append(pid)
    global _spinners
    _spinners = children
    _hostile_report({"where": "kernel", "spinners": len(children)})
    os.close(go)
    os.close(hold)
    time.sleep(P["sleep_seconds"])
'''

SPINNER_FUNCTION = LOOP_CORRECT.replace("def max_pool_backward(", "def _right(", 1) + '''

def max_pool_backward(d_output, x, pool_size, stride=None):
    import os
    import signal
    for pid in globals().get("_spinners", []):  # its own calls run alone
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    try:
        return _right(d_output, x, pool_size, stride)
    finally:
        for pid in globals().get("_spinners", []):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
'''

SLOW = LOOP_CORRECT.replace("    x = np.asarray(x)\n", (
    "    import time as _time\n"
    "    _spent = _time.thread_time()\n"
    "    while _time.thread_time() - _spent < %r:  # CPU time, whatever the wall clock says\n"
    "        pass\n"
    "    x = np.asarray(x)\n") % CALL_SECONDS, 1)


def _spinner(folder: Path, release: nbformat.NotebookNode) -> None:
    import json
    params = {"seconds": 10.0, "spinners": SPINNERS, "spin_seconds": SPIN_SECONDS, "sleep_seconds": 5.0}
    code = (GUARD + f"\n_hostile_params = _hostile_json.loads({json.dumps(params)!r})\n\n" + SPIN + RUN
            + "\n\n" + SPINNER_FUNCTION.strip("\n") + "\n")
    nb = notebook_with(release, code)
    nb.cells += [nbformat.v4.new_code_cell(f"import time\ntime.sleep({SLEEP_SECONDS!r})")
                 for _ in range(SLEEPING_CELLS)]
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")


def _slow(folder: Path, release: nbformat.NotebookNode) -> None:
    nb = notebook_with(release, SLOW)
    solution_at = next(index for index, cell in enumerate(nb.cells)
                       if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ASSIGNMENT)
    nb.cells.insert(solution_at, nbformat.v4.new_code_cell(f"import time\ntime.sleep({HEAD_START!r})"))
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")


# Two classmates: whichever worker grades the pool's control first (some 20 s), one classmate's
# calls run while the spinners spin.
SUBMISSIONS = [Submission("cpu_a_spinner", "spins in its kernel after its verdict", _spinner, FULL, PASSED),
               *(Submission(f"cpu_{letter}_slow_classmate", "correct, 30 ms of CPU per call", _slow, FULL, PASSED)
                 for letter in "bc")]
CLASSMATES = [submission.name for submission in SUBMISSIONS[1:]]


def own_cpu_cgroup(base: Path) -> Path:
    """A new cgroup with the ``cpu`` controller, below the root of its hierarchy (v1), or of
    cgroup v2 where it offers the controller."""
    for point, kind, options in cgroups.mounts():
        if (kind == "cgroup" and "cpu" in options) or (
                kind == "cgroup2" and "cpu" in (Path(point) / "cgroup.controllers").read_text().split()):
            made = Path(point) / f"maxpool-cpu-test-{base.name}"
            made.mkdir()
            return made
    pytest.skip("no cpu controller is mounted here")


def remove_cgroup(directory: Path) -> None:
    """Remove the run's cgroup, and those its ended grading processes left in it."""
    for _ in range(100):
        cgroups.sweep(directory)
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # processes are still leaving it
            time.sleep(0.1)


class Run:
    """The two submissions, graded once by ``grade --workers 2`` as root."""

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="maxpool-cpu-", dir="/tmp"))
        self.course, self.tmpdir = self.base / "course", self.base / "tmp"
        copy_course(self.course, with_submissions=False)
        self.tmpdir.mkdir()
        self.run("nbgrader", "generate_assignment", ASSIGNMENT)
        release = nbformat.read(self.course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        for submission in SUBMISSIONS:
            folder = self.course / "submitted" / submission.name / ASSIGNMENT
            folder.mkdir(parents=True)
            submission.build(folder, release)
        self.before = digests(self.course)
        self.cgroup = own_cpu_cgroup(self.base)
        started = time.monotonic()
        self.graded = self.run("maxpool-grader", "grade", "--workers", "2")
        self.seconds = time.monotonic() - started
        self.after = digests(self.course)
        self.left = self._left_in_boxes()
        self.left_cgroups = self._left_cgroups()

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(self.tmpdir),
               "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
        enter = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.cgroup)] if hasattr(
            self, "cgroup") else []
        result = subprocess.run([*enter, str(BIN / argv[0]), *argv[1:]], cwd=self.course, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        assert result.returncode == 0, f"{argv} failed:\n{result.stdout[-4000:]}"
        return result

    def _left_in_boxes(self, seconds: float = 10) -> list[str]:
        """The processes still in a cgroup of this run (its cgroups' names hold its run tag), or
        whose command line names its TMPDIR, ``seconds`` after it ended."""
        tag = "-" + cgroups.run_tag(str(self.tmpdir), os.getuid())
        deadline = time.monotonic() + seconds
        while True:
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    where = Path(f"/proc/{pid}/cgroup").read_text()
                    line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if tag in where or str(self.tmpdir) in line:
                    found.append(f"{pid}: {line[:160]}")
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    def _left_cgroups(self) -> list[str]:
        """The cgroups of this run still there: below the run's own cpu cgroup, and in the other
        hierarchies (where its cgroups are this process's)."""
        tag = cgroups.run_tag(str(self.tmpdir), os.getuid())
        bases = [self.cgroup, *(cgroups._v1_bases() or {}).values(), cgroups._v2_base()]
        return sorted(str(path) for base in bases if base is not None and base.is_dir() for path in base.iterdir()
                      if path.name.startswith(cgroups.PREFIX) and tag in path.name.rsplit("-", 1)[-1])

    def score(self, student: str) -> float:
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            return gradebook.find_submission(ASSIGNMENT, student).code_score

    def feedback(self, student: str) -> str:
        notebook = self.course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        return notebook.read_text() if notebook.exists() else ""


@pytest.fixture(scope="module")
def spin_run():
    if os.geteuid() != 0:
        pytest.fail("this test runs as root (CI does): the boxes' cgroups need it here")
    made = Run()
    yield made
    remove_cgroup(made.cgroup)
    shutil.rmtree(made.base, ignore_errors=True)


def test_the_slow_classmates_keep_full_marks_beside_a_spinner(spin_run):
    spinner = report_of(spin_run.course / "autograded" / "cpu_a_spinner" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    scores = {submission.name: spin_run.score(submission.name) for submission in SUBMISSIONS}
    print(f"graded in {spin_run.seconds:.0f} s; spinner's kernel: {spinner}; scores: {scores}")
    assert spinner == {"where": "kernel", "spinners": SPINNERS}, spinner  # the attack ran in full
    for classmate in CLASSMATES:
        slow = spin_run.feedback(classmate)
        assert "did not return within" not in slow and "Not run: your function used up" not in slow, classmate
    assert scores == {submission.name: FULL for submission in SUBMISSIONS}


def test_the_spinners_end_with_their_box_and_the_course_is_unchanged(spin_run):
    assert spin_run.left == []
    assert spin_run.left_cgroups == []
    changed = sorted(path for path in set(spin_run.before) | set(spin_run.after)
                     if spin_run.before.get(path) != spin_run.after.get(path))
    assert changed == []
