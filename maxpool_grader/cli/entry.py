"""The ``maxpool-grader`` console script. For ``grade``, Ctrl-C is listened for before the
imports, which take a second or more: a run started with SIGINT ignored (a script's
background job) would otherwise not hear a Ctrl-C that came that early."""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    if sys.argv[1:2] != ["grade"]:
        from .main import main as command  # the other commands keep their own Ctrl-C
        return command()
    pressed = []

    def early(signum, frame):  # until grade listens itself (grade._listen_for_ctrl_c)
        pressed.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, early)
    try:
        from .main import main as command  # a second of imports, now with Ctrl-C heard
        status = command()
    except BaseException:  # a KeyboardInterrupt inside a C extension's import becomes an ImportError
        if not pressed:
            raise
        print("\nInterrupted before grading began: nothing was changed. Run the command again to grade.",
              file=sys.stderr)
        status = 130
    if status == 130:
        # stopped by Ctrl-C: end now. Python's own exit joins the threads of the killed pool and
        # of the report's reader, and once waited there for minutes; what was graded is saved
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return status


if __name__ == "__main__":  # python -m maxpool_grader.cli.entry, where no bin/ script is (pip install --target)
    sys.exit(main())
