"""Whether a grade may be written now. A grading worker may hold the writing of grades until
its control submission passed (backend/control.py), and refuse it when the control failed:
``KeepHandGrades`` asks ``wait_to_record`` before it writes anything. Plain nbgrader sets no
gate, and records as it always did."""

from __future__ import annotations

from typing import Callable

_gate: list[Callable[[], None]] = []


def set_gate(wait: Callable[[], None] | None) -> None:
    """``wait()`` returns when grades may be written, and raises (a GraderFault) when they may
    never be; None: no gate."""
    _gate[:] = [wait] if wait is not None else []


def wait_to_record() -> None:
    for wait in _gate:
        wait()
