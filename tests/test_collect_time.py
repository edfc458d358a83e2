"""The time a collected submission counts as made, and its copy without links
(maxpool_grader/glue/collecttime.py); nbgrader's collect itself is in test_exchange_route."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from maxpool_grader.glue.collecttime import (
    SLACK,
    SetAside,
    TooBig,
    aside_of,
    last_change,
    put_back,
    recover_interrupted_collects,
    regular_copy,
    submitted_at,
)
from maxpool_grader.glue.submission import timestamp_text

pytestmark = pytest.mark.unit

NOON = datetime(2026, 11, 28, 12, 0, 0)


def test_a_stated_time_stands_unless_the_files_changed_later_than_the_slack():
    assert submitted_at(NOON, NOON + SLACK) == NOON
    assert submitted_at(NOON, NOON - timedelta(days=1)) == NOON  # stated later than the change: kept
    assert submitted_at(NOON, NOON + SLACK + timedelta(seconds=1)) == NOON + SLACK + timedelta(seconds=1)
    assert submitted_at(None, NOON) == NOON
    assert submitted_at(NOON, None) == NOON


def test_the_last_change_is_the_newest_inside_never_a_link_s_target(tmp_path):
    folder = tmp_path / "submission"
    (folder / "deep" / "deeper").mkdir(parents=True)
    (folder / "deep" / "deeper" / "notebook.ipynb").write_text("{}")
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    (folder / "link").symlink_to(outside)
    first = last_change(str(folder))
    time.sleep(0.05)
    outside.write_text("changed")  # the target's change is not the submission's
    assert last_change(str(folder)) == first
    time.sleep(0.05)
    (folder / "deep" / "deeper" / "notebook.ipynb").write_text('{"changed": 1}')
    later = last_change(str(folder))
    assert later > first
    assert abs((datetime.utcnow() - later).total_seconds()) < 5
    assert last_change(str(tmp_path / "missing")) is None


def test_the_text_parses_back_to_the_same_moment():
    from nbgrader.utils import parse_utc
    moment = datetime(2026, 11, 28, 20, 59, 2, 123456)
    assert parse_utc(timestamp_text(moment)) == moment
    local = datetime(2026, 11, 28, 22, 59, 2, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert parse_utc(timestamp_text(local)) == moment  # an aware time is written in UTC


def test_the_copy_leaves_out_links_fifos_and_refuses_what_is_too_big(tmp_path, caplog):
    source = tmp_path / "inbound"
    (source / "data").mkdir(parents=True)
    (source / "max_pool_backward.ipynb").write_text("notebook")
    (source / "data" / "table.csv").write_text("a,b")
    (source / "secret").symlink_to(tmp_path / "instructor.txt")
    (tmp_path / "instructor.txt").write_text("SECRET")
    (source / "everything").symlink_to(tmp_path)
    os.mkfifo(source / "pipe")
    log = logging.getLogger("collect-test")
    with caplog.at_level(logging.WARNING, "collect-test"):
        copied = Path(regular_copy(str(source), str(tmp_path / "copy"), 10_000, log))
    found = sorted(str(path.relative_to(copied)) for path in (tmp_path / "copy").rglob("*"))
    assert found == ["data", "data/table.csv", "max_pool_backward.ipynb"]
    assert all(not path.is_symlink() for path in (tmp_path / "copy").rglob("*"))
    assert sum("not a regular file" in record.message for record in caplog.records) == 3
    with pytest.raises(TooBig):
        regular_copy(str(source), str(tmp_path / "small"), 10, log)


def test_a_replaced_submission_is_set_aside_and_put_back_after_a_killed_collect(tmp_path):
    """What nbgrader's collect deletes before copying a newer submission is moved aside; a
    collect killed right after that leaves it there, and the next collect that cannot copy
    puts it back (one that can drops it); an aside older than the submission is dropped."""
    dest = tmp_path / "submitted" / "ana" / "max_pool_backward"
    dest.mkdir(parents=True)
    (dest / "max_pool_backward.ipynb").write_text("collected")
    SetAside.rmtree(str(dest))  # ...and the collect is killed here
    assert not dest.exists() and Path(aside_of(str(dest)), "max_pool_backward.ipynb").read_text() == "collected"
    dest.mkdir()  # the next collect's copy, failed halfway
    (dest / "part").write_text("half")
    put_back(str(dest))
    assert [path.name for path in dest.iterdir()] == ["max_pool_backward.ipynb"]
    assert not os.path.lexists(aside_of(str(dest)))
    Path(aside_of(str(dest))).mkdir()  # stale: older than the submission now in place
    SetAside.rmtree(str(dest))
    assert Path(aside_of(str(dest)), "max_pool_backward.ipynb").read_text() == "collected"
    put_back(str(dest))
    assert (dest / "max_pool_backward.ipynb").read_text() == "collected"


def test_grading_puts_back_what_a_killed_collect_left_aside_and_names_what_it_cannot(tmp_path):
    submitted = tmp_path / "submitted"
    for student in ("ana", "ben"):
        dest = submitted / student / "max_pool_backward"
        dest.mkdir(parents=True)
        (dest / "max_pool_backward.ipynb").write_text(f"{student}'s collected")
        SetAside.rmtree(str(dest))  # both collects killed here...
    (submitted / "ben" / "max_pool_backward").mkdir()  # ...ben's in the middle of the newer copy
    said = recover_interrupted_collects(submitted, "max_pool_backward")
    assert (submitted / "ana" / "max_pool_backward" / "max_pool_backward.ipynb").read_text() == "ana's collected"
    assert not (submitted / "ana" / ".replaced-max_pool_backward").exists()
    assert (submitted / "ben" / ".replaced-max_pool_backward" / "max_pool_backward.ipynb").is_file()
    assert len(said) == 2 and "is put back" in said[0] and "may be incomplete" in said[1]
    assert "nbgrader collect --update max_pool_backward" in said[1]
    assert recover_interrupted_collects(submitted, "max_pool_backward") == said[1:]

