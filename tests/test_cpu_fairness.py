"""The box's CPU share and how a verdict's time limit is judged on it (docs/security.md#cpu-share):
the judgement of an interval alone (unit), a box's quota on real cgroups, and verdicts in a box
that is owed one CPU but receives a tenth of it (its quota cut from outside, as a machine that
others keep busy would starve it): a slow function's timeout there is a grader fault after its
tries, never a fail, while a function that sleeps is still the student's timeout."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maxpool_grader.sandbox import cgroups, cpushare
from maxpool_grader.sandbox.box import Box, Caps, GraderFault
from maxpool_grader.verdict.fairness import STARVED_TRIES
from maxpool_grader.verdict.process import Limits, untrusted_process_wrapper
from maxpool_grader.verdict.verdicts import VerdictKind, verdicts

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from make_sample_class import LOOP_CORRECT  # noqa: E402

SLOW = LOOP_CORRECT.replace("    x = np.asarray(x)\n", (
    "    import time as _time\n"
    "    _spent = _time.thread_time()\n"
    "    while _time.thread_time() - _spent < 0.03:\n"
    "        pass\n"
    "    x = np.asarray(x)\n"), 1)
VERY_SLOW = SLOW.replace("< 0.03:", "< 0.1:")  # a second of CPU time a test at least
SLEEPS = LOOP_CORRECT.replace("    x = np.asarray(x)\n", "    import time as _time\n    _time.sleep(60)\n", 1)
TESTS = ["hidden_overlapping_windows"]
LIMITS = Limits(check_seconds=1.5, search_seconds=1.5, load_seconds=10.0, total_seconds=30.0)


@pytest.mark.unit
@pytest.mark.parametrize(("used", "waited", "seconds", "fair", "starved"), [
    (1.5, 0.4, 2.0, True, False),  # it ran: its timeout is its own
    (0.2, 1.7, 2.0, False, True),  # ready to run, but others held the CPU: the grader's fault
    (0.01, 0.0, 2.0, False, False),  # it slept: its timeout is its own
    (0.05, 0.25, 0.3, False, False),  # too short to say (the last of a notebook's time)
])
def test_an_interval_is_fair_starved_or_neither(used, waited, seconds, fair, starved):
    interval = cpushare.Interval(seconds, used, waited, 1.0)
    assert (interval.fair(), interval.starved()) == (fair, starved)
    assert interval.credit() == (seconds if starved else 0.0 if fair else min(seconds, waited))
    assert "received" in interval.sentence() and "owed" in interval.sentence()


@pytest.mark.unit
def test_a_box_is_owed_its_quota_when_less_than_one_cpu():
    interval = cpushare.Interval(2.0, 0.3, 1.7, 0.25)  # a quarter CPU: half of it is 0.25 s
    assert interval.owed == pytest.approx(0.25) and interval.fair()


@pytest.mark.unit
@pytest.mark.parametrize("together", [True, False], ids=["cpu,cpuacct", "apart"])
def test_v1_boxes_join_the_cpu_hierarchies_once_each(monkeypatch, tmp_path, together):
    """cpu and cpuacct mounted together are one hierarchy (one directory a box enters), apart two;
    neither is needed: without them the memory and pids hierarchies are the box."""
    def mount(*controllers):
        return str(tmp_path / ",".join(controllers)), "cgroup", {"rw", *controllers}

    table = [mount("memory"), mount("pids")]
    table += [mount("cpu", "cpuacct")] if together else [mount("cpu"), mount("cpuacct")]
    monkeypatch.setattr(cgroups, "mounts", lambda: table)
    monkeypatch.setattr(cgroups, "_own_paths", lambda: dict.fromkeys(("memory", "pids", "cpu", "cpuacct"), "/"))
    monkeypatch.setattr(cgroups, "_writable", lambda directory: True)
    found = cgroups._v1_bases()
    assert sorted(found) == (["cpu", "memory", "pids"] if together else ["cpu", "cpuacct", "memory", "pids"])
    monkeypatch.setattr(cgroups, "mounts", lambda: table[:2])
    assert sorted(cgroups._v1_bases()) == ["memory", "pids"]


def _box() -> Box:
    if not cgroups.cpu_share_available():
        pytest.skip("no cpu controller for the boxes here (docs/security.md#cpu-share)")
    return Box(Caps(), mode="required")


@pytest.mark.integration
def test_four_spinners_in_a_box_share_its_one_cpu():
    box = _box()
    try:
        assert box.cgroup.cpus == 1.0
        spinners = [subprocess.Popen(box.cgroup.enter_argv() + [sys.executable, "-c", "while True: pass"])
                    for _ in range(4)]
        time.sleep(0.5)
        before = cpushare.sample(box.cgroup)
        time.sleep(2.0)
        interval = cpushare.between(before, cpushare.sample(box.cgroup), 1.0)
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        print(interval)
        assert 0 < interval.used <= 1.15 * interval.seconds  # one CPU at most, however busy the machine
        if box.cgroup.version == 2:
            assert (box.cgroup.directories[""] / "cpu.max").read_text().split() == ["100000", "100000"]
        else:
            quota = [(box.cgroup.directories["cpu"] / name).read_text().strip() for name in
                     ("cpu.cfs_quota_us", "cpu.cfs_period_us")]
            assert quota == ["100000", "100000"]
    finally:
        box.close()


def _starved_wrap(fraction: float):
    """A verdict's sandbox in a box owed one CPU whose quota is cut to ``fraction`` of one."""
    box = _box()
    quota = str(round(fraction * cgroups.CPU_PERIOD_US))
    if box.cgroup.version == 2:
        (box.cgroup.directories[""] / "cpu.max").write_text(f"{quota} {cgroups.CPU_PERIOD_US}")
    else:
        (box.cgroup.directories["cpu"] / "cpu.cfs_quota_us").write_text(quota)
    return untrusted_process_wrapper("required", logging.getLogger(__name__), box)


