"""Warm start (maxpool_grader/sandbox/zygote.py): a process forked into a fresh sandbox must be
confined exactly like one started cold in it, and grade exactly the same.

These tests need the bubblewrap sandbox (``.ci/run`` installs it); they do not skip.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from corpus import SIGNATURE, ZEROS
from helpers import ROOT, cmdline, flat
from make_sample_class import LOOP_CORRECT
from nbclient import NotebookClient

from maxpool_grader.sandbox import box as sealed_box
from maxpool_grader.sandbox import filesystem, kernels, zygote
from maxpool_grader.sandbox.limits import rlimits
from maxpool_grader.verdict import process as solution_process
from maxpool_grader.verdict.process import Limits
from maxpool_grader.verdict.verdicts import verdicts

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader or servers

LOG = logging.getLogger("test_zygote")
QUICK = Limits(check_seconds=1.5, search_seconds=1.5, load_seconds=3, total_seconds=8)

# What a process sees of itself and of its confinement, as JSON written to REPORT_FD.
REPORT = r"""
import json, os, resource
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
def writable(path):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        os.remove(path)
        return True
    except OSError:
        return False
report = {
    "caps": {key: status[key].strip() for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "no_new_privs": status["NoNewPrivs"].strip(),
    "uid": os.getuid(),
    "namespaces": {name: os.readlink(f"/proc/self/ns/{name}")
                   for name in ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")},
    "cwd": os.getcwd(),
    "files": sorted(os.listdir(".")),
    "root": sorted(os.listdir("/")),
    "course": sorted(os.listdir(COURSE)) if os.path.isdir(COURSE) else [],
    "writes_cwd": writable("probe"),
    "writes_tmp": writable("/tmp/maxpool-escape-probe"),
    "writes_root": writable("/escape-probe"),
    "network_interfaces": sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]),
    "limits": {name: resource.getrlimit(getattr(resource, name))[0] for name in ("RLIMIT_AS", "RLIMIT_CORE")},
    "env": dict(os.environ),
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "processes_seen": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "cgroup": open("/proc/self/cgroup").read(),
}
os.write(REPORT_FD, json.dumps(report).encode())
"""


# A zygote whose children run the request's "code" (argv gets the socket's fd appended).
BARE = [sys.executable, "-c", f"""import socket, sys
sys.path.insert(0, {str(Path(zygote.__file__).parent)!r})
import zygote
def run(request, fds):
    exec(compile(request["code"], "<spawned>", "exec"), {{"__name__": "__main__", "REPORT_FD": fds[-1] if fds else 1}})
zygote.serve(socket.socket(fileno=int(sys.argv[1])), run)"""]


@pytest.fixture(scope="module")
def bare_zygote():
    assert sealed_box.bwrap_works(), "these tests need the sandbox: apt-get install bubblewrap"
    warm = zygote.Zygote(BARE)
    yield warm
    warm.close()


@pytest.fixture
def box(tmp_path):
    """A submission's box with one file and a planted link; closed (cgroup removed) afterwards."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "data.txt").write_text("the student's file")
    (submission / "secret").symlink_to("/etc/hostname")
    made = sealed_box.Box(files_from=submission, log=LOG)
    yield made
    made.close()


@pytest.fixture
def private_directory():
    """sealed_box.private_directory for a test, removed afterwards."""
    made = []
    yield lambda prefix: made.append(sealed_box.private_directory(prefix)) or made[-1]
    for directory in made:
        shutil.rmtree(directory, ignore_errors=True)


def _run(how: str, zygote_process, box, private: Path, code: str, env: dict, limits: dict) -> int:
    """Run ``code`` in a sandbox of ``box``, cold (bwrap starts Python) or warm (forked)."""
    launch = box.sandbox(private)
    report_read, report_write = os.pipe()
    try:
        if how == "cold":
            argv = launch.argv + box.command(limits) + [sys.executable, "-c", f"REPORT_FD = {report_write}\n" + code]
            process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, pass_fds=(report_write, *launch.fds))
        else:
            request = dict(box.warm_request(limits), code=code, cwd=filesystem.WORKDIR, env=env)
            process = zygote_process.spawn(launch.argv, request, fds=(report_write,), bwrap_fds=tuple(launch.fds))
    finally:
        launch.close()
        os.close(report_write)
    with os.fdopen(report_read, "rb") as report:
        _run.report = report.read()
    return process.wait(timeout=60)


