"""The sealed box's settings (``c.SealedBox`` in nbgrader_config.py), read by both
preprocessors that run student code, and the box of the submission being graded."""

from __future__ import annotations

from pathlib import Path

from traitlets import Bool, Enum, Float, Integer
from traitlets.config import Configurable

from ..names import RESOURCES_KEY
from ..sandbox.box import Box, Caps, use_sandbox
from ..verdict.process import Limits

_CAPS = Caps()


class SealedBox(Configurable):
    """The sealed box of each submission (sandbox/box.py): whether there is one, and its
    caps. Its kernel, its verdict processes and everything they start share the caps for
    the submission as a whole; each process has its own address-space limit too."""

    sandbox = Enum(["auto", "required", "off"], "auto", help=(
        "Run student code in bubblewrap sandboxes: 'auto' when bwrap works here (else a loud "
        "warning), 'required' refuses to grade without them and the caps of a cgroup, 'off' never."
    )).tag(config=True, unit="")
    warm_start = Bool(False, help=(
        "Fork each sandboxed kernel and verdict process from a warm zygote (ipykernel and NumPy "
        "imported once, sandbox/zygote.py) instead of starting Python: much less CPU per "
        "notebook when one process grades many (maxpool-grader grade turns it on in its "
        "workers).")).tag(config=True, unit="")
    # The defaults of the caps are Caps's and Limits's (sandbox/, verdict/), in the units set here;
    # docs/settings.md is made from these traits (python -m maxpool_grader.cli.settings_doc).
    memory_mib = Integer(_CAPS.memory_bytes >> 20, help=(
        "Memory of all the submission's processes together, no swap; needs a cgroup. On hitting it "
        "the biggest process is killed and the feedback says so.")).tag(config=True, unit="MiB")
    processes = Integer(_CAPS.processes, help=(
        "Processes of the submission at once (a cgroup, else RLIMIT_NPROC); fork fails beyond it "
        "and the feedback says so.")).tag(config=True, unit="processes")
    cpus = Float(_CAPS.cpus, help=(
        "CPUs all the submission's processes together may use at once (the cgroup's cpu controller; 0: "
        "no cap). A verdict's time limit that runs out while its box did not get its share is put off, "
        "then graded again, never failed (docs/security.md#cpu-share).")).tag(config=True, unit="CPUs")
    scratch_mib = Integer(_CAPS.scratch_bytes >> 20, help=(
        "Size of the scratch folder of each sandbox (a tmpfs; /dev/shm is separate); writes fail "
        "beyond it and the feedback says so.")).tag(config=True, unit="MiB")
    output_kib = Integer(_CAPS.output_bytes >> 10, help=(
        "What one cell of the notebook may print; the rest is cut before it reaches the "
        "grader's memory, and the feedback says so.")).tag(config=True, unit="KiB")
    notebook_output_mib = Integer(_CAPS.notebook_output_bytes >> 20, help=(
        "What all the cells of the notebook together may print; the output of the cells after it "
        "is cut (the first error of a cell is kept, shortened), and the feedback says so. The "
        "graded notebook and the feedback page stay about this size.")).tag(config=True, unit="MiB")
    added_cells = Integer(100, help=(
        "Cells a student may add to the assignment's (about 20); those past it are left out: not "
        "run, not shown, and the feedback says so. The tests grade the rest as usual.")).tag(config=True, unit="cells")
    verdict_memory_mib = Integer(Limits.memory_bytes >> 20, help=(
        "Address-space limit of a verdict process: MemoryError in the student's code."
    )).tag(config=True, unit="MiB")
    kernel_memory_mib = Integer(4096, help="Address-space limit of the kernel: MemoryError in the student's code."
                                ).tag(config=True, unit="MiB")

    def caps(self) -> Caps:
        return Caps(memory_bytes=self.memory_mib << 20, processes=self.processes, cpus=self.cpus,
                    scratch_bytes=self.scratch_mib << 20, output_bytes=self.output_kib << 10,
                    notebook_output_bytes=self.notebook_output_mib << 20)


def box_for(preprocessor, resources: dict) -> Box | None:
    """The box of the submission being graded, made by the first of our preprocessors that
    needs it; None without a sandbox. Its files are the submission's as nbgrader copied
    them to autograded/."""
    ours = resources.setdefault(RESOURCES_KEY, {})
    if "box" not in ours:
        ours["box"] = None
        settings = SealedBox(parent=preprocessor)
        if use_sandbox(settings.sandbox, preprocessor.log):
            found = resources.get("nbgrader", {})
            folder = Path.cwd() / "autograded" / found.get("student", "") / found.get("assignment", "")
            ours["box"] = Box(settings.caps(), folder if found.get("student") else None, settings.sandbox,
                              preprocessor.log)
    return ours["box"]
