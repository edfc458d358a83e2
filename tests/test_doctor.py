"""``maxpool-grader doctor``, run as root and as a normal user on this machine: what it says
holds is what a grading run as that user gets, asked of the same functions the sealed box
uses (tests/test_sealed_box.py grades the attack corpus as both users under them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import BIN, as_instructor, as_user, copy_course, instructor, nbgrader, user_account

pytestmark = pytest.mark.integration  # real sandboxes, cgroups and users

OBSERVED = ("import json; from maxpool_grader.sandbox import box, cgroups; "
            "print(json.dumps({'sandbox': box.bwrap_works(), 'cgroup': cgroups.available(), "
            "'cpu': cgroups.cpu_share_available()}))")


@pytest.fixture(scope="module")
def course():
    base = Path(tempfile.mkdtemp(prefix="maxpool-doctor-", dir="/tmp"))  # a normal user reaches /tmp
    copy_course(base / "course", with_submissions=False)
    (base / "tmp").mkdir()
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _run(base: Path, argv: list[str], as_root: bool) -> subprocess.CompletedProcess:
    env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "TMPDIR": str(base / "tmp"),
           "LANG": "C.UTF-8"}
    if as_root:
        return subprocess.run(argv, cwd=base / "course", env=dict(env, HOME=os.environ.get("HOME", "/root")),
                              text=True, capture_output=True, timeout=300)
    user = instructor()
    for path in (base, *base.rglob("*")):
        os.lchown(path, user.pw_uid, user.pw_gid)
    return subprocess.run(as_instructor(argv, dict(env, HOME=user.pw_dir)), cwd=base / "course", text=True,
                          capture_output=True, timeout=300)


@pytest.mark.parametrize("as_root", [True, False], ids=["root", "user"])
def test_doctor_says_what_grading_as_this_user_gets(course, as_root):
    if not as_root and os.geteuid() != 0:
        pytest.skip("making a second user needs root; this run is that normal user already")
    report = _run(course, [str(BIN / "maxpool-grader"), "doctor", "--json"], as_root)
    found = {finding["name"]: finding for finding in json.loads(report.stdout)}
    observed = json.loads(_run(course, [str(BIN / "python"), "-c", OBSERVED], as_root).stdout)

    assert found["sandbox"]["holds"] == observed["sandbox"], found["sandbox"]
    assert found["cgroup"]["holds"] == observed["cgroup"], found["cgroup"]
    assert found["cpu"]["holds"] == observed["cpu"], found["cpu"]
    assert found["gradebook"]["holds"] and found["nbgrader"]["holds"], found
    assert ("root" in found["user"]["seen"]) == as_root
    for finding in found.values():  # every guarantee that does not hold comes with its fix
        assert finding["holds"] or finding["fix"], finding
    assert report.returncode == (0 if all(f["holds"] or not f["needed"] for f in found.values()) else 1)

    text = _run(course, [str(BIN / "maxpool-grader"), "doctor"], as_root).stdout
    sandboxed = "yes" if observed["sandbox"] else "NO"
    caps = "per submission (cgroup)" if observed["cgroup"] else "per process only"
    cpu = "yes" if observed["cpu"] else "NO (time limits on the wall clock alone)"
    assert (f"Student code sandboxed: {sandboxed}. Memory and process caps: {caps}. "
            f"CPU share per submission: {cpu}.") in text, text
    if not observed["cgroup"]:
        assert "fix:" in text and "GRADING WITHOUT A CGROUP" in text, text
    if not observed["cpu"]:  # the wall clock alone: said plainly
        assert "NO CPU SHARE PER SUBMISSION" in text and "can still cost a slow student points" in text, text


def test_an_unreachable_gradebook_is_named_with_the_fix(course):
    report = _run(course, [str(BIN / "maxpool-grader"), "doctor", "--db", "postgresql://grader@127.0.0.1:1/course"],
                  True)
    assert report.returncode == 1
    assert "FAIL gradebook  127.0.0.1:1/course: " in report.stdout, report.stdout
    assert "fix: start the database server, or correct --db" in report.stdout


def test_doctor_checks_the_exchange_as_a_student_and_names_the_folder_and_its_fix():
    """The exchange of a course, released by nbgrader: a student (root's check: a real
    unprivileged user; a normal user's: the permission bits) can do what nbgrader's student
    commands need. Closed inbound, it names that folder and the chmod; the student account
    itself is refused there too, and the fix makes both hold again."""
    if os.geteuid() != 0:
        pytest.skip("checking as another user needs root")
    base = Path(tempfile.mkdtemp(prefix="maxpool-doctor-exchange-", dir="/tmp"))
    try:
        base.chmod(0o755)
        course = copy_course(base / "course", with_submissions=False)
        exchange = base / "exchange"
        with open(course / "nbgrader_config.py", "a") as config:
            config.write(f"\nc.Exchange.root = {str(exchange)!r}\n")

        def exchange_line(*options: str, as_root: bool = True) -> dict:
            argv = [str(BIN / "maxpool-grader"), "doctor", "--json", *options]
            env = {"PATH": os.pathsep.join([str(BIN), "/usr/bin", "/bin"]), "LANG": "C.UTF-8", "HOME": str(base)}
            run = subprocess.run(argv if as_root else as_instructor(argv, env), cwd=course, env=env, text=True,
                                 capture_output=True, timeout=300)
            found = {finding["name"]: finding for finding in json.loads(run.stdout)}
            assert run.returncode == (0 if all(f["holds"] or not f["needed"] for f in found.values()) else 1)
            return found["exchange"]

        assert "does not exist yet" in exchange_line()["seen"]
        nbgrader(course, "generate_assignment", "max_pool_backward", "--force")
        nbgrader(course, "release_assignment", "max_pool_backward")
        for options, who in (((), "checked as nobody (uid 65534, no groups)"),
                             (("--student", "maxpool-s-doctor"), "checked as maxpool-s-doctor")):
            user_account("maxpool-s-doctor")
            found = exchange_line(*options)
            assert found["holds"] and who in found["seen"] and not found["needed"], found
        unknown = exchange_line("--student", "maxpool-no-such-user")
        assert not unknown["holds"] and "this machine has no user 'maxpool-no-such-user'" in unknown["seen"], unknown
        by_bits = exchange_line(as_root=False)
        assert by_bits["holds"] and "checked by the permission bits for other users" in by_bits["seen"], by_bits

        inbound = exchange / "max_pool_backward" / "inbound"
        inbound.chmod(0o2700)
        writes = as_user("maxpool-s-doctor", ["sh", "-c", f'test -w "{inbound}" && test -x "{inbound}"'], {})
        assert subprocess.run(writes).returncode != 0  # the account itself may not write there
        for found in (exchange_line("--student", "maxpool-s-doctor"), exchange_line(as_root=False)):
            assert not found["holds"] and f"a student cannot write and enter {inbound}" in found["seen"], found
            assert found["fix"].startswith(f"chmod 2733 {inbound} "), found
        subprocess.run(found["fix"].split(" (")[0].split(), check=True)  # the fix as it is printed
        assert subprocess.run(writes).returncode == 0
        assert exchange_line("--student", "maxpool-s-doctor")["holds"]
    finally:
        shutil.rmtree(base, ignore_errors=True)
