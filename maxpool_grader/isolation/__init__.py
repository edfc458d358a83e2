"""The isolation layer: where a student's code runs during grading, and all it can reach.

Every process that runs a submission's code (the notebook's kernel, each out-of-process
verdict process, everything they start) runs in a bubblewrap sandbox of that
submission's *box* (box.py, filesystem.py) and its cgroup (cgroups.py):

* it sees only the system, Python and (the kernel) this package, read-only: never the
  course, a home directory, the host's /tmp or the gradebook;
* it writes only its own size-limited scratch tmpfs, and nothing it writes comes back;
  symbolic links are never followed;
* it runs as an unprivileged uid with no capability, no network, in its own PID
  namespace, with an environment that holds nothing of the grader's;
* the submission as a whole has caps on memory, processes, scratch space and output.

The grade is decided outside it: verdicts.py talks to untrusted.py (started by
process.py) over pipes and reads back only plain arrays of numbers (remote.py); kernels.py
runs the notebook's kernel in the box, and kernel_client.py caps what the grader reads from
it. zygote.py and kernel_zygote.py start the same sandboxed processes faster (warm
start); shortcuts.py refuses autograd libraries.

This layer uses the exercise's modules (checks, diagnosis, student_call); nothing of
the exercise uses it.
"""
