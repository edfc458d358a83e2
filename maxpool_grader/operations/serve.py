"""``maxpool-grader serve``: feedback while the assignment is open.

One long-running process on the instructor's side: warm grading workers (the ones
``grade`` uses: nbgrader's own autograde in the sealed box, zygotes kept warm), one
persistent queue (serve_queue.py) and two ways in:

* nbgrader's exchange: a student's ``nbgrader submit`` (or Submit in the Assignment List)
  lands in the exchange's inbound folder, which every student can write to. The service
  takes each new submission once, only when its folder and notebook belong to the user the
  submission names (nbgrader's own ``collect`` only warns, "cheating attempt?"), grades it
  and releases its feedback through the exchange (``fetch_feedback`` finds it);
* a web page (serve_web.py): a student's personal link (a token made from the roster),
  an upload form, their queue position, then their feedback page.

The instructor's policy is the ``Serve`` settings below (nbgrader_config.py): attempts per
hour and per day (an attempt over the limit is refused at once, with the time the next
one is possible), how much the feedback shows before the deadline, and the deadline
(the gradebook's due date unless set). What a submission is graded on is copied into
``submitted/<student>/``, and graded exactly as ``maxpool-grader grade --force`` grades
it, so the last on-time submission's grade is the one ``grade --force`` gives too.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone
from pathlib import Path

from traitlets import Enum, Float, Int, Unicode
from traitlets.config import Configurable

from ..names import ASSIGNMENT, REPORT_KEY, SOLUTION_CELL
from . import parallel
from .course import course_path, notebook_path, say
from .serve_queue import Attempt, Queue

FEEDBACK_LEVELS = ("scores", "mistakes", "everything")
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # what the service accepts as a student id
SERVE_DIR = Path(".maxpool-grader") / "serve"


class Serve(Configurable):
    """The policy of ``maxpool-grader serve`` (feedback while the assignment is open)."""

    attempts_per_hour = Int(3, help=(
        "Graded attempts a student may make in any 60 minutes; one more is refused at once, with the time "
        "the next is possible.")).tag(config=True, unit="attempts")
    attempts_per_day = Int(10, help=(
        "Graded attempts a student may make in any 24 hours.")).tag(config=True, unit="attempts")
    before_deadline = Enum(FEEDBACK_LEVELS, default_value="everything", help=(
        "What the feedback shows before the deadline: 'scores' (each test's points), 'mistakes' (the "
        "points and the named mistakes) or 'everything' (the whole feedback page, with the smallest "
        "failing input). After the deadline it is always everything.")).tag(config=True, unit="")
    deadline = Unicode("", help=(
        "The last moment a submission is taken, e.g. '2026-12-01 23:59' (UTC) or 2026-12-01T23:59+01:00; "
        "empty: the assignment's due date in the gradebook (none: no deadline).")).tag(config=True, unit="")
    max_upload = Int(2048, help="The largest notebook the service takes, upload or exchange.").tag(
        config=True, unit="KiB")
    poll_interval = Float(1.0, help="How often the exchange's inbound folder is looked at.").tag(config=True, unit="s")


def load_settings(course: Path) -> Serve:
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return Serve(config=config)


def parse_time(text: str) -> datetime:
    """'2026-12-01 23:59' (UTC) or an ISO time with its offset, as an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not a time: {text!r} (write e.g. '2026-12-01 23:59' or 2026-12-01T23:59+01:00)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


# ------------------------------------------------------------------------------ tokens

def service_secret(course: Path) -> bytes:
    """The key the students' links and the cookies are signed with (made once, owner-only):
    delete the file to make every link given out so far invalid."""
    folder = course / SERVE_DIR
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "secret"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def token_for(secret: bytes, who: str) -> str:
    """A personal token: the id it is for, and a signature only the service can make."""
    signature = hmac.new(secret, b"maxpool-serve\0" + who.encode(), hashlib.sha256).hexdigest()[:40]
    return base64.urlsafe_b64encode(who.encode()).decode().rstrip("=") + "." + signature


def who_has(secret: bytes, token: str) -> str | None:
    """The id a token was made for, or None when it is not one of ours."""
    encoded, _, signature = token.partition(".")
    try:
        who = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return who if hmac.compare_digest(token_for(secret, who), token) else None


INSTRUCTOR = "\0instructor"  # the instructor's token is made for this id (no student can have it)


# ------------------------------------------------------------------ the grading worker side

