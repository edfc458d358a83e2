"""Every name a comment, a docstring or a page of the docs points to exists: each file named
``something.py``, each ``module.Name`` of the package, each ``c.Class`` of a configuration line
and each ``CONSTANT_NAME``. A module renamed without its mentions leaves a reader
looking for a file that is gone (issue 50: ``glue/execute.py``, ``model_answer.ModelAnswer``).

What is named but is not ours is listed here with the reason, so a new mention of something
that does not exist fails, and an exception is a decision someone wrote down."""

from __future__ import annotations

import collections
import functools
import re
import subprocess
from pathlib import Path

import pytest

from maxpool_grader.names import PACKAGE_DIR

pytestmark = pytest.mark.unit
ROOT = PACKAGE_DIR.parent
SELF = "tests/test_references.py"  # its own examples of names that point nowhere

# File names mentioned that are not files of this repository, and why
NOT_OURS = {
    "coursedir.py": "nbgrader's (a traceback in a test)",
    "nbgrader/coursedir.py": "nbgrader's",
    "nbgrader/converters/base.py": "nbgrader's",
    "ipykernel_launcher.py": "ipykernel's",
    "numpy.py": "a file a submission writes to shadow NumPy (an attack)",
    "pathlib.py": "a file a submission writes to shadow pathlib (an attack)",
    "jupyterhub_config.py": "the hub's configuration, the hub operator's file",
    "max_pool_backward.py": "a file name in an LMS's download (a test's input)",
    "solution.py": "a file name in an LMS's download",
    "brandtfelix_105_9005_solution.py": "a file name in an LMS's download (Moodle's naming)",
    "saveautogrades.py": "nbgrader's (preprocessors/saveautogrades.py, the model for our plugins' files)",
}
# Modules (the first part of ``module.Name``) that are not the package's, and whose names are theirs
OTHER_MODULES = {"c", "np", "requests", "shutil", "os", "sys", "json", "nbformat", "traitlets", "subprocess"}
# Constants named that no code here defines or uses, and whose they are
OTHER_CONSTANTS = {
    **dict.fromkeys(["CLONE_NEWPID", "CLONE_NEWUSER", "F_GETLK64", "IN_OPEN", "IPC_CREAT", "IPC_NOWAIT",
                     "KEYCTL_READ", "KEYCTL_SEARCH", "KEYCTL_SET_TIMEOUT", "MADV_PAGEOUT", "PIPE_BUF",
                     "PR_SET_NAME", "RWF_NOWAIT", "SHM_RDONLY"],
                    "Linux's (system calls the sandbox allows or refuses)"),
    "CONFIG_BSD_PROCESS_ACCT": "the Linux kernel's build option (benchmarks/profile_grading.py needs it)",
    "PYDEVD_USE_FRAME_EVAL": "debugpy's environment variable",
    "ZMQ_MAXMSGSIZE": "libzmq's socket option",
    "CONTEXT_ROLE_INSTRUCTOR": "Moodle's (its Names and Roles service, in PHP)",
    "CONTEXT_ROLE_LEARNER": "Moodle's (its Names and Roles service, in PHP)",
}
# Configurable classes set as c.<Class> that live in nbgrader, nbconvert, traitlets or JupyterHub
CONFIG_PLACEHOLDERS = {"Class": "settings_doc's docstring: the shape of a line", "X": "a test's made-up class"}


@functools.lru_cache(maxsize=1)
def tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def texts() -> dict[str, str]:
    """The files whose words a reader reads: the package, the tests, benchmarks, scripts, docs."""
    return {path: (ROOT / path).read_text(errors="replace") for path in tracked()
            if path.endswith((".py", ".md")) and not path.startswith("tests/corpora/") and path != SELF}


@functools.lru_cache(maxsize=1)
def package_sources() -> dict[str, str]:
    """Each module name of the package (``verdicts``, and packages as ``verdict``): its source."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = path.parent.name if path.name == "__init__.py" else path.stem
        found[name].append(path.read_text())
    return {name: "\n".join(sources) for name, sources in found.items()}


FILE_NAME = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.py)\b")
DOTTED = re.compile(r"`+([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)")
CONSTANT = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
FILE_EXTENSIONS = {"json", "sqlite", "csv", "db", "html", "txt", "md", "py", "ipynb", "toml", "cfg"}


def missing_files(found: dict[str, str]) -> dict[str, list[str]]:
    """Each ``path.py`` mentioned that no tracked file's path ends with: where it is mentioned."""
    files = tracked()
    missing = collections.defaultdict(list)
    for where, text in found.items():
        for mention in FILE_NAME.findall(text):
            if mention in NOT_OURS or any(path == mention or path.endswith("/" + mention) for path in files):
                continue
            missing[mention].append(where)
    return dict(missing)


