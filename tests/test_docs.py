"""The documentation: a short README, and docs/ built by MkDocs with no warning (a broken link
or anchor is one, by mkdocs.yml). Every page a runtime message or the README cites,
``docs/<page>.md#<anchor>``, exists, and its anchor is an explicit ``{#anchor}`` of that page,
so rewording a heading never breaks a message."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

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
