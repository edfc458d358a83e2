"""Benchmark: grading a class on a Dask cluster against the local pool.

Builds a class of N submissions (default 40, cycling through the sample class, as
bench_grading.py does) and grades a copy of it three times: with `maxpool-grader grade`'s
local pool, and with `--cluster` on a Dask scheduler with one and with two workers
(`dask worker --nworkers 1 --nthreads 1` each, on this machine), against a PostgreSQL
gradebook when --postgres URL is given, else SQLite. Prints seconds per submission (until
the last is graded, its feedback included), the coordinator's time to record one
submission in the gradebook (its write rate bounds any cluster), and the whole command's
time. Checks that the grades are equal. Not a test: it prints numbers.

    .venv/bin/python benchmarks/bench_cluster.py [--students 40] [--postgres postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grading import BIN, ENV, build_class  # noqa: E402

from maxpool_grader.grading.report import gradebook_table  # noqa: E402


def free_port() -> int:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_cluster(home: Path, workers: int) -> tuple[str, list[subprocess.Popen]]:
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], cwd=home, env=ENV, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    time.sleep(3)
    for number in range(workers):
        folder = home / f"worker{number}"
        folder.mkdir()
        processes.append(subprocess.Popen(
            [str(BIN / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
             "--local-directory", str(folder)], cwd=folder, env=dict(ENV, TMPDIR=str(folder)),
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from distributed import Client
    with Client(address, timeout=30) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, processes


def grade(course: Path, db: list[str], *extra: str) -> dict:
    started = time.monotonic()
    subprocess.run([str(BIN / "maxpool-grader"), "grade", "--course-dir", str(course), *db, *extra], env=ENV,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timings = json.loads((course / ".maxpool-grader" / "last_run.json").read_text())
    return dict(timings, total_seconds=time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL whose database may be dropped and made")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="maxpool-bench-cluster-"))
    results, tables = {}, []
    try:
        for label, workers in (("local pool (2 processes)", 0), ("Dask, 1 worker", 1), ("Dask, 2 workers", 2)):
            course = work / f"course{workers}"
            build_class(course, args.students)
            db = []
            if args.postgres:
                url = args.postgres.rsplit("/", 1)[0] + f"/bench_cluster_{workers}"
                db = ["--db", url]
            processes = []
            try:
                extra = []
                if workers:
                    home = work / f"cluster{workers}"
                    home.mkdir()
                    address, processes = start_cluster(home, workers)
                    extra = ["--cluster", address]
                results[label] = grade(course, db, *extra)
            finally:
                for process in processes:
                    os.killpg(process.pid, signal.SIGKILL)
            tables.append(gradebook_table(db[1] if db else f"sqlite:///{course / 'gradebook.db'}")[1])
        n = args.students
        print(f"\n{n} submissions, {os.cpu_count()} cores, gradebook: {'PostgreSQL' if args.postgres else 'SQLite'}")
        print(f"{'':30}{'autograde s':>12}{'s/submission':>14}{'record ms':>11}{'whole command s':>17}")
        for label, timing in results.items():
            record = timing.get("record_seconds_mean")
            print(f"{label:30}{timing['autograde_seconds']:>12.1f}{timing['autograde_seconds'] / n:>14.2f}"
                  f"{'' if record is None else f'{1000 * record:.0f}':>11}{timing['total_seconds']:>17.1f}")
        equal = all(table == tables[0] for table in tables)
        print(f"grades equal: {'yes' if equal else 'NO'}")
        if not equal:
            sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
