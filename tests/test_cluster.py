"""Grading on a Dask cluster: a real `dask scheduler` and `dask worker` processes on
loopback, each worker in its own working directory with the course's folder hidden from
it (a mount namespace with an empty tmpfs over the test's folder), as on another machine,
and a real PostgreSQL gradebook. The sample class plus corpus faults and attacks are
graded through `maxpool-grader grade --cluster tls://...` with certificates made by
`maxpool-grader cluster-certs`, one worker is killed in the middle of the run, and the
grades must equal plain serial nbgrader's cell for cell. Only a holder of the course's
certificates reaches the scheduler and workers; a plain tcp:// address off loopback is
refused unless --insecure. Workers of another grader version, or without a sandbox, are
refused with the reason."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shlex
import shutil
import signal
import site
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from corpus import build as build_corpus
from helpers import (
    ASSIGNMENT,
    BIN,
    EXTRA,
    GRADED_CELLS,
    ROOT,
    STUDENTS,
    all_grades,
    copy_course,
    free_port,
    nbgrader,
    sqlite,
)

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers


def make_certificates(folder: Path) -> Path:
    """A course's certificates, made as an instructor makes them."""
    made = subprocess.run([str(BIN / "maxpool-grader"), "cluster-certs", str(folder)], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert made.returncode == 0, made.stdout
    return folder


def tls_options(certs: Path, role: str) -> list[str]:
    """The command-line options of ``dask scheduler``, ``dask worker`` and ``grade`` alike."""
    return ["--tls-ca-file", str(certs / "ca.pem"), "--tls-cert", str(certs / f"{role}.pem"),
            "--tls-key", str(certs / f"{role}-key.pem")]


def client_security(certs: Path, ca: Path | None = None):
    from distributed.security import Security
    return Security(tls_ca_file=str(ca or certs / "ca.pem"), tls_client_cert=str(certs / "client.pem"),
                    tls_client_key=str(certs / "client-key.pem"), require_encryption=True)


class Cluster:
    """A scheduler and workers, all on loopback; with ``tls`` they speak TLS with the
    certificates in ``certs`` (outside the folder the workers do not see). Each worker is in
    its own process group, so killing the group is losing the machine."""

    def __init__(self, hide: Path, tls: bool = False):
        self.hide = hide
        self.home = Path(tempfile.mkdtemp(prefix="maxpool-dask-"))
        self.certs = make_certificates(self.home / "certs") if tls else None
        self.security = client_security(self.certs) if tls else None
        self.port = free_port()
        self.address = f"{'tls' if tls else 'tcp'}://127.0.0.1:{self.port}"
        self.processes: dict[str, subprocess.Popen] = {}
        self._start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                  "--no-dashboard", "--dashboard-address", "127.0.0.1:0", *self.tls("scheduler")])
        self._wait_for_scheduler()

    def tls(self, role: str) -> list[str]:
        return tls_options(self.certs, role) if self.certs else []

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
                Client(self.address, timeout=2, security=self.security).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the Dask scheduler did not start:\n" + self.log("scheduler")) from None
                time.sleep(0.5)

    def add_worker(self, name: str, env: dict | None = None, python: Path | None = None) -> None:
        self._start(name, [str(python or sys.executable), "-m", "distributed.cli.dask_worker", self.address,
                           "--nworkers", "1", "--nthreads", "1", "--name", name, "--host", "127.0.0.1",
                           "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                           "--local-directory", str(self.home / name), *self.tls("worker")], env=env, hidden=True)

    def wait_for_workers(self, *names: str, count: int | None = None) -> None:
        """Wait until the scheduler's workers are exactly ``names`` (or, unnamed, ``count`` of
        them): a count alone would also take a worker killed but not yet noticed as gone."""
        from distributed import Client
        with Client(self.address, timeout=10, security=self.security) as client:
            deadline = time.monotonic() + 120
            while True:
                seen = sorted(str(worker.get("name")) for worker in client.scheduler_info()["workers"].values())
                if (len(seen) == count) if count is not None else seen == sorted(names):
                    return
                assert time.monotonic() < deadline, f"workers {seen}, not {sorted(names)}"
                time.sleep(0.1)

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
    cluster = Cluster(hide=tmp_path, tls=True)
    try:
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        cluster.wait_for_workers("w1", "w2")
        process = grading(course, "--cluster", cluster.address, "--db", url, *cluster.tls("client"))
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
    assert len(ours) == len(STUDENTS + FAULTS) * GRADED_CELLS
    assert {key: (score, theirs.get(key)) for key, score in ours.items() if score != theirs.get(key)} == {}
    for student in STUDENTS + FAULTS:  # the graded notebook came back; feedback and the report are local
        assert (course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()
    assert (course / "report" / "report.json").exists()
    # nothing changed: no cluster needed; --insecure lets a plain address off loopback through
    again = grading(course, "--cluster", "tcp://192.0.2.1:8786", "--insecure", "--db", url)
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
        cluster.wait_for_workers("older", "unsandboxed")
        process = grading(course, "--cluster", cluster.address)
        output = process.communicate(timeout=300)[0]
    finally:
        cluster.stop()
    assert process.returncode == 1
    assert "refused: it runs another version of the grader" in output
    assert "refused: bubblewrap does not work there" in output
    assert "Not graded: no worker of" in output
    assert not (course / "autograded").exists()


def test_a_scheduler_without_workers_is_named_and_a_worker_that_comes_late_grades(tmp_path):
    """With no worker connected the run says so (not "none may grade") and grades nothing; a
    worker that reaches the scheduler a few seconds after the run began grades the class."""
    course = copy_course(tmp_path / "course", students=["loop_correct"])
    cluster = Cluster(hide=tmp_path / "course")
    try:
        empty = grading(course, "--cluster", cluster.address)
        output = empty.communicate(timeout=300)[0]
        assert empty.returncode == 1, output
        assert f"no worker is connected to the Dask scheduler at {cluster.address}" in output, output
        assert f"dask worker {cluster.address} --nthreads 1" in output
        assert not (course / "autograded").exists()
        late = grading(course, "--cluster", cluster.address)
        time.sleep(2)
        cluster.add_worker("late")
        output = late.communicate(timeout=600)[0]
    finally:
        cluster.stop()
    assert late.returncode == 0, output
    assert "cluster " + cluster.address + ": 1 worker(s) grade" in output, output
    assert (course / "autograded" / "loop_correct" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()


async def _identity(address: str, security) -> dict:
    """Open a Dask connection to ``address`` and ask the server who it is."""
    from distributed.comm import connect
    comm = await connect(address, timeout=10, **(security.get_connection_args("client") if security else {}))
    try:
        await comm.write({"op": "identity"})
        return await comm.read()
    finally:
        comm.abort()


def _without_certificate(address: str, ca: Path) -> bytes:
    """A TLS client that trusts the course's CA but shows no certificate of its own."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # as Dask: the CA is the course's own
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
        tls.sendall(b"\0" * 8)
        return tls.recv(16)


def test_only_holders_of_the_course_certificates_reach_the_scheduler_and_workers(tmp_path):
    import dask
    from distributed import Client

    from maxpool_grader.cluster.tls import coordinator_security
    cluster = Cluster(hide=tmp_path, tls=True)
    try:
        # another CA's client certificate, held by someone who has the course's (public) ca.pem:
        # this client accepts the servers, so the refusals below are theirs
        outsider = client_security(make_certificates(tmp_path / "another-ca"), ca=cluster.certs / "ca.pem")
        cluster.add_worker("w1")
        cluster.wait_for_workers("w1")
        with dask.config.set({"distributed.comm.tls.ca-file": str(cluster.certs / "ca.pem"),  # as a Dask config
                              "distributed.comm.tls.client.cert": str(cluster.certs / "client.pem"),  # file says
                              "distributed.comm.tls.client.key": str(cluster.certs / "client-key.pem")}):
            security = coordinator_security(cluster.address)
        with Client(cluster.address, security=security, timeout=10) as coordinator:
            assert list(coordinator.run(os.getpid).values())  # the course's client gets work done
            workers = coordinator.scheduler_info()["workers"]
            servers = [cluster.address, *workers, *(info["nanny"] for info in workers.values())]
            assert len(servers) == 3 and all(server.startswith("tls://127.0.0.1:") for server in servers)
            # each server answers the course's client, and drops the others during the handshake
            # (with an alert, or by closing: which one the client sees depends on timing)
            for server in servers:
                assert asyncio.run(_identity(server, security))["type"] in {"Scheduler", "Worker", "Nanny"}
                with pytest.raises(OSError):  # plain tcp
                    asyncio.run(_identity(server.replace("tls://", "tcp://"), None))
                with pytest.raises(OSError):
                    asyncio.run(_identity(server, outsider))
                with pytest.raises(OSError):
                    _without_certificate(server, cluster.certs / "ca.pem")
            with pytest.raises(OSError):
                Client(cluster.address.replace("tls://", "tcp://"), timeout=5)
            with pytest.raises(OSError):
                Client(cluster.address, security=outsider, timeout=5)
            # none of them became a client of the scheduler; the course's still works
            clients = coordinator.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.clients))
            assert clients == sorted([coordinator.id, "fire-and-forget"])
            assert list(coordinator.run(os.getpid).values())
    finally:
        cluster.stop()


def test_grade_refuses_a_plain_address_off_loopback_and_tls_without_certificates(tmp_path):
    course = copy_course(tmp_path / "course")
    plain = "is not encrypted: anyone who reaches it can run code on the grading workers and read every submission; " \
            "use tls:// with the course's certificates"
    for address, reason in (("tcp://10.20.30.40:8786", plain),
                            ("tls://10.20.30.40:8786", "needs the course's CA and the coordinator's certificate")):
        process = grading(course, "--cluster", address)
        output = process.communicate(timeout=120)[0]
        assert process.returncode == 2, output
        assert f"--cluster refused: {address} {reason}" in output
        assert "--insecure" in output or address.startswith("tls")
    assert not (course / "release").exists() and not (course / "autograded").exists()  # refused before anything


def documented_worker_command() -> str:
    """The `dask worker` command of docs/operations.md, its continuation lines joined."""
    lines = (ROOT / "docs" / "operations.md").read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith(".venv/bin/dask worker "))
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.rstrip().endswith("\\"):
            return " ".join(command)
    raise AssertionError("the worker command of docs/operations.md does not end")


def test_the_documented_worker_command_shows_the_network_only_its_tls_port(tmp_path):
    """The command exactly as docs/operations.md gives it (only SCHEDULER:8786 replaced), run in a
    folder holding `.venv` and `certs/` as the page assumes: no listening socket of its processes
    off loopback answers plain HTTP; each is a worker's Dask port, which speaks TLS; the workers'
    HTTP servers (/health, /metrics) are on loopback."""
    import psutil
    import requests
    command = documented_worker_command()
    assert "SCHEDULER:8786" in command and "--nworkers 2" in command
    cluster = Cluster(hide=tmp_path, tls=True)
    machine = cluster.home / "documented"
    machine.mkdir()
    (machine / ".venv").symlink_to(BIN.parent)
    (machine / "certs").symlink_to(cluster.certs)
    argv = shlex.split(command.replace("SCHEDULER:8786", cluster.address.split("://", 1)[1]))
    try:
        cluster.processes["documented"] = subprocess.Popen(
            argv, cwd=machine, start_new_session=True, stdout=open(machine / "log", "w"), stderr=subprocess.STDOUT)
        cluster.wait_for_workers(count=2)
        from distributed import Client
        with Client(cluster.address, timeout=10, security=cluster.security) as client:
            dask_ports = {int(address.rsplit(":", 1)[1]) for address in client.scheduler_info()["workers"]}
        tree = psutil.Process(cluster.processes["documented"].pid)
        listening = {(connection.laddr.ip, connection.laddr.port) for process in [tree, *tree.children(recursive=True)]
                     for connection in process.net_connections(kind="inet") if connection.status == psutil.CONN_LISTEN}
        exposed = {port for ip, port in listening if not ipaddress.ip_address(ip).is_loopback}
        assert exposed and exposed <= dask_ports, (listening, dask_ports, (machine / "log").read_text()[-2000:])
        for port in exposed:  # plain HTTP gets nothing from a TLS port
            with pytest.raises(requests.ConnectionError):
                requests.get(f"http://127.0.0.1:{port}/health", timeout=10)
        healthy = [port for ip, port in listening if ipaddress.ip_address(ip).is_loopback and port not in dask_ports
                   and _answers_health(port)]
        assert len(healthy) == 2, listening  # each worker's web server, on loopback only
    finally:
        cluster.stop()


def _answers_health(port: int) -> bool:
    import requests
    try:
        return requests.get(f"http://127.0.0.1:{port}/health", timeout=10).text == "ok"
    except requests.RequestException:
        return False
