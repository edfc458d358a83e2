"""`maxpool-grader grade` on a whole class: parallel, incremental, interruptible, with a
class report whose numbers are the gradebook's, and grades equal to plain serial
`nbgrader autograde` cell for cell."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from corpus import build as build_corpus
from helpers import (
    ASSIGNMENT,
    BIN,
    EXTRA,
    GRADED_CELLS,
    STUDENTS,
    all_grades,
    copy_course,
    grade_command,
    nbgrader,
    sqlite,
)
from nbgrader.api import Gradebook

from maxpool_grader.sandbox import box as sealed_box

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


@pytest.fixture(scope="module")
def classes(tmp_path_factory, serial_class):
    """The same class graded twice: by `maxpool-grader grade` (2 workers) and by plain serial
    `nbgrader autograde` (conftest's serial_class)."""
    parallel = copy_course(tmp_path_factory.mktemp("parallel") / "parallel")
    nbgrader(parallel, "generate_assignment", ASSIGNMENT)
    build_corpus(parallel, parallel / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", EXTRA)
    result = grade_command(parallel, "--workers", "2")
    return parallel, serial_class, result


def test_grades_equal_serial_nbgrader_cell_for_cell(classes):
    parallel, serial, result = classes
    assert result.returncode == 0, result.stderr[-3000:]
    ours, theirs = all_grades(sqlite(parallel)), all_grades(sqlite(serial))
    assert len(ours) == len(STUDENTS + EXTRA) * GRADED_CELLS  # every submission's every graded cell
    differ = {key: (ours.get(key), theirs.get(key)) for key in set(ours) | set(theirs)
              if ours.get(key) != theirs.get(key)}
    assert differ == {}


def test_progress_is_plain_lines_without_a_terminal(classes):
    _, _, result = classes
    lines = re.findall(r"\[autograde (\d+)/(\d+)\] (\S+) in [\d.]+ s", result.stdout)
    assert sorted(student for *_, student in lines) == sorted(STUDENTS + EXTRA)
    assert {int(total) for _, total, _ in lines} == {len(STUDENTS + EXTRA)}


def test_a_rerun_grades_only_what_changed(tmp_path):
    small = copy_course(tmp_path / "course", students=["loop_correct", "ties_split", "vectorized_correct"])
    assert grade_command(small).returncode == 0
    again = grade_command(small)
    assert "0 submission(s) to grade" in again.stdout and again.returncode == 0
    notebook = small / "submitted" / "ties_split" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    notebook.write_text(notebook.read_text().replace("split equally", "split equally (edited)"))
    changed = grade_command(small)
    assert "1 submission(s) to grade" in changed.stdout
    assert re.findall(r"\] (\S+) in", changed.stdout) == ["ties_split"]
    forced = grade_command(small, "--force", "--workers", "2")
    assert "3 submission(s) to grade" in forced.stdout


def test_a_rerun_remakes_feedback_older_than_its_grading(tmp_path):
    """A run stopped between a resubmission's grading and its feedback (Ctrl-C, kill -9, a
    lost cluster during the feedback phase) leaves the earlier attempt's page in feedback/
    beside the new grade. The next run finds nothing to grade, and must still remake that
    page: a page with the old score must never be released."""
    small = copy_course(tmp_path / "course", students=["loop_correct", "ties_split"])
    assert grade_command(small).returncode == 0
    page = small / "feedback" / "ties_split" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    earlier = tmp_path / "earlier.html"
    shutil.copy2(page, earlier)  # its time kept: made before the resubmission was graded
    submitted = small / "submitted" / "ties_split" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    shutil.copyfile(small / "submitted" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", submitted)
    assert grade_command(small).returncode == 0
    assert page.read_text() != earlier.read_text()  # the resubmission scores otherwise
    shutil.copy2(earlier, page)  # what the stopped run left
    rerun = grade_command(small)
    assert rerun.returncode == 0 and "0 submission(s) to grade" in rerun.stdout
    assert graded_lines(rerun.stdout, "feedback") == 1  # that page alone
    assert page.read_text() != earlier.read_text(), "the earlier attempt's feedback was kept"
    with Gradebook(sqlite(small)) as gradebook:
        score = gradebook.find_submission(ASSIGNMENT, "ties_split").score
        assert score == gradebook.find_submission(ASSIGNMENT, "loop_correct").score
    assert _page_score(page) == score


def _page_score(page: Path) -> float:
    """The points a feedback page's heading shows: its 'Score: x of y' (Part B's alone while
    Part A waits for a person; the gradebook counts an ungraded Part A as 0 too)."""
    return float(re.search(r"\(Score: ([\d.]+) of [\d.]+", page.read_text())[1])


def test_report_numbers_match_the_gradebook(classes):
    parallel, _, _ = classes
    report = json.loads((parallel / "report" / "report.json").read_text())
    with Gradebook(sqlite(parallel)) as gradebook:
        totals = {s.id: gradebook.find_submission(ASSIGNMENT, s.id).code_score for s in gradebook.students}
    assert report["totals"] == totals
    assert sum(report["histogram"].values()) == report["students"] == len(totals)
    grades = all_grades(sqlite(parallel))
    for cell in report["cells"]:
        passed = sum(1 for (student, grade_id), score in grades.items()
                     if grade_id == cell["grade_id"] and score == cell["points"])
        assert cell["passed"] == passed, cell["grade_id"]
    bugs = {bug["name"]: bug["who"] for bug in report["bugs"]}
    assert "ties_shared" in bugs and "ties_split" in bugs["ties_shared"]
    attention = {item["student"]: " ".join(item["reasons"]) for item in report["needs_attention"]}
    assert "timed out" in attention["fault_infinite_loop"]
    assert "crashed" in attention["fault_os_exit"]
    assert "shortcut" in attention["attack_imports_torch"]
    assert "No notebook named" in attention["fault_missing_notebook"]
    assert "does not compile" in attention["forum_verbatim"]
    assert "loop_correct" not in attention
    assert (parallel / "report" / "index.html").read_text().count("<img") == 2
    assert (parallel / "report" / "scores.png").stat().st_size > 1000


def start_grading(course: Path, workers: int, ctrl_c_ignored: bool = False) -> subprocess.Popen:
    """`maxpool-grader grade` running in the background, its output readable line by line;
    ``ctrl_c_ignored``: started with SIGINT ignored, as a script's background job is."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ctrl_c_ignored else None
    return subprocess.Popen([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course),
                             "--workers", str(workers)], env=env, text=True, preexec_fn=ignore,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def assert_every_autograded_cell_recorded(course: Path) -> None:
    grades = all_grades(sqlite(course))
    assert {student for student, _ in grades} == set(STUDENTS)
    assert all(score is not None for (student, grade_id), score in grades.items()
               if not grade_id.startswith("part_a"))


@contextmanager
def cpu_load():
    """Every core kept busy beside the test, as another grading run on the machine would."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def interrupted_run(course: Path, when: str) -> str:
    """A run sent Ctrl-C (SIGINT, to the command alone) as soon as it prints a line that
    starts with the pattern ``when``; it must stop promptly with 130. Its output."""
    process = start_grading(course, workers=1, ctrl_c_ignored=True)
    seen, sent = [], None
    for line in process.stdout:
        seen.append(line)
        if re.match(when, line):
            process.send_signal(signal.SIGINT)
            sent = time.monotonic()
            break
    output = "".join(seen) + process.communicate(timeout=300)[0]
    assert sent is not None and process.returncode == 130, output[-3000:]
    assert time.monotonic() - sent < 20, "it did not stop promptly"
    assert "Run the command again" in output
    return output


def graded_lines(output: str, phase: str = "autograde") -> int:
    return len(re.findall(rf"^\[{phase} \d+/", output, re.M))


def test_an_interrupted_run_resumes_and_completes(tmp_path):
    """Ctrl-C stops a run wherever it comes (grading, the workers starting under load,
    feedback, which follows each graded submission), even when the command was started with
    SIGINT ignored (a script's background job); the next run goes on where it stopped."""
    course = copy_course(tmp_path / "course")
    grading = interrupted_run(course, r"\[autograde 2/")
    assert 2 <= graded_lines(grading) < len(STUDENTS)
    with cpu_load():  # the release is current: this run only starts its workers
        starting = interrupted_run(course, r"\d+ submission\(s\) to grade")
    graded_before = graded_lines(grading) + graded_lines(starting)
    assert graded_before < len(STUDENTS)

    # what a worker killed inside a submission leaves: its kernel's private directory
    ended = Path(subprocess.run([sys.executable, "-c", "from maxpool_grader.sandbox import box as sealed_box; "
                                 "print(sealed_box.private_directory('kernel-'))"],
                                capture_output=True, text=True, check=True).stdout.strip())
    running = sealed_box.private_directory("test-")  # this process's: in use, must stay
    feedback = interrupted_run(course, r"\[feedback 1/")
    assert not ended.exists() and running.exists()
    running.rmdir()
    # what was shown as graded is not graded again (one more may have finished unseen)
    left = int(re.search(r"(\d+) submission\(s\) to grade", feedback).group(1))
    assert 1 <= left <= len(STUDENTS) - graded_before
    assert graded_lines(feedback, "feedback") < len(STUDENTS)
    resumed = grade_command(course)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = int(re.search(r"(\d+) submission\(s\) to grade", resumed.stdout).group(1))
    assert again <= left - graded_lines(feedback)  # what was shown as graded, with its feedback or not
    assert all((course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file() for student in STUDENTS)
    assert_every_autograded_cell_recorded(course)
    assert sealed_box.abandoned_private_directories() == []  # what the killed workers left: swept


def _wait_until_sigint_is_not_ignored(pid: int) -> None:
    """Until the kernel no longer ignores SIGINT for the process (its SigIgn mask)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        mask = re.search(r"^SigIgn:\s*([0-9a-f]+)$", Path(f"/proc/{pid}/status").read_text(), re.M).group(1)
        if not int(mask, 16) & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.002)
    raise AssertionError("grade never listened for Ctrl-C")


def test_ctrl_c_at_any_moment_of_the_start_stops_the_run(tmp_path):
    """Ctrl-C during the imports, the reading of the configuration or the warm-up (a C
    extension's import turns it into "ImportError: initialization failed") stops the run with
    130 and says so, SIGINT ignored at start or not; the next run grades."""
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    sent_while_running = 0
    for delay in (0, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 1.8, 2.2):
        process = start_grading(course, workers=1, ctrl_c_ignored=delay < 1)
        if delay < 1:  # from the moment it listens: before its first line of Python, no program can
            _wait_until_sigint_is_not_ignored(process.pid)
        time.sleep(delay)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            sent_while_running += 1
            output = process.communicate(timeout=120)[0]
            assert process.returncode == 130, f"Ctrl-C after {delay} s:\n{output[-3000:]}"
            assert "Run the command again" in output and "Traceback" not in output, output[-3000:]
        else:
            process.communicate()
    assert sent_while_running >= 6
    finished = grade_command(course)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert (course / "feedback" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file()


@pytest.mark.parametrize("bwrap_start", ["as installed", "slow"])
def test_a_killed_run_leaves_no_process_behind(tmp_path, bwrap_start):
    """kill -9 of `grade` mid-run: its workers, their zygotes and everything they started
    (sandboxes, kernels, verdict processes) end with it, within seconds. "slow": each bwrap
    starts 0.4 s late (a wrapper first on PATH), so the kill lands while sandboxes are being
    set up: a bwrap that died then once left its sandbox's init waiting for ever."""
    import psutil
    course = copy_course(tmp_path / "course", students=["loop_correct", "ties_split", "vectorized_correct"])
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    if bwrap_start == "slow":
        wrapper = tmp_path / "bin" / "bwrap"
        wrapper.parent.mkdir()
        wrapper.write_text(f'#!/bin/sh\nsleep 0.4\nexec {shutil.which("bwrap")} "$@"\n')
        wrapper.chmod(0o755)
        env["PATH"] = f"{wrapper.parent}:{env['PATH']}"
    keeper = subprocess.Popen([sys.executable, str(Path(__file__).with_name("subreaper.py")), "5",
                               str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course), "--force",
                               "--workers", "2"], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    grading = psutil.Process(int(keeper.stdout.readline()))
    tree = []
    for line in keeper.stdout:
        if line.startswith("[autograde 1/"):  # mid-run: both workers busy, with their zygotes
            tree = [_command_line(process) for process in grading.children(recursive=True)]
            grading.kill()
            break
    output = keeper.communicate(timeout=120)[0]
    assert sum("grade --course-dir" in command for command in tree) >= 2, tree  # the two workers
    assert any("kernel_zygote" in command for command in tree), tree
    left = json.loads(re.search(r"^left: (.*)$", output, re.M).group(1))
    assert left == [], left


def _command_line(process) -> str:
    try:
        return " ".join(process.cmdline())
    except Exception:  # noqa: BLE001  (ended meanwhile)
        return ""


def test_a_killed_worker_is_replaced_and_the_run_completes(tmp_path):
    import psutil
    course = copy_course(tmp_path / "course")
    process = start_grading(course, workers=2)
    killed = None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if killed is None and line.startswith("[autograde 1/"):
            parent = psutil.Process(process.pid)
            workers = [child for child in parent.children() if child.cmdline() == parent.cmdline()]
            assert workers, "no worker process found"
            killed = workers[0].pid
            workers[0].kill()  # as the out-of-memory killer would
    process.wait(timeout=300)
    output = "".join(seen)
    assert killed is not None
    assert process.returncode == 0, output[-3000:]
    assert_every_autograded_cell_recorded(course)
