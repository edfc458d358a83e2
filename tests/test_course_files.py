"""A state file replaced whole (maxpool_grader/course/files.py), which lti.json, lms.json, the
revocation ledger, the LMS's roster and grade's state are written with."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import pytest

from maxpool_grader.course.files import replace_file

pytestmark = pytest.mark.unit


def test_the_file_is_replaced_with_its_mode_and_nothing_beside_it(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    replace_file(path, "new ✓")
    assert path.read_text() == "new ✓" and stat.S_IMODE(path.stat().st_mode) == 0o600
    replace_file(path, "a,b\r\n", mode=0o644, sync=False)
    assert path.read_bytes() == b"a,b\r\n"  # written as given: no newline translation
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_partial(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        replace_file(path, "half \udcff")  # a lone surrogate cannot be written
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_writer_killed_midway_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    writer = subprocess.Popen([sys.executable, "-c", f"""
import os, sys
from pathlib import Path
from maxpool_grader.course import files
def stop(*args):
    print("written", flush=True)
    os.kill(os.getpid(), 9)
files.os.replace = stop
files.replace_file(Path({str(path)!r}), "new" * 100000)
"""], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "written\n"
    assert writer.wait() == -signal.SIGKILL
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir() if p.name != "state.json"] == [f".state.json.{writer.pid}.partial"]
    assert len(os.listdir(tmp_path)) == 2
