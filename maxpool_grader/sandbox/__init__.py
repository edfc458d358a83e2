"""The sandbox: where a student's code runs during grading, and all it can reach. Generic:
it knows nothing of the exercise, only how to run a program sealed.

Every process that runs a submission's code (the notebook's kernel, each out-of-process
verdict process, everything they start) runs in a bubblewrap sandbox of that
submission's *box* (``box``, ``filesystem``) and its cgroup (``cgroups``):

* it sees only the system and Python with every folder Python imports from, read-only,
  with the grader package hidden wherever it lies: never the course, a home directory,
  the host's /tmp, the gradebook, the reference or a hidden test;
* it writes only its own size-limited scratch tmpfs, and nothing it writes comes back;
  symbolic links are never followed;
* it runs as an unprivileged uid with no capability, no network, in its own PID and IPC
  namespaces, with no keyring call (``seccomp``) and an environment that holds nothing of
  the grader's; its descriptors 0, 1 and 2 are /dev/null, never the grader's;
* the submission as a whole has caps on memory, processes, CPUs at once, scratch space and
  output; ``cpushare`` says whether it received the CPU it was owed over an interval.

``kernels`` runs the notebook's kernel in the box, and ``kernel_client`` caps what the
grader reads from it; ``limits`` are each process's own rlimits; ``seccomp`` is the
filter of system calls no sandboxed process may make; ``zygote`` starts sandboxed
processes warm (one process that imported once forks each of them), and
``kernel_zygote`` is the kernel zygote's program (run from a copy: ipykernel and NumPy,
never this package). What is run there, and what its answers mean, is the verdict
package's.

May import: ``names``.
"""
