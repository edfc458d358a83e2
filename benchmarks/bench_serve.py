"""Benchmark: `maxpool-grader serve` through its web page, idle and in a lab-session rush.

Builds a throwaway copy of the course in a temporary folder (config, source notebook, a
roster of ``--students`` students, the attempt limits raised to 1000 an hour and a day so
that the rush is not refused), starts ``maxpool-grader serve`` on a free loopback port
with its default workers, writes the personal links (``maxpool-grader tokens``) and logs
every student in through their link, as a browser does. Then:

* latency: on the idle service, after a warm-up (one upload for each worker, at once, shown
  apart: a worker starts its zygotes on its first submission), one correct notebook is
  uploaded ``--samples`` times, one after the other, each timed from the POST to /upload
  until its feedback page answers 200 (the attempt's page polled every 50 ms, redirects
  followed). Prints p50, p95, min and max; the issue's
  target is a p50 of at most 2 s;
* rush: ``--uploads`` uploads from the ``--students`` students (as evenly shared as they
  divide), at moments drawn uniformly at random over ``--seconds`` seconds (fixed seed),
  each in its own thread, of the sample class's notebooks (``submitted/``: correct and
  buggy ones, one drawn at random for each upload). Then it waits until the queue drains
  (every attempt graded, failed, superseded or refused), reading the service's queue
  (``.maxpool-grader/serve/queue.sqlite``, read-only), and prints what became of the
  uploads (lost: accepted, yet neither graded, superseded nor failed at the end; must be
  0), the wait from upload to graded, the drain time after the last upload, and the peak
  RSS of the service's process tree (the service, its workers, zygotes, kernels and
  sandboxes, summed, sampled every 0.2 s; pages shared after a fork count once per
  process, so it overstates the memory really used).

Finally it stops the service with SIGINT and checks that it exits (130) and leaves no
process behind. Not a test: it prints numbers (and exits 1 when an attempt was lost or
the service did not stop). About 4 minutes at full size; ``--quick`` in about a minute:

    .venv/bin/python benchmarks/bench_serve.py [--samples 10] [--students 100] [--uploads 200] [--seconds 60]
    .venv/bin/python benchmarks/bench_serve.py --quick
"""

from __future__ import annotations

import argparse
import collections
import csv
import html
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import requests

from maxpool_grader.names import ASSIGNMENT

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
POLICY = "\nc.Serve.attempts_per_hour = 1000\nc.Serve.attempts_per_day = 1000\n"
CORRECT = ("loop_correct", "noisy_correct", "vectorized_correct")  # the sample class's 15/15 students
FINAL = ("graded", "failed", "superseded", "refused")
POLL = 0.05  # s between two looks at an attempt's page (latency)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated between the closest ranks."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def samples() -> dict[str, bytes]:
    """The sample class's notebooks, by student id (what each id says it is)."""
    return {folder.name: (folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
            for folder in sorted((ROOT / "submitted").iterdir()) if (folder / ASSIGNMENT).is_dir()}


def build_course(course: Path, students: list[str]) -> None:
    """The course as an instructor clones it (as tests/helpers.py's copy_course), without
    submissions, with a roster of ``students`` and the attempt limits raised."""
    course.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "source", course / "source")
    (course / "exchange").mkdir()
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(POLICY)
    with open(course / "roster.csv", "w") as roster:
        roster.write("id,first_name,last_name,email\n"
                     + "".join(f"{student},{student},Student,{student}@example.edu\n" for student in students))


