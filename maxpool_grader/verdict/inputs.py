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
        """Put a call's inputs in the memory; their layout ([offset, shape, dtype] each)."""
        layout, offset = [], 0
        for array in arrays:
            array = np.ascontiguousarray(array)
            if offset + array.nbytes > self.size:
                raise ValueError(f"inputs of {offset + array.nbytes} bytes do not fit the {self.size} shared")
            np.ndarray(array.shape, array.dtype, buffer=self.memory, offset=offset)[...] = array
            layout.append([offset, list(array.shape), array.dtype.str])
            offset += -(-max(array.nbytes, 1) // 64) * 64
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
