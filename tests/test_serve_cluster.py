"""``maxpool-grader serve --cluster tls://...``: each attempt is autograded by a worker of a
real Dask cluster on loopback (TLS with the course's certificates, the course hidden from
the workers as on another machine), one worker is lost in the middle, and every attempt is
still graded; recording, feedback and the page stay with the service. The grades equal
``maxpool-grader grade --force`` on this machine, cell for cell."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
import requests
from helpers import ASSIGNMENT, BIN, ROOT, all_grades, copy_course, free_port, sqlite
from test_cluster import Cluster
from test_serve import notebook_of

sys.path.insert(0, str(ROOT / "scripts"))
from make_sample_class import LOOP_CORRECT, VECTORIZED_CORRECT  # noqa: E402

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

STUDENTS = ["carol", "dave", "erin"]


def test_serve_grades_on_a_dask_cluster_and_loses_nothing_when_a_worker_is_lost(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    with open(course / "roster.csv", "w") as roster:
        roster.write("id,first_name,last_name,email\n" + "".join(f"{name},{name},Student,{name}@example.edu\n"
                                                                 for name in STUDENTS))
    cluster = Cluster(hide=tmp_path, tls=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    log = tmp_path / "serve.log"
    try:
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        cluster.wait_for_workers("w1", "w2")
        with open(log, "w") as output:
            service = subprocess.Popen([str(BIN / "maxpool-grader"), "serve", "--course-dir", str(course),
                                        "--port", str(port), "--no-exchange", "--workers", "1",
                                        "--cluster", cluster.address, *cluster.tls("client")],
                                       stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 180
            while "serve: web page on" not in log.read_text():
                assert service.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            assert "2 worker(s) grade" in log.read_text()
            made = subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", base, "--course-dir",
                                   str(course)], capture_output=True, text=True)
            assert made.returncode == 0, made.stdout + made.stderr
            links = dict(re.findall(r"^([a-z]+),.*,(http\S+)$", (course / "tokens.csv").read_text(), re.M))
            overwriting = LOOP_CORRECT.replace("+=", "=")
            for student, code in zip(STUDENTS, (VECTORIZED_CORRECT, overwriting, LOOP_CORRECT), strict=True):
                session = requests.Session()
                home = session.get(links[student], timeout=30)
                xsrf = re.search(r'name="_xsrf" value="([^"]+)"', home.text).group(1)
                answer = session.post(base + "upload", data={"_xsrf": xsrf}, allow_redirects=False, timeout=30,
                                      files={"notebook": (f"{ASSIGNMENT}.ipynb", notebook_of(code))})
                assert answer.status_code == 303, answer.text
            lost = False
            deadline = time.monotonic() + 600
            while True:
                if not lost and "serve: graded" in log.read_text():
                    cluster.lose("w1")  # a machine gone while attempts are still out
                    lost = True
                rows = _attempts(course)
                if len(rows) == len(STUDENTS) and all(row[1] not in ("queued", "grading") for row in rows):
                    break
                assert service.poll() is None and time.monotonic() < deadline, (rows, log.read_text())
                time.sleep(0.3)
            assert [row[1] for row in rows] == ["graded"] * len(STUDENTS), (rows, log.read_text())
            service.send_signal(signal.SIGINT)
            assert service.wait(timeout=60) == 130, log.read_text()
        finally:
            if service.poll() is None:
                service.kill()
    finally:
        cluster.stop()
    served = all_grades(sqlite(course))
    assert served["dave", "hidden_overlapping_windows"] == 0 and served["carol", "hidden_overlapping_windows"] > 0
    for student in STUDENTS:  # recorded and given feedback here, from the notebook the worker graded
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()
    regraded = subprocess.run([str(BIN / "maxpool-grader"), "grade", "--force", "-q", "--course-dir", str(course)],
                              capture_output=True, text=True, timeout=600)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert all_grades(sqlite(course)) == served  # cell for cell


def _attempts(course) -> list[tuple]:
    import sqlite3
    with sqlite3.connect(course / ".maxpool-grader" / "serve" / "queue.sqlite") as db:
        return list(db.execute("SELECT student, status, tries FROM attempts ORDER BY id"))