def missing_names(found: dict[str, str]) -> dict[str, list[str]]:
    """Each ``module.Name`` mentioned whose module is the package's and lacks the class or
    constant ``Name``, and each ``other.Name`` whose first part is no module at all (a module
    renamed): where it is mentioned. (``lms.json`` is a file; ``limits.total``, an argument's field.)"""
    modules = package_sources()
    missing = collections.defaultdict(list)
    for where, text in found.items():
        for module, name in DOTTED.findall(text):
            if name in FILE_EXTENSIONS or not name[0].isupper():
                continue
            if module in modules:
                if not re.search(rf"\b{re.escape(name)}\b", modules[module]):
                    missing[f"{module}.{name}"].append(where)
            elif module not in OTHER_MODULES:
                missing[f"{module}.{name}"].append(where)
    return dict(missing)


def known_constants(code: str) -> set[str]:
    """The CONSTANT_NAMEs that ``code`` defines (alone, chained or in a tuple), imports, passes as
    a keyword, or uses as an attribute or a string (an environment variable, a flag of ``os``)."""
    known = set(re.findall(r"\.([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b|[\"']([A-Z][A-Z0-9]*_[A-Z0-9_]+)[\"'=]", code))
    known = {name for pair in known for name in pair if name}
    known |= set(re.findall(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\s*=(?!=)", code))  # chained, keyword arguments
    for targets in re.findall(r"^[ \t]*([\w \t,]+?)[ \t]*(?::[^=\n]*)?=(?!=)", code, re.M):
        known |= {name.strip() for name in targets.split(",")}
    for names in re.findall(r"^\s*from \S+ import \(?([^)\n]*)", code, re.M):
        known |= {name.split(" as ")[-1].strip() for name in names.split(",")}
    return known


def missing_constants(found: dict[str, str], code: str) -> dict[str, list[str]]:
    """Each CONSTANT_NAME mentioned that no code here defines, imports or uses: where it is mentioned."""
    known = known_constants(code) | set(OTHER_CONSTANTS)
    missing = collections.defaultdict(list)
    for where, text in found.items():
        for name in sorted(set(CONSTANT.findall(text)) - known):
            missing[name].append(where)
    return dict(missing)


@functools.lru_cache(maxsize=1)
def configurable_classes() -> set[str]:
    """The class names a ``c.<Class>`` line may set: the package's, nbgrader's, nbconvert's,
    traitlets', jupyter_server's and JupyterHub's."""
    import importlib.util
    names = set()
    for package in ("maxpool_grader", "nbgrader", "nbconvert", "traitlets", "jupyter_server", "jupyterhub",
                    "jupyter_client"):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            for path in Path(folder).rglob("*.py"):
                names |= set(re.findall(r"^class (\w+)", path.read_text(errors="replace"), re.M))
    return names


def test_every_file_a_comment_or_page_names_exists():
    assert missing_files(texts()) == {}


def test_every_module_name_a_comment_or_page_names_exists():
    assert missing_names(texts()) == {}


def test_every_constant_named_is_defined_or_used():
    code = "\n".join(text for path, text in texts().items() if path.endswith(".py"))
    assert missing_constants(texts(), code) == {}


def test_every_configured_class_exists():
    found = {f"c.{name}": where for where, text in texts().items()
             for name in re.findall(r"\bc\.([A-Z]\w*)\.", text + "\n" + re.sub(r"`", " ", text))
             if name not in CONFIG_PLACEHOLDERS and name not in configurable_classes()}
    assert found == {}


def test_the_reference_checkers_see_a_renamed_file_module_and_constant():
    text = {"x.md": "See glue/execute.py and ``model_answer.ModelAnswer``, ``verdicts.Nowhere`` and "
                    "(CONTROL_STATES), but `verdicts.Verdict`, MOST_STARTS and sandbox/box.py exist."}
    assert set(missing_files(text)) == {"glue/execute.py"}
    assert set(missing_names(text)) == {"model_answer.ModelAnswer", "verdicts.Nowhere"}
    assert set(missing_constants(text, "MOST_STARTS = 4\n")) == {"CONTROL_STATES"}
