"""Grading on a Dask cluster: a real `dask scheduler` and `dask worker` processes on
loopback, each worker in its own working directory with the course's folder hidden from
it (a mount namespace with an empty tmpfs over the test's folder), as on another machine,
and a real PostgreSQL gradebook. The sample class plus corpus faults and attacks are
graded through `maxpool-grader grade --cluster`, one worker is killed in the middle of
the run, and the grades must equal plain serial nbgrader's cell for cell. Workers of
another grader version, or without a sandbox, are refused with the reason."""

from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from corpus import build as build_corpus
from helpers import ASSIGNMENT, BIN, EXTRA, ROOT, STUDENTS, all_grades, copy_course, free_port, nbgrader, sqlite

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


class Cluster:
    """A scheduler and workers; each worker in its own process group, so killing the group
    is losing the machine."""

    def __init__(self, hide: Path):
        self.hide = hide
        self.home = Path(tempfile.mkdtemp(prefix="maxpool-dask-"))
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes: dict[str, subprocess.Popen] = {}
        self._start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                  "--no-dashboard"])
        self._wait_for_scheduler()

    def _start(self, name: str, argv: list[str], env: dict | None = None, hidden: bool = False) -> None:
        folder = self.home / name
        folder.mkdir()
        if hidden:  # the course is not on this "machine"
            argv = [shutil.which("unshare"), "--mount", "--propagation", "private", "/bin/sh", "-c",
                    f"{shutil.which('mount')} -t tmpfs tmpfs '{self.hide}' && exec \"$@\"", "worker", *argv]
        self.processes[name] = subprocess.Popen(
            argv, cwd=folder, env=dict(os.environ, TMPDIR=str(folder), **(env or {})), start_new_session=True,
            stdout=open(folder / "log", "w"), stderr=subprocess.STDOUT)

    def _wait_for_scheduler(self) -> None:
        from distributed import Client
        deadline = time.monotonic() + 60
        while True:
            try:
                Client(self.address, timeout=2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the Dask scheduler did not start:\n" + self.log("scheduler")) from None
                time.sleep(0.5)

    def add_worker(self, name: str, env: dict | None = None, python: Path | None = None) -> None:
        self._start(name, [str(python or sys.executable), "-m", "distributed.cli.dask_worker", self.address,
                           "--nworkers", "1", "--nthreads", "1", "--name", name, "--no-dashboard",
                           "--local-directory", str(self.home / name)], env=env, hidden=True)

    def wait_for_workers(self, count: int) -> None:
        from distributed import Client
        with Client(self.address, timeout=10) as client:
            client.wait_for_workers(count, timeout=120)

    def lose(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)

    def log(self, name: str) -> str:
        path = self.home / name / "log"
        return path.read_text()[-3000:] if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes.values():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


FAULTS = [name for name in EXTRA if name != "fault_infinite_loop"]  # (its minute of time limits proves nothing here)


@pytest.fixture
def course(tmp_path):
    course = copy_course(tmp_path / "course")
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    build_corpus(course, course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", FAULTS)
    return course


def grading(course: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.Popen([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course), *args], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_a_cluster_grades_the_class_as_serial_nbgrader_does_even_when_a_worker_is_lost(
        course, tmp_path, serial_class, postgres_server):
    url = postgres_server("cluster")
    cluster = Cluster(hide=tmp_path)
    try:
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        cluster.wait_for_workers(2)
        process = grading(course, "--cluster", cluster.address, "--db", url)
        seen, lost = [], False
        for line in process.stdout:
            seen.append(line)
            if not lost and line.startswith("[autograde 1/"):
                cluster.lose("w1")  # a machine gone in the middle of the run
                lost = True
        process.wait(timeout=900)
        output = "".join(seen)
        assert process.returncode == 0, output[-4000:] + cluster.log("w2")
        assert lost and "2 worker(s) grade" in output
    finally:
        cluster.stop()
    ours, theirs = all_grades(url), all_grades(sqlite(serial_class))
    assert len(ours) == len(STUDENTS + FAULTS) * 11
    assert {key: (score, theirs.get(key)) for key, score in ours.items() if score != theirs.get(key)} == {}
    for student in STUDENTS + FAULTS:  # the graded notebook came back; feedback and the report are local
        assert (course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()
    assert (course / "report" / "report.json").exists()
    again = grading(course, "--cluster", "tcp://127.0.0.1:1", "--db", url)  # nothing changed: no cluster needed
    assert "0 submission(s) to grade" in again.communicate(timeout=300)[0] and again.returncode == 0


def test_workers_of_another_grader_or_without_a_sandbox_are_refused(course, tmp_path):
    # another machine's grader: a copy of the package with one line changed, in a Python
    # environment that has it before everything else of this one
    other = tmp_path / "other-grader"
    shutil.copytree(ROOT / "maxpool_grader", other / "maxpool_grader", ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "maxpool_grader" / "checks.py", "a") as handle:
        handle.write("\n# another version\n")
    environment = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    site_packages = next(environment.glob("lib/python3*/site-packages"))
    (site_packages / "other-grader.pth").write_text(f"{other}\n{site.getsitepackages()[0]}\n")
    cluster = Cluster(hide=tmp_path / "course")
    try:
        cluster.add_worker("older", python=environment / "bin" / "python")
        cluster.add_worker("unsandboxed", env={"PATH": str(BIN)})  # no bwrap on its PATH
        cluster.wait_for_workers(2)
        process = grading(course, "--cluster", cluster.address)
        output = process.communicate(timeout=300)[0]
    finally:
        cluster.stop()
    assert process.returncode == 1
    assert "refused: it runs another version of the grader" in output
    assert "refused: bubblewrap does not work there" in output
    assert "Not graded: no worker of" in output
    assert not (course / "autograded").exists()