def _report_of(raw: bytes) -> dict:
    report = json.loads(raw)
    host = {name: os.readlink(f"/proc/self/ns/{name}") for name in report["namespaces"]}
    report["namespaces"] = sorted(name for name, ns in report["namespaces"].items() if ns != host[name])
    return report


def test_a_warm_process_is_confined_exactly_like_a_cold_one(bare_zygote, box, private_directory):
    env = filesystem.environment()
    code = f"COURSE = {str(ROOT)!r}\n" + REPORT
    reports = {}
    for how in ("cold", "warm"):
        limits = rlimits(1 << 30)
        assert _run(how, bare_zygote, box, private_directory(f"test-{how}-"), code, env, limits) == 0
        reports[how] = _report_of(_run.report)
    cold, warm = reports["cold"], reports["warm"]
    # apart from its file descriptors, and the sandbox's holder it can see (sh -c read)
    assert warm == dict(cold, fds=warm["fds"], processes_seen=cold["processes_seen"] + 1)
    assert set(warm["caps"].values()) == {"0000000000000000"} and warm["no_new_privs"] == "1"
    assert warm["uid"] == (filesystem.STUDENT_UID if os.geteuid() == 0 else os.getuid())
    assert warm["namespaces"] == ["cgroup", "ipc", "mnt", "net", "pid", "uts"] + ([] if os.geteuid() == 0 else ["user"])
    assert warm["cwd"] == filesystem.WORKDIR and warm["files"] == ["data.txt"]  # the link is not copied
    # of the course only what the grading environment is (a virtualenv, the grader's package
    # for the kernel): never source/, submitted/ or the gradebook
    assert set(warm["course"]) <= {".venv", "maxpool_grader"} and set(warm["root"]) <= {
        "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "run", "sbin", "scratch", "tmp",
        "usr", "opt", "home", "work", "srv"}.union({Path(sys.prefix).parts[1], Path(sys.base_prefix).parts[1]})
    # /tmp is a link into /scratch, unless Python itself lives under /tmp (a clone in /tmp)
    tmp_is_scratch = not any(tree.startswith("/tmp/") for tree in filesystem.read_only_trees())
    assert (warm["writes_cwd"], warm["writes_tmp"], warm["writes_root"]) == (True, tmp_is_scratch, False)
    assert warm["network_interfaces"] == ["lo"] and warm["limits"] == {"RLIMIT_AS": 1 << 30, "RLIMIT_CORE": 0}
    # the report's pipe and the one listdir opened, cold and warm: nothing bwrap was given
    # (its seccomp filter, the submission's files) nor anything of the grader's
    assert warm["fds"] == [0, 1, 2, 3, 4] and cold["fds"][:3] == [0, 1, 2] and len(cold["fds"]) == 5
    assert warm["env"] == dict(env, PWD=filesystem.WORKDIR)  # exactly what bwrap passes on
    assert warm["processes_seen"] == 3  # the sandbox's init, its holder, itself
    if box.cgroup is not None:  # in the submission's cgroup, cold and warm: the root of the cgroup namespace
        # bwrap made in it (a process outside it shows a path with /..), which names nothing of the host's
        for report in (cold, warm):
            assert {line.rsplit(":", 1)[1] for line in report["cgroup"].splitlines()} == {"/"}, report["cgroup"]


