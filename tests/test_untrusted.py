"""Untrusted submissions in one batch, through plain ``nbgrader autograde`` (cold kernels)
and through ``maxpool-grader grade`` (workers that fork kernels and verdict processes
from warm zygotes); every test runs on both, and the two must agree cell for cell.

The attack corpus (tests/corpus.py) must score no more than a solution returning
zeros and leave every other file, the gradebook and the other students untouched; the
fault corpus must end with a recorded grade and a reason the student reads in the
feedback; the correct samples keep full marks. Student code runs in the bubblewrap
sandbox (``.ci/run`` installs it): these tests require it, they do not skip.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from corpus import ATTACKS, CORPUS, FAULTS, FULL, LAYOUTS
from helpers import (
    ASSIGNMENT,
    BIN,
    RELEASE_NOTEBOOK,
    ROOT,
    all_grades,
    cmdline,
    copy_course,
    flat,
    grade_command,
    nbgrader,
    sqlite,
)
from nbgrader.api import Gradebook

from maxpool_grader import names
from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.sandbox import box as sealed_box
from maxpool_grader.sandbox import cgroups

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

CORRECT_SAMPLES = ["loop_correct", "vectorized_correct", "noisy_correct"]


def _digests(course: Path) -> dict[str, str]:
    watched = [course / "nbgrader_config.py", *sorted((course / "submitted").rglob("*")),
               *sorted((ROOT / "maxpool_grader").rglob("*.py"))]
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in watched if path.is_file()}


def _grade_batch(root: Path, command: str) -> dict:
    """The corpus and the correct samples in one course, graded by ``command``: plain serial
    ``nbgrader autograde`` (cold kernels) or ``maxpool-grader grade`` (2 workers, kernels
    and verdict processes forked warm, see maxpool_grader/sandbox/zygote.py). The run has a
    TMPDIR of its own: its private directories are told apart from any other run's."""
    assert sealed_box.bwrap_works(), "these tests need the sandbox: apt-get install bubblewrap"
    course = copy_course(root / "course", with_submissions=False)
    tmpdir = root / "tmp"
    tmpdir.mkdir()
    env = {"TMPDIR": str(tmpdir)}
    nbgrader(course, "generate_assignment", ASSIGNMENT, env=env)
    for student in CORRECT_SAMPLES:
        shutil.copytree(ROOT / "submitted" / student, course / "submitted" / student)
    import corpus
    corpus.build(course, RELEASE_NOTEBOOK)
    before = _digests(course)
    started = time.monotonic()
    if command == "nbgrader autograde":
        autograde = nbgrader(course, "autograde", ASSIGNMENT, check=False, env=env)
        seconds = time.monotonic() - started
        feedback = nbgrader(course, "generate_feedback", ASSIGNMENT, check=False, env=env)
    else:
        autograde = feedback = grade_command(course, "--workers", "2", env=env)
        seconds = time.monotonic() - started
    time.sleep(2)  # a surviving daemon would have rewritten its rows by now
    left = sorted(str(path) for path in tmpdir.rglob("*") if not path.name.startswith("maxpool-grader-"))
    return {"course": course, "autograde": autograde, "feedback": feedback, "before": before,
            "seconds": seconds, "left_in_tmpdir": left, "tmpdir": tmpdir}


@pytest.fixture(scope="module")
def both_batches(tmp_path_factory):
    """The two batches at the same time, one per thread: both are mostly waiting (the serial
    one on its kernels' start and on the infinite loop's time limits), and nothing of one can
    reach the other. Each run has its own course and TMPDIR, and each submission its sandbox
    and its cgroup. Without cgroups the processes cap is RLIMIT_NPROC, which counts every
    process of the sandbox's uid, so one batch's fork bomb would starve the other: one after
    the other, then."""
    roots = {"nbgrader autograde": tmp_path_factory.mktemp("untrusted-serial"),
             "maxpool-grader grade": tmp_path_factory.mktemp("untrusted-warm")}
    with ThreadPoolExecutor(max_workers=2 if cgroups.available() else 1) as pool:
        running = {command: pool.submit(_grade_batch, root, command) for command, root in roots.items()}
        return {command: future.result() for command, future in running.items()}


