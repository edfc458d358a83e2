"""``maxpool-grader grade`` as named steps: the release, the machine's state, the roster,
autograding (the local pool or a Dask cluster), feedback, ``grades.csv``, the report and
the score table. It fails only when grading itself broke, never because of what a
student wrote (130 after Ctrl-C: run it again to finish)."""

from __future__ import annotations

import gc
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..backend import pool, warm
from ..backend.batch import CTRL_C, BatchResult, run_batch
from ..backend.control import CONTROL_FAILED
from ..backend.interface import GradingBackend
from ..cluster import coordinator
from ..course.directory import configured_db_url, course_path, export_grades, nbgrader_api, notebook_path, say
from ..course.jobs import JobResult, error_summary
from ..course.roster import RosterError, import_roster
from ..glue.collecttime import recover_interrupted_collects
from ..names import ASSIGNMENT
from ..sandbox import box, cgroups, cpushare, zygote
from . import interrupt, rehearsal, report, similarity, state
from .table import format_table, score_table

ROSTER = "roster.csv"  # imported by grade when the course has one


class Broke(Exception):
    """Grading itself broke (not a student's code): the exit status and what to show."""

    def __init__(self, status: int, text: str = ""):
        super().__init__(text)
        self.status = status


@dataclass
class GradingRun:
    course: Path
    db_url: str
    workers: int
    force: bool = False
    cluster: str | None = None
    similarity_threshold: float = similarity.THRESHOLD
    assignment: str = ASSIGNMENT
    security: object = None  # the coordinator's distributed.security.Security for a tls:// cluster
    reading: report.Reading | None = None  # the report's reading of the graded notebooks, as they are graded
    zygotes: list = field(default_factory=list)  # the workers' zygotes (start_zygotes)
    state: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)

    @contextmanager
    def step(self, name: str):
        """Time a step of the run, wall and this process's CPU, the steps inside it left out
        (last_run.json; the benchmarks read it)."""
        steps = self.timings.setdefault("steps", {})
        inner = lambda key: sum(step[key] for step in steps.values())  # noqa: E731
        before = {key: inner(key) for key in ("seconds", "cpu_seconds")}
        wall, cpu = time.monotonic(), time.process_time()
        try:
            yield
        finally:
            steps[name] = {"seconds": time.monotonic() - wall - (inner("seconds") - before["seconds"]),
                           "cpu_seconds": time.process_time() - cpu - (inner("cpu_seconds") - before["cpu_seconds"])}

    def count_job_cpu(self, *batches: BatchResult) -> None:
        """The CPU time the workers spent in each kind of job (their processes' threads)."""
        for label, batch in zip(("autograde", "feedback"), batches):
            self.timings[f"{label}_jobs_cpu_seconds"] = [item.cpu_seconds for item in batch.finished
                                                         if item.cpu_seconds is not None]

    def recover_collects(self) -> None:
        """What a killed ``nbgrader collect`` set aside, back in ``submitted/`` (said), before
        anything counts the submissions there."""
        for sentence in recover_interrupted_collects(self.course / "submitted", self.assignment):
            print(sentence, file=sys.stderr)

    def start_zygotes(self) -> None:
        """The workers' zygotes, started first: they import on the core the command leaves idle
        while it releases and warms up (warm.start_zygotes), shared by the workers (as many as
        there are submissions at most)."""
        submitted = self.course / "submitted"
        count = sum((folder / self.assignment).is_dir() for folder in submitted.iterdir()) if submitted.is_dir() else 0
        if not self.cluster and count:
            self.zygotes = warm.start_zygotes(self.course, self.db_url, min(self.workers, count), self.assignment)

    def release(self) -> None:
        """Regenerate release/ when the source folder or the gradebook changed."""
        self.state = state.load_state(self.course)
        source = course_path(self.course, "source", ".", self.assignment)
        digest = state.folder_digest(source) if source.is_dir() else None
        released = notebook_path(self.course, "release", ".", self.assignment)
        if digest is not None and self.state.get("source") == digest and self.state.get("db_url") == self.db_url \
                and released.exists():
            say("release is current (source notebook unchanged)")
            return
        # nbgrader generate_assignment --force, in this process: no second nbgrader to start, and
        # what it imports is imported once for the workers, which are forked from this process
        say(f"$ nbgrader generate_assignment {self.assignment} --force (in this process)")
        result = nbgrader_api(self.course, self.db_url).generate_assignment(self.assignment, force=True, create=True)
        say((result.get("log") or "").rstrip(), level=2)
        if not result["success"]:
            raise Broke(1, (result.get("log") or "")[-4000:] + str(result.get("error") or ""))
        self.state = {"source": digest, "db_url": self.db_url}
        state.save_state(self.course, self.state)

    def prepare(self) -> None:
        """What earlier runs left, a loud banner when the box is not whole, the roster's names."""
        box.sweep_private_root()  # what killed workers of earlier runs left behind
        zygote.end_orphaned_sandboxes()
        cgroups.sweep_all()
        if not box.bwrap_works():
            print(f"\n!!! {box.without_sandbox_warning()} !!!\n", file=sys.stderr)
        elif not cgroups.available():
            print(f"\n!!! {cgroups.without_cgroup_warning()} !!!\n", file=sys.stderr)
        elif not cgroups.cpu_share_available():
            print(f"\n!!! {cpushare.WITHOUT_CPU_SHARE} !!!\n", file=sys.stderr)
        if (self.course / ROSTER).is_file():  # names for formgrader, grades.csv and the report
            try:
                say(f"roster: {import_roster(self.course / ROSTER, self.db_url)} students from {ROSTER}")
            except RosterError as problem:
                print(f"roster not imported: {problem}", file=sys.stderr)

    def autograde(self) -> tuple[BatchResult, list[str]]:
        """Grade what changed; returns the batch and the students already up to date."""
        grader = state.grader_digest(self.course, self.db_url, self.assignment)
        todo, current = state.students_to_grade(self.course, self.state, grader, self.force, self.assignment)
        if self.state.get("grader") != grader:
            self.state.update(grader=grader, submissions={})
        where = f"on the cluster {self.cluster}" if self.cluster else f"with {self.workers} worker(s)"
        say(f"{len(todo)} submission(s) to grade {where}, {len(current)} up to date")

        self.reading = report.Reading(self.course, self.assignment)

        def done(item: JobResult) -> None:  # saved before it is shown as done
            if not item.success:  # graded again by the next run, whatever its files say
                self.state["submissions"].pop(item.student, None)
                state.save_state(self.course, self.state)
            if item.success:
                self.state["submissions"][item.student] = state.submission_digest(
                    self.course, item.student, self.assignment)
                state.save_state(self.course, self.state)
                # the report reads the graded notebooks meanwhile, in a thread: started only now,
                # after the workers were forked (those graded earlier with the first)
                for student in ([] if self.reading.asked else current) + [item.student]:
                    self.reading.add(student)

        feedback_due, zygotes = self._feedback_due(current), self.zygotes if todo else pool.let_go(self.zygotes)
        if not self.cluster and (todo or feedback_due):
            with self.step("warm-up"):  # once here, not in every worker forked from this process
                warm.warm_up(self.course, self.db_url, self.assignment)
        started = time.monotonic()
        batch = self._run_batch(todo, done, feedback_due, zygotes)
        # until the last submission was graded (the feedback made between submissions included)
        autograded = batch.last_seconds if batch.last_seconds is not None else time.monotonic() - started
        self.timings.update(autograde_seconds=autograded, graded=len(batch.finished))
        recorded = [item.record_seconds for item in batch.finished if item.record_seconds is not None]
        if recorded:  # --cluster: the coordinator's gradebook writes
            self.timings["record_seconds_mean"] = sum(recorded) / len(recorded)
        cgroups.sweep_all()  # the workers have ended: their submissions' cgroups go too
        control = next((item.fault for item in batch.failed if item.fault.startswith(CONTROL_FAILED)), None)
        if control:
            raise Broke(1, f"\n{control}\nNothing was recorded; run the command again once the cause is fixed "
                           "(maxpool-grader doctor runs the same control).")
        for item in batch.failed:
            log = self.course / ".maxpool-grader" / "logs" / self.assignment / f"{item.student}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(item.log or "")
            kind = ("a fault of the grader, not the student's: nothing was recorded" if item.fault
                    else "nothing was recorded")
            print(f"\nNot graded: {item.student} ({kind}): {item.fault or error_summary(item.log)}\n"
                  f"  full log: {log}", file=sys.stderr)
        if batch.interrupted:
            raise Broke(130, f"\nInterrupted: {len(batch.finished)} graded, {len(todo) - len(batch.finished)} left. "
                             "Run the command again to grade the rest.")
        return batch, current

    def backend(self, zygotes=(), grading: bool = True) -> GradingBackend:
        """Where the submissions are graded: this machine's pool, or the Dask cluster, whose
        graded notebooks the local pool records (and makes the feedback of); the cluster is
        not reached when nothing is to be graded (``grading``)."""
        local = pool.LocalPool(self.course, self.db_url, self.workers, self.assignment, zygotes=zygotes,
                               before_fork=self.reading.drain if self.reading is not None else None)
        if not self.cluster or not grading:
            return local
        return coordinator.DaskCluster(self.course, self.cluster, local, self.assignment, security=self.security)

    def _run_batch(self, todo: list[str], done, feedback_due: list[str], zygotes=()) -> BatchResult:
        """Each student's feedback is made right after their grading, on the same local worker."""
        backend = self.backend(zygotes, grading=bool(todo))
        try:
            with backend:
                return run_batch(backend, todo, done, then=(pool.feedback_job, "feedback"), then_also=feedback_due)
        except coordinator.WorkerRefused as problem:
            raise Broke(1, f"\nNot graded: {problem}") from None

    def _feedback_due(self, current: list[str]) -> list[str]:
        """Those graded earlier whose feedback page is missing, or older than their graded
        notebook: a run stopped between a resubmission's grading and its feedback left the
        earlier attempt's page, with its score."""
        def stale(student: str) -> bool:
            page = notebook_path(self.course, "feedback", student, self.assignment)
            graded = notebook_path(self.course, "autograded", student, self.assignment)
            if not page.exists():
                return True
            return graded.exists() and page.stat().st_mtime_ns < graded.stat().st_mtime_ns
        return [student for student in current if stale(student)]

    def export(self, failed: list[str]) -> bool:
        """grades.csv, as ``nbgrader export`` writes it with the course's plugin, from this
        process (no second nbgrader to start); True when it worked. Not when a submission of
        this run was not graded (``failed``): the file would show them a 0 they never got."""
        if failed:
            print(f"\ngrades.csv was not updated: {len(failed)} submission(s) were not graded "
                  f"({', '.join(failed[:10])}{', ...' if len(failed) > 10 else ''}); run the command again.",
                  file=sys.stderr)
            return False
        say("$ nbgrader export (in this process)", level=2)
        result = export_grades(self.course, self.db_url, self.course / "grades.csv")
        if not result["success"]:
            print((result.get("log") or "")[-4000:] + str(result.get("error") or ""), file=sys.stderr)
        return bool(result["success"])

    def summary(self, report_path: Path) -> None:
        cells, scores = score_table(self.db_url, self.assignment)
        print()
        print(format_table(cells, scores))
        print(f"\nClass report: {report_path}\nGrades: {self.course / 'grades.csv'}")