def test_exit_status_passes_through_and_killing_the_sandbox_ends_everything_in_it(bare_zygote, box,
                                                                                  private_directory):
    private = private_directory("test-exit-")
    env = filesystem.environment()
    assert _run("warm", bare_zygote, box, private, "import os\nos._exit(7)", env, {}) == 7
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"
    cold = _run("cold", bare_zygote, box, private, crash, env, {})
    assert _run("warm", bare_zygote, box, private, crash, env, {}) == cold == 128 + signal.SIGSEGV
    marker = f"maxpool-zygote-test-{os.getpid()}"
    daemon = ("import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; "
              f"time.sleep(300)', {marker!r}], start_new_session=True)\ntime.sleep(300)")
    launch = box.sandbox(private)
    process = bare_zygote.spawn(launch.argv, dict(box.warm_request({}), code=daemon, cwd=filesystem.WORKDIR, env=env),
                                bwrap_fds=tuple(launch.fds))
    launch.close()
    deadline = time.monotonic() + 20
    while not _processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_named(marker), "the test's daemon did not start"
    process.kill()
    process.wait(timeout=30)
    time.sleep(0.5)
    assert _processes_named(marker) == [] and not Path(f"/proc/{process.child_pid}").exists()


def _processes_named(marker: str) -> list[str]:
    return [pid for pid in os.listdir("/proc") if pid.isdigit() and marker in cmdline(pid)]


def test_a_dead_zygote_fails_the_spawn_and_leaves_no_sandbox(box, private_directory):
    dying = zygote.Zygote(BARE)
    dying.process.kill()
    dying.process.wait()
    launch = box.sandbox(private_directory("test-dead-"))
    with pytest.raises(zygote.SpawnError):
        dying.spawn(launch.argv, {"code": "pass", "cwd": filesystem.WORKDIR, "env": {}}, bwrap_fds=tuple(launch.fds))
    launch.close()
    assert not dying.alive()