@pytest.fixture(scope="module")
def serial_batch(both_batches):
    return both_batches["nbgrader autograde"]


@pytest.fixture(scope="module")
def warm_batch(both_batches):
    return both_batches["maxpool-grader grade"]


@pytest.fixture(scope="module", params=["nbgrader autograde", "maxpool-grader grade"])
def batch(request):
    return request.getfixturevalue("serial_batch" if request.param == "nbgrader autograde" else "warm_batch")


def _scores(course: Path) -> dict[str, tuple[float, bool]]:
    """student -> (autograded score, whether any autograded cell still needs a person)."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        result = {}
        for student in gradebook.students:
            submission = gradebook.find_submission(ASSIGNMENT, student.id)
            pending = any(grade.needs_manual_grade for notebook in submission.notebooks
                          for grade in notebook.grades if grade.cell_type == "code")
            result[student.id] = (submission.code_score, pending)
        return result


def _feedback_text(course: Path, student: str) -> str:
    page = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert page.exists(), f"no feedback for {student}"
    text = re.sub(r"<[^>]+>", " ", page.read_text())
    return flat(html.unescape(text))


def test_the_batch_has_no_failed_submission(batch):
    assert batch["autograde"].returncode == 0, batch["autograde"].stdout[-5000:]
    assert "There was an error processing" not in batch["autograde"].stdout
    assert batch["feedback"].returncode == 0, batch["feedback"].stdout[-3000:]
    print(f"autograde of {len(CORPUS) + len(CORRECT_SAMPLES)} submissions: {batch['seconds']:.0f} s")


@pytest.mark.parametrize("student", CORRECT_SAMPLES)
def test_correct_samples_keep_full_marks(batch, student):
    assert _scores(batch["course"])[student] == (FULL, False)
    feedback = _feedback_text(batch["course"], student)
    assert all(flat(f"Passed: {check.title}").lower() in feedback.lower() for check in GRADED_CHECKS.values())
    assert "test failed" not in feedback.lower()


@pytest.mark.parametrize("submission", ATTACKS, ids=lambda s: s.name)
def test_attack_scores_no_more_than_zeros_and_is_told_why(batch, submission):
    score, pending = _scores(batch["course"])[submission.name]
    assert (score, pending) == (submission.score, False), submission.what
    assert flat(submission.reason) in _feedback_text(batch["course"], submission.name)


@pytest.mark.parametrize("submission", FAULTS, ids=lambda s: s.name)
def test_fault_gets_a_grade_and_a_reason(batch, submission):
    score, pending = _scores(batch["course"])[submission.name]
    assert (score, pending) == (submission.score, False), submission.what
    assert flat(submission.reason) in _feedback_text(batch["course"], submission.name)


@pytest.mark.parametrize("submission", LAYOUTS, ids=lambda s: s.name)
def test_a_notebook_laid_out_its_own_way_is_graded_on_merit(batch, submission):
    """Cells the student added run in the verdict as in the kernel: helpers above or below
    the solution cell count, a helper whose cell is gone does not, and the feedback fits
    the student's code (the fancy-index student is not told to write +=)."""
    score, pending = _scores(batch["course"])[submission.name]
    assert (score, pending) == (submission.score, False), submission.what
    feedback = _feedback_text(batch["course"], submission.name)
    assert flat(submission.reason) in feedback
    assert "Likely mistake: overlapping windows overwrite each other" not in feedback


def test_attacks_changed_no_file_outside_their_own_folder(batch):
    after = _digests(batch["course"])
    changed = [path for path, digest in batch["before"].items() if after.get(path) != digest]
    assert changed == []


def test_no_student_code_outlives_grading(batch):
    course = batch["course"]
    rows = sqlite3.connect(course / "gradebook.db").execute(
        "SELECT COUNT(*) FROM grade WHERE manual_score IS NOT NULL").fetchone()
    assert rows == (0,), "something rewrote manual scores in the gradebook"
    survivors = [pid for pid in os.listdir("/proc") if pid.isdigit() and _ours(pid, batch["tmpdir"])]
    assert survivors == [], [(pid, cmdline(pid)) for pid in survivors]
    assert batch["left_in_tmpdir"] == []  # sockets, copies, zygotes' directories