def serve_job(student: str, assignment: str, release: bool) -> dict:
    """In a grading worker (parallel.py's, one NbGraderAPI each): autograde the submission
    in submitted/ as ``grade`` does, write its feedback, release it through the exchange
    when it came that way, and return its scores per test and the mistakes named."""
    api = parallel._API
    started = time.monotonic()
    result = api.autograde(assignment, student, force=True, create=True)
    if not result["success"] and "database is locked" in (result.get("log") or ""):
        result = api.autograde(assignment, student, force=True, create=True)
    if not result["success"]:
        return {"success": False, "log": parallel.failure_log(result, 4000)}
    feedback = api.generate_feedback(assignment, student, force=True)
    if not feedback["success"]:
        return {"success": False, "log": parallel.failure_log(feedback, 4000)}
    if release:
        released = api.release_feedback(assignment, student)
        if not released["success"]:
            return {"success": False, "log": parallel.failure_log(released, 4000)}
    course = Path(api.coursedir.root)
    return {"success": True, "released": release, **scores_of(api.coursedir.db_url, course, student, assignment),
            "import_failed": parallel.kernel_import_failed(result), "seconds": time.monotonic() - started}


def scores_of(db_url: str, course: Path, student: str, assignment: str) -> dict:
    """Each graded cell's points from the gradebook, and the mistakes the verdicts named."""
    from nbgrader.api import Gradebook

    from ..exercise.catalogue import BUGS
    from ..exercise.checks import GRADED_CHECKS
    from ..names import PART_A_CELL
    named: dict[str, list[str]] = {}
    try:
        graded = json.loads(notebook_path(course, "autograded", student, assignment).read_text())
        for cell in graded.get("cells", []):
            grade = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            verdict = cell.get("metadata", {}).get(REPORT_KEY) or {}
            if grade:
                named[grade] = [BUGS[name].title for name in verdict.get("bugs", []) if name in BUGS]
    except (OSError, ValueError):
        pass
    tests = []
    with Gradebook(db_url) as gradebook:
        submission = gradebook.find_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                check = GRADED_CHECKS.get(grade.name)
                title = check.title if check else ("Part A: your derivation" if grade.name == PART_A_CELL
                                                   else grade.name)
                tests.append({"id": grade.name, "title": title, "points": float(grade.max_score or 0),
                              "score": float(grade.score or 0), "manual": bool(grade.needs_manual_grade),
                              "mistakes": named.get(grade.name, [])})
        return {"tests": tests, "score": float(submission.score or 0), "max_score": float(submission.max_score or 0),
                "late_penalty": float(submission.late_submission_penalty or 0)}


# ------------------------------------------------------------------------------ the service