def grade(course: Path, *, workers: int | None = None, force: bool = False, db_url: str | None = None,
          assignment: str = ASSIGNMENT, similarity_threshold: float = similarity.THRESHOLD,
          cluster: str | None = None, security=None) -> int:
    """Grade the class; 0 unless grading itself broke (a student's code never makes it fail).
    ``security``: how to reach the ``cluster`` (tls.coordinator_security)."""
    interrupt.listen_for_ctrl_c()
    try:
        return _grade(course.resolve(), workers, force, db_url, assignment, similarity_threshold, cluster, security)
    except BaseException as error:
        # Ctrl-C inside an import or a C call comes out as another error ("ImportError:
        # initialization failed"): the flag says it was Ctrl-C all the same
        if isinstance(error, KeyboardInterrupt) or CTRL_C.is_set():
            print("\nInterrupted. Run the command again to finish: what was graded is kept.", file=sys.stderr)
            return 130
        if isinstance(error, Broke):
            print(str(error), file=sys.stderr)
            return error.status
        raise


def _grade(course: Path, workers, force, db_url, assignment, similarity_threshold, cluster, security) -> int:
    run = GradingRun(course, db_url or configured_db_url(course), workers or pool.default_workers(), force, cluster,
                     similarity_threshold, assignment, security)
    run.timings["start_cpu_seconds"] = time.process_time()  # Python's start and the imports
    started = time.monotonic()
    try:
        with run.step("release"):
            run.recover_collects()
            run.start_zygotes()
            run.release()
        with run.step("prepare"):
            run.prepare()
            if failed := rehearsal.rehearse(course, run.db_url, assignment, similarity_threshold):
                raise Broke(1, failed)
        with run.step("autograde"):
            graded, _ = run.autograde()
            feedback = graded.then
        run.count_job_cpu(graded, feedback)
        if feedback.interrupted or CTRL_C.is_set():
            raise KeyboardInterrupt
        with run.step("export"):
            exported = run.export([item.student for item in graded.failed])
        with run.step("report"):
            paths = report.write_report(course, run.db_url, assignment, similarity_threshold, run.reading)
    finally:
        pool.let_go(run.zygotes)
        if run.reading is not None:
            run.reading.drain(cancel=True)
    run.timings["total_seconds"] = time.monotonic() - started
    state.save_timings(course, run.timings)
    run.summary(paths["html"])
    gc.freeze()  # the command is done: Python's exit need not collect everything it made (0.3 s)
    return 1 if graded.failed or feedback.failed or not exported else 0
