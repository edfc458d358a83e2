"""A call's inputs, handed to the verdict process in a memory both map: the grader writes
d_output and x there, the student's function is given arrays over that very memory, and the
grader reads them back itself after the call. So what the function did to its inputs is
what the grader sees, never what the process says it did."""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os

import numpy as np

from .untrusted import inputs_over

INPUT_BYTES = 4 << 20  # the graded inputs need a few kilobytes


def _extent(array: np.ndarray) -> tuple[int, int]:
    """(lowest byte relative to the first element, bytes spanned) of ``array``'s elements."""
    if array.size == 0:
        return 0, 0
    low = sum(stride * (n - 1) for stride, n in zip(array.strides, array.shape) if stride < 0)
    high = sum(stride * (n - 1) for stride, n in zip(array.strides, array.shape) if stride > 0)
    return low, high - low + array.itemsize


class SharedInputs:
    """A memory file of ``size`` bytes that no one can shrink or grow (its seals: the box
    maps it too, and a file cut short under the grader's own mapping would crash the grader
    with SIGBUS when it reads the inputs back), mapped here; ``fd`` goes to the process."""

    def __init__(self, size: int = INPUT_BYTES):
        self.size = size
        self.fd = os.memfd_create("maxpool-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.memory = mmap.mmap(self.fd, size)

    def write(self, arrays: tuple[np.ndarray, ...]) -> list:
        """Put a call's inputs in the memory, each in its own memory layout (a view, Fortran
        order: the student's function is given arrays laid out as the case says); their layout
        ([offset, shape, dtype, strides] each, offset that of the first element)."""
        layout, offset = [], 0
        for array in arrays:
            array = np.asarray(array)
            low, span = _extent(array)
            if offset + span > self.size:
                raise ValueError(f"inputs of {offset + span} bytes do not fit the {self.size} shared")
            start = offset - low  # where the first element goes, so that the lowest byte lands at offset
            np.ndarray(array.shape, array.dtype, buffer=self.memory, offset=start, strides=array.strides)[...] = array
            layout.append([start, list(array.shape), array.dtype.str, list(array.strides)])
            offset += -(-max(span, 1) // 64) * 64
        return layout

    def read(self, layout: list) -> tuple[np.ndarray, ...]:
        """The inputs as they are now in the memory: copies the grader owns."""
        return tuple(array.copy() for array in inputs_over(self.memory, layout))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1
        with contextlib.suppress(BufferError):  # an array over it still held: it goes with the object
            self.memory.close()
