"""Ctrl-C during ``grade``: Python's KeyboardInterrupt, and a flag (``backend.batch.CTRL_C``)
for where Python cannot raise it."""

from __future__ import annotations

import signal
import sys
import threading

from ..backend.batch import CTRL_C


def _ctrl_c(signum, frame) -> None:
    """Python's own handler, and a flag the batch polls: a KeyboardInterrupt raised where Python
    cannot pass it on (a finalizer, a callback) is lost, the flag is not."""
    CTRL_C.set()
    raise KeyboardInterrupt


def _quiet_about_ctrl_c(unraisable, shown=sys.unraisablehook) -> None:
    """A Ctrl-C that came inside a callback Python cannot raise from (a parser's, a
    finalizer's) is the flag's to act on, not a traceback to print."""
    if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and CTRL_C.is_set()):
        shown(unraisable)


def listen_for_ctrl_c() -> None:
    """Ctrl-C (SIGINT) stops the run, even when it was started with SIGINT ignored: a shell
    without job control (a script) starts a background job so, and Python then keeps it
    ignored. Each line of output shows when it happens, on a pipe too (who sends the signal
    may be watching the progress lines)."""
    if threading.current_thread() is threading.main_thread():
        CTRL_C.clear()
        signal.signal(signal.SIGINT, _ctrl_c)
        sys.unraisablehook = _quiet_about_ctrl_c
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