@pytest.mark.integration
def test_a_starved_slow_function_is_a_grader_fault_after_its_tries_never_a_fail():
    wrap = _starved_wrap(0.1)
    started = time.monotonic()
    try:
        with pytest.raises(GraderFault) as fault:
            verdicts(VERY_SLOW, helpers="import numpy as np", grade_ids=TESTS, limits=LIMITS, wrap=wrap)
    finally:
        wrap.box.close()
    print(f"{time.monotonic() - started:.1f} s: {fault.value}")
    assert f"did not receive its share of the CPU in {STARVED_TRIES} tries" in str(fault.value)
    assert "Grade again when the machine is less busy, or with fewer --workers" in str(fault.value)


@pytest.mark.integration
def test_a_function_that_sleeps_in_a_starved_box_still_times_out_as_its_own():
    wrap = _starved_wrap(0.1)
    try:
        found = verdicts(SLEEPS, helpers="import numpy as np", grade_ids=TESTS, limits=LIMITS, wrap=wrap)
    finally:
        wrap.box.close()
    verdict = found[TESTS[0]]
    assert (verdict.passed, verdict.kind) == (False, VerdictKind.TIMEOUT.value), verdict
    assert "did not return within 1.5 s" in verdict.message


@pytest.mark.integration
def test_an_endless_loop_times_out_as_its_own_in_a_box_that_gets_its_share():
    wrap = untrusted_process_wrapper("required", logging.getLogger(__name__), _box())
    try:
        found = verdicts(LOOP_CORRECT.replace("    x = np.asarray(x)\n", "    while True:\n        pass\n", 1),
                         helpers="import numpy as np", grade_ids=TESTS, limits=LIMITS, wrap=wrap)
    finally:
        wrap.box.close()
    verdict = found[TESTS[0]]
    assert (verdict.passed, verdict.kind) == (False, VerdictKind.TIMEOUT.value), verdict


@pytest.mark.integration
def test_the_slow_function_passes_in_a_box_that_gets_its_share():
    box = _box()
    wrap = untrusted_process_wrapper("required", logging.getLogger(__name__), box)
    try:
        found = verdicts(SLOW, helpers="import numpy as np", grade_ids=TESTS, limits=Limits(), wrap=wrap)
    finally:
        box.close()
    assert found[TESTS[0]].passed, found[TESTS[0]].message

