"""The instructor notebook, its committed release, and what students never see."""

from __future__ import annotations

import base64
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import RELEASE_NOTEBOOK, ROOT, SOURCE_NOTEBOOK, flat, nbgrader

from maxpool_grader.authoring import check as notebook_check
from maxpool_grader.cli.main import main
from maxpool_grader.exercise.checks import HIDDEN_CHECKS
from maxpool_grader.exercise.part_a import EXPLANATION, MODEL_ANSWER, RUBRIC, figure_png
from maxpool_grader.exercise.reveal import rubric_phrases_in

sys.path.insert(0, str(ROOT / "scripts"))


def nbgrader_meta(cell):
    return cell.metadata.get("nbgrader", {})


def cells_by_id(notebook):
    return {nbgrader_meta(c)["grade_id"]: c for c in notebook.cells if "grade_id" in nbgrader_meta(c)}


def comparable(notebook):
    return [(c.cell_type, c.source, json.dumps(c.metadata, sort_keys=True), c.get("attachments"))
            for c in notebook.cells]


def check_course(tmp_path: Path) -> Path:
    """A course of the config and the source notebook only: what ``maxpool-grader check`` reads."""
    course = tmp_path / "course"
    (course / "source").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(SOURCE_NOTEBOOK.parent, course / "source" / SOURCE_NOTEBOOK.parent.name)
    return course


def jupyterlab_edit(course: Path, edit) -> Path:
    """Edit the course's source notebook as JupyterLab saves it (nbformat.write, indent 1)."""
    path = course / SOURCE_NOTEBOOK.relative_to(ROOT)
    notebook = nbformat.read(path, as_version=4)
    edit(cells_by_id(notebook), notebook)
    nbformat.write(notebook, path)
    return path


def test_maxpool_grader_check_accepts_the_committed_notebook(capsys):
    """What CI runs: the source notebook agrees with the grader, cell by cell."""
    assert main(["check", "--course-dir", str(ROOT)]) == 0, capsys.readouterr().out


def test_an_unchanged_jupyterlab_save_changes_no_byte():
    text = SOURCE_NOTEBOOK.read_text()
    assert notebook_check.layout(nbformat.reads(text, as_version=4)) == text


def test_check_accepts_a_changed_sentence_and_names_a_changed_visible_point_value(tmp_path, capsys):
    course = check_course(tmp_path)

    def reword(cells, notebook):
        cells["part_b_explanation"].source = cells["part_b_explanation"].source.replace(
            "Work out small cases by hand too", "Work out a few small cases by hand as well")
    jupyterlab_edit(course, reword)
    assert main(["check", "--course-dir", str(course)]) == 0, capsys.readouterr().out
    capsys.readouterr()

    def repoint(cells, notebook):
        cells["visible_forum_example"].metadata["nbgrader"]["points"] = 3
    path = jupyterlab_edit(course, repoint)
    assert main(["check", "--course-dir", str(course)]) == 1
    out = capsys.readouterr().out
    assert "cell visible_forum_example (#11): is worth 3 points in the notebook, 1 in VISIBLE_CHECKS" in out
    assert "set its points back to 1 in the Create Assignment toolbar" in out
    assert "VISIBLE_CHECKS['visible_forum_example'].points" in out
    edited = path.read_text()
    assert notebook_check.check(course, apply_fixes=True, refresh=False) == 1, "visible points are never fixed"
    assert path.read_text() == edited


def test_check_fix_writes_what_comes_from_the_grader(tmp_path, capsys):
    """Outputs of a JupyterLab run, a hidden cell edited, deleted or re-pointed, the figure lost:
    named, then fixed back to the committed file, byte for byte."""
    course = check_course(tmp_path)

    def drift(cells, notebook):
        cells["provided_helpers"].outputs = [nbformat.v4.new_output("stream", text="ran\n")]
        cells["provided_helpers"].execution_count = 1
        notebook.metadata["language_info"].update(version="3.11.2", mimetype="text/x-python")
        cells["hidden_overlapping_windows"].source += "\nprint('debug')"
        cells["hidden_gradient_check"].metadata["nbgrader"]["points"] = 5
        del cells["part_a_question"]["attachments"]
        cells["part_a_derivation"].source = "### BEGIN SOLUTION\nsee the lecture\n### END SOLUTION"
        notebook.cells.remove(cells["hidden_dtype_of_x"])  # the last: --fix adds a missing cell after the tests
    path = jupyterlab_edit(course, drift)
    assert main(["check", "--course-dir", str(course)]) == 1
    out = capsys.readouterr().out
    for named in ["cell provided_helpers (#4): has outputs", "cell hidden_overlapping_windows (#13): is not the "
                  "two-line call", "cell hidden_gradient_check (#16): has nbgrader metadata points 5 "
                  "(HIDDEN_CHECKS: 2)", "cell part_a_question (#1): its attachment figure1.png",
                  "cell part_a_derivation (#2): does not hold part_a.py's MODEL_ANSWER",
                  "cell hidden_dtype_of_x: is missing"]:
        assert named in out
    assert "'maxpool-grader check --fix' fixes 7" in out
    assert notebook_check.check(course, apply_fixes=True, refresh=False) == 0
    assert path.read_bytes() == SOURCE_NOTEBOOK.read_bytes()


