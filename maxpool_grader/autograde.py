"""nbgrader glue: the steps this course adds to plain ``nbgrader autograde``.

Each step is one preprocessor with configurable options, plugged into nbgrader's own
pipeline by ``nbgrader_config.py`` (``Autograde.autograde_preprocessors``):

* ``RestoreCellOrder`` puts the assignment's cells back in their order (tests after
  the solution) when a student moved them;
* ``OutOfProcessVerdicts`` runs the solution cell in a separate, limited, sandboxed
  process and decides every graded test there (``runner``);
* ``SafeExecute`` runs the notebook in a sandboxed kernel as nbgrader's ``Execute``
  does, except that a test the out-of-process verdict failed shows that verdict
  instead of running (the notebook can lower a score, never raise it), that a dead
  kernel or a used-up time budget costs only what the out-of-process verdict failed,
  and that output on stderr in a test cell does not cost points.

``TolerantNotebookExporter`` grades a notebook that is not valid JSON, or missing, or
renamed, instead of failing the submission, and ``grade_folders_without_notebooks``
makes nbgrader see a submission folder that holds no notebook at all.
"""

from __future__ import annotations

import glob
import hashlib
import json
from concurrent.futures import Future, ThreadPoolExecutor
import os
import time
import warnings
from pathlib import Path

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.exporters import NotebookExporter
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_output
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor, SaveAutoGrades
from sqlalchemy.exc import SAWarning
from traitlets import Bool, Enum, Float, Integer
from traitlets.config import Configurable

from .isolation import sandbox
from .checks import GRADED_CHECKS
from .isolation.runner import Cell, Limits, Verdict, verdicts
from .part_a import RUBRIC, RUBRIC_TAG

NOTES_KEY = "maxpool_grader_notes"
REPORT_KEY = "maxpool_grader"  # cell metadata: the out-of-process verdict (passed, kind, bugs)
SOLUTION_CELL = "max_pool_backward"
PART_A_CELL = "part_a_derivation"


def quiet_known_nbgrader_warnings() -> None:
    """Silence exactly one known warning of nbgrader 0.9.6, nothing else.

    Creating a submission in a new gradebook (``Gradebook.update_or_create_submission``)
    reads ``submission.assignment.notebooks`` while the new SubmittedAssignment and its
    SubmittedNotebooks are not in the session yet; SQLAlchemy's autoflush then warns
    "Object of type <SubmittedAssignment> not in session, add operation along
    'Student.submissions' will not proceed" (three lines per submission). The objects
    are added right after, and every grade is saved (the tests count them).
    """
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted(Assignment|Notebook)> not in session",
                            category=SAWarning, module=r"nbgrader\.api")


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def add_note(nb: NotebookNode, text: str) -> None:
    """A note for the student, shown at the top of the graded notebook and the feedback."""
    notes = nb.metadata.setdefault(NOTES_KEY, [])
    if text not in notes:
        notes.append(text)


def _release_notebook(nb_name: str, assignment: str) -> NotebookNode | None:
    """The released notebook (the course directory is nbgrader's working directory)."""
    for step in ("release", "source"):
        path = Path(step) / assignment / f"{nb_name}.ipynb"
        if path.exists():
            return nbformat.read(path, as_version=4)
    return None


