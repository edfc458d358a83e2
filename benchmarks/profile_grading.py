"""Profile: where every core-second of a `maxpool-grader grade` run goes, in all its processes.

Builds a class of N submissions (as bench_grading.py does), runs `maxpool-grader grade` on it
and accounts the CPU time (user + system) of every process the run started, however short
lived: the coordinator, the grading workers, the zygotes, each kernel and verdict process and
their bubblewrap sandboxes, the nbgrader subprocesses. As root it switches on the kernel's
BSD process accounting (acct(2)) for the run, which writes one record per process that ends,
with its CPU time, even for processes that no one waits for (a zygote's children); a thread
polls the run's process tree meanwhile to name each long-lived process by its command line
and to sum the tree's memory. Without root it counts what that poll sees (approximate: a
process's last tenth of a second is lost).

Each process's CPU is put in one row by what it is (a child of a kernel zygote is a kernel,
...); the coordinator's and the workers' own time is split further by what
`maxpool-grader grade` records of its steps and jobs (.maxpool-grader/last_run.json).
Prints the table in core-seconds, total and per submission. Not a test: it prints numbers.

    .venv/bin/python benchmarks/profile_grading.py [--students 40] [--workers N] [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grading import BIN, ENV, build_class  # noqa: E402

from maxpool_grader.names import ASSIGNMENT  # noqa: E402
from maxpool_grader.sandbox import cgroups  # noqa: E402

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h), 64 bytes
AHZ = 100  # acct's clock ticks per second


def _comp_t(value: int) -> int:
    """acct's 16-bit float: a 13-bit mantissa and a base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


class Accounting:
    """The kernel's process accounting into a file for the length of a ``with``; ``records()``
    gives (pid, ppid, comm, cpu seconds, start) of each process that ended meanwhile, in order."""

    def __init__(self, path: Path):
        self.path, self.libc = path, ctypes.CDLL(None, use_errno=True)

    def __enter__(self):
        self.path.touch()
        if self.libc.acct(str(self.path).encode()) != 0:
            raise OSError(ctypes.get_errno(), "acct(2): needs root and CONFIG_BSD_PROCESS_ACCT")
        return self

    def __exit__(self, *_):
        self.libc.acct(None)

    def records(self) -> list[tuple]:
        data, found = self.path.read_bytes(), []
        for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
            fields = RECORD.unpack_from(data, offset)
            if fields[1] & 0x7F != 3:
                continue
            pid, ppid, started = fields[6], fields[7], fields[8]
            cpu = (_comp_t(fields[10]) + _comp_t(fields[11])) / AHZ
            found.append((pid, ppid, fields[18].rstrip(b"\0").decode(errors="replace"), cpu, started))
        return found


class CpuGroup:
    """A cgroup v1 ``cpuacct`` group of its own for the run (as root): the exact CPU time of all
    its processes together, the ones too short for acct's 10 ms ticks included."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self, name: str = "profile"):
        self.path = self.ROOT / f"maxpool-{name}-{os.getpid()}-{time.monotonic_ns()}"

    def __enter__(self):
        self.path.mkdir()
        return self

    def join(self) -> None:
        """Put the calling process in the group (a preexec_fn: before the program starts)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def __exit__(self, *_):
        for _ in range(50):
            try:
                cgroups.sweep(self.path)  # the boxes' cgroups its ended grading workers left below it
                self.path.rmdir()
                return
            except OSError:  # a process not reaped yet
                time.sleep(0.1)

    @classmethod
    def available(cls) -> bool:
        return os.geteuid() == 0 and (cls.ROOT / "cpuacct.usage").exists()