def test_check_names_a_wrong_solution_and_an_answer_shown_to_students(tmp_path, capsys):
    course = check_course(tmp_path)
    leaked = next(line.strip() for line in MODEL_ANSWER.splitlines() if len(line.strip()) > 25)

    def spoil(cells, notebook):
        cells["max_pool_backward"].source = cells["max_pool_backward"].source.replace("+= d_output", "= d_output")
        cells["intro"].source += "\n\n" + leaked
    jupyterlab_edit(course, spoil)
    assert main(["check", "--course-dir", str(course)]) == 1
    out = capsys.readouterr().out
    assert "cell max_pool_backward (#6): fails the check hidden_overlapping_windows" in out
    assert "cell intro (#0): shows students a line of the model answer or rubric" in out
    assert "check --fix" not in out, "neither is fixed by --fix"




def test_each_hidden_check_has_its_own_graded_cell_with_title_and_points():
    cells = cells_by_id(nbformat.read(SOURCE_NOTEBOOK, as_version=4))
    for grade_id, check in HIDDEN_CHECKS.items():
        cell = cells[grade_id]
        meta = nbgrader_meta(cell)
        assert meta["grade"] and meta["locked"] and meta["points"] == check.points
        first_line, *body = cell.source.splitlines()
        assert first_line == f"# Hidden test: {check.title} ({check.points} point{'s' if check.points > 1 else ''})"
        assert body[0] == "### BEGIN HIDDEN TESTS" and body[-1] == "### END HIDDEN TESTS"
        assert len(body) <= 4, "a hidden cell is a short call into maxpool_grader"
    assert len(HIDDEN_CHECKS) == 9


def test_points_add_up_to_five_manual_and_fifteen_autograded():
    cells = cells_by_id(nbformat.read(SOURCE_NOTEBOOK, as_version=4))
    graded = {gid: nbgrader_meta(c)["points"] for gid, c in cells.items() if nbgrader_meta(c).get("grade")}
    assert graded.pop("part_a_derivation") == 5
    assert cells["part_a_derivation"].cell_type == "markdown"
    assert sum(graded.values()) == 15


def test_the_figure_is_an_embedded_png():
    part_a = cells_by_id(nbformat.read(SOURCE_NOTEBOOK, as_version=4))["part_a_question"]
    png = base64.b64decode(part_a.attachments["figure1.png"]["image/png"])
    assert png.startswith(b"\x89PNG") and "attachment:figure1.png" in part_a.source


@pytest.mark.integration
def test_committed_release_is_current(course):
    nbgrader(course, "generate_assignment", "max_pool_backward", "--force")
    fresh = nbformat.read(course / "release" / "max_pool_backward" / "max_pool_backward.ipynb", as_version=4)
    assert comparable(nbformat.read(RELEASE_NOTEBOOK, as_version=4)) == comparable(fresh), \
        "run: maxpool-grader grade (or nbgrader generate_assignment max_pool_backward --force)"
    assert sorted(p.name for p in (course / "release" / "max_pool_backward").iterdir()) == \
        ["max_pool_backward.ipynb"], "nothing but the notebook is shipped to students"


