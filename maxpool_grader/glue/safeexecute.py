"""``SafeExecute``: nbgrader's Execute, made safe for grading untrusted notebooks.

It runs the notebook in a sandboxed kernel of the submission's box as nbgrader's
``Execute`` does, except that a hidden test never runs there: its cell shows what the
out-of-process verdict decided (``decided_in_the_grader``; the kernel holds nothing of the
hidden tests, nor the package their code imports). A visible test the verdict failed shows
that verdict instead of running; one it passed runs in the kernel too, and can only lose its
points there. A dead kernel or a used-up time budget costs only what the out-of-process
verdict failed, output on stderr in a test cell does not cost points, and what a cell
prints is capped. Another assignment's notebook runs in the same sealed box, with the same
caps and time limits, and is otherwise nbgrader's Execute's: no notes cell, its outputs and
execution counts as nbclient left them, a dead kernel failing the submission as in
nbgrader (what the box stopped is in the log). With ``c.EveryAssignment.sealed_box = False``
another assignment's notebook runs as nbgrader's Execute runs it, out of the box.

The kernel starts only once the verdict is decided and the box is empty (every process
the verdict left is gone), so nothing of the verdict's can starve it: a fork bomb's
sleeping children once filled the box's processes cap while the kernel started, and the
kernel died before it was ready, in some runs and not in others. A kernel that still does
not start gets one more try in an emptied box; after that it is a fault of the grader
(``GraderFault``), never a grade: no student code ran in it, so nbgrader fails the
submission, nothing is recorded, and the next run grades it."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Float, Integer, default

from ..names import REPORT_KEY, RESOURCES_KEY, grade_id
from ..sandbox.box import GraderFault, disk_hit
from ..sandbox.kernel_client import RevivingChannel
from ..sandbox.kernels import kernel_manager
from ..verdict.verdicts import Verdict
from .everyassignment import protects
from .notes import add_note, show_notes
from .outofprocessverdicts import decided_in_the_grader, error_output
from .outputs import ERROR_BYTES, NOTEBOOK_CUT, OUTPUT_CUT, coalesced, not_run_output, output_size, shortened_error
from .recording import forget_new_submission
from .sealedbox import SealedBox, box_for
from .thisexercise import is_exercise

PLUGINS_OUT_OF_ORDER = (
    "The exercise's verdicts were not decided before its notebook ran: in nbgrader_config.py, "
    "c.Autograde.autograde_preprocessors must list maxpool_grader.glue.outofprocessverdicts.OutOfProcessVerdicts "
    "before maxpool_grader.glue.safeexecute.SafeExecute (as this course's nbgrader_config.py does). No grade was "
    "recorded.")
KERNEL_CPU_MARGIN_SECONDS = 30  # the kernel's CPU time beyond ``notebook_seconds``


class SafeExecute(Execute):
    """nbgrader's Execute, made safe for grading untrusted notebooks (see module doc)."""

    _plain = False  # another assignment's notebook, with c.EveryAssignment.sealed_box off: nbgrader's Execute

    # docs/settings.md is made from these traits (python -m maxpool_grader.cli.settings_doc).
    timeout = Integer(15, allow_none=True, help=(
        "Time limit of one cell in the kernel: the cell is interrupted, the kernel lives on. "
        "nbgrader's own c.Execute.timeout sets it too (c.SafeExecute.timeout wins); the "
        "notebook's time budget below caps it as well.")).tag(config=True, unit="s")
    notebook_seconds = Float(60.0, help=(
        "Time budget of the whole notebook in the kernel; cells after it is used up are "
        "not run (a test among them keeps its out-of-process verdict). The kernel's CPU time "
        "follows from it (docs/settings.md).")).tag(config=True, unit="s")

    def kernel_cpu_seconds(self) -> int:
        """RLIMIT_CPU of the kernel: the notebook's whole budget, and a margin."""
        return int(self.notebook_seconds) + KERNEL_CPU_MARGIN_SECONDS

    @default("shutdown_kernel")
    def _kill_the_kernel(self) -> str:
        """Every cell's output is in once the last cell has run: the kernel is killed then
        (its box goes with it), not asked to clean up first, which costs the kernel's CPU."""
        return "immediate"

    def preprocess(self, nb, resources=None, km=None):
        ours = (resources or {}).get(RESOURCES_KEY, {})
        self._ours = is_exercise(self, resources)
        self._died_in_a_cell = False
        self._plain = not self._ours and not protects(self, "sealed_box")
        if self._plain:  # the instructor's choice for other assignments: nbgrader's own kernel
            self.kernel_manager_class = AsyncKernelManager
            return super().preprocess(nb, resources, km)
        if self._ours and "verdicts" not in ours:  # the exercise's verdicts missing: everyone would score 0
            forget_new_submission(resources)
            raise GraderFault(PLUGINS_OUT_OF_ORDER)
        self._pending: Future | None = ours.get("verdicts")
        self._graded: set[str] = ours.get("graded", set())
        self._verdicts: dict[str, Verdict] | None = None if self._pending else {}
        self._not_running: str | None = None
        settings = SealedBox(parent=self)
        box = box_for(self, resources if resources is not None else {})
        self._caps = box.caps if box else settings.caps()
        self._output_left, self._output_cut = {}, False
        self._notebook_left, self._notebook_cut = self._caps.notebook_output_bytes, False
        self.kernel_manager_class = kernel_manager(settings.sandbox, settings.kernel_memory_mib << 20, self.log, box,
                                                   settings.warm_start, self.kernel_cpu_seconds())
        try:
            nb, resources = self._run_in_kernel(nb, resources, km, box)
            found = self._decided()
        except GraderFault:  # never a grade: the gradebook as it was
            forget_new_submission(resources)
            raise
        finally:
            hits = box.hits() if box else []
            if box:
                box.close()
        notes = self._notes(nb, hits)
        if not self._ours:  # another assignment's notebook: nbgrader's own, what the box did in the log
            for note in notes:
                self.log.warning("%s", note)
            return nb, resources
        for note in notes:
            add_note(nb, note)
        for cell in nb.cells:
            verdict = found.get(grade_id(cell))
            if verdict is None:
                continue
            # kept in the autograded notebook for the class report
            cell.metadata[REPORT_KEY] = {"passed": verdict.passed, "kind": verdict.kind,
                                         "bugs": list(verdict.bugs)}
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"  # nbgrader gives 0 for any stderr output
        _number_cells(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = coalesced(cell.get("outputs", []))
        show_notes(nb)
        # the kernel's Python version depends on the grading machine: without it, grading the
        # same notebook anywhere writes the same file
        nb.metadata.get("language_info", {}).pop("version", None)
        return nb, resources

    def _run_in_kernel(self, nb, resources, km, box):
        """Run the notebook in a kernel started after the verdict, in an emptied box (module
        doc); a kernel that does not start twice is a fault of the grader, never a grade: the
        student's code has not run in it (the box was emptied first)."""
        self._decided()  # the verdict's processes are closed then; an error here is the grader's
        problem = None
        for attempt in range(KERNEL_STARTS):
            if box:
                box.empty()
            self._deadline = time.monotonic() + self.notebook_seconds
            self._kernel_ready = False  # set by the first cell: the kernel answered kernel_info
            try:
                return super().preprocess(nb, resources, km)
            except DeadKernelError:
                if self._died_in_a_cell:
                    raise
                if self._kernel_ready:  # while shutting down: every cell has its outputs already
                    return nb, resources
                problem = "it ended before it was ready"
            except Exception as failure:  # noqa: BLE001  jupyter_client raises RuntimeError, OSError...
                if self._kernel_ready:
                    raise
                problem = f"{type(failure).__name__}: {str(failure)[:300]}"
            self.log.warning("The kernel did not start (attempt %d of %d): %s", attempt + 1, KERNEL_STARTS, problem)
        raise GraderFault(f"the Python kernel did not start, {KERNEL_STARTS} times ({problem}): no cell of the "
                          "notebook ran, so nothing is recorded; grade it again once the kernel starts "
                          "(maxpool-grader doctor)")

    def _notes(self, nb, hits: list[str]) -> list[str]:
        """What the box did that the student must read: a cap their code hit, output cut."""
        disk = next(filter(None, (disk_hit(json.dumps(cell.get("outputs", [])), self._caps)
                                  for cell in nb.cells if cell.cell_type == "code")), None)
        notes = [f"Your code {hit}: the grading box of a submission allows no more. Tests that could not "
                 "finish because of it give no points." for hit in hits + ([disk] if disk else [])]
        if self._output_cut:
            notes.append(f"A cell of your notebook printed more than {self._caps.output_bytes >> 10} KiB; "
                         "the rest of its output was cut.")
        if self._notebook_cut:
            notes.append(f"Your notebook printed more than {self._caps.notebook_output_bytes >> 20} MiB in all; the "
                         "output of the cells after that was cut. Your grade is what the tests decided.")
        return notes

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output handler, with caps on what one cell and the whole notebook may
        print: a flood of output is cut here, before it fills the grader's memory. The first
        error of a cell always passes, shortened (a test cell's failure must be seen)."""
        if self._plain:
            return super().output(outs, msg, display_id, cell_index)
        content = msg.get("content", {})
        kind = msg.get("msg_type")
        cell_left = self._output_left.get(cell_index, self._caps.output_bytes)
        left = min(cell_left, self._notebook_left)
        size = output_size(kind, content)
        if kind == "error" and not any(out.get("output_type") == "error" for out in outs):
            self._output_left[cell_index] = cell_left - min(size, ERROR_BYTES)
            self._notebook_left -= min(size, ERROR_BYTES)
            if size > ERROR_BYTES:
                self._output_cut = True
                msg = dict(msg, content=shortened_error(content))
            return super().output(outs, msg, display_id, cell_index)
        self._output_left[cell_index], self._notebook_left = cell_left - size, self._notebook_left - size
        by_cell = left == cell_left  # which cap this message meets, if it meets one
        if size > left:
            self._output_cut, self._notebook_cut = self._output_cut or by_cell, self._notebook_cut or not by_cell
        if left <= 0:
            return None
        if size > left:
            if kind != "stream":
                return None
            cut = OUTPUT_CUT if by_cell else NOTEBOOK_CUT
            msg = dict(msg, content=dict(content, text=str(content.get("text", ""))[:left] + cut))
        return super().output(outs, msg, display_id, cell_index)

    def handle_comm_msg(self, outs, msg, cell_index):
        """Widgets are not graded: their state would bypass the output cap."""
        if self._plain:
            return super().handle_comm_msg(outs, msg, cell_index)

    def _update_display_id(self, display_id, msg):
        """Display updates are not kept: they would rewrite outputs of earlier cells past the
        output cap."""
        if self._plain:
            return super()._update_display_id(display_id, msg)

    def _dropped_output(self, cell) -> None:
        """Mark a cell whose output the kernel connection dropped: one message over
        MAX_MESSAGE_BYTES (the channels connect again by themselves)."""
        client = getattr(self, "kc", None)
        dropped = sum(channel.take_dropped() for channel in (getattr(client, "iopub_channel", None),
                                                             getattr(client, "shell_channel", None))
                      if isinstance(channel, RevivingChannel))
        if dropped:
            self._output_cut = True
            cell.outputs = list(cell.get("outputs", [])) + [new_output("stream", name="stdout", text=OUTPUT_CUT)]

    def _decided(self) -> dict[str, Verdict]:
        if self._verdicts is None:
            self._verdicts = self._pending.result()  # an error here is the grader's: it propagates
        return self._verdicts

    def preprocess_cell(self, cell, resources, index):
        if self._plain:
            return super().preprocess_cell(cell, resources, index)
        self._kernel_ready = True
        if cell.cell_type != "code":
            return cell, resources
        verdict = self._decided().get(grade_id(cell)) if grade_id(cell) in self._graded else None
        decided = decided_in_the_grader(cell, verdict)
        if decided is None and verdict is not None and not verdict.passed:
            decided = [error_output(verdict.message)]
        if decided is not None:  # not run in the kernel
            cell.outputs, cell.execution_count = decided, 0
            return cell, resources
        remaining = self._deadline - time.monotonic()
        if self._not_running is None and remaining < 1:
            self._not_running = (f"the notebook used up its {self.notebook_seconds:g} s of running "
                                 "time in the cells above")
        if self._not_running is not None:
            cell.outputs = [not_run_output(self._not_running, verdict)]
            return cell, resources
        saved_timeout = self.timeout
        self.timeout = max(1, int(min(self.timeout or remaining, remaining)))
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
            self._dropped_output(cell)
            return cell, resources
        except DeadKernelError:
            if not self._ours:  # nbgrader's own: the submission fails
                self._died_in_a_cell = True
                raise
            self._not_running = "the kernel died in an earlier cell"
            cell.outputs = list(cell.get("outputs", [])) + [new_output(
                "error", ename="DeadKernelError", evalue="the kernel died",
                traceback=["The Python kernel died while running this cell: the code ended the "
                           "process (os._exit, a crash in C code, or too much memory). Cells below "
                           "were not run; the tests among them were graded outside the notebook."])]
            return cell, resources
        except CellTimeoutError:
            self._dropped_output(cell)
            return cell, resources
        finally:
            self.timeout = saved_timeout


def _number_cells(nb: NotebookNode) -> None:
    """Number the code cells that ran, in order, a test decided by the grader among them (it
    showed "In [ ]" as if it had not run). Cells left unrun (a dead kernel, no time left) keep
    no number."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            count += 1
            cell.execution_count = count


KERNEL_STARTS = 2  # a kernel that does not start gets one more try, in an emptied box