class TreeWatch(threading.Thread):
    """Polls the process tree of ``root``: each process's command line and last CPU time, and
    the peak of the tree's memory (RSS summed, and the largest process)."""

    def __init__(self, root: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.root, self.interval, self.stop = psutil.Process(root), interval, threading.Event()
        self.seen: dict[int, dict] = {}
        self.peak_rss = self.peak_process_rss = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                processes = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for process in processes:
                try:
                    with process.oneshot():
                        times, rss = process.cpu_times(), process.memory_info().rss
                        entry = self.seen.setdefault(process.pid, {
                            "cmdline": " ".join(process.cmdline()), "ppid": process.ppid(),
                            "started": process.create_time(), "comm": process.name()})
                        entry["cpu"] = times.user + times.system
                except psutil.Error:
                    continue
                total += rss
                self.peak_process_rss = max(self.peak_process_rss, rss)
            self.peak_rss = max(self.peak_rss, total)
            self.stop.wait(self.interval)


def _roles(cmdline: str, comm: str, inherited: str) -> tuple[str, str]:
    """(this process's row, its children's) from what it runs; ``inherited``: its parent's
    children's row."""
    if "kernel_zygote" in cmdline:
        return "zygotes: their start", "kernels"
    if "untrusted.py" in cmdline:
        return ("zygotes: their start", "verdict processes") if "--zygote" in cmdline else ("verdict processes",) * 2
    if "ipykernel_launcher" in cmdline:
        return ("kernels",) * 2
    if "nbgraderapp import main" in cmdline:
        command = (cmdline.split("sys.exit(main())", 1)[-1].split() or ["?"])[0]
        return (f"nbgrader {command} (a process of its own)",) * 2
    if "alembic" in cmdline:
        return ("alembic (a new gradebook)",) * 2
    if comm in ("bwrap", "sh", "prlimit", "setpriv"):
        return "sandboxes (bwrap, holder)", inherited
    return inherited, inherited


def _tree(records: list[tuple], root: int, seen: dict[int, dict]) -> tuple[int, dict[int, list[int]]]:
    """The record of ``root`` and each record's children. A process's parent is the one the poll
    saw while both lived (a zygote outlives its worker and ends as a child of pid 1), else the
    one its record names; of the records with that pid, the last one started before it."""
    by_pid: dict[int, list[int]] = defaultdict(list)
    for index, (pid, *_) in enumerate(records):
        by_pid[pid].append(index)
    children: dict[int, list[int]] = defaultdict(list)
    for index, (pid, ppid, _, _, started) in enumerate(records):
        polled = seen.get(pid)
        if polled and abs(polled["started"] - started) < 3:
            ppid = polled["ppid"]
        candidates = [other for other in by_pid.get(ppid, []) if records[other][4] <= started + 1]
        if candidates:
            children[max(candidates, key=lambda other: records[other][4])].append(index)
    roots = [index for index in by_pid.get(root, [])]
    if not roots:
        raise RuntimeError("the run's first process left no accounting record")
    return roots[-1], children


def attribute(records: list[tuple], root: int, seen: dict[int, dict]) -> dict[str, float]:
    """Core-seconds per row: the run's processes are the tree of ``root``, each classified by
    ``_roles``."""
    root_index, children = _tree(records, root, seen)
    rows: dict[str, float] = defaultdict(float)
    stack = [(root_index, "coordinator", None)]
    while stack:
        index, inherited, parent_cmdline = stack.pop()
        pid, _, comm, cpu, started = records[index]
        polled = seen.get(pid)
        cmdline = polled["cmdline"] if polled and abs(polled["started"] - started) < 3 else None
        if index == root_index:
            row, below = "coordinator", "grading workers"
        elif cmdline is None or cmdline == parent_cmdline:  # a fork: what its parent forks
            row, below = (_roles("", comm, inherited) if comm in ("bwrap", "sh") else (inherited, inherited))
        else:
            row, below = _roles(cmdline, comm, inherited)
        rows[row] += cpu
        stack.extend((child, below, cmdline or parent_cmdline) for child in children.get(index, []))
    return dict(rows)


def split_own_time(rows: dict[str, float], timings: dict) -> dict[str, float]:
    """The coordinator's and the workers' rows split by the steps and jobs grade records."""
    rows = dict(rows)
    steps = {name: step["cpu_seconds"] for name, step in timings.get("steps", {}).items()}
    coordinator = rows.pop("coordinator", 0.0)
    parts = {"coordinator: Python's start and imports": timings.get("start_cpu_seconds", 0.0)}
    parts.update({f"coordinator: {name}": seconds for name, seconds in steps.items()})
    parts["coordinator: the rest (score table, exit)"] = coordinator - sum(parts.values())
    workers = rows.pop("grading workers", 0.0)
    jobs = {}
    for kind in ("autograde", "feedback"):  # a job's usual cost; the rest is each worker's first use
        seconds = timings.get(f"{kind}_jobs_cpu_seconds", [])
        jobs[f"grading workers: {kind} jobs"] = statistics.median(seconds) * len(seconds) if seconds else 0.0
        jobs[f"grading workers: first {kind} jobs' extra (imports, caches)"] = sum(seconds) - jobs[
            f"grading workers: {kind} jobs"]
    jobs["grading workers: their start and the rest"] = workers - sum(jobs.values())
    return {**rows, **parts, **jobs}


SHORT = "sandboxes: bwrap, holders, forks (short processes: the cgroup's total less the records)"
PER_SUBMISSION = ("grading workers: autograde jobs", "grading workers: feedback jobs", "kernels", "verdict processes",
                  "sandboxes (bwrap, holder)", SHORT)


def table(rows: dict[str, float], students: int) -> str:
    """Markdown: per-submission rows first (core-seconds per submission), then the fixed costs."""
    lines = ["| where | core-seconds | per submission |", "|---|---|---|"]
    per = [name for name in PER_SUBMISSION if name in rows]
    fixed = sorted((name for name in rows if name not in per), key=lambda name: -rows[name])
    for name in per + fixed:
        lines.append(f"| {name} | {rows[name]:.2f} | {rows[name] / students:.3f} |")
    lines.append(f"| **per-submission rows** | {sum(rows[n] for n in per):.2f} | "
                 f"{sum(rows[n] for n in per) / students:.3f} |")
    lines.append(f"| **fixed rows** | {sum(rows[n] for n in fixed):.2f} | |")
    lines.append(f"| **all** | {sum(rows.values()):.2f} | {sum(rows.values()) / students:.3f} |")
    return "\n".join(lines)


def machine_busy() -> float:
    """Core-seconds the whole machine has been busy (/proc/stat: everything, the kernel's
    own threads and other users' processes included)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def profile(course: Path, workers: int | None, work: Path, env: dict | None = None) -> dict:
    """Run grade in ``course`` under accounting; its rows, wall time and memory."""
    command = [str(BIN / "python"), "-m", "maxpool_grader.cli.main", "grade",
               *(["--workers", str(workers)] if workers else [])]
    accounting = Accounting(work / "acct") if os.geteuid() == 0 else None
    group = CpuGroup() if CpuGroup.available() else None
    with accounting or _Nothing(), group or _Nothing():
        started, busy = time.monotonic(), machine_busy()
        process = subprocess.Popen(command, cwd=course, env=env or ENV, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, preexec_fn=group.join if group else None)
        watch = TreeWatch(process.pid)
        watch.start()
        code = process.wait()
        wall, busy = time.monotonic() - started, machine_busy() - busy
        watch.stop.set()
        watch.join()
        time.sleep(0.5)  # the last records are written as the processes are reaped
        total = group.seconds() if group else None
    if code != 0:
        raise RuntimeError(f"maxpool-grader grade exited with {code}")
    if accounting is not None:
        rows = attribute(accounting.records(), process.pid, watch.seen)
    else:  # what the poll saw
        records = [(pid, entry["ppid"], entry["comm"], entry.get("cpu", 0.0), entry["started"])
                   for pid, entry in sorted(watch.seen.items(), key=lambda item: -item[1]["started"])]
        rows = attribute(records, process.pid, watch.seen)
    timings = json.loads((course / ".maxpool-grader" / "last_run.json").read_text())
    if total is not None:  # what the records miss: processes under 10 ms each (bwrap, its shell ...)
        rows[SHORT] = total - sum(rows.values()) + rows.pop("sandboxes (bwrap, holder)", 0.0)
    return {"rows": split_own_time(rows, timings), "wall_seconds": wall, "timings": timings, "machine_busy": busy,
            "peak_rss_mib": watch.peak_rss / 2**20, "peak_process_rss_mib": watch.peak_process_rss / 2**20,
            "exact": accounting is not None}


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None


def compare(before: dict, after: dict) -> str:
    """Markdown: two profiles (--json files) side by side, per submission, then the fixed costs."""
    per = [name for name in PER_SUBMISSION if name in before["rows"] or name in after["rows"]]
    fixed = sorted({*before["rows"], *after["rows"]} - set(per),
                   key=lambda name: -max(before["rows"].get(name, 0), after["rows"].get(name, 0)))
    n = before["students"], after["students"]
    cell = lambda found, name, count=1: "–" if name not in found["rows"] else f"{found['rows'][name] / count:.3f}"  # noqa
    lines = ["| core-seconds | before | after |", "|---|---|---|"]
    lines += [f"| {name}, per submission | {cell(before, name, n[0])} | {cell(after, name, n[1])} |" for name in per]
    total = lambda found, names, count=1: sum(found["rows"].get(name, 0) for name in names) / count  # noqa
    lines.append(f"| **per submission** | **{total(before, per, n[0]):.3f}** | **{total(after, per, n[1]):.3f}** |")
    lines += [f"| {name} | {cell(before, name)} | {cell(after, name)} |" for name in fixed]
    lines.append(f"| **fixed, per run** | **{total(before, fixed):.2f}** | **{total(after, fixed):.2f}** |")
    everything = [sum(found["rows"].values()) for found in (before, after)]
    lines.append(f"| **all, per run** | **{everything[0]:.2f}** | **{everything[1]:.2f}** |")
    for label, key, form in (("whole command, wall seconds", "wall_seconds", "{:.1f}"),
                             ("the machine busy meanwhile, core-seconds", "machine_busy", "{:.1f}"),
                             ("peak memory of the process tree, MiB (RSS summed)", "peak_rss_mib", "{:.0f}"),
                             ("load average (1 min) before", "load", "{:.2f}")):
        lines.append(f"| {label} | {form.format(before[key])} | {form.format(after[key])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=None, help="for maxpool-grader (default: cores)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--package", type=Path, default=None,
                        help="profile the copy of maxpool_grader in this folder (an earlier version, say)")
    parser.add_argument("--config", type=Path, default=None,
                        help="grade with this nbgrader_config.py (an earlier version, say) instead of the course's")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                        help="print two profiles written with --json side by side, and nothing else")
    args = parser.parse_args()
    if args.compare:
        print(compare(*(json.loads(path.read_text()) for path in args.compare)))
        return
    env = dict(ENV, PYTHONPATH=str(args.package.resolve())) if args.package else None
    work = Path(tempfile.mkdtemp(prefix="maxpool-profile-"))
    try:
        course = work / "course"
        build_class(course, args.students)
        if args.config:
            shutil.copyfile(args.config, course / "nbgrader_config.py")
        subprocess.run([str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT], cwd=course, env=ENV,
                       check=True, capture_output=True)
        load = os.getloadavg()[0]
        found = profile(course, args.workers, work, env)
        print(f"{args.students} submissions, {os.cpu_count()} cores, load before {load:.2f}, "
              f"{'acct(2): every process' if found['exact'] else 'polled: approximate'}")
        print(table(found["rows"], args.students))
        print(f"\nthe whole machine was busy {found['machine_busy']:.1f} core-seconds meanwhile (the kernel's own "
              "threads and other users' processes included)")
        print(f"whole command: {found['wall_seconds']:.1f} s wall; peak memory of the tree "
              f"{found['peak_rss_mib']:.0f} MiB (RSS summed), largest process {found['peak_process_rss_mib']:.0f} MiB")
        steps = found["timings"].get("steps", {})
        print("steps (wall s):", ", ".join(f"{name} {step['seconds']:.1f}" for name, step in steps.items()))
        if args.json:
            args.json.write_text(json.dumps(dict(found, students=args.students, load=load), indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
