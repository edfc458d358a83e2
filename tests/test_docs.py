"""The documentation: a short README, and docs/ built by MkDocs with no warning (a broken link
or anchor is one, by mkdocs.yml). Every page a runtime message or the README cites,
``docs/<page>.md#<anchor>``, exists, and its anchor is an explicit ``{#anchor}`` of that page,
so rewording a heading never breaks a message."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, SOURCE_NOTEBOOK

from maxpool_grader.names import PART_A_CELL

DOCS = ROOT / "docs"
README_MAX_LINES = 200
# what a message, a comment or the README cites: docs/security.md#no-cgroup
REFERENCE = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
CITING = [ROOT / "README.md", ROOT / "nbgrader_config.py", *sorted((ROOT / "maxpool_grader").rglob("*.py"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(target)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = build.stdout + build.stderr
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert "WARNING" not in log, log
    return target


def _references() -> list[tuple[str, str, str | None]]:
    found = []
    for path in CITING:
        for page, anchor in REFERENCE.findall(path.read_text()):
            found.append((str(path.relative_to(ROOT)), page, anchor or None))
    return found


def _ids(site: Path, page: str) -> set[str]:
    html = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
    return set(re.findall(r'\bid="([^"]+)"', html.read_text()))


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the rest to docs/"


def test_ci_runs_the_readmes_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    assert len(commands) >= 2 and "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_docs_build_with_no_warning(site):
    assert (site / "index.html").exists() and (site / "security" / "index.html").exists()


def test_nothing_cites_the_readme_for_what_moved_to_the_docs():
    for path in CITING[1:]:
        cites = "README" in path.read_text()
        assert not cites, f"{path.relative_to(ROOT)} cites the README: cite docs/<page>.md#<anchor>"


def test_every_cited_page_and_anchor_exists_and_is_explicit(site):
    references = _references()
    assert len(references) >= 14, references  # the runtime messages and comments, and the README's links
    for source, page, anchor in references:
        assert (DOCS / page).exists(), f"{source} cites docs/{page}, which does not exist"
        if anchor is None:
            continue
        assert anchor in _ids(site, page), f"{source} cites docs/{page}#{anchor}, which the built page lacks"
        text = (DOCS / page).read_text()
        assert "{#" + anchor + "}" in text, (f"{source} cites docs/{page}#{anchor}: give it an explicit "
                                             f"{{#{anchor}}} so that rewording the heading keeps it")


def test_the_reference_pattern_sees_every_spelling():
    found = REFERENCE.findall('"(docs/security.md#no-cgroup)." see docs/index.md and [x](docs/operations.md#cluster)')
    assert found == [("security.md", "no-cgroup"), ("index.md", ""), ("operations.md", "cluster")]


NUMBER_WORDS = {word: number for number, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _notebook_counts() -> dict[str, int]:
    """What the source notebook holds: Part A's and Part B's points, its visible and hidden tests."""
    graded = [cell for cell in json.loads(SOURCE_NOTEBOOK.read_text())["cells"]
              if cell.get("metadata", {}).get("nbgrader", {}).get("grade")]
    source = lambda cell: "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]  # noqa: E731
    tests = [cell for cell in graded if cell["metadata"]["nbgrader"]["grade_id"] != PART_A_CELL]
    hidden = [cell for cell in tests if "BEGIN HIDDEN TESTS" in source(cell)]
    part_a = next(cell for cell in graded if cell["metadata"]["nbgrader"]["grade_id"] == PART_A_CELL)
    return {"part_a": part_a["metadata"]["nbgrader"]["points"], "part_b": sum(cell["metadata"]["nbgrader"]["points"]
                                                                               for cell in tests),
            "visible": len(tests) - len(hidden), "hidden": len(hidden)}


def test_the_docs_counts_of_tests_and_points_are_the_notebooks():
    """docs/instructor.md and docs/students.md state how many tests and points the course has:
    read from the source notebook, so that a test added there cannot leave the docs behind."""
    counts = _notebook_counts()
    course = " ".join((DOCS / "instructor.md").read_text().split())
    found = re.search(r"\(Part A, (\d+) points, graded by hand\) and implement it in NumPy \(Part B, (\d+) points, "
                      r"autograded: (\d+) visible tests, (\d+) hidden\)", course)
    assert found, "docs/instructor.md no longer states the course's tests and points where this test looks"
    assert dict(zip(("part_a", "part_b", "visible", "hidden"), map(int, found.groups()))) == counts
    students = " ".join((DOCS / "students.md").read_text().split())
    found = re.search(r"Part B's (\d+) points: (\w+) visible tests .* and (\w+) hidden ones", students)
    assert found and (int(found[1]), NUMBER_WORDS[found[2]], NUMBER_WORDS[found[3]]) == (
        counts["part_b"], counts["visible"], counts["hidden"])
    table = re.findall(r"^\| `hidden_\w+` \| (\d+) \|", (DOCS / "students.md").read_text(), flags=re.M)
    assert len(table) == counts["hidden"] and sum(map(int, table)) == counts["part_b"] - counts["visible"]