class Service:
    """One ``maxpool-grader serve`` of the course, its queue and its process tree's memory."""

    def __init__(self, course: Path):
        self.course, self.port = course, free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.log_path = course.parent / "serve.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115  open for the service's whole life
        self.process = subprocess.Popen(
            [str(BIN / "maxpool-grader"), "serve", "--course-dir", str(course), "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
        self.queue = course / ".maxpool-grader" / "serve" / "queue.sqlite"
        self.peak_rss, self.peak_processes = 0, 0
        self.seen: set[int] = set()  # every process of the tree ever sampled
        self._sampling = threading.Event()
        deadline = time.monotonic() + 300
        while "serve: web page on" not in self.output():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise SystemExit(f"the service did not start:\n{self.output()}")
            time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def attempts(self, after: int = 0) -> dict[int, dict]:
        """The attempts of the queue (read-only) with an id above ``after``."""
        db = sqlite3.connect(f"file:{self.queue}?mode=ro", uri=True, timeout=30)
        try:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT id, student, status, received, finished, message FROM attempts WHERE id>?",
                              (after,)).fetchall()
        finally:
            db.close()
        return {row["id"]: dict(row) for row in rows}

    def tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def rss(self) -> int:
        total = 0
        for process in self.tree():
            self.seen.add(process.pid)
            try:
                total += process.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def sample_memory(self) -> threading.Thread:
        """Sample the tree's RSS every 0.2 s until stop_sampling(); the peak is kept."""
        self.peak_rss = 0

        def sample() -> None:
            while not self._sampling.wait(0.2):
                self.peak_rss = max(self.peak_rss, self.rss())
        self._sampling.clear()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        return sampler

    def stop_sampling(self, sampler: threading.Thread) -> None:
        self._sampling.set()
        sampler.join()

    def stop(self, timeout: float = 60) -> tuple[int | None, float, list[str]]:
        """SIGINT; its exit status (None: still running after ``timeout``), the seconds it took,
        and the processes of its tree still alive 10 s later."""
        tree = self.tree()
        self.seen.update(process.pid for process in tree)
        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = None
        took = time.monotonic() - started
        deadline = time.monotonic() + 10
        while True:
            alive = [process for process in tree if _alive(process)]
            if not alive or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        left = [f"{process.pid} {' '.join(process.cmdline())[:100]}" for process in alive if _alive(process)]
        if status is None:
            self.process.kill()  # ours; its session's other processes die with it (die_with_parent)
            self.process.wait()
        self.log.close()
        return status, took, left


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Student:
    """A student logged in through their personal link: the session cookie and the form's xsrf token."""

    def __init__(self, service: Service, student: str, link: str):
        self.service, self.id = service, student
        session = requests.Session()
        home = session.get(link, timeout=60)
        if home.status_code != 200:
            raise SystemExit(f"{student}'s link answered {home.status_code}: {home.text[:500]}")
        self.xsrf = re.search(r'name="_xsrf" value="([^"]+)"', home.text).group(1)
        self.cookies = session.cookies.get_dict()

    def upload(self, content: bytes) -> requests.Response:
        """POST the notebook to /upload (a session of its own: uploads of one student may overlap)."""
        return requests.post(self.service.base + "upload", data={"_xsrf": self.xsrf}, cookies=self.cookies,
                             files={"notebook": (f"{ASSIGNMENT}.ipynb", content)}, allow_redirects=False,
                             timeout=120)

    def until_feedback(self, location: str, timeout: float = 300) -> float:
        """Poll the attempt's page (redirects followed) until it is the feedback page, answered
        200; the moment (time.monotonic()) it was."""
        deadline = time.monotonic() + timeout
        with requests.Session() as session:
            session.cookies.update(self.cookies)
            while True:
                page = session.get(self.service.base.rstrip("/") + location, timeout=60)
                if page.status_code == 200 and page.url.endswith("/feedback"):
                    return time.monotonic()
                if 'id="progress"' not in page.text:  # not the waiting page: failed or superseded, no feedback
                    raise SystemExit(f"{location} ended without feedback ({page.status_code}): {page.text[:800]}")
                if time.monotonic() > deadline:
                    raise SystemExit(f"{location}: no feedback after {timeout:.0f} s")
                time.sleep(POLL)


def one_submission(student: Student, content: bytes) -> float:
    """Seconds from the POST to the feedback page answered 200."""
    started = time.monotonic()
    sent = student.upload(content)
    if sent.status_code != 303:
        raise SystemExit(f"upload answered {sent.status_code}: {sent.text[:800]}")
    return student.until_feedback(sent.headers["Location"]) - started


def warm_up_all(students: list[Student], content: bytes) -> list[float]:
    """One upload per worker, all at once (each worker starts its zygotes on its first
    submission); the seconds of each, POST to feedback."""
    times: list[float] = []
    failed: list[str] = []  # what a thread's SystemExit said (a thread's exception is lost otherwise)

    def one(student: Student) -> None:
        try:
            times.append(one_submission(student, content))
        except SystemExit as stop:
            failed.append(str(stop))
    threads = [threading.Thread(target=one, args=(student,)) for student in students]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed or len(times) != len(threads):
        raise SystemExit("a warm-up upload got no feedback: " + "; ".join(failed))
    return sorted(times)


def refusal(answer: requests.Response) -> str:
    """What a refused upload's page says, shortened to its first sentence, with the HTTP status."""
    found = re.search(r'role="alert"><strong>Not accepted.</strong> (.*?)</p>', answer.text, re.S)
    text = html.unescape(found.group(1)) if found else answer.text[:80]
    return f"HTTP {answer.status_code}: {text.split('. ')[0][:70]}"


def rush(service: Service, students: list[Student], uploads: int, seconds: float, seed: int) -> dict:
    """``uploads`` uploads spread uniformly at random over ``seconds``; until the queue has drained."""
    chance = random.Random(seed)
    notebooks = samples()
    plan = sorted([(chance.uniform(0, seconds), students[number % len(students)], chance.choice(sorted(notebooks)))
                   for number in range(uploads)], key=lambda item: item[0])
    before = max(service.attempts(), default=0)
    sent: list[dict] = []
    lock = threading.Lock()
    start = time.monotonic() + 1.0
    wall = time.time() - time.monotonic()  # time.monotonic() + wall: the queue's clock (time.time())

    def upload(offset: float, student: Student, sample: str) -> None:
        time.sleep(max(0.0, start + offset - time.monotonic()))
        posted = time.monotonic()
        record = {"student": student.id, "sample": sample, "posted": posted}
        try:
            answer = student.upload(notebooks[sample])
            record["status"] = answer.status_code
            if answer.status_code == 303:
                record["id"] = int(answer.headers["Location"].rstrip("/").rsplit("/", 1)[1])
            else:
                record["refused"] = refusal(answer)
        except requests.RequestException as problem:
            record["status"], record["error"] = None, f"{type(problem).__name__}: {problem}"[:120]
        record["answered"] = time.monotonic()
        with lock:
            sent.append(record)

    sampler = service.sample_memory()
    threads = [threading.Thread(target=upload, args=item) for item in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    last_upload = max(record["answered"] for record in sent)
    accepted = {record["id"]: record for record in sent if "id" in record}
    drain_timeout = 1800
    while True:  # until every attempt of the rush is final (the queue's own view)
        rows = service.attempts(before)
        if all(row["status"] in FINAL for row in rows.values()) and set(accepted) <= set(rows):
            break
        if time.monotonic() - last_upload > drain_timeout or service.process.poll() is not None:
            break  # a hang or a crash: reported as lost below
        time.sleep(0.2)
    drained = time.monotonic()
    service.stop_sampling(sampler)
    statuses = collections.Counter(rows[number]["status"] if number in rows else "missing" for number in accepted)
    waits = [rows[number]["finished"] - (record["posted"] + wall) for number, record in accepted.items()
             if rows.get(number, {}).get("status") == "graded"]
    last_finished = max((row["finished"] for row in rows.values() if row["finished"]), default=None)
    return {
        "sent": sent, "accepted": accepted, "statuses": statuses, "waits": waits, "rows": rows,
        "refused": collections.Counter(record["refused"] for record in sent if "refused" in record),
        "errors": collections.Counter(record["error"] for record in sent if "error" in record),
        "lost": sorted(number for number in accepted if rows.get(number, {}).get("status") not in FINAL[:3]),
        "drain": (last_finished - (last_upload + wall)) if last_finished else None,
        "drain_polled": drained - last_upload, "span": last_upload - start,
        "answer_times": [record["answered"] - record["posted"] for record in sent],
        "peak_rss": service.peak_rss, "hung": drained - last_upload > drain_timeout,
        "correct": sum(record["sample"] in CORRECT for record in sent),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10, help="latency: uploads one after another (default 10)")
    parser.add_argument("--students", type=int, default=100, help="the roster, all in the rush (default 100)")
    parser.add_argument("--uploads", type=int, default=200, help="rush: uploads in all (default 200)")
    parser.add_argument("--seconds", type=float, default=60, help="rush: spread over these seconds (default 60)")
    parser.add_argument("--seed", type=int, default=2026, help="rush: the moments and notebooks drawn (default 2026)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run of about a minute: 3 samples, 20 uploads from 10 students in 10 s")
    parser.add_argument("--keep", action="store_true", help="keep the temporary course (and serve.log) and say where")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.students, args.uploads, args.seconds = 3, 10, 20, 10
    work = Path(tempfile.mkdtemp(prefix="maxpool-bench-serve-"))
    course = work / "course"
    ids = [f"s{number:03d}" for number in range(args.students)]
    build_course(course, ids)
    load = os.getloadavg()[0]
    started = time.monotonic()
    service = Service(course)
    failed = False
    try:
        startup = time.monotonic() - started
        subprocess.run([str(BIN / "maxpool-grader"), "tokens", "--base-url", service.base, "--course-dir",
                        str(course), "--out", "tokens.csv"], check=True, capture_output=True, env=ENV)
        with open(course / "tokens.csv") as handle:
            links = {row["student_id"]: row["link"] for row in csv.DictReader(handle)}
        students = [Student(service, student, links[student]) for student in ids]
        idle_rss = service.rss()

        correct = samples()["loop_correct"]
        workers = min(os.cpu_count() or 1, len(students))  # serve's default: one worker per core
        warm_up = warm_up_all(students[:workers], correct)
        latencies = [one_submission(students[0], correct) for _ in range(args.samples)]
        found = rush(service, students, args.uploads, args.seconds, args.seed)
    finally:
        status, took, left = service.stop()
        log = service.log_path.read_text()
        if args.keep:
            print(f"kept: {work} (the service's log: {service.log_path})")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\nmaxpool-grader serve, {os.cpu_count()} cores, default workers ({workers}); load average "
          f"{load:.2f} at the start; the service started (release, roster) in {startup:.1f} s")
    print(f"\nlatency: one correct notebook, idle service, POST to feedback page 200 (poll every {POLL * 1000:.0f} ms)")
    print(f"{f'warm-up: {len(warm_up)} uploads at once (one a worker)':44}"
          + "   ".join(f"{seconds:.2f} s" for seconds in warm_up) + "   (each worker starts its zygotes)")
    print(f"{f'{args.samples} uploads one after another:':44}"
          f"p50 {percentile(latencies, 50):.2f} s   p95 {percentile(latencies, 95):.2f} s   "
          f"min {min(latencies):.2f} s   max {max(latencies):.2f} s   (target: p50 <= 2 s: "
          f"{'met' if percentile(latencies, 50) <= 2 else 'NOT met'})")

    n = len(found["sent"])
    print(f"\nrush: {n} uploads from {len(students)} students over {args.seconds:g} s (seed {args.seed}; "
          f"{found['correct']} correct notebooks, {n - found['correct']} buggy; the last upload answered "
          f"{found['span']:.1f} s after the first was due)")
    answers = found["answer_times"]
    rows = [("accepted (303)", len(found["accepted"]))]
    rows += [(f"refused, {reason}", count) for reason, count in sorted(found["refused"].items())]
    if not found["refused"]:
        rows.append(("refused", 0))
    rows += [(f"no answer, {error}", count) for error, count in sorted(found["errors"].items())]
    rows += [(status, found["statuses"].get(status, 0)) for status in ("graded", "superseded", "failed")]
    rows += [(f"  {status}", count) for status, count in found["statuses"].items() if status not in FINAL]
    rows.append(("lost (accepted, not graded/superseded/failed)", len(found["lost"])))
    for label, count in rows:
        print(f"{label:60}{count:>6}")
    waits = found["waits"]
    if waits:
        print(f"{'wait, upload to graded':44}p50 {percentile(waits, 50):6.1f} s   p95 {percentile(waits, 95):6.1f} s"
              f"   max {max(waits):6.1f} s")
    print(f"{'upload answered (POST to 303/refusal)':44}p50 {percentile(answers, 50):6.2f} s   "
          f"p95 {percentile(answers, 95):6.2f} s   max {max(answers):6.2f} s")
    drain = found["drain"]
    print(f"{'drain: last upload to last attempt final':44}{drain:6.1f} s" if drain is not None else "drain: -")
    print(f"{'peak RSS, service process tree (summed)':44}{found['peak_rss'] / 2**20:6.0f} MiB   "
          f"(idle, before the first upload: {idle_rss / 2**20:.0f} MiB; {len(service.seen)} processes seen)")
    print(f"\nstopped with SIGINT: exit {status} after {took:.1f} s; "
          + (f"{len(left)} processes of its tree still alive: {left}" if left else "nothing of its tree left"))
    odd = [line for line in log.splitlines() if "FAILED" in line or "Traceback" in line or "Error" in line]
    if odd:
        print(f"\nthe service's log says ({len(odd)} lines):\n  " + "\n  ".join(odd[:20]))
    if found["lost"]:
        failed = True
        print(f"\nLOST attempts: {found['lost']}: "
              + "; ".join(f"{number}: {found['rows'].get(number, {}).get('status', 'not in the queue')}"
                          for number in found["lost"][:10]))
    if found["hung"]:
        failed = True
        print("\nthe queue did not drain within 30 minutes of the last upload")
    if status != 130 or left or found["errors"]:
        failed = True
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
