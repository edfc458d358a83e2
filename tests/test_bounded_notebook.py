"""A bounded notebook (docs/security.md#caps): a submission of a few kB that adds hundreds of
cells, each printing just under the per-cell output cap, graded by ``maxpool-grader grade``,
by plain ``nbgrader autograde`` and through ``serve``.

Before the notebook's own caps, 400 such cells made a graded notebook of 416 MB and a feedback
page of 417 MB. What must hold: the graded notebook and the feedback page stay under the
notebook's output cap (plus what the assignment's own cells show), the cells past the cap of
added cells are left out, each cut is said in a sentence the student reads, and the grade is
what the tests decided (15/15: the function is correct), as is a classmate's.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from corpus import FULL, notebook_with
from helpers import ASSIGNMENT, ROOT, all_grades, copy_course, flat, grade_command, nbgrader, sqlite
from make_sample_class import LOOP_CORRECT

from maxpool_grader.exercise.checks import GRADED_CHECKS
from maxpool_grader.glue.sealedbox import SealedBox
from maxpool_grader.names import SOLUTION_CELL, grade_id

pytestmark = pytest.mark.integration  # real kernels, sandboxes, nbgrader and serve

FLOOD_CELLS = 400
FLOOD_CHARACTERS = (SealedBox.output_kib.default_value << 10) - 4096  # just under one cell's output cap
NOTEBOOK_CAP = SealedBox.notebook_output_mib.default_value << 20
ADDED_CAP = SealedBox.added_cells.default_value
SLACK = 1 << 20  # what the assignment's own cells, the notes and the page's template add
FLOODER, CLASSMATE = "flooder", "loop_correct"


FLOOD_LINE = re.compile(r"print\('\d{3}' \* \d+\)$")


def flooded(cells: int = FLOOD_CELLS) -> nbformat.NotebookNode:
    """A correct solution, then ``cells`` cells of the student's own, each printing just under
    what one cell may print."""
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    nb = notebook_with(release, LOOP_CORRECT)
    at = next(index for index, cell in enumerate(nb.cells) if grade_id(cell) == SOLUTION_CELL)
    for number in range(cells):
        nb.cells.insert(at + 1 + number, nbformat.v4.new_code_cell(f"print('{number:03d}' * {FLOOD_CHARACTERS // 3})"))
    return nb


FIRST = next(index for index, cell in enumerate(flooded(0).cells) if grade_id(cell) == SOLUTION_CELL) + 1


def write_class(course: Path) -> None:
    for student in (FLOODER, CLASSMATE):
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nb = flooded() if student == FLOODER else notebook_with(
            nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4), LOOP_CORRECT)
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")


def points(course: Path) -> dict[str, float]:
    grades = all_grades(sqlite(course))
    return {student: sum(grades.get((student, cell)) or 0 for cell in GRADED_CHECKS)
            for student in (FLOODER, CLASSMATE)}


def check_bounded(course: Path) -> None:
    graded = course / "autograded" / FLOODER / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    page = course / "feedback" / FLOODER / ASSIGNMENT / f"{ASSIGNMENT}.html"
    sizes = {"graded notebook": graded.stat().st_size, "feedback page": page.stat().st_size}
    print(f"{course.name}: {sizes} (the submission: {len(nbformat.writes(flooded()))} bytes)")
    assert max(sizes.values()) < NOTEBOOK_CAP + SLACK, sizes
    kept = [source for cell in json.loads(graded.read_text())["cells"]
            if FLOOD_LINE.match(source := "".join(cell["source"]))]
    assert kept == [cell.source for cell in flooded().cells[FIRST:FIRST + ADDED_CAP]]  # the first ones, in order
    text = flat(page.read_text())
    assert f"Your notebook adds {FLOOD_CELLS} cells of your own; a notebook may add {ADDED_CAP}" in text
    assert f"Your notebook printed more than {NOTEBOOK_CAP >> 20} MiB in all" in text
    assert points(course) == {FLOODER: FULL, CLASSMATE: FULL}


def test_grade_keeps_a_flooded_notebook_and_its_page_bounded(tmp_path):
    course = copy_course(tmp_path / "grade", with_submissions=False)
    write_class(course)
    graded = grade_command(course, "--workers", "2")
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    check_bounded(course)


def test_plain_nbgrader_keeps_a_flooded_notebook_and_its_page_bounded(tmp_path):
    course = copy_course(tmp_path / "plain", with_submissions=False)
    write_class(course)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    assert nbgrader(course, "autograde", ASSIGNMENT, check=False).returncode == 0
    assert nbgrader(course, "generate_feedback", ASSIGNMENT, check=False).returncode == 0
    check_bounded(course)


def test_serve_keeps_a_flooded_notebook_bounded(tmp_path):
    """Through the web page: a notebook within serve's own cap of cells (Serve.max_cells), whose
    added cells and outputs pass the notebook's caps: its page is bounded, its score right."""
    from test_serve import _feedback, _session, _upload, links, started_service

    course = copy_course(tmp_path / "serve", with_submissions=False)
    shutil.copy(ROOT / "roster.csv", course)
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    cells = 290 - len(release.cells)  # under serve's 300
    running = started_service(course, exchange=False)
    service = next(running)
    try:
        session, xsrf = _session(links(course)[CLASSMATE])
        answer = _upload(service, session, xsrf, nbformat.writes(flooded(cells)).encode())
        assert answer.status_code == 303, answer.text[:500]
        page = _feedback(service, session, answer.headers["Location"], timeout=300)
        size = len(page.content)
        print(f"serve: feedback page {size} bytes")
        assert size < NOTEBOOK_CAP + SLACK, size
        text = flat(page.text)
        assert f"Your notebook adds {cells} cells of your own; a notebook may add {ADDED_CAP}" in text
        assert f"Your notebook printed more than {NOTEBOOK_CAP >> 20} MiB in all" in text
        result = json.loads(service.wait_idle()[-1]["result"] or "{}")
        assert result.get("score") == FULL, result
    finally:
        next(running, None)
