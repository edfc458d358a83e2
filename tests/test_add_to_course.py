"""``maxpool-grader add-to-course COURSE_DIR --as NAME`` (issue 47): the exercise put into an
instructor's existing nbgrader course, beside an ordinary assignment of nbgrader's own test
files, under a configuration of the instructor's (a course id, an exchange, nbgrader's own late
policy with its penalty, a time limit, a stub).

Every line the instructor wrote stays, byte for byte, and every value it sets loads as before;
the exercise's settings go where the instructor set nothing, in one marked block, and the
instructor's own choices are named as kept. A second run writes nothing. Every refusal names
the problem and writes nothing. ``doctor`` is ok on the result, and ``maxpool-grader grade
--assignment hw3`` grades a right and a wrong submission to the README's rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import BIN, ROOT, SOURCE_NOTEBOOK, digests, grade_command
from test_faults import printed_table, readme_table
from test_other_assignments import FILES
from traitlets.config import Config

from maxpool_grader.cli.doctor import guarantees
from maxpool_grader.cli.main import main
from maxpool_grader.course.add_exercise import block
from maxpool_grader.course.directory import read_course_config
from maxpool_grader.glue.exercise_config import apply, wanted
from maxpool_grader.names import ASSIGNMENT

INSTRUCTOR = '''"""ML 101's nbgrader configuration, as its instructor wrote it."""
import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "ml101"
c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")
# nbgrader's own late policy, and a penalty of the instructor's
c.AssignLatePenalties.plugin_class = "nbgrader.plugins.LateSubmissionPlugin"
c.LateSubmissionPlugin.penalty_method = "zero"
c.Execute.timeout = 60
c.ClearSolutions.text_stub = "WRITE YOUR ANSWER HERE"
'''
STUDENTS = {"loop_correct": "15/15", "forum_compiles": "9/15"}  # a right and a wrong submission


def instructor_course(folder: Path, config: str | None = INSTRUCTOR) -> Path:
    """An instructor's course: nbgrader's own example assignment ps1 in source/, and ``config``."""
    (folder / "source" / "ps1").mkdir(parents=True)
    shutil.copy(FILES / "submitted-unchanged.ipynb", folder / "source" / "ps1" / "p1.ipynb")
    if config is not None:
        (folder / "nbgrader_config.py").write_text(config)
    return folder


def settings(config: Config) -> dict[str, object]:
    return {f"{section}.{name}": value for section in config if isinstance(config[section], Config)
            for name, value in config[section].items()}


def add(capsys, *args: str) -> tuple[int, str]:
    try:
        code = main(["add-to-course", *args])
    except SystemExit as stopped:
        code = stopped.code
    said = capsys.readouterr()
    return code, said.out + said.err


# ------------------------------------------------------------------ the instructor's settings
def test_every_line_and_value_of_the_instructor_s_config_is_kept(tmp_path, capsys):
    course = instructor_course(tmp_path / "ml101")
    before = settings(read_course_config(course))
    code, said = add(capsys, str(course), "--as", "hw3")
    assert code == 0, said
    text = (course / "nbgrader_config.py").read_text()
    assert text == INSTRUCTOR + "\n" + block("hw3")  # the instructor's bytes first, then one block
    after = settings(read_course_config(course))
    assert {key: after[key] for key in before} == before  # every value the instructor set
    assert after == before | {key: value for key, value in wanted("hw3").items() if key not in before}
    assert (course / "source" / "hw3" / "hw3.ipynb").read_bytes() == SOURCE_NOTEBOOK.read_bytes()
    assert "  added  c.Autograde.autograde_preprocessors = [RestoreCellOrder, OutOfProcessVerdicts" in said
    assert "  kept   c.AssignLatePenalties.plugin_class = LateSubmissionPlugin  (the exercise's: LatePolicy)" in said
    assert ("your other settings, untouched: c.ClearSolutions.text_stub, c.CourseDirectory.course_id, "
            "c.Exchange.root, c.Execute.timeout, c.LateSubmissionPlugin.penalty_method") in said
    assert "WARNING" not in said


def test_a_second_run_writes_nothing_and_says_so(tmp_path, capsys):
    course = instructor_course(tmp_path / "ml101")
    assert add(capsys, str(course), "--as", "hw3")[0] == 0
    first = digests(course)
    code, said = add(capsys, str(course), "--as", "hw3")
    assert code == 0 and digests(course) == first
    assert said.startswith("Nothing changed: source/hw3/hw3.ipynb is the exercise's notebook"), said


def test_a_config_without_a_last_newline_keeps_its_last_line(tmp_path, capsys):
    course = instructor_course(tmp_path / "ml101", INSTRUCTOR.rstrip("\n"))
    assert add(capsys, str(course))[0] == 0
    assert (course / "nbgrader_config.py").read_text() == INSTRUCTOR + "\n" + block(ASSIGNMENT)


def test_a_course_without_a_config_gets_one(tmp_path, capsys):
    course = instructor_course(tmp_path / "ml101", config=None)
    code, said = add(capsys, str(course), "--as", "hw3")
    assert code == 0 and "nbgrader_config.py: written, with one block" in said
    assert settings(read_course_config(course)) == wanted("hw3")


def test_an_instructor_s_own_preprocessors_stay_and_what_they_leave_out_is_named(tmp_path, capsys):
    """Their list wins; the report, the exit status and doctor say what the exercise then lacks."""
    own = INSTRUCTOR + ('c.Autograde.autograde_preprocessors = ["nbgrader.preprocessors.Execute", '
                        '"nbgrader.preprocessors.SaveAutoGrades"]\n')
    course = instructor_course(tmp_path / "ml101", own)
    code, said = add(capsys, str(course), "--as", "hw3")
    assert code == 1, said
    assert "  kept   c.Autograde.autograde_preprocessors = [Execute, SaveAutoGrades]  (the exercise's: " in said
    assert "WARNING c.Autograde.autograde_preprocessors lacks the exercise's RestoreCellOrder, " \
           "OutOfProcessVerdicts, SafeExecute" in said
    assert read_course_config(course).Autograde.autograde_preprocessors == [
        "nbgrader.preprocessors.Execute", "nbgrader.preprocessors.SaveAutoGrades"]
    found = {finding.name: finding for finding in guarantees(course)}["exercise"]
    assert not found.holds and "lacks the exercise's RestoreCellOrder" in found.seen and found.fix


# ------------------------------------------------------------------ refusals: a sentence, nothing written
def _other_exercise(course: Path) -> None:
    (course / "source" / "hw2").mkdir()
    shutil.copy(SOURCE_NOTEBOOK, course / "source" / "hw2" / "hw2.ipynb")


def _other_notebook(course: Path) -> None:
    (course / "source" / "hw3").mkdir()
    (course / "source" / "hw3" / "hw3.ipynb").write_text("{}")


def _config(text: str):
    return lambda course: (course / "nbgrader_config.py").write_text(text)


@pytest.mark.parametrize("name, change, said", [
    ("a+b", None, "nbgrader refuses '+' in an assignment id"),
    (" hw3", None, "nbgrader strips the spaces around it"),
    ("../hw3", None, "it is not one folder's name"),
    ("hw*", None, "nbgrader reads assignment ids as file patterns"),
    ("", None, "it is empty"),
    (".hw3", None, "hidden from nbgrader's patterns"),
    ("ps1", None, "holds another assignment's files (p1.ipynb): choose another name with --as"),
    ("hw3", _other_notebook, "is a different notebook than the exercise's"),
    ("hw3", _config(INSTRUCTOR + "c.Oops = undefined\n"),
     "nbgrader_config.py does not run (NameError: name 'undefined' is not defined)"),
    ("hw3", _config(INSTRUCTOR + 'c.ThisExercise.assignment = "hw2"\n'), "sets c.ThisExercise.assignment = 'hw2'"),
    ("hw3", _config(INSTRUCTOR + "\n" + block("hw2")), "adds the exercise as 'hw2' already"),
    ("hw3", _other_exercise, "the course has the exercise as hw2 already (its notebook in source/)"),
], ids=["plus", "spaces", "path", "glob", "empty", "hidden", "other-assignment", "other-notebook", "broken-config",
        "named-elsewhere", "block-elsewhere", "notebook-elsewhere"])
def test_a_refusal_names_the_problem_and_writes_nothing(tmp_path, capsys, name, change, said):
    course = instructor_course(tmp_path / "ml101")
    if change:
        change(course)
    before = digests(course)
    code, output = add(capsys, str(course), "--as", name)
    assert code == 2 and said in output and output.rstrip().endswith("Nothing was written."), output
    assert digests(course) == before


@pytest.mark.parametrize("what", ["missing", "file"])
def test_a_course_dir_that_is_no_directory_is_refused(tmp_path, capsys, what):
    course = tmp_path / "ml101"
    if what == "file":
        course.write_text("not a course")
    code, output = add(capsys, str(course))
    assert code == 2 and f"{course} is not a directory" in output, output
    assert [path.name for path in tmp_path.iterdir()] == (["ml101"] if what == "file" else [])


# ------------------------------------------------------------------ one declaration
def test_this_course_s_config_sets_exactly_what_apply_sets_and_its_own_course_settings():
    """nbgrader_config.py spells the exercise's settings out with their reasons; they are
    ``SETTINGS``, and besides them only the course's id, exchange and nbgrader's own stubs."""
    ours = settings(read_course_config(ROOT))
    assert {key: ours.get(key) for key in wanted()} == wanted()
    assert set(ours) - set(wanted()) == {"CourseDirectory.course_id", "Exchange.root", "ClearSolutions.code_stub",
                                         "ClearSolutions.text_stub"}


def test_apply_sets_only_what_is_unset():
    config = Config()
    config.AssignLatePenalties.plugin_class = "mine.Late"
    config.ThisExercise.assignment = "hw3"
    added = apply(config, assignment="hw4")
    assert "AssignLatePenalties.plugin_class" not in added and "ThisExercise.assignment" not in added
    assert config.AssignLatePenalties.plugin_class == "mine.Late" and config.ThisExercise.assignment == "hw3"
    assert config.ThisExercise.notebook == "hw4" and apply(config, assignment="hw4") == []


# ------------------------------------------------------------------ the course it makes, graded
def _grader(*args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    return subprocess.run([str(BIN / "maxpool-grader"), *args], env=env, text=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def added_course(tmp_path_factory):
    course = instructor_course(tmp_path_factory.mktemp("add-to-course") / "ml101")
    first = _grader("add-to-course", str(course), "--as", "hw3")
    assert first.returncode == 0, first.stdout + first.stderr
    written = digests(course)
    again = _grader("add-to-course", str(course), "--as", "hw3")
    again_wrote = digests(course)
    doctor = _grader("doctor", "--json", "--course-dir", str(course))
    for student in STUDENTS:  # their submissions, renamed hw3 as test_other_assignments does
        folder = course / "submitted" / student / "hw3"
        shutil.copytree(ROOT / "submitted" / student / ASSIGNMENT, folder)
        (folder / f"{ASSIGNMENT}.ipynb").rename(folder / "hw3.ipynb")
    graded = grade_command(course, "--assignment", "hw3")
    return {"course": course, "written": written, "again": again, "again_wrote": again_wrote, "doctor": doctor,
            "graded": graded}


@pytest.mark.integration  # the command line, doctor's sandbox checks, one grading run
def test_the_real_command_run_twice_writes_once(added_course):
    again = added_course["again"]
    assert again.returncode == 0 and again.stdout.startswith("Nothing changed"), again.stdout + again.stderr
    assert added_course["again_wrote"] == added_course["written"]


@pytest.mark.integration
def test_doctor_is_ok_on_the_course(added_course):
    found = {finding["name"]: finding for finding in json.loads(added_course["doctor"].stdout)}
    assert found["exercise"]["holds"] and found["exercise"]["needed"], found["exercise"]
    assert found["exercise"]["seen"].startswith("hw3 is the exercise (source/hw3/hw3.ipynb)")
    assert found["gradebook"]["holds"] and found["nbgrader"]["holds"], found
    assert added_course["doctor"].returncode == (0 if all(f["holds"] or not f["needed"] for f in found.values())
                                                 else 1)


@pytest.mark.integration
def test_grade_grades_the_exercise_under_its_new_name_to_the_readme_s_rows(added_course):
    graded = added_course["graded"]
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    rows = [row.split() for row in printed_table(graded.stdout)]
    assert rows == [row.split() for row in readme_table() if row.split()[0] in STUDENTS]
    assert {row[0]: row[-1] for row in rows} == STUDENTS
    page = (added_course["course"] / "feedback" / "loop_correct" / "hw3" / "hw3.html").read_text()
    assert "Part A: your derivation" in page  # the exercise's own feedback page