def test_release_has_no_solution_hidden_test_or_rubric():
    text = RELEASE_NOTEBOOK.read_text()
    for marker in ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                   "Rubric", "Model answer", "maxpool_grader", "run_check"]:
        assert marker not in text
    source = cells_by_id(nbformat.read(SOURCE_NOTEBOOK, as_version=4))
    solution = re.search(r"### BEGIN SOLUTION\n(.*)### END SOLUTION", source["max_pool_backward"].source, re.S)
    elsewhere = "\n".join(c.source for gid, c in source.items() if gid != "max_pool_backward")
    own_lines = [line.strip() for line in solution.group(1).splitlines()
                 if len(line.strip()) > 12 and line.strip() not in elsewhere]
    assert len(own_lines) >= 5
    release_text = "\n".join(c.source for c in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells)
    for line in own_lines:
        assert line not in release_text, f"solution line leaked: {line}"
    release = cells_by_id(nbformat.read(RELEASE_NOTEBOOK, as_version=4))
    assert release["max_pool_backward"].source.rstrip().endswith("raise NotImplementedError()")
    assert release["part_a_derivation"].source == "YOUR ANSWER HERE"
    for grade_id in HIDDEN_CHECKS:
        assert release[grade_id].source.splitlines()[0].startswith("# Hidden test: ")
        assert len(release[grade_id].source.splitlines()) == 1


@pytest.mark.integration
def test_validate_gives_the_source_notebook_full_marks():
    result = nbgrader(ROOT, "validate", str(SOURCE_NOTEBOOK))
    assert "Success! Your notebook passes all the tests." in result.stdout


@pytest.mark.integration
def test_validate_reports_the_unimplemented_release_without_crashing():
    result = nbgrader(ROOT, "validate", str(RELEASE_NOTEBOOK), check=False)
    assert "VALIDATION FAILED" in result.stdout
    assert "NotImplementedError" in result.stdout and "You did not provide a response" in result.stdout
    assert "Traceback (most recent call last)" not in result.stdout.split("VALIDATION FAILED")[0]


def test_check_names_a_tests_heading_that_no_longer_says_what_validate_checks(tmp_path, capsys):
    """nbgrader validate prints "Success! Your notebook passes all the tests" for code that the
    hidden tests fail (issue 49): the heading of the tests must say so, and check holds it there."""
    course = check_course(tmp_path)

    def drop_note(cells, notebook):
        cells["tests_header"].source = cells["tests_header"].source.split("**Validate**", 1)[0]
    jupyterlab_edit(course, drop_note)
    assert main(["check", "--course-dir", str(course)]) == 1
    out = capsys.readouterr().out
    assert "cell tests_header (#9): does not say what nbgrader validate checks and what it does not" in out
    assert 'Its "Success!" is not a grade' in out  # the words the fix asks for


@pytest.mark.integration
def test_a_kernel_shows_the_tools_naming_their_function_and_validate_says_what_success_means(tmp_path):
    """The release as a student fills it (the sample class's ties_all_maxima: both visible tests
    pass, 12/15 when graded), with a cell of variants checked by the tools, run in a real kernel;
    then ``nbgrader validate`` of it, whose stock "Success!" the notebook's Tests heading explains."""
    import make_sample_class
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    notebook = make_sample_class.fill(nbformat.read(RELEASE_NOTEBOOK, as_version=4), make_sample_class.TIES_ALL_MAXIMA)
    solution = next(i for i, cell in enumerate(notebook.cells) if cell.metadata.get("nbgrader", {}).get("solution")
                    and cell.cell_type == "code")
    notebook.cells.insert(solution + 1, new_code_cell(
        "def backward_trunc(d_output, x, pool_size, stride=None):\n"
        "    return max_pool_backward(d_output, x, pool_size, stride).astype(x.dtype)\n\n\n"
        "def backward_half(d_output, x, pool_size, stride=None):\n"
        "    return max_pool_backward(d_output, x, pool_size, stride) / 2\n\n\n"
        "check_rules(backward_trunc)\n"
        "gradient_check(backward_half, shape=(4, 6), pool_size=(2, 3), stride=1)\n"))
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = "".join(output.get("text", "") for output in notebook.cells[solution + 1].outputs)
    assert shown.startswith("check_rules(backward_trunc): "), shown
    assert "dx = backward_trunc(d_output, x, 2, 1)" in shown and "max_pool_backward" not in shown
    assert ("gradient_check(backward_half, shape=(4, 6), pool_size=(2, 3), stride=1, ceil_mode=False, seed=0):\n"
            in shown) and "(something is wrong)" in shown
    assert "    dx = backward_half(d_output, x, (2, 3), 1)\n" in shown
    path = tmp_path / "max_pool_backward.ipynb"
    nbformat.write(make_sample_class.fill(nbformat.read(RELEASE_NOTEBOOK, as_version=4),
                                          make_sample_class.TIES_ALL_MAXIMA), path)
    assert "Success! Your notebook passes all the tests." in nbgrader(ROOT, "validate", str(path)).stdout
    heading = flat(cells_by_id(nbformat.read(RELEASE_NOTEBOOK, as_version=4))["tests_header"].source)
    assert "`nbgrader validate`" in heading and "checks that the visible tests pass" in heading
    assert 'Its "Success!" is not a grade: the hidden tests (not in your copy)' in heading


