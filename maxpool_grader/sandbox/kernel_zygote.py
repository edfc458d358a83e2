"""The kernel zygote: ``python kernel_zygote.py <socket fd>``, run from a private copy
of this file and of ``zygote.py`` (kernels.start_kernel_zygote).

Imports what every grading kernel imports (ipykernel, IPython, NumPy) once, then forks one
kernel per request into a fresh sandbox (see ``zygote.py``). Each child runs exactly what
``python -m ipykernel_launcher`` runs, with the same ``sys.argv`` and ``sys.path``; no code
of any notebook ever runs in the zygote (it reads the released notebook's cells as IPython
would, ``remember_pure_steps``, and runs none).

Every kernel holds what its zygote holds, so the zygote holds nothing a student may not
see: it imports only the standard library, ipykernel and NumPy, never the grader package
(which is not on its path: the sandbox hides it, and this program is not part of it when it
runs), and it reads only the *release* notebook, never the source notebook with its solution
and hidden tests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

# (debugpy, imported below, would warn on stderr at import: the zygote's environment, the
# kernels' own, turns that off: filesystem.environment)
_BEFORE_IMPORTS = dict(os.environ)

import ipykernel_launcher  # noqa: E402, F401  (its file name becomes the kernel's sys.argv[0])
import numpy  # noqa: E402, F401
import numpy.random  # noqa: E402, F401
from ipykernel import ipkernel, kernelapp  # noqa: E402, F401

# What a new kernel imports before it runs any cell (its debugger pulls in debugpy): a
# third of a kernel's CPU time when each kernel imports them itself. None of them starts a
# thread or opens a file (tests/test_zygote.py checks both); one missing is imported (or
# not) by each kernel as before.
KERNEL_START_MODULES = ("ipykernel.debugger", "IPython.core.completerlib", "IPython.core.debugger",
                        "IPython.core.logger", "IPython.extensions.storemagic", "psutil", "sqlite3",
                        "tornado.queues")
for _name in KERNEL_START_MODULES:
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)
# what those imports put in the environment (debugpy: PYDEVD_USE_FRAME_EVAL), which each
# kernel's own environment must hold as a kernel that imported them itself would
SET_BY_IMPORTS = {name: value for name, value in os.environ.items() if _BEFORE_IMPORTS.get(name) != value}

import zygote  # noqa: E402  (the copy next to this one, first on the path; never the grader package)

zygote.forget_the_graders_finder()  # before BASE_PATH is taken (a cold kernel has none: filesystem.grader_records)

WARM_CELLS = "warm-cells.json"  # in the zygote's own directory: code cells every kernel will run


def remember_pure_steps(cells: list[str]) -> None:
    """Three steps IPython and ipykernel take for every cell are pure functions of its text:
    IPython's syntax turned into Python (twice per cell), the compile that asks whether the
    cell needs an event loop, and the hash that names its file. Their results are kept,
    those of ``cells`` (the assignment's own, the same in every notebook) computed here
    once, before any kernel is forked. A transformation is kept by the transformers that
    made it: a kernel whose transformers changed transforms again."""
    # the steps patched, imported where they are patched (ipkernel, imported above, loaded them already)
    from ipykernel import compiler
    from IPython.core import async_helpers, inputtransformer2, interactiveshell

    transform, transformed = inputtransformer2.TransformerManager.transform_cell, {}

    def transform_cell(self, cell):
        key = (cell, *(tuple(map(id, steps)) for steps in (self.cleanup_transforms, self.line_transforms,
                                                             self.token_transformers)))
        if key not in transformed:
            transformed[key] = transform(self, cell)
        return transformed[key]

    inputtransformer2.TransformerManager.transform_cell = transform_cell
    interactiveshell._should_be_async = functools.lru_cache(maxsize=4096)(async_helpers._should_be_async)
    compiler.murmur2_x86 = functools.lru_cache(maxsize=4096)(compiler.murmur2_x86)
    manager = inputtransformer2.TransformerManager()
    for cell in cells:
        with contextlib.suppress(Exception):  # what does not transform is left to each kernel
            python = manager.transform_cell(cell)
            interactiveshell._should_be_async(python)
        compiler.murmur2_x86(cell, compiler.get_tmp_hash_seed())


with contextlib.suppress(OSError, ValueError):  # the released cells, from start_kernel_zygote
    remember_pure_steps([str(cell) for cell in json.loads(Path(WARM_CELLS).read_text())])

# what ``python -m ipykernel_launcher`` has on its path once the launcher removed the working
# directory: this one's, but for the folder of this script (first)
BASE_PATH = list(sys.path[1:])


def run_kernel(request: dict, passed: list[int]) -> None:
    arguments = list(request["argv"][3:])  # after python -m ipykernel_launcher
    sys.argv = [ipykernel_launcher.__file__, *arguments]
    sys.path[:] = BASE_PATH
    for name, value in SET_BY_IMPORTS.items():
        os.environ.setdefault(name, value)
    # NumPy seeds its global generator from the OS when numpy.random is first imported, which
    # the zygote did once for all its children: each kernel draws its own numbers, as a cold
    # one does (Python's random reseeds itself after a fork)
    numpy.random.seed()
    tempfile.tempdir = None  # found again from this kernel's TMPDIR
    kernelapp.launch_new_instance(argv=arguments)
    os._exit(0)


if __name__ == "__main__":
    zygote.serve([socket.socket(fileno=int(fd)) for fd in sys.argv[1].split(",")], run_kernel, directory=os.getcwd())
