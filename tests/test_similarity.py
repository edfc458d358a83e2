"""The similarity report: near-identical student code is found however it was disguised
(renamed variables, reordered functions, other comments and spacing), the release's own
code does not count, and independent solutions are not flagged."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from corpus import notebook_with
from helpers import ASSIGNMENT, ROOT, copy_course, grade_command
from make_sample_class import LOOP_CORRECT

from maxpool_grader.grading.similarity import release_code, similar_pairs, student_code

ORIGINAL = '''
def _as_pair(value):
    """pool_size or stride as (rows, cols)"""
    return (value, value) if isinstance(value, int) else tuple(value)


def _first_max(window):
    # position of the first maximum, row-major
    k = int(np.argmax(window))
    return divmod(k, window.shape[1])


def max_pool_backward(d_output, x, pool_size, stride=None):
    x, d_output = np.asarray(x), np.asarray(d_output)
    ph, pw = _as_pair(pool_size)
    sh, sw = (ph, pw) if stride is None else _as_pair(stride)
    dx = np.zeros(x.shape)
    for lead in np.ndindex(x.shape[:-2]):
        for i in range(d_output.shape[-2]):
            for j in range(d_output.shape[-1]):
                r, c = _first_max(x[lead][i * sh:i * sh + ph, j * sw:j * sw + pw])
                dx[lead + (i * sh + r, j * sw + c)] += d_output[lead + (i, j)]
    return dx
'''

DISGUISED = '''
def max_pool_backward(d_output, x, pool_size, stride=None):
    inp,   grad_out = np.asarray(x), np.asarray(d_output)   # inputs as arrays
    win_h, win_w = to_rc(pool_size)
    step_h, step_w = (win_h, win_w) if stride is None else to_rc(stride)
    result = np.zeros(inp.shape)
    # walk every window of every plane
    for plane in np.ndindex(inp.shape[:-2]):
        for a in range(grad_out.shape[-2]):
            for b in range(grad_out.shape[-1]):
                rr, cc = argmax_in(inp[plane][a * step_h:a * step_h + win_h, b * step_w:b * step_w + win_w])
                result[plane + (a * step_h + rr, b * step_w + cc)] += grad_out[plane + (a, b)]
    return result


def argmax_in(block):
    idx = int(np.argmax(block))
    return divmod(idx, block.shape[1])


def to_rc(v):
    return (v, v) if isinstance(v, int) else tuple(v)
'''


def test_a_disguised_copy_is_found_and_an_independent_solution_is_not():
    codes = {"original": ORIGINAL, "disguised": DISGUISED, "independent": LOOP_CORRECT}
    pairs = similar_pairs(codes, [], 0.8)
    assert [(pair.first, pair.second) for pair in pairs] == [("disguised", "original")]
    assert min(pairs[0].shares) >= 0.8


@pytest.mark.integration
def test_the_release_s_own_code_does_not_count(tmp_path):
    course = copy_course(tmp_path / "course", with_submissions=False)
    from helpers import nbgrader
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    untouched = student_code(release, set(release_code(release)))
    assert untouched == ""  # a student who changed nothing wrote no code
    stub_only = {name: student_code(notebook_with(release, "def max_pool_backward(d_output, x, pool_size, "
                                                           "stride=None):\n    return np.zeros(x.shape)\n"),
                                    set(release_code(release))) for name in ("a", "b")}
    assert similar_pairs(stub_only, release_code(release), 0.8) == []  # the signature is the release's


@pytest.fixture(scope="module")
def copied_class(tmp_path_factory):
    """A class with a copy and its disguised copy, graded (the report made)."""
    course = copy_course(tmp_path_factory.mktemp("similar") / "course", students=["vectorized_correct"])
    assert grade_command(course).returncode == 0  # makes the release
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for student, code in (("copy_original", ORIGINAL), ("copy_disguised", DISGUISED)):
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook_with(release, code), folder / f"{ASSIGNMENT}.ipynb")
    result = grade_command(course, "--similarity-threshold", "0.75")
    assert result.returncode == 0, result.stderr[-3000:]
    return course


@pytest.mark.integration
def test_the_class_report_lists_the_pair_side_by_side(copied_class):
    course = copied_class
    found = json.loads((course / "report" / "report.json").read_text())["similarity"]
    pairs = {tuple(pair["students"]): pair["score"] for pair in found["pairs"]}
    assert found["threshold"] == 0.75 and found["compared"] == 3
    assert pairs[("copy_disguised", "copy_original")] >= 0.8
    assert not any("copy_original" in pair and "vectorized_correct" in pair for pair in pairs)
    page = (course / "report" / "index.html").read_text()
    assert "a reason to look, not a verdict" in page
    view = re.search(r"<summary>copy_disguised and copy_original.*?</details>", page, re.S)
    assert view and view[0].count("<mark>") >= 2


@pytest.mark.integration
def test_the_shared_code_is_told_apart_by_more_than_colour_and_a_legend_says_how(copied_class, browser):
    """The highlight of the code both students have was a colour alone (about 1.2:1 against its
    background), and nothing said what it meant: it is underlined and between brackets too, and
    a legend says so; the report passes axe with a pair open."""
    from a11y import assert_accessible
    from pages import offline_page
    page = offline_page(browser)
    page.goto((copied_class / "report" / "index.html").as_uri())
    legend = page.locator("p.legend")
    assert "highlighted, underlined and between brackets" in " ".join(legend.inner_text().split())
    page.locator("details", has_text="copy_disguised and copy_original").locator("summary").click()
    shared = page.locator(".pair mark").first
    style = shared.evaluate("""mark => { const s = getComputedStyle(mark);
        return [s.textDecorationLine, getComputedStyle(mark, '::before').content,
                getComputedStyle(mark, '::after').content]; }""")
    assert style == ["underline", '"\u27e6"', '"\u27e7"'], style
    assert_accessible(page, "the class report with a pair of similar submissions open")
    page.close()


@pytest.mark.integration
def test_the_same_class_gets_the_same_scores_in_every_process():
    """copydetect hashes k-grams with Python's hash(), which is salted per process: the
    report must not say 94% in one run and 93% in the next."""
    import subprocess
    import sys
    program = ("import json, sys; sys.path[:0] = sys.argv[1:]\n"
               "from make_sample_class import LOOP_CORRECT, VECTORIZED_CORRECT\n"
               "from test_similarity import DISGUISED, ORIGINAL\n"
               "from maxpool_grader.grading.similarity import similar_pairs\n"
               "codes = {'original': ORIGINAL, 'disguised': DISGUISED, 'loop': LOOP_CORRECT,\n"
               "         'vectorized': VECTORIZED_CORRECT, 'loop_again': LOOP_CORRECT.replace('dx', 'grad')}\n"
               "print(json.dumps([pair.summary() for pair in similar_pairs(codes, [], 0.0)]))\n")
    here = str(Path(__file__).resolve().parent)
    runs = {subprocess.run([sys.executable, "-c", program, here, str(ROOT / "scripts")], check=True,
                           capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2", "3", "4")}
    assert len(runs) == 1, runs
    assert json.loads(runs.pop())  # a threshold of 0 lists every pair that shares a fingerprint