def test_a_sandbox_whose_bwrap_died_setting_it_up_is_ended_and_a_working_one_is_not(box, private_directory):
    """A bwrap that dies while it sets its sandbox up (here: nobody reads its --info-fd, as
    when its grading worker was killed) leaves the sandbox's init waiting for ever; ending
    the orphans kills that init, and only it: a working sandbox of the same options stays.
    Both start in the sandbox's home, not its submission folder, with that as the mark: the
    sweeps of grading runs in other tests meanwhile leave them alone."""
    private = private_directory("test-orphan-")
    marker = f"maxpool-orphan-test-{os.getpid()}"
    mark = ("--chdir", filesystem.HOME)
    sandboxes = []
    for orphaned in (True, False):
        launch = box.sandbox(private)
        info_read, info_write = os.pipe()
        argv = launch.argv[:-1] + ["--info-fd", str(info_write), "--", "sh", "-c", "sleep 300; :", marker]
        at = argv.index("--chdir")
        argv[at:at + 2] = mark
        if orphaned:  # bwrap starts 0.3 s late, by when its --info-fd has no reader any more
            argv = ["sh", "-c", 'sleep 0.3; exec "$@"', "sh", *argv]
        sandboxes.append(subprocess.Popen(argv, pass_fds=(info_write, *launch.fds), start_new_session=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        launch.close()
        os.close(info_write)
        if orphaned:
            os.close(info_read)
        else:
            working_info = os.fdopen(info_read, "rb")
    orphan_bwrap, working = sandboxes
    try:
        orphan_bwrap.wait(timeout=30)  # the bwrap that started the orphan died...
        deadline = time.monotonic() + 20
        while not _orphaned_inits(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        orphans = _orphaned_inits(marker)
        assert len(orphans) == 1, "the orphaned sandbox init did not appear"  # ...and left its init
        assert zygote.end_orphaned_sandboxes(mark=tuple(part.encode() for part in mark)) == 1
        deadline = time.monotonic() + 10
        while Path(f"/proc/{orphans[0]}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{orphans[0]}").exists()
        assert working.poll() is None and _processes_named(marker), "the working sandbox was ended too"
        assert zygote.end_orphaned_sandboxes(mark=tuple(part.encode() for part in mark)) == 0
    finally:
        working.kill()
        working.wait(timeout=30)
        working_info.close()
        for pid in _orphaned_inits(marker):
            os.kill(int(pid), signal.SIGKILL)


def _orphaned_inits(marker: str) -> list[str]:
    """Sandbox inits (first of a PID namespace, running bwrap) with ``marker`` in their command
    line, whose parent is not a bwrap."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{pid}/status").read_text() if pid.isdigit() else ""
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Name", "").strip() == "bwrap" and fields["State"].split()[0] not in "ZX" \
                and marker in cmdline(pid) and fields["NSpid"].split()[1:] == ["1"] \
                and cmdline(fields["PPid"].strip()).split(" ")[0].rsplit("/", 1)[-1] != "bwrap":
            found.append(pid)
    return found


def test_the_zygote_ends_and_removes_its_directory_when_its_worker_lets_go():
    directory = sealed_box.private_directory("test-zygote-")
    code = (f"import socket, sys\nsys.path.insert(0, {str(Path(zygote.__file__).parent)!r})\nimport zygote\n"
            f"zygote.serve(socket.socket(fileno=int(sys.argv[1])), None, directory={str(directory)!r})")
    warm = zygote.Zygote([sys.executable, "-c", code], cwd=str(directory))
    assert warm.alive()
    warm.close()
    assert warm.process.returncode == 0 and not directory.exists()


CELL = """import sys, os, tempfile, json, resource
from ipykernel.kernelapp import IPKernelApp
print(json.dumps({"path": sys.path, "argv": [os.path.basename(sys.argv[0])] + sys.argv[1:2],
                  "cwd": os.getcwd(), "tmp": tempfile.gettempdir(), "home": os.environ["HOME"],
                  "env": sorted(os.environ), "parent_handle": IPKernelApp.instance().parent_handle,
                  "memory": resource.getrlimit(resource.RLIMIT_AS),
                  "caps": open("/proc/self/status").read().count("0000000000000000"),
                  "uid": (os.getuid(), os.geteuid(), os.getgid()),
                  "mounts": sorted(line.split()[1] for line in open("/proc/self/mounts")),
                  "execution_count": get_ipython().execution_count}))"""


def test_a_warm_kernel_is_the_kernel_a_cold_start_gives(box):
    seen = {}
    for warm in (False, True):
        manager = kernels.kernel_manager("required", 4096 << 20, LOG, box, warm)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
        client = NotebookClient(notebook, timeout=60, kernel_name="python3", kernel_manager_class=manager)
        client.execute()
        report = json.loads(notebook.cells[0].outputs[0]["text"])
        assert report["cwd"] == filesystem.WORKDIR
        assert (report["tmp"], report["home"]) == (filesystem.TMPDIR, filesystem.HOME)
        seen[warm] = report
    assert seen[True] == seen[False]


SOLUTIONS = {
    "correct": LOOP_CORRECT,
    "zeros": ZEROS,
    "exits": SIGNATURE + "    import os\n    os._exit(7)\n",
    "segfaults": SIGNATURE + "    import ctypes\n    ctypes.string_at(0)\n",
    "loops": SIGNATURE + "    while True:\n        pass\n",
    "imports the grader": ("import importlib\nimportlib.import_module('maxpool' + '_grader.exercise.reference')\n"
                           + ZEROS),
    "reads the course": ZEROS.replace("    return", f"    open({str(ROOT / 'source')!r} + '/x').read()\n    return"),
}


@pytest.mark.parametrize("name", SOLUTIONS)
def test_warm_verdicts_are_the_cold_verdicts(name):
    grade_ids = ["hidden_overlapping_windows", "hidden_ties_first_maximum"]
    found = {}
    for warm in (False, True):
        wrap = solution_process.untrusted_process_wrapper("required", LOG, warm=warm)
        found[warm] = verdicts("import numpy as np\n" + SOLUTIONS[name], grade_ids=grade_ids,
                               limits=QUICK, wrap=wrap)
    assert {key: (v.passed, v.kind, v.message) for key, v in found[True].items()} == \
        {key: (v.passed, v.kind, v.message) for key, v in found[False].items()}
    if name != "correct":
        assert not any(verdict.passed for verdict in found[True].values())
    if name == "exits":
        assert "exit status 7" in flat(found[True]["hidden_ties_first_maximum"].message)


def test_a_killed_verdict_zygote_is_started_again():
    wrap = solution_process.untrusted_process_wrapper("required", LOG, warm=True)
    verdicts("import numpy as np\n" + ZEROS, grade_ids=["hidden_gradient_check"], limits=QUICK, wrap=wrap)
    first = solution_process.verdict_zygote()
    first.process.kill()
    first.process.wait()
    found = verdicts("import numpy as np\n" + LOOP_CORRECT, grade_ids=["hidden_gradient_check"],
                     limits=QUICK, wrap=wrap)
    assert found["hidden_gradient_check"].passed and solution_process.verdict_zygote() is not first


HUGE_MESSAGE = """
import logging, re, sys
import nbformat
from nbclient import NotebookClient
from maxpool_grader.sandbox import box as sealed_box, kernels
box = sealed_box.Box(log=logging.getLogger("huge"))
cells = ["k = get_ipython().kernel\\n"
         "k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': 'x' * 200_000_000}, "
         "parent=k.get_parent())",
         "k.session.send(k.shell_stream, 'execute_reply', {'x': 'y' * 50_000_000}, parent=k.get_parent('shell'), "
         "ident=k._parent_ident['shell'])",
         "print('still connected')"]
notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
manager = kernels.kernel_manager("required", 4096 << 20, logging.getLogger("huge"), box, False)
client = NotebookClient(notebook, timeout=10, iopub_timeout=1, kernel_name="python3", kernel_manager_class=manager)
dropped = []
try:
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
            dropped.append(client.kc.iopub_channel.take_dropped() + client.kc.shell_channel.take_dropped())
finally:
    box.close()
peak_kib = int(re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read())[1])  # not ru_maxrss (docstring)
print(peak_kib >> 10, len(str(notebook.cells[0].outputs)),
      ",".join(map(str, dropped)), notebook.cells[2].outputs[0]["text"].strip())
"""


def test_one_huge_message_from_the_kernel_never_reaches_the_grader_s_memory():
    """A kernel can send one 200 MB message on iopub, or 50 MB on shell, past any output cap:
    the grader's client drops the connection at kernel_client.MAX_MESSAGE_BYTES instead of reading
    it in, and connects again, so the next cell's output still arrives. (The peak is the
    process's VmHWM: its ru_maxrss would start at pytest's own peak, which vfork and exec
    hand down.)"""
    result = subprocess.run([sys.executable, "-c", HUGE_MESSAGE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    peak_mib, output_chars, dropped, last = result.stdout.strip().split(maxsplit=3)
    assert int(output_chars) < 1000 and int(peak_mib) < 180, result.stdout
    iopub_cell, shell_cell, last_cell = map(int, dropped.split(","))
    assert iopub_cell >= 1 and shell_cell >= 1 and last_cell == 0 and last == "still connected", result.stdout


NAMED_WITH_DOTS = """
import logging, sys
import nbformat
from nbclient import NotebookClient
from maxpool_grader.sandbox import box as sealed_box, kernels
from maxpool_grader.verdict import process as solution_process
from maxpool_grader.verdict.verdicts import verdicts

box, log = sealed_box.Box(log=logging.getLogger("dots")), logging.getLogger("dots")
try:
    found = verdicts(sys.argv[1], grade_ids=["hidden_gradient_check"],
                     wrap=solution_process.untrusted_process_wrapper("required", log, box))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    NotebookClient(notebook, timeout=30, kernel_name="python3",
                   kernel_manager_class=kernels.kernel_manager("required", 4096 << 20, log, box)).execute()
finally:
    box.close()
print(found["hidden_gradient_check"].passed, notebook.cells[0].outputs[0]["text"].strip())
"""


def test_a_python_named_through_dots_still_starts_in_the_sandbox():
    """Python started as <course>/tests/../.venv/bin/python: the sandbox has no folder that
    path passes through, so the sandboxed kernel and verdict process are given the
    interpreter's plain path."""
    python = Path(os.path.abspath(sys.executable))
    beside = Path(tempfile.mkdtemp(prefix="maxpool-dots-", dir=python.parent.parent.parent))  # next to the venv
    try:
        dotted = f"../{python.parent.parent.name}/{python.parent.name}/{python.name}"  # sys.executable keeps it
        result = subprocess.run([dotted, "-c", NAMED_WITH_DOTS, "import numpy as np\n" + LOOP_CORRECT],
                                capture_output=True, text=True, timeout=120, cwd=beside)
    finally:
        beside.rmdir()
    assert result.stdout.split() == ["True", "42"], result.stderr[-3000:]


ZYGOTE_IMPORTS = """
import json, os, sys, threading
before = set(os.listdir("/proc/self/fd"))
import kernel_zygote
print(json.dumps({"threads": threading.active_count(), "new_fds": sorted(set(os.listdir("/proc/self/fd")) - before),
                  "missing": [name for name in kernel_zygote.KERNEL_START_MODULES if name not in sys.modules],
                  "grader": sorted(name for name in sys.modules if name.startswith("maxpool"))}))
"""


def test_what_the_kernel_zygote_imports_starts_no_thread_opens_no_file_and_holds_no_grader(tmp_path):
    """A forked child keeps only the thread that forked it, and would inherit any open file
    and every module: the kernel zygote's imports, run from a copy of its program as
    kernels.start_kernel_zygote runs it, leave neither a thread nor a file, and no module of
    the grader (whose package holds the answer)."""
    for program in (kernels.KERNEL_ZYGOTE_PROGRAM, Path(zygote.__file__)):
        shutil.copyfile(program, tmp_path / program.name)
    result = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1])\n" + ZYGOTE_IMPORTS,
                             str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env=filesystem.environment(home=str(tmp_path)))
    assert result.returncode == 0 and not result.stderr, result.stderr[-2000:]
    found = json.loads(result.stdout)
    assert found == {"threads": 1, "new_fds": [], "missing": [], "grader": []}, found


