"""The one grading backend interface (backend/interface.py): ``grade`` and ``serve`` grade
only through it, on this machine's pool or a Dask cluster. The two routes of each command
are graded end to end in test_parallel.py and test_cluster.py (grade), test_serve.py and
test_serve_cluster.py (serve); here, that nothing else grades, and that a backend given
to ``grade`` is the one that grades."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys

import pytest
from helpers import GRADED_CELLS, ROOT, copy_course

from maxpool_grader.names import PACKAGE_DIR

# what starts grading: nbgrader's autograde, a pool of processes, a Dask task of a submission
GRADING_CALLS = {"autograde", "ProcessPoolExecutor", "grade_submission"}
BACKENDS = {"backend/pool.py", "cluster/coordinator.py", "cluster/worker.py"}  # a Dask worker's side too


def grading_calls(source: str) -> set[str]:
    """The names of GRADING_CALLS that ``source`` calls or hands to a call (``submit(grade_submission, ...)``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") in ("self", "run"):
                called = ""  # grade's own step of that name (GradingRun.autograde), not nbgrader's
            handed = [arg.id for arg in node.args if isinstance(arg, ast.Name)]
            found.update(name for name in [called, *handed] if name in GRADING_CALLS)
    return found


def test_only_the_backends_start_grading():
    where = {str(path.relative_to(PACKAGE_DIR)): grading_calls(path.read_text())
             for path in PACKAGE_DIR.rglob("*.py")}
    assert {path for path, calls in where.items() if calls} == BACKENDS
    assert where["backend/pool.py"] >= {"autograde", "ProcessPoolExecutor"}
    assert "grade_submission" in where["cluster/coordinator.py"] and where["cluster/worker.py"] == {"autograde"}


def test_the_checker_sees_a_call_and_a_function_handed_to_one():
    assert grading_calls("api.autograde('a', 's')\nclient.submit(grade_submission, b)\nx = autograde\n"
                         "run.autograde()\n") == {"autograde", "grade_submission"}


def test_grade_and_serve_build_their_backends_from_the_same_two():
    from maxpool_grader.backend.pool import LocalPool
    from maxpool_grader.cluster.coordinator import DaskCluster
    from maxpool_grader.grading.grade import GradingRun

    run = GradingRun(PACKAGE_DIR, "sqlite://", 2)
    assert type(run.backend()) is LocalPool
    run.cluster = "tls://127.0.0.1:1"
    cluster = run.backend()  # made, not connected: the cluster is reached at start
    assert type(cluster) is DaskCluster and type(cluster.local) is LocalPool and cluster.client is None
    assert type(run.backend(grading=False)) is LocalPool  # nothing to grade: no cluster to reach
    service = (PACKAGE_DIR / "serve" / "service.py").read_text()
    assert "LocalPool(" in service and "DaskCluster(" in service


# a backend around another that notes every submission it is given (in the grading process)
COUNTER = """
from maxpool_grader.backend.interface import GradingBackend

class Counting(GradingBackend):
    def __init__(self, inner):
        self.inner, self.seen = inner, []
    capacity = property(lambda self: self.inner.capacity)
    def start(self, warm=False):
        self.inner.start(warm)
    def submit(self, student, **kw):
        self.seen.append([student, kw.get("autograde", True)])
        return self.inner.submit(student, **kw)
    def stop(self, now=False):
        self.inner.stop(now)
"""

COUNTING = COUNTER + """
import json, sys
from pathlib import Path
from maxpool_grader.grading import grade

made = []
plain = grade.GradingRun.backend
grade.GradingRun.backend = lambda run, *a, **k: made.append(Counting(plain(run, *a, **k))) or made[-1]
status = grade.grade(Path(sys.argv[1]), workers=2)
print(json.dumps({"status": status, "seen": [backend.seen for backend in made]}))
"""


@pytest.mark.integration
def test_grade_grades_every_submission_through_the_backend_it_is_given(tmp_path):
    course = copy_course(tmp_path / "course", students=["loop_correct", "ties_all_maxima"])
    done = subprocess.run([sys.executable, "-c", COUNTING, str(course)], capture_output=True, text=True, timeout=600)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["status"] == 0, done.stderr[-3000:]
    assert sorted(map(tuple, found["seen"][0])) == [("loop_correct", True), ("ties_all_maxima", True)]
    assert all((course / "feedback" / student).is_dir() for student in ("loop_correct", "ties_all_maxima"))


SERVING = COUNTER + """
import asyncio, json, sys
from pathlib import Path
from maxpool_grader.backend.pool import LocalPool
from maxpool_grader.course.directory import configured_db_url
from maxpool_grader.grading.grade import GradingRun
from maxpool_grader.serve.grading_job import serve_worker_setup
from maxpool_grader.serve.policy import load_settings
from maxpool_grader.serve.service import Service

course, notebook = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes()
db_url = configured_db_url(course)
run = GradingRun(course=course, db_url=db_url, workers=1)
run.release()
run.prepare()
backend = Counting(LocalPool(course, db_url, 1, create_students=False, setup=serve_worker_setup))
service = Service(course, db_url, load_settings(course), backend, exchange=False)
attempt = service.policy.submit("loop_correct", notebook)

async def serve_one():
    queue = asyncio.create_task(service.run_queue())
    while service.queue.get(attempt).status not in ("graded", "failed"):
        await asyncio.sleep(0.2)
    service.stop()
    await queue

asyncio.run(serve_one())
row = service.queue.get(attempt)
tests = row.result.get("tests", [])
print(json.dumps({"seen": backend.seen, "status": row.status,
                  "tests passed": sum(test["score"] == test["points"] for test in tests if not test["manual"]),
                  "tests": sum(not test["manual"] for test in tests)}))
"""


@pytest.mark.integration
def test_serve_grades_an_attempt_through_the_backend_it_is_given(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    shutil.copy(ROOT / "roster.csv", course)  # the students the service takes attempts from
    notebook = copy_course(tmp_path / "class", students=["loop_correct"]) / "submitted" / "loop_correct"
    notebook = next(notebook.rglob("*.ipynb"))
    done = subprocess.run([sys.executable, "-c", SERVING, str(course), str(notebook)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["seen"] == [["loop_correct", True]] and found["status"] == "graded", done.stderr[-3000:]
    assert found["tests passed"] == found["tests"] == GRADED_CELLS - 1  # every test, Part A aside (by hand)
