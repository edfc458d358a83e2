"""A file of the course's state replaced whole, never left half written: the roster the
LMS gave, ``lti.json``, ``lms.json``, the revocation ledger, ``grade``'s state."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def replace_file(path: Path, text: str, *, mode: int = 0o600, sync: bool = True) -> None:
    """``path`` replaced by ``text``: written beside it (a name of this process's own), synced,
    renamed into place and its folder synced, so a kill or a power cut leaves the old file or
    the new one, never half of one. ``sync=False`` skips both syncs, for a file that is only a
    cache of what can be worked out again (a kill still leaves a whole file)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    if sync:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