READY = """
import asyncio, json, logging, sys
from queue import Empty
from maxpool_grader.sandbox import box as sealed_box, kernels

async def main():
    box = sealed_box.Box(log=logging.getLogger("ready"))
    manager = kernels.kernel_manager("required", 4096 << 20, logging.getLogger("ready"), box, sys.argv[1] == "warm")()
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    silences = []
    read = client.iopub_channel.get_msg
    async def get_msg(timeout=None):
        try:
            return await read(timeout)
        except Empty:
            silences.append(timeout)
            raise
    client.iopub_channel.get_msg = get_msg
    try:
        await client.wait_for_ready(timeout=60)
        left_over = await client.iopub_channel.msg_ready()
        reply = await client.execute_interactive("print(6 * 7)", timeout=30, output_hook=lambda m: seen.append(m))
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
        box.close()
    text = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
    print(json.dumps({"silences": silences, "left_over": left_over, "status": reply["content"]["status"],
                      "text": text}))

seen = []
asyncio.run(main())
"""


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_new_kernel_is_ready_at_its_idle_status_without_waiting_for_silence(start):
    """jupyter_client ends its wait for a new kernel with 0.2 s in which iopub stays silent;
    the grader's client ends it at the kernel's idle status for the request it answered,
    with nothing of the start-up left on iopub, and the first cell runs as usual."""
    result = subprocess.run([sys.executable, "-c", READY, start], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found == {"silences": [], "left_over": False, "status": "ok", "text": "42\n"}, found


def test_each_warm_kernel_draws_its_own_random_numbers(box):
    """The kernel zygote imports numpy.random, which seeds NumPy's global generator once: a
    forked kernel must still draw numbers of its own, as a cold kernel does (and Python's
    random module already does after a fork)."""
    drawn = []
    for _ in range(2):
        manager = kernels.kernel_manager("required", 4096 << 20, LOG, box, True)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "import random, numpy as np\nprint(np.random.randint(1 << 62), np.random.rand(), random.random())")])
        NotebookClient(notebook, timeout=60, kernel_name="python3", kernel_manager_class=manager).execute()
        drawn.append(notebook.cells[0].outputs[0]["text"].split())
    assert all(first != second for first, second in zip(*drawn)), drawn