# ------------------------------------------------------------------ reading the submission
class TolerantNotebookExporter(NotebookExporter):
    """nbgrader's exporter, except that a notebook that cannot be read is replaced by the
    released notebook with an empty solution, and a note saying why, so the submission
    still gets a grade and a reason (plain nbgrader fails the whole submission)."""

    def from_filename(self, filename, resources=None, **kw):
        path = Path(filename)
        nb_name, assignment = path.stem, path.parent.name
        if _through_a_link(path):
            reason = (f"Your notebook file {path.name} is a symbolic link, not a file: the grader does not "
                      "follow links. It was graded as if the solution were empty. Submit the notebook itself.")
            return self.from_notebook_node(self._stand_in(nb_name, assignment, reason), resources, **kw)
        if path.exists():
            # Only reading is the student's: an error of the preprocessors after it is the
            # grader's, and must not be reported (and graded) as an unreadable notebook.
            try:
                with open(path, encoding="utf-8") as handle:
                    nb = nbformat.read(handle, as_version=4)
            except (json.JSONDecodeError, UnicodeDecodeError, nbformat.reader.NotJSONError,
                    nbformat.ValidationError, KeyError, TypeError, AttributeError) as problem:
                what = ("it is not JSON: cut off, or edited outside Jupyter?"
                        if isinstance(problem, (nbformat.reader.NotJSONError, json.JSONDecodeError))
                        else f"it is not a valid notebook: {str(problem).splitlines()[0][:200]}")
                reason = (f"Your notebook file {path.name} could not be read ({what}). It was graded "
                          "as if the solution were empty. Open it in Jupyter, or submit a fresh copy.")
                nb = self._stand_in(nb_name, assignment, reason)
            return self.from_notebook_node(nb, resources, **kw)
        others = sorted(p for p in path.parent.glob("*.ipynb") if p != path)
        if len(others) == 1:
            try:
                nb = nbformat.read(others[0], as_version=4)
            except Exception:  # noqa: BLE001  unreadable too: fall through to the stand-in
                pass
            else:
                add_note(nb, f"No notebook named {path.name} was submitted; your notebook "
                             f"{others[0].name} was graded in its place.")
                return self.from_notebook_node(nb, resources, **kw)
        found = ", ".join(p.name for p in others) or "no notebook at all"
        reason = (f"No notebook named {path.name} was submitted (found: {found}), so there was "
                  "no solution to grade. Submit the assignment's notebook under its own name.")
        return self.from_notebook_node(self._stand_in(nb_name, assignment, reason), resources, **kw)

    def _stand_in(self, nb_name: str, assignment: str, reason: str) -> NotebookNode:
        self.log.warning("%s/%s: %s", assignment, nb_name, reason)
        nb = _release_notebook(nb_name, assignment) or nbformat.v4.new_notebook()
        for cell in nb.cells:  # an empty solution; written answers stay as released ("no response": 0)
            if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                cell.source = ""
        add_note(nb, reason)
        return nb


def _through_a_link(path: Path) -> bool:
    """Whether the notebook, its submission folder or its student folder is a symbolic link
    (the course directory above them may be reached through one: that is the instructor's)."""
    return any(part.is_symlink() for part in (path, path.parent, path.parent.parent))


def skip_symbolic_links() -> None:
    """nbgrader copies a submission's other files into ``autograded/`` and from there into
    ``feedback/`` with ``shutil.copy``, which follows a symbolic link: a link planted in a
    submission would copy the file it points to (a key in the instructor's home) and hand
    it back in the feedback. Make the copying skip links."""
    from nbgrader.converters import base
    listing = base.find_all_files
    if getattr(listing, "_skips_links", False):
        return

    def find_all_files(path, exclude=None):
        return [name for name in listing(path, exclude) if not os.path.islink(name)]

    find_all_files._skips_links = True
    base.find_all_files = find_all_files


def grade_folders_without_notebooks(converter_class) -> None:
    """Make ``converter_class`` (nbgrader's Autograde) grade every submission folder for
    each of the assignment's notebooks, even when the folder lacks it: nbgrader skips a
    folder without notebooks silently, and fails one whose notebook was renamed, so the
    student would get no grade and no feedback. TolerantNotebookExporter then grades a
    renamed notebook in its place, or explains what was missing."""
    original = converter_class.init_notebooks
    if getattr(original, "_grades_every_folder", False):
        return

    def init_notebooks(self) -> None:
        try:
            original(self)
        except Exception:  # no notebook anywhere: maybe folders without one
            self.assignments = {}
        pattern = self._format_source(self.coursedir.assignment_id, self.coursedir.student_id)
        names: dict[str, list[str]] = {}
        for folder in sorted(glob.glob(pattern)):
            if not os.path.isdir(folder):
                continue
            found = self.assignments.setdefault(folder, [])
            assignment = os.path.basename(folder)
            if assignment not in names:
                names[assignment] = _notebook_names(self, assignment)
            for name in names[assignment]:
                expected = os.path.join(folder, f"{name}.ipynb")
                if expected not in found:
                    self.log.warning("%s is missing: it is graded as missing (or renamed)", expected)
                    found.append(expected)
        if not self.assignments:
            original(self)  # nothing at all: nbgrader's own error

    init_notebooks._grades_every_folder = True
    converter_class.init_notebooks = init_notebooks


def _notebook_names(converter, assignment: str) -> list[str]:
    from nbgrader.api import Gradebook
    try:
        with Gradebook(converter.coursedir.db_url, converter.coursedir.course_id) as gradebook:
            return [notebook.name for notebook in gradebook.find_assignment(assignment).notebooks]
    except Exception:  # noqa: BLE001  no gradebook or assignment yet: nbgrader says so itself
        return []


