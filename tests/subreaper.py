"""Run a command as the child of a *subreaper* and report what outlives it.

    python tests/subreaper.py SECONDS COMMAND...

This process marks itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every
process that descends from COMMAND and loses its parent is re-parented here, not to init:
after COMMAND dies, this process's children are exactly what is left of its tree (a
survivor's own children stay below it). It prints COMMAND's pid on the first line (COMMAND
shares its output), waits for COMMAND to end (the test kills it), gives the rest SECONDS to
end, then prints one line ``left: <JSON list of the survivors' command lines>`` and kills them.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def children() -> list[int]:
    """This process's living children (zombies are reaped first)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                state, parent = stat.read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if int(parent) == os.getpid() and state != "Z":
            found.append(int(entry))
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def main() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    seconds, command = float(sys.argv[1]), sys.argv[2:]
    process = subprocess.Popen(command)
    print(process.pid, flush=True)
    process.wait()
    deadline = time.monotonic() + seconds
    while (left := children()) and time.monotonic() < deadline:
        time.sleep(0.1)
    print("left: " + json.dumps([command_line(pid) for pid in left]), flush=True)
    while left and time.monotonic() < deadline + 10:  # their own children come up here in turn
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
        left = children()


if __name__ == "__main__":
    main()
