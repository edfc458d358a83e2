"""The kernel zygote: ``python -m maxpool_grader.isolation.kernel_zygote <socket fd>``.

Imports what every grading kernel imports (ipykernel, IPython, NumPy, the grader's
checks) once, then forks one kernel per request into a fresh sandbox (see
``zygote.py``). Each child runs exactly what ``python -m ipykernel_launcher`` runs, with
the same ``sys.argv`` and ``sys.path``; no code of any notebook ever runs in the zygote.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile

import ipykernel_launcher  # noqa: F401  (its file name becomes the kernel's sys.argv[0])
import numpy  # noqa: F401
from ipykernel import ipkernel, kernelapp  # noqa: F401

import maxpool_grader.checks  # noqa: F401  (what the hidden test cells import)
from maxpool_grader.isolation import zygote

# python -m puts the working directory first, and ipykernel_launcher removes it again
BASE_PATH = list(sys.path[1:])


def run_kernel(request: dict, passed: list[int]) -> None:
    arguments = list(request["argv"][3:])  # after python -m ipykernel_launcher
    sys.argv = [ipykernel_launcher.__file__, *arguments]
    sys.path[:] = BASE_PATH
    tempfile.tempdir = None  # found again from this kernel's TMPDIR
    kernelapp.launch_new_instance(argv=arguments)
    os._exit(0)


if __name__ == "__main__":
    zygote.serve(socket.socket(fileno=int(sys.argv[1])), run_kernel, directory=os.getcwd())