def test_committed_sample_class_is_made_from_the_current_release():
    import make_sample_class
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    for student, solution in make_sample_class.STUDENTS.items():
        committed = nbformat.read(ROOT / "submitted" / student / "max_pool_backward" / "max_pool_backward.ipynb", 4)
        expected = make_sample_class.fill(nbformat.reads(nbformat.writes(release), as_version=4), solution)
        assert comparable(committed) == comparable(expected), f"run: python scripts/make_sample_class.py ({student})"
        for name, text in make_sample_class.submission_files(student).items():
            assert (ROOT / "submitted" / student / "max_pool_backward" / name).read_text() == text, student


def test_the_release_teaches_the_tools_not_the_derivation():
    """Part A asks for the backward message: the release shows the forward pass only, and no
    sentence of the model answer, the rubric or the explanation the feedback adds."""
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    text = "\n".join(cell.source for cell in release.cells)
    for passage in (MODEL_ANSWER, RUBRIC, EXPLANATION):
        for line in passage.splitlines():
            if len(line.strip()) > 25:
                assert line.strip() not in text, f"leaked into the release: {line.strip()}"
    assert rubric_phrases_in(text) == []  # the rubric's own phrases (exercise/reveal.py)
    figures = [base64.b64decode(image["image/png"]) for cell in release.cells
               for image in cell.get("attachments", {}).values()]
    assert figures == [figure_png()] and figure_png(backward=True) not in figures


def test_part_a_asks_what_its_rubric_grades_point_for_point():
    """The question states each item with its points; the rubric grades the same items, with
    the same points, and nothing else (both read as students and graders see them)."""
    question = " ".join(cells_by_id(nbformat.read(RELEASE_NOTEBOOK, as_version=4))["part_a_question"].source.split())
    asked = re.findall(r"\((\w)\) ([^;]+?), (\d) points?[;.]", question.split("Points:", 1)[1])
    graded = re.findall(r"^- \((\w)\) (\d) p: ", RUBRIC, flags=re.M)
    assert [(label, int(points)) for label, _, points in asked] == [(label, int(points)) for label, points in graded]
    assert sum(int(points) for _, points in graded) == 5 and len(graded) >= 3
    # what the rubric weighs is asked: ties, and the gradient for a stride smaller than the window
    assert "not unique" in question and "stride smaller than the" in question and "overlap" in question
    items = dict(zip((label for label, _ in graded), re.split(r"^- \(\w\) \d p: ", RUBRIC, flags=re.M)[1:]))
    for label, words, _ in asked:  # the item about overlap is graded on overlap, and only it
        assert ("overlapping" in words) == ("overlapping" in items[label]), (label, words, items[label])


def test_the_release_prose_stays_short():
    """What a student reads before starting; a figure's text alternative (what a screen reader
    reads instead of the picture) is not counted."""
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    words = sum(len(re.sub(r"!\[[^\]]*\]", "", cell.source).split()) for cell in release.cells
                if cell.cell_type == "markdown")
    assert words < 700, f"the release's prose has {words} words; keep it under about 700"


def test_the_intro_sends_part_a_to_the_answer_cell_below_its_question():
    """The intro once said Part A is "on paper", while its question asks for the derivation in
    the next cell (the one graded by hand): it says where the answer goes."""
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    ids = [cell.get("id") for cell in release.cells]
    intro = release.cells[ids.index("intro")]
    assert "paper" not in intro.source
    assert "answered in the cell under its question" in flat(intro.source)
    answer = release.cells[ids.index("part-a-question") + 1]
    assert answer.metadata.nbgrader.get("grade") and answer.cell_type == "markdown", answer.metadata
