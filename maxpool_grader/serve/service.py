"""``maxpool-grader serve``: feedback while the assignment is open.

One long-running process on the instructor's side: warm grading workers (``grade``'s
grading backend: nbgrader's own autograde in the sealed box, zygotes kept warm), one
persistent queue (serve/queue.py) and two ways in:

* nbgrader's exchange: a student's ``nbgrader submit`` (or Submit in the Assignment List)
  lands in the exchange's inbound folder, which every student can write to. The service
  takes each new submission once, only when its folder and notebook belong to the user the
  submission names (nbgrader's own ``collect`` only warns, "cheating attempt?"), grades it
  and releases its feedback through the exchange (``fetch_feedback`` finds it);
* a web page (serve/web.py): a student's personal link (a token made from the roster),
  an upload form, their queue position, then their feedback page; after the deadline, once
  the instructor has released the final feedback (``nbgrader release_feedback``), that page
  too, behind the same link (``pages.final_feedback``).

The instructor's policy is ``c.Serve`` (serve/policy.py): attempts per hour and per day, how
much the feedback shows before the deadline, the deadline, which attempt counts. What a
submission is graded on is copied into ``submitted/<student>/``, graded exactly as ``grade
--force`` grades it, and put back when it does not count (serve/standing.py).
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..backend.interface import GradingBackend, WorkerDied
from ..backend.pool import LocalPool
from ..cluster.coordinator import DaskCluster, WorkerRefused
from ..course.directory import course_path, notebook_path, say
from ..course.jobs import error_summary
from ..glue.submission import timestamp_text
from ..grading.grade import Broke, GradingRun
from ..lti.tool import load_lti
from ..names import ASSIGNMENT, SERVE_DIR
from .exchange import ExchangeWatcher, exchange_inbound
from .grading_job import keep_before, put_back, serve_followup, serve_worker_setup
from .lti_service import attempt_score, enable_lti
from .pages import brief_page
from .policy import NOT_ON_ROSTER, Policy, Serve, load_settings
from .queue import Attempt, Queue
from .signin import SignIn
from .standing import counted, standing_of


class CannotServe(Exception):
    """The service cannot start its web page (a port in use): the sentence for the instructor."""


class Service:
    """The queue, handed to the grading ``backend`` it is given (this machine's pool, or a Dask
    cluster: backend/interface.py), holding the rest: ``policy`` (every attempt's checks),
    ``signin`` (who a request is), ``exchange`` (the exchange watcher, or None). The web part is
    serve/web.py."""

    def __init__(self, course: Path, db_url: str, settings: Serve, backend: GradingBackend, *,
                 exchange: bool = True, assignment: str = ASSIGNMENT):
        self.course, self.db_url, self.settings, self.backend = course, db_url, settings, backend
        self.assignment = assignment
        self.queue = Queue(course / SERVE_DIR)
        self.in_flight: dict[int, str] = {}  # attempt id -> student
        self.wake: asyncio.Event | None = None
        self.stopping = False
        self.events: list[str] = []  # what the instructor should know (a forged submission, a failure)
        self.base_url, self.lti, self.launches, self.passback = "", None, None, None  # LTI: lti_service.enable_lti
        self.policy = Policy(settings, course=course, db_url=db_url, assignment=assignment, queue=self.queue,
                             on_queued=self.poke)
        self.signin = SignIn(course / SERVE_DIR, is_student=self.policy.is_student,
                             hub_instructors=settings.hub_instructors)
        inbound = exchange_inbound(course)
        # where nbgrader release_feedback puts each student's page (final_feedback): the web way's too
        self.released = None if inbound is None else inbound.parent / "feedback"
        inbound = inbound if exchange else None
        self.exchange = None if inbound is None else ExchangeWatcher(
            inbound, policy=self.policy, queue=self.queue, events=self.events, on_queued=self.poke)

    def poke(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def warm_up(self) -> None:
        """Start every grading worker now (each starts its zygotes), not at the first attempt."""
        self.backend.start(warm=True)

    async def run_queue(self) -> None:
        """Start the workers, then hand queued attempts to them as they free up, until stopped."""
        self.warm_up()
        self.wake = asyncio.Event()
        while not self.stopping:
            self.wake.clear()
            free = self.backend.capacity - len(self.in_flight)
            if free > 0:
                for attempt in self.queue.next_ready(set(self.in_flight.values()))[:free]:
                    self._start(attempt)
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass

    def _start(self, attempt: Attempt) -> None:
        if not self.policy.is_student(attempt.student):  # taken off the roster while it waited
            self.queue.finish(attempt.id, "refused", NOT_ON_ROSTER)
            return
        self.queue.start(attempt.id)
        before = self._before(attempt.id)
        keep_before(self.course, self.db_url, attempt.student, attempt.assignment, before)  # put back if they leave
        self._stage(attempt)
        self.in_flight[attempt.id] = attempt.student
        # through the exchange, nbgrader's feedback page only when the policy shows the reports now;
        # otherwise _finished releases the brief page the web way shows
        release = attempt.way == "exchange" and self.policy.feedback_level() == "reports"
        loop = asyncio.get_running_loop()
        future = self.backend.submit(attempt.student, then=serve_followup, args=(
            release, str(before), attempt.id, attempt.way != "exchange", standing_of(self, attempt)))
        future.add_done_callback(lambda done: _back_on(loop, self._finished, attempt, done))

    def _stage(self, attempt: Attempt) -> None:
        """The attempt's notebook in submitted/<student>/ (and nothing else), as collect leaves it."""
        folder = course_path(self.course, "submitted", attempt.student, attempt.assignment)
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        shutil.copyfile(self.queue.upload_path(attempt.id), folder / f"{attempt.assignment}.ipynb")
        received = datetime.fromtimestamp(attempt.received, timezone.utc)
        (folder / "timestamp.txt").write_text(timestamp_text(received))
        secret = self.queue.secret_path(attempt.id)
        if secret.exists():
            shutil.copyfile(secret, folder / "submission_secret.txt")
        else:  # the web way: a secret no one knows, so `nbgrader release_feedback` finds one for every
            # student; the exchange file it writes is named by the secret's hash: no one fetches it
            (folder / "submission_secret.txt").write_text(secrets.token_hex(16))

    def _before(self, attempt_id: int) -> Path:
        """Where what grading the attempt changes is kept until it is done (grading_job.keep_before)."""
        return self.queue.folder / "before" / str(attempt_id)

    def _finished(self, attempt: Attempt, future) -> None:
        self.in_flight.pop(attempt.id, None)
        if self.stopping:
            return
        try:
            graded = future.result()
            result = graded.then if graded.success else {"success": False, "log": graded.log, "fault": graded.fault}
        except WorkerDied:  # the backend replaced the worker: the attempt is tried again
            self._try_again_or_fail(attempt, "a grading worker died while grading it")
            self.poke()
            return
        except Exception as problem:  # noqa: BLE001  a fault of the service: reported, never lost
            result = {"success": False, "log": f"{type(problem).__name__}: {problem}"}
        if result.get("success") or result.get("off_roster"):
            shutil.rmtree(self._before(attempt.id), ignore_errors=True)  # kept, or put back
        if result.get("off_roster"):  # taken off the roster while it was graded: put back, not kept
            self.queue.finish(attempt.id, "refused", NOT_ON_ROSTER)
            say(f"serve: attempt {attempt.id} of {attempt.student} not kept: they left the roster while it was graded")
        elif result.get("success"):
            feedback = notebook_path(self.course, "feedback", attempt.student, attempt.assignment)
            if feedback.exists():
                shutil.copyfile(feedback, self.queue.feedback_path(attempt.id))
            exchange = self.exchange if attempt.way == "exchange" else None  # None too after a --no-exchange restart
            if exchange is not None:  # before it shows as graded: Fetch Feedback then always finds it
                exchange.release_graded(attempt.id, bool(result.get("released")),
                                        lambda: brief_page(attempt.assignment, result, self.policy.feedback_level()))
            self.queue.finish(attempt.id, "graded", result=result)
            if self.passback is not None and counted(result):  # its score, to the LMS's gradebook
                self.passback.graded(attempt.student, attempt.id, *attempt_score(result))
            say(f"serve: graded {attempt.student} (attempt {attempt.id}): {result['score']:g} of "
                f"{result['max_score']:g} in {result.get('seconds', 0):.1f} s")
        else:
            self._try_again_or_fail(attempt, self._why(attempt, result))
        self.poke()

    def _why(self, attempt: Attempt, result: dict) -> str:
        """Why grading an attempt failed, for the instructor: the exception, its message and the
        last frame it passed through (or the grader's fault), and the file with the whole log."""
        tries = (self.queue.get(attempt.id) or attempt).tries
        log = self.queue.folder / "logs" / f"attempt-{attempt.id}-try-{tries}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(result.get("log") or result.get("fault") or "")  # a fault without a log: its sentence
        return f"{result.get('fault') or error_summary(result.get('log') or '')} (whole log: {log})"

    def _try_again_or_fail(self, attempt: Attempt, why: str) -> None:
        if (self.queue.get(attempt.id) or attempt).tries < 2:
            self.queue.requeue(attempt.id)
        else:
            self._failed(attempt, "grading failed twice: " + why)

    def _failed(self, attempt: Attempt, why: str) -> None:
        """Never a failed attempt in place of a graded one: what grading changed is put back
        (its submitted/ and autograded/ folders, its gradebook entry), so the student's last
        graded attempt stands, there and for ``grade --force`` at the deadline."""
        before = self._before(attempt.id)
        if (before / "gradebook.json").exists():
            put_back(self.course, self.db_url, attempt.student, attempt.assignment, before)
        shutil.rmtree(before, ignore_errors=True)
        self.queue.finish(attempt.id, "failed", message="Grading this submission failed twice; your instructor has "
                                                        "been told. This attempt does not count against your limit.")
        self.events.append(f"attempt {attempt.id} of {attempt.student} failed: {why}")
        print(f"serve: attempt {attempt.id} of {attempt.student} FAILED: {why}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Kill the workers now; what they were grading is queued again for the next start."""
        self.stopping = True
        self.backend.stop(now=True)
        for attempt_id in list(self.in_flight):
            self.queue.requeue(attempt_id)
        self.in_flight.clear()
        self.poke()


def _back_on(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    """A worker's result handed to the event loop, unless the service has stopped: the pool's
    futures can end (BrokenProcessPool) after the loop closed, and the attempt is queued anyway."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # the loop is closed; the attempt stays 'grading' and is requeued on start
        pass


def run(course: Path, db_url: str, workers: int, *, address: str, port: int, base_url: str, exchange: bool,
        start_web=None, certfile: str | None, keyfile: str | None, secure_cookies: bool, cluster: str | None = None,
        security=None, hub_auth=None) -> int:
    """The command: prepare the course as ``grade`` does, then serve until Ctrl-C or SIGTERM.
    ``start_web`` (web.start_web, or None: no web page) starts the web layer, which
    depends on this core and is given to it, never imported by it."""
    grading = GradingRun(course=course, db_url=db_url, workers=workers)
    grading.recover_collects()
    try:
        grading.release()
    except Broke as broke:
        print(str(broke), file=sys.stderr)
        return broke.status
    grading.prepare()
    settings = load_settings(course)
    # the workers grade as grade does, but never add a student (the roster decides)
    backend = LocalPool(course, db_url, workers, ASSIGNMENT, create_students=False, setup=serve_worker_setup)
    if cluster:  # --cluster: Dask autogrades; the local workers record, and make the feedback
        backend = DaskCluster(course, cluster, backend, ASSIGNMENT, security=security)
        try:
            backend.start(warm=True)  # the workers are checked now: a refused cluster starts no service
        except WorkerRefused as problem:
            print(f"maxpool-grader serve: not started: {problem}", file=sys.stderr)
            return 1
    service = Service(course, db_url, settings, backend, exchange=exchange)
    service.base_url = base_url
    enable_lti(service, load_lti(course))
    if requeued := service.queue.resume():
        say(f"serve: {requeued} attempts that were being graded when the service stopped are queued again")
    try:
        code = asyncio.run(_serve_until_stopped(service, start_web=start_web, address=address, port=port,
                                                base_url=base_url, certfile=certfile, keyfile=keyfile,
                                                secure_cookies=secure_cookies, hub_auth=hub_auth))
    except CannotServe as problem:
        print(f"maxpool-grader serve: not started: {problem}", file=sys.stderr)
        code = 1
    finally:  # stopping now: a second Ctrl-C (a terminal's, a supervisor's) must not break the cleanup
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        backend.stop(now=True)
    service.queue.close()
    return code


async def _serve_until_stopped(service: Service, *, start_web, **web_options) -> int:
    """The web page, the exchange scan and the queue, until Ctrl-C (130) or SIGTERM (0)."""
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()  # done at the first Ctrl-C or SIGTERM; its result is the exit status

    def stop(code: int) -> None:
        if not stopped.done():
            service.stop()
            stopped.set_result(code)
    loop.add_signal_handler(signal.SIGINT, stop, 130)
    loop.add_signal_handler(signal.SIGTERM, stop, 0)
    server = start_web(service, **web_options) if start_web else None
    if service.exchange is not None:
        say(f"serve: watching {service.exchange.inbound}")
    queue = asyncio.create_task(service.run_queue())
    scores = service.passback and asyncio.create_task(service.passback.run(stopped.done))
    while not stopped.done():
        if service.exchange is not None:
            service.exchange.scan()
        try:
            await asyncio.wait_for(asyncio.shield(stopped), timeout=service.settings.poll_interval)
        except asyncio.TimeoutError:
            pass
    if server is not None:
        server.stop()
    await queue
    if scores:
        scores.cancel()
    say("serve: stopped; the queue is kept for the next start")
    return stopped.result()