class Refused(Exception):
    """An attempt the policy or the checks refuse: the message for the student, the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Service:
    """The queue, the policy, the workers and the exchange watcher (the web part is serve_web.py)."""

    def __init__(self, course: Path, db_url: str, workers: int, settings: Serve, *, exchange: bool = True,
                 assignment: str = ASSIGNMENT):
        self.course, self.db_url, self.workers, self.settings = course, db_url, max(1, workers), settings
        self.assignment = assignment
        self.queue = Queue(course / SERVE_DIR)
        self.secret = service_secret(course)
        self.exchange_inbound = _exchange_inbound(course) if exchange else None
        self.executor: ProcessPoolExecutor | None = None
        self.in_flight: dict[int, str] = {}  # attempt id -> student
        self.wake: asyncio.Event | None = None
        self.stopping = False
        self.first_seen: dict[str, float] = {}
        self.events: list[str] = []  # what the instructor should know (a forged submission, a failure)

    # ---------------------------------------------------------------- policy
    def deadline(self) -> datetime | None:
        if self.settings.deadline:
            return parse_time(self.settings.deadline)
        from nbgrader.api import Gradebook, MissingEntry
        try:
            with Gradebook(self.db_url) as gradebook:
                due = gradebook.find_assignment(self.assignment).duedate
        except MissingEntry:
            return None
        return due.replace(tzinfo=timezone.utc) if due is not None and due.tzinfo is None else due

    def open_now(self, now: float | None = None) -> bool:
        deadline = self.deadline()
        return deadline is None or (time.time() if now is None else now) <= deadline.timestamp()

    def feedback_level(self) -> str:
        return self.settings.before_deadline if self.open_now() else "everything"

    def admit(self, student: str, now: float | None = None) -> None:
        """Refuse (``Refused``) an attempt the policy does not allow now."""
        now = time.time() if now is None else now
        deadline = self.deadline()
        if deadline is not None and now > deadline.timestamp():
            raise Refused(f"The deadline has passed ({_when(deadline.timestamp())}): no more submissions are "
                          "taken. Your last on-time submission is the one that counts.", 403)
        for limit, window, span in ((self.settings.attempts_per_hour, 3600, "hour"),
                                    (self.settings.attempts_per_day, 86400, "24 hours")):
            used = self.queue.counted_since(student, now - window)
            if len(used) >= limit:
                possible = used[len(used) - limit] + window
                raise Refused(f"You have used your {limit} graded attempts of the last {span}. Your next attempt is "
                              f"possible at {_when(possible)} (in {_minutes(possible - now)}). This upload was not "
                              "kept.", 429)

    def check_notebook(self, content: bytes) -> None:
        """Refuse what is not this assignment's notebook, or too large."""
        if len(content) > self.settings.max_upload * 1024:
            raise Refused(f"The file is too large ({len(content) // 1024} KiB; the limit is "
                          f"{self.settings.max_upload} KiB). Clear your outputs (Kernel > Restart and Clear "
                          "Outputs) and upload it again.", 413)
        try:
            notebook = json.loads(content.decode("utf-8"))
            cells = notebook["cells"]
            ids = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in cells
                   if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict)
                   and isinstance(cell["metadata"].get("nbgrader", {}), dict)}
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            raise Refused("This is not a Jupyter notebook (.ipynb): upload the notebook file of the assignment, "
                          f"{self.assignment}.ipynb.", 400) from None
        if SOLUTION_CELL not in ids:
            raise Refused(f"This notebook is not the {self.assignment} assignment (its cell "
                          f"'{SOLUTION_CELL}' is missing): upload {self.assignment}.ipynb as you fetched it, "
                          "with your answers.", 400)

    def submit(self, student: str, content: bytes, way: str = "web") -> int:
        """Check and queue an upload; a refused one is recorded (for the instructor) and raised."""
        try:
            self.check_notebook(content)
            self.admit(student)
        except Refused as refusal:
            self.queue.add(student, self.assignment, way, None, status="refused", message=str(refusal))
            raise
        attempt_id = self.queue.add(student, self.assignment, way, content)
        self.poke()
        return attempt_id

    # ---------------------------------------------------------------- exchange
    def scan_exchange(self) -> None:
        """Take every new submission of the exchange's inbound folder once."""
        inbound = self.exchange_inbound
        if inbound is None or not inbound.is_dir():
            return
        try:
            names = sorted(os.listdir(inbound))
        except OSError:
            return
        for name in names:
            parts = name.split("+")
            if len(parts) < 3 or parts[1] != self.assignment or self.queue.seen_source(name):
                continue  # another assignment's (plain nbgrader collect takes those) or taken already
            self.first_seen.setdefault(name, time.time())
            if not (inbound / name / "submission_secret.txt").exists() and time.time() - self.first_seen[name] < 30:
                continue  # nbgrader submit writes the secret last: still being copied
            self._take(inbound, name, parts[0])
            self.first_seen.pop(name, None)

    def _take(self, inbound: Path, name: str, student: str) -> None:
        try:
            content, secret = self._read_submission(inbound, name, student)
        except Refused as refusal:
            who = student if STUDENT_ID.fullmatch(student) else "?"
            self.queue.add(who, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            self.events.append(f"exchange submission {name!r} refused: {refusal}")
            print(f"serve: exchange submission {name!r} refused: {refusal}", file=sys.stderr, flush=True)
            return
        try:
            self.check_notebook(content)
            self.admit(student)
        except Refused as refusal:
            self.queue.add(student, self.assignment, "exchange", None, status="refused", message=str(refusal),
                           source=name)
            if secret:
                self._release_refusal(secret, str(refusal))
            return
        files = {".secret": secret.encode()} if secret else {}
        self.queue.add(student, self.assignment, "exchange", content, source=name, files=files)
        self.poke()

    def _read_submission(self, inbound: Path, name: str, student: str) -> tuple[bytes, str]:
        """The notebook and secret of an inbound folder, read only when the folder and both files
        belong to the user the folder's name claims; never through a link."""
        if not STUDENT_ID.fullmatch(student):
            raise Refused(f"{student!r} is not a student id this service takes")
        try:
            expected = pwd.getpwnam(student).pw_uid
        except KeyError:
            raise Refused(f"claims to be from {student!r}, who has no account on this machine") from None
        try:
            folder = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=os.open(inbound, os.O_RDONLY))
        except OSError:
            raise Refused("not a folder (a link, or gone)") from None
        try:
            owner = os.fstat(folder).st_uid
            if owner != expected:
                raise Refused(f"claims to be {student}'s submission but belongs to {_user(owner)}: a submission "
                              "made in another student's name (cheating attempt?)")
            content = _read_owned(folder, f"{self.assignment}.ipynb", expected, self.settings.max_upload * 1024 + 1)
            try:
                secret = _read_owned(folder, "submission_secret.txt", expected, 1024).decode().strip()
            except Refused:
                secret = ""
            if secret and not re.fullmatch(r"[0-9a-f]{16,256}", secret):
                secret = ""
            return content, secret
        finally:
            os.close(folder)

    def _release_refusal(self, secret: str, message: str) -> None:
        """A refused exchange submission's reason, where ``fetch_feedback`` finds feedback."""
        self._release_page(secret, _refusal_page(self.assignment, message))

    def _release_page(self, secret: str, page: str) -> None:
        """A page of ours where ``fetch_feedback`` finds the feedback of the submission with this secret."""
        from nbgrader.utils import notebook_hash
        outbound = self.exchange_inbound.parent / "feedback"
        outbound.mkdir(mode=0o755, exist_ok=True)
        target = outbound / f"{notebook_hash(secret=secret, notebook_id=self.assignment)}.html"
        temporary = target.with_suffix(".tmp")
        temporary.write_text(page)
        temporary.chmod(0o644)
        temporary.replace(target)

    # ---------------------------------------------------------------- grading
    def poke(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def _pool(self) -> ProcessPoolExecutor:
        if self.executor is None:
            self.executor = ProcessPoolExecutor(max_workers=self.workers, initializer=parallel._start_worker,
                                                initargs=(str(self.course), self.db_url, os.getpid()))
        return self.executor

    async def run_queue(self) -> None:
        """Hand queued attempts to the workers as they free up, until stopped."""
        self.wake = asyncio.Event()
        while not self.stopping:
            self.wake.clear()
            free = self.workers - len(self.in_flight)
            if free > 0:
                for attempt in self.queue.next_ready(set(self.in_flight.values()))[:free]:
                    self._start(attempt)
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass

    def _start(self, attempt: Attempt) -> None:
        self.queue.start(attempt.id)
        self._stage(attempt)
        self.in_flight[attempt.id] = attempt.student
        with parallel._ctrl_c_held():  # the pool may fork its workers now
            # through the exchange, nbgrader's feedback page only when the policy shows everything now;
            # otherwise _finished releases the brief page the web way shows
            release = attempt.way == "exchange" and self.feedback_level() == "everything"
            future = self._pool().submit(serve_job, attempt.student, attempt.assignment, release)
        loop = asyncio.get_running_loop()
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._finished, attempt, done))

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
        (folder / "timestamp.txt").write_text(received.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
        secret = self.queue.upload_path(attempt.id).with_suffix(".secret")
        if secret.exists():
            shutil.copyfile(secret, folder / "submission_secret.txt")

    def _finished(self, attempt: Attempt, future) -> None:
        self.in_flight.pop(attempt.id, None)
        if self.stopping:
            return
        try:
            result = future.result()
        except BrokenProcessPool:
            self._broken()
            current = self.queue.get(attempt.id)
            if current is not None and current.tries >= 2:
                self._failed(attempt, "a grading worker died twice while grading it")
            else:
                self.queue.requeue(attempt.id)
            self.poke()
            return
        except Exception as problem:  # noqa: BLE001  a fault of the service: reported, never lost
            result = {"success": False, "log": f"{type(problem).__name__}: {problem}"}
        if result.get("success"):
            feedback = notebook_path(self.course, "feedback", attempt.student, attempt.assignment)
            if feedback.exists():
                shutil.copyfile(feedback, self.queue.feedback_path(attempt.id))
            self.queue.finish(attempt.id, "graded", result=result)
            secret = self.queue.upload_path(attempt.id).with_suffix(".secret")
            level = self.feedback_level()
            if attempt.way == "exchange" and not result.get("released") and secret.exists():
                from .serve_web import brief_page
                self._release_page(secret.read_text().strip(), brief_page(attempt.assignment, result, level))
            say(f"serve: graded {attempt.student} (attempt {attempt.id}): {result['score']:g} of "
                f"{result['max_score']:g} in {result.get('seconds', 0):.1f} s")
        elif (self.queue.get(attempt.id) or attempt).tries < 2:
            self.queue.requeue(attempt.id)
        else:
            self._failed(attempt, "grading failed twice: " + (result.get("log") or "")[-600:])
        self.poke()

    def _failed(self, attempt: Attempt, why: str) -> None:
        self.queue.finish(attempt.id, "failed", message="Grading this submission failed twice; your instructor has "
                                                        "been told. This attempt does not count against your limit.")
        self.events.append(f"attempt {attempt.id} of {attempt.student} failed: {why}")
        print(f"serve: attempt {attempt.id} of {attempt.student} FAILED: {why}", file=sys.stderr, flush=True)

    def _broken(self) -> None:
        """A worker died: the pool is made again (its other attempts are queued again)."""
        if self.executor is not None:
            parallel._stop(self.executor)
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None

    def stop(self) -> None:
        """Kill the workers now; what they were grading is queued again for the next start."""
        self.stopping = True
        if self.executor is not None:
            parallel._stop(self.executor)
            self.executor.shutdown(wait=False, cancel_futures=True)
        for attempt_id in list(self.in_flight):
            self.queue.requeue(attempt_id)
        self.in_flight.clear()
        self.poke()


def _read_owned(folder: int, name: str, uid: int, limit: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        raise Refused(f"no {name} in it (or a link)") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise Refused(f"{name} is not a plain file")
        if found.st_uid != uid:
            raise Refused(f"{name} in it belongs to {_user(found.st_uid)}, not to the student it names")
        data = os.read(fd, limit)
        while len(data) < limit:
            more = os.read(fd, limit - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


def _exchange_inbound(course: Path) -> Path | None:
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    root = config.Exchange.get("root") or "/srv/nbgrader/exchange"
    course_id = config.CourseDirectory.get("course_id") or ""
    return Path(root) / course_id / "inbound" if course_id else None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _minutes(seconds: float) -> str:
    minutes = max(1, int(-(-seconds // 60)))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _refusal_page(assignment: str, message: str) -> str:
    import html
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Not graded</title>"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"</head><body><h1>{html.escape(assignment)}: this submission was not graded</h1>"
            f"<p>{html.escape(message)}</p></body></html>")


def run(course: Path, db_url: str, workers: int, *, address: str, port: int, base_url: str, exchange: bool,
        web: bool, certfile: str | None, keyfile: str | None, secure_cookies: bool) -> int:
    """The command: prepare the course as ``grade`` does, then serve until Ctrl-C or SIGTERM."""
    from .grade import Broke, GradingRun
    from .serve_web import make_app
    grading = GradingRun(course=course, db_url=db_url, workers=workers)
    try:
        grading.release()
    except Broke as broke:
        print(str(broke), file=sys.stderr)
        return broke.status
    grading.prepare()
    settings = load_settings(course)
    service = Service(course, db_url, workers, settings, exchange=exchange)
    requeued = service.queue.resume()
    if requeued:
        say(f"serve: {requeued} attempts that were being graded when the service stopped are queued again")
    status = {"code": 0}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()

        def stop(code: int) -> None:
            if not stopped.is_set():
                status["code"] = code
                service.stop()
                stopped.set()
        loop.add_signal_handler(signal.SIGINT, stop, 130)
        loop.add_signal_handler(signal.SIGTERM, stop, 0)
        server = None
        if web:
            import tornado.httpserver
            ssl_options = None
            if certfile:
                import ssl
                ssl_options = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                ssl_options.load_cert_chain(certfile, keyfile)
            app = make_app(service, base_url=base_url, secure_cookies=secure_cookies or bool(certfile))
            server = tornado.httpserver.HTTPServer(app, ssl_options=ssl_options, xheaders=True,
                                                   max_body_size=settings.max_upload * 1024 * 2 + 65536)
            sockets = tornado.netutil.bind_sockets(port, address=address)
            server.add_sockets(sockets)
            bound = sockets[0].getsockname()[1]
            link = f"{base_url.rstrip('/')}/instructor/login/{token_for(service.secret, INSTRUCTOR)}"
            (course / SERVE_DIR / "instructor-link").write_text(link.replace("{port}", str(bound)) + "\n")
            say(f"serve: web page on {'https' if certfile else 'http'}://{address}:{bound}/ "
                f"(instructor's view: .maxpool-grader/serve/instructor-link)")
        if service.exchange_inbound is not None:
            say(f"serve: watching {service.exchange_inbound}")
        queue = asyncio.create_task(service.run_queue())
        while not stopped.is_set():
            service.scan_exchange()
            try:
                await asyncio.wait_for(stopped.wait(), timeout=settings.poll_interval)
            except asyncio.TimeoutError:
                pass
        if server is not None:
            server.stop()
        await queue
        say("serve: stopped; the queue is kept for the next start")

    import tornado.netutil  # noqa: F401
    asyncio.run(main())
    service.queue.close()
    return status["code"]