def _ours(pid: str, tmpdir: Path) -> bool:
    """A process of this batch's grading run: a sandbox (bwrap's command line names the run's
    private directories, and everything in a sandbox dies with it) or a zygote (it works in
    one of them). Other grading runs on the machine have TMPDIRs of their own."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = ""
    return str(tmpdir) in cmdline(pid) or cwd.startswith(str(tmpdir))


def test_warm_workers_grade_the_corpus_exactly_as_serial_nbgrader(serial_batch, warm_batch):
    """Cell for cell: the score, the verdict kept for the report, and what the student reads."""
    def graded_cells(course: Path) -> dict:
        cells = {}
        for notebook in sorted((course / "autograded").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")):
            for cell in json.loads(notebook.read_text())["cells"]:
                grade_id = names.grade_id(cell)
                if cell.get("metadata", {}).get("maxpool_grader") is not None:
                    text = "".join(_output_text(output) for output in cell.get("outputs", []))
                    cells[notebook.parts[-3], grade_id] = (cell["metadata"]["maxpool_grader"], text)
        return cells
    assert all_grades(sqlite(warm_batch["course"])) == all_grades(sqlite(serial_batch["course"]))
    serial, warm = graded_cells(serial_batch["course"]), graded_cells(warm_batch["course"])
    assert len(serial) >= (len(CORPUS) - 4) * len(GRADED_CHECKS)  # those without a notebook aside
    assert set(warm) == set(serial)
    # Where a limit cut a submission short, what its report says depends on the machine's
    # load: how far an endless loop got before the time budget ran out, and which process of
    # a memory bomb was stopped first (the kernel and the verdict process share the box's
    # memory cap: a MemoryError or a kill). The same tests fail, with the same points;
    # everywhere else every word is the same.
    limited = {"fault_infinite_loop", "fault_memory_bomb"}
    # A cell writing to file descriptor 2 itself: ipykernel forwards those bytes from a thread
    # of its own, so where they fall depends on scheduling (a CI run under load saw it): among
    # the cell's other lines, in the middle of one, or in the next cell's output. The rest of
    # each cell the same, and those words as often in the whole notebook.
    interleaved = {"fault_stderr_and_warnings"}
    forwarded = ("fd-level stderr\n", "sys.__stderr__\n")  # what the fault writes to the process's own stderr

    def without_forwarded(text: str) -> str:
        for words in forwarded:
            text = text.replace(words, "")
        return text

    def forwarded_counts(cells: dict, student: str) -> list[int]:
        return [sum(text.count(words) for (who, _), (_, text) in cells.items() if who == student)
                for words in forwarded]
    for student in interleaved:
        assert forwarded_counts(serial, student) == forwarded_counts(warm, student), student
    timed = {student for (student, _), (verdict, _) in [*serial.items(), *warm.items()]
             if verdict["kind"] == "timeout"}

    def same(key) -> bool:
        if key[0] in interleaved:
            return serial[key][0] == warm[key][0] and \
                without_forwarded(serial[key][1]) == without_forwarded(warm[key][1])
        return serial[key] == warm[key]
    differing = sorted(key for key in serial if (serial[key][0]["passed"] != warm[key][0]["passed"]) or
                       (key[0] not in limited and not same(key)))
    assert differing == [], [(key, serial[key], warm.get(key)) for key in differing[:3]]
    assert timed <= limited


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        return text if isinstance(text, str) else "".join(text)  # a notebook file may split it
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    return json.dumps(output.get("data", {}), sort_keys=True)


def test_without_a_sandbox_grading_still_works_and_says_so(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    shutil.copytree(ROOT / "submitted" / "loop_correct", course / "submitted" / "loop_correct")
    env = {"PATH": str(BIN), "HOME": os.environ.get("HOME", "/root")}  # no /usr/bin: no bwrap
    result = subprocess.run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT], cwd=course, env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.count("GRADING UNSANDBOXED") == 1
    assert _scores(course)["loop_correct"] == (FULL, False)