# ------------------------------------------------------------------ cell order
class RestoreCellOrder(NbGraderPreprocessor):
    """Put the assignment's own cells back in the released order; a cell the student added
    stays right after the assignment cell it followed."""

    def preprocess(self, nb, resources):
        release = _release_notebook(resources["nbgrader"]["notebook"], resources["nbgrader"]["assignment"])
        if release is None:
            return nb, resources
        order = {grade_id: position for position, cell in enumerate(release.cells)
                 if (grade_id := _grade_id(cell))}
        groups: list[tuple[int, list]] = []
        for cell in nb.cells:
            position = order.get(_grade_id(cell))
            if position is not None or not groups:
                groups.append((-1 if position is None else position, [cell]))
            else:
                groups[-1][1].append(cell)
        ordered = sorted(groups, key=lambda group: group[0])  # stable: equal keys keep their order
        if ordered != groups:
            nb.cells = [cell for _, cells in ordered for cell in cells]
            add_note(nb, "Some of the assignment's cells were missing or moved; they were put back "
                         "in the assignment's order (tests after the solution) before grading.")
        return nb, resources


# ------------------------------------------------------------------ the grader's view
class ShowRubric(NbGraderPreprocessor):
    """Put Part A's rubric right under the student's answer in the autograded notebook, the
    one formgrader shows while grading by hand (the feedback keeps it, and adds the model
    answer: feedback.ModelAnswer). The release never has it."""

    def preprocess(self, nb, resources):
        at = next((index for index, cell in enumerate(nb.cells) if _grade_id(cell) == PART_A_CELL), None)
        if at is not None and not any(RUBRIC_TAG in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
            rubric = new_markdown_cell(
                "**For the grader: Part A's rubric** (students see it with their feedback)\n\n" + RUBRIC,
                metadata={"tags": [RUBRIC_TAG]})
            rubric.id = RUBRIC_TAG  # a fixed id: regrading writes the same notebook
            nb.cells.insert(at + 1, rubric)
        return nb, resources


# ------------------------------------------------------------------ saving grades
class KeepHandGrades(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, except that regrading keeps a hand grade of an answer
    that did not change.

    nbgrader marks every cell that has a manual score "needs manual grade" again on each
    autograde, so ``--force``, a change of the source notebook, or a moved gradebook sent
    every Part A back to the grader. Here a cell graded only by hand (no autograder score)
    keeps its grade when its source is the one that was autograded last time: a digest
    per cell is kept in ``.maxpool-grader/answers/<assignment>/<student>.json`` in the
    course directory. When the answer changed, it goes back to "needs manual grade" and
    a note says why (the class report lists it).
    """

    def preprocess(self, nb, resources):
        found = resources["nbgrader"]
        root = Path(CourseDirectory(parent=self).root)
        self._answers = root / ".maxpool-grader" / "answers" / found["assignment"] / f"{found['student']}.json"
        try:
            self._before = json.loads(self._answers.read_text()).get(found["notebook"], {})
        except (OSError, ValueError, AttributeError):
            self._before = {}
        self._now, self._changed = {}, []
        nb, resources = super().preprocess(nb, resources)
        for grade_id in self._changed:
            add_note(nb, f"Your answer in '{grade_id}' changed since it was graded by hand; it will be "
                         "graded again.")
        self._save(found["notebook"])
        return nb, resources

    def _add_score(self, cell, resources):
        super()._add_score(cell, resources)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        digest = hashlib.sha256(cell.source.encode()).hexdigest()
        self._now[grade_id] = digest
        grade = self.gradebook.find_grade(grade_id, self.notebook_id, self.assignment_id, self.student_id)
        if grade.auto_score is not None or grade.manual_score is None:
            return  # an autograded cell, or not graded by hand yet: nbgrader's rule
        if self._before.get(grade_id) == digest:
            grade.needs_manual_grade = False
            self.gradebook.db.commit()
        else:
            self._changed.append(grade_id)

    def _save(self, notebook: str) -> None:
        try:
            saved = json.loads(self._answers.read_text())
        except (OSError, ValueError):
            saved = {}
        saved[notebook] = self._now
        self._answers.parent.mkdir(parents=True, exist_ok=True)
        partial = self._answers.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(saved, indent=1, sort_keys=True))
        os.replace(partial, self._answers)


# ------------------------------------------------------------------ the sealed box
class SealedBox(Configurable):
    """The caps of one submission as a whole: its kernel, its verdict processes and
    everything they start (see sandbox.py)."""

    memory_mib = Integer(2048, help="Memory of all the submission's processes together, no swap (MiB); "
                                    "needs a cgroup.").tag(config=True)
    processes = Integer(256, help="Processes of the submission at once (a cgroup, else RLIMIT_NPROC).").tag(config=True)
    scratch_mib = Integer(256, help="Size of the scratch folder of each sandbox (MiB).").tag(config=True)
    output_kib = Integer(1024, help="What one cell of the notebook may print (KiB); the rest is cut.").tag(config=True)

    def caps(self) -> sandbox.Caps:
        return sandbox.Caps(memory_bytes=self.memory_mib << 20, processes=self.processes,
                            scratch_bytes=self.scratch_mib << 20, output_bytes=self.output_kib << 10)


def _box(preprocessor, resources: dict, mode: str) -> sandbox.Box | None:
    """The submission's box, made by the first of our preprocessors that needs it; None
    without a sandbox. Its files are the submission's as nbgrader copied them."""
    ours = resources.setdefault("maxpool_grader", {})
    if "box" not in ours:
        ours["box"] = None
        if sandbox.use_sandbox(mode, preprocessor.log):
            found = resources.get("nbgrader", {})
            folder = Path.cwd() / "autograded" / found.get("student", "") / found.get("assignment", "")
            caps = SealedBox(parent=preprocessor).caps()
            ours["box"] = sandbox.Box(caps, folder if found else None, mode, preprocessor.log)
    return ours["box"]


# ------------------------------------------------------------------ the verdict
def _error_output(message: str) -> NotebookNode:
    return new_output("error", ename="CheckFailed", evalue=message,
                      traceback=message.split("\n"))


class OutOfProcessVerdicts(NbGraderPreprocessor):
    """Decide every graded test of the notebook in a separate process (see runner.py)."""

    check_seconds = Float(5.0, help="Time limit of one test's graded inputs (s).").tag(config=True)
    search_seconds = Float(5.0, help="Time limit of the search for a test's smallest failing "
                                     "input (s); when it runs out, the graded input is shown.").tag(config=True)
    load_seconds = Float(10.0, help="Time limit for running the solution cell (s).").tag(config=True)
    total_seconds = Float(40.0, help="Time limit of all out-of-process tests of one notebook (s).").tag(config=True)
    memory_mib = Integer(2048, help="Address-space limit of the process running the solution (MiB).").tag(config=True)
    sandbox = Enum(["auto", "required", "off"], "auto", help=(
        "Run student code in a bubblewrap sandbox: 'auto' when bwrap works here (else a loud "
        "warning), 'required' fails grading without it, 'off' never.")).tag(config=True)
    warm_start = Bool(False, help=(
        "Fork the sandboxed process from a warm zygote (NumPy imported) instead of starting "
        "Python; see SafeExecute.warm_start.")).tag(config=True)

    def limits(self) -> Limits:
        return Limits(self.check_seconds, self.search_seconds, self.load_seconds,
                      self.total_seconds, self.memory_mib << 20)

    def preprocess(self, nb, resources):
        cells = code_before_tests(nb)
        graded = [grade_id for cell in nb.cells if (grade_id := _grade_id(cell)) in GRADED_CHECKS
                  and cell.metadata.nbgrader.get("grade")]
        box = _box(self, resources, self.sandbox)
        wrap = sandbox.untrusted_process_wrapper(self.sandbox, self.log, box, self.warm_start)
        limits, log = self.limits(), self.log

        def decide() -> dict[str, Verdict]:
            started = time.monotonic()
            found = verdicts(cells, grade_ids=graded, limits=limits, wrap=wrap) if graded else {}
            log.info("Out-of-process verdict: %d of %d tests passed (%.1f s)%s",
                     sum(verdict.passed for verdict in found.values()), len(found),
                     time.monotonic() - started, "" if wrap else " [UNSANDBOXED]")
            return found

        # Decided in a thread while SafeExecute starts the kernel (the kernel's start-up
        # is mostly waiting); SafeExecute waits for it before the first graded cell.
        pending = _VERDICT_THREADS.submit(decide)
        resources.setdefault("maxpool_grader", {}).update(verdicts=pending, graded=set(graded))
        return nb, resources


def code_before_tests(nb: NotebookNode) -> list[Cell]:
    """The code cells a kernel runs before the first test, in order, as the out-of-process
    verdict runs them: the solution cell, every cell the student added (no nbgrader
    metadata), and the assignment's provided code cells (read-only: nbgrader has put
    their released source back)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            break
        if _grade_id(cell) == SOLUTION_CELL:
            cells.append(Cell(cell.source, "solution"))
        elif meta.get("locked") and not meta.get("solution"):
            cells.append(Cell(cell.source, "provided"))
        else:
            cells.append(Cell(cell.source, "student"))
    if not any(cell.kind == "solution" for cell in cells):  # deleted: graded as an empty solution
        cells.append(Cell("", "solution"))
    if not any(cell.kind == "provided" for cell in cells):  # the provided cell gone: NumPy at least
        cells.insert(0, Cell("import numpy as np", "provided"))
    return cells


_VERDICT_THREADS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maxpool-verdicts")


# ------------------------------------------------------------------ running the notebook
class SafeExecute(Execute):
    """nbgrader's Execute, made safe for grading untrusted notebooks (see module doc)."""

    notebook_seconds = Float(60.0, help=(
        "Time budget of the whole notebook in the kernel (s); cells after it is used up are "
        "not run (a test among them keeps its out-of-process verdict).")).tag(config=True)
    sandbox = Enum(["auto", "required", "off"], "auto",
                   help="Run the kernel in a bubblewrap sandbox (see OutOfProcessVerdicts.sandbox).").tag(config=True)
    memory_mib = Integer(4096, help="Address-space limit of the kernel (MiB).").tag(config=True)
    warm_start = Bool(False, help=(
        "Fork each sandboxed kernel from a warm zygote process instead of starting Python "
        "(maxpool_grader/isolation/zygote.py): much less CPU per notebook when one process grades many "
        "(maxpool-grader grade turns it on in its workers).")).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        ours = (resources or {}).get("maxpool_grader", {})
        self._pending: Future | None = ours.get("verdicts")
        self._graded: set[str] = ours.get("graded", set())
        self._verdicts: dict[str, Verdict] | None = None if self._pending else {}
        self._not_running: str | None = None
        self._deadline = time.monotonic() + self.notebook_seconds
        box = _box(self, resources or {}, self.sandbox)
        self._caps = box.caps if box else SealedBox(parent=self).caps()
        self._output_left, self._output_cut = {}, False
        self.kernel_manager_class = sandbox.kernel_manager(
            self.sandbox, self.memory_mib << 20, self.log, box, self.warm_start, int(self.notebook_seconds) + 30)
        try:
            try:
                nb, resources = super().preprocess(nb, resources, km)
            except DeadKernelError:  # while shutting down: every cell has its outputs already
                pass
            found = self._decided()
        finally:
            hits = box.hits() if box else []
            if box:
                box.close()
        disk = next(filter(None, (sandbox.disk_hit(json.dumps(cell.get("outputs", [])), self._caps)
                                  for cell in nb.cells if cell.cell_type == "code")), None)
        for hit in hits + ([disk] if disk else []):
            add_note(nb, f"Your code {hit}: the grading box of a submission allows no more. "
                         "Tests that could not finish because of it give no points.")
        if self._output_cut:
            add_note(nb, f"A cell of your notebook printed more than {self._caps.output_bytes >> 10} KiB; "
                         "the rest of its output was cut.")
        for cell in nb.cells:
            verdict = found.get(_grade_id(cell))
            if verdict is None:
                continue
            # kept in the autograded notebook for the class report
            cell.metadata[REPORT_KEY] = {"passed": verdict.passed, "kind": verdict.kind,
                                         "bugs": list(verdict.bugs)}
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"  # nbgrader gives 0 for any stderr output
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = _coalesced(cell.get("outputs", []))
        _show_notes(nb)
        # the kernel's Python version depends on the grading machine: without it, grading the
        # same notebook anywhere writes the same file
        nb.metadata.get("language_info", {}).pop("version", None)
        return nb, resources

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output handler, with a cap on what one cell may print: a flood of
        output is cut here, before it fills the grader's memory. The first error of a
        cell always passes, shortened (a test cell's failure must be seen)."""
        content = msg.get("content", {})
        kind = msg.get("msg_type")
        left = self._output_left.get(cell_index, self._caps.output_bytes)
        size = _output_size(kind, content)
        if kind == "error" and not any(out.get("output_type") == "error" for out in outs):
            self._output_left[cell_index] = left - min(size, ERROR_BYTES)
            if size > ERROR_BYTES:
                self._output_cut = True
                msg = dict(msg, content=_shortened_error(content))
            return super().output(outs, msg, display_id, cell_index)
        self._output_left[cell_index] = left - size
        if left <= 0:
            return None
        if size > left:
            self._output_cut = True
            if kind != "stream":
                return None
            msg = dict(msg, content=dict(content, text=str(content.get("text", ""))[:left] + OUTPUT_CUT))
        return super().output(outs, msg, display_id, cell_index)

    def handle_comm_msg(self, outs, msg, cell_index):
        """Widgets are not graded: their state would bypass the output cap."""

    def _update_display_id(self, display_id, msg):
        """Display updates are not kept: they would rewrite outputs of earlier cells past the
        output cap."""

    def _dropped_output(self, cell) -> None:
        """Mark a cell whose output the kernel connection dropped: one message over
        sandbox.MAX_MESSAGE_BYTES (the channels connect again by themselves)."""
        client = getattr(self, "kc", None)
        dropped = sum(channel.take_dropped() for channel in (getattr(client, "iopub_channel", None),
                                                             getattr(client, "shell_channel", None))
                      if isinstance(channel, sandbox.RevivingChannel))
        if dropped:
            self._output_cut = True
            cell.outputs = list(cell.get("outputs", [])) + [new_output("stream", name="stdout", text=OUTPUT_CUT)]

    def _decided(self) -> dict[str, Verdict]:
        if self._verdicts is None:
            self._verdicts = self._pending.result()  # an error here is the grader's: it propagates
        return self._verdicts

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        verdict = self._decided().get(_grade_id(cell)) if _grade_id(cell) in self._graded else None
        if verdict is not None and not verdict.passed:
            cell.outputs = [_error_output(verdict.message)]
            return cell, resources
        remaining = self._deadline - time.monotonic()
        if self._not_running is None and remaining < 1:
            self._not_running = (f"the notebook used up its {self.notebook_seconds:g} s of running "
                                 "time in the cells above")
        if self._not_running is not None:
            cell.outputs = [_not_run_output(self._not_running, verdict)]
            return cell, resources
        saved_timeout = self.timeout
        self.timeout = max(1, int(min(self.timeout or remaining, remaining)))
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
            self._dropped_output(cell)
            return cell, resources
        except DeadKernelError:
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


OUTPUT_CUT = "\n[... output cut: this cell printed too much ...]\n"
ERROR_BYTES = 64 << 10  # the first error of a cell is kept, shortened to this


def _output_size(kind: str | None, content: dict) -> int:
    """What an output message would add to the notebook (and the grader's memory), in
    characters; at least 64, so that a flood of empty messages counts too."""
    if kind == "stream":
        size = len(str(content.get("text", "")))
    elif kind in ("display_data", "update_display_data", "execute_result"):
        size = len(json.dumps([content.get("data", {}), content.get("metadata", {})], default=str))
    elif kind == "error":
        size = len(json.dumps([content.get("ename"), content.get("evalue"), content.get("traceback")], default=str))
    else:
        size = 0
    return max(size, 64)


def _shortened_error(content: dict) -> dict:
    """An error message cut to about ERROR_BYTES: its name, the start of its value and the
    last lines of its traceback."""
    traceback = [str(line)[:2000] for line in content.get("traceback", []) or []][-20:]
    return dict(content, ename=str(content.get("ename", ""))[:200], evalue=str(content.get("evalue", ""))[:4000],
                traceback=traceback)


def _coalesced(outputs: list) -> list:
    """Consecutive outputs of one stream made one: how the kernel cut a print into messages
    depends on timing, and the same notebook must always give the same file."""
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == output.get("name")):
            last["text"] = "".join(last["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def _not_run_output(reason: str, verdict: Verdict | None) -> NotebookNode:
    text = f"Not run: {reason}."
    if verdict is not None:
        text += f"\nThis test was graded outside the notebook: {verdict.message}"
    return new_output("stream", name="stdout", text=text + "\n")


def _show_notes(nb: NotebookNode) -> None:
    notes = nb.metadata.get(NOTES_KEY, [])  # stays in the metadata too, for the class report
    if notes:
        text = "**Notes from the grader**\n\n" + "\n".join(f"- {note}" for note in notes)
        notes_cell = new_markdown_cell(text, metadata={"tags": ["grader-notes"]})
        notes_cell.id = "grader-notes"  # a fixed id: regrading writes the same notebook
        nb.cells.insert(0, notes_cell)
