"""From the LMS and back: Canvas and Moodle "download all submissions" zips, graded with
the documented commands (collect-lms, grade, export-lms), and the CSVs checked against
the gradebook: every student's grade, the late penalty, resubmissions, files of nobody,
a student who uploaded no notebook.

Then every student as an attacker: uploads named to pass for another student, names
that match nothing, unreadable or huge entries, paths that climb out, an older zip over
a newer one, names that are formulas. After each, everything already in submitted/ is
byte for byte as it was unless the zip's own student replaced it, and every upload is in
submitted/ or lms-unmatched/ or named as skipped on the terminal."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from corpus import FULL, ZEROS, notebook_with
from helpers import ASSIGNMENT, BIN, copy_course, nbgrader
from make_sample_class import LOOP_CORRECT, TIES_ALL_MAXIMA, VECTORIZED_CORRECT
from nbgrader.api import Gradebook

from maxpool_grader.glue.latepolicy import LatePolicy
from maxpool_grader.glue.safecsvexport import csv_cell
from maxpool_grader.lms.match import match_key
from maxpool_grader.lms.tree import remove_tree, walk
from maxpool_grader.lms.zip_upload import (
    KILL_AT,
    LmsError,
    ZipLimits,
    ambiguous,
    detect_layout,
    parse,
    parse_size,
    safe_parts,
    shorten,
    shown,
    stage,
)
from maxpool_grader.names import PART_A_CELL, grade_id

integration = pytest.mark.integration  # real nbgrader commands and gradebooks (the unit tests at the end are not)

DUE = dt.datetime(2026, 11, 20, 23, 59)
ON_TIME = (2026, 11, 20, 18, 0, 0)
TWO_DAYS_LATE = (2026, 11, 22, 12, 0, 0)  # 36 hours late: two started days
ROSTER = """id,first_name,last_name,email,lms_id
s_lina,Lina,Haddad,lina@example.edu,101
s_farah,Farah,Okafor,farah@example.edu,
s_tara,Tara,Nguyen,tara@example.edu,103
s_vera,Vera,Kowalski,vera@example.edu,104
s_felix,Felix,Brandt,felix@example.edu,105
s_noah,Noah,Fischer,noah@example.edu,
s_tomas,Tomas,Alvarez,tomas@example.edu,
"""


def run(course: Path, *args: str, status: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "maxpool-grader"), *args, "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == status, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def notebook(release, code: str, part_a: str | None = None) -> bytes:
    filled = notebook_with(release, code)
    for cell in filled.cells:
        if part_a and grade_id(cell) == PART_A_CELL:
            cell.source = part_a
    return nbformat.writes(filled).encode()


def add(archive: zipfile.ZipFile, name: str, data: bytes, when=ON_TIME) -> None:
    archive.writestr(zipfile.ZipInfo(name, date_time=when), data)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The course with its release generated, made once; each test gets a copy."""
    course = copy_course(tmp_path_factory.mktemp("lms") / "course", with_submissions=False)
    (course / "roster.csv").write_text(ROSTER)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    return course


@pytest.fixture
def course(generated, tmp_path):
    return Path(shutil.copytree(generated, tmp_path / "course"))


def release_of(course: Path):
    return nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def code_scores(course: Path) -> dict[str, tuple[float, float]]:
    """student -> (autograded score, late penalty)."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        return {student.id: (book.find_submission(ASSIGNMENT, student.id).code_score,
                             book.find_submission(ASSIGNMENT, student.id).late_submission_penalty or 0)
                for student in book.students if student.submissions}


@integration
def test_a_canvas_zip_graded_and_exported(course, tmp_path):
    release, zip_path = release_of(course), tmp_path / "submissions.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, f"haddadlina_101_9001_{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"okaforfarah_102_9002_{ASSIGNMENT}.ipynb",  # matched by name; Part A answered
            notebook(release, TIES_ALL_MAXIMA, "The gradient goes to the maximum of each window."))
        add(archive, f"nguyentara_LATE_103_9003_{ASSIGNMENT}.ipynb", notebook(release, VECTORIZED_CORRECT),
            TWO_DAYS_LATE)
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}.ipynb", notebook(release, ZEROS))
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}-1.ipynb", notebook(release, ZEROS))
        add(archive, f"kowalskivera_104_9004_{ASSIGNMENT}-2.ipynb", notebook(release, LOOP_CORRECT))  # the last
        add(archive, "brandtfelix_105_9005_solution.py", LOOP_CORRECT.encode())
        add(archive, f"smithjohn_199_9099_{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
    collected = run(course, "collect-lms", str(zip_path), "--due", DUE.strftime("%Y-%m-%d %H:%M"))
    assert "5 students' submissions" in collected.stdout and "late: s_tara" in collected.stdout
    assert "smithjohn_199_9099" in collected.stdout and "no student in roster.csv is 'smithjohn'" in collected.stdout
    assert (course / "lms-unmatched" / "submissions" / f"smithjohn_199_9099_{ASSIGNMENT}.ipynb").exists()
    assert "s_felix: uploaded no notebook (solution.py)" in collected.stdout
    assert sorted(p.name for p in (course / "submitted" / "s_vera" / ASSIGNMENT).iterdir()) == \
        [f"{ASSIGNMENT}.ipynb", "timestamp.txt"]

    run(course, "grade")
    scores = code_scores(course)
    two_days = pytest.approx(2 * LatePolicy().percent_per_day / 100 * FULL)  # the course's late policy
    assert scores == {"s_lina": (FULL, 0), "s_farah": (12, 0), "s_tara": (FULL, two_days),
                      "s_vera": (FULL, 0), "s_felix": (0, 0)}
    feedback = (course / "feedback" / "s_felix" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "No notebook named max_pool_backward.ipynb was submitted" in feedback

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:  # Part A graded for two students
        for student, points in (("s_lina", 5), ("s_tara", 4)):
            grade = book.find_grade("part_a_derivation", ASSIGNMENT, ASSIGNMENT, student)
            grade.manual_score, grade.needs_manual_grade = points, False
        book.db.commit()
    exported = run(course, "export-lms", "--canvas-column", "Max pooling (4242)")
    # Part A left as released is "no response" (0, graded); s_farah answered it: still to grade
    assert "Part A is not graded yet for 1 student(s): s_farah" in exported.stdout
    with open(course / "canvas_grades.csv") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Max pooling (4242)"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "20"]
    rows = {row[2]: row for row in canvas[2:]}
    assert rows["s_lina"] == ["Haddad, Lina", "101", "s_lina", "", "", "20"]
    assert rows["s_tara"][5] == f"{FULL + 4 - 0.2 * FULL:g}"  # the penalty applies to the autograded points
    assert rows["s_farah"][1] == "102" and rows["s_farah"][5] == ""  # id from the zip; Part A not graded: empty
    with open(course / "lms_grades.csv") as handle:
        generic = {row["student_id"]: row for row in csv.DictReader(handle)}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        for student, row in generic.items():
            submission = book.find_submission(ASSIGNMENT, student)
            penalty = submission.late_submission_penalty or 0
            assert float(row["total"]) == pytest.approx(submission.score - penalty)
            assert float(row["autograded"]) == submission.code_score and float(row["late_penalty"]) == penalty
            assert row["part_a_graded"] == ("no" if student == "s_farah" else "yes")


MOODLE_ROSTER = ROSTER.replace("s_lina,Lina,Haddad,lina@example.edu,101", "s_lina,Lina,Haddad,lina@example.edu,55503")


@integration
def test_a_moodle_zip_in_folders_or_flat(course, tmp_path):
    (course / "roster.csv").write_text(MOODLE_ROSTER)  # Lina's lms_id is her Moodle participant id
    release, folders, flat = release_of(course), tmp_path / "moodle.zip", tmp_path / "moodle-flat.zip"
    with zipfile.ZipFile(folders, "w") as archive:
        add(archive, f"Noah Fischer_55501_assignsubmission_file/{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"Lina Haddad_55503_assignsubmission_file_/{ASSIGNMENT}.ipynb", notebook(release, ZEROS))
        add(archive, "Lina Haddad_55503_assignsubmission_file_/notes.ipynb", notebook(release, LOOP_CORRECT))
        add(archive, f"Ghost Person_55599_assignsubmission_file/{ASSIGNMENT}.ipynb", notebook(release, LOOP_CORRECT))
    with zipfile.ZipFile(flat, "w") as archive:  # "Download submissions in folders" off; a name with an accent
        add(archive, f"Tomás Alvarez_55502_assignsubmission_file_{ASSIGNMENT}.ipynb",
            notebook(release, TIES_ALL_MAXIMA), TWO_DAYS_LATE)
    collected = run(course, "collect-lms", str(folders), "--due", "2026-11-20T23:59+00:00")
    assert "2 students' submissions" in collected.stdout and "(moodle-folders layout)" in collected.stdout
    assert "no student in roster.csv is 'Ghost Person'" in collected.stdout
    assert f"s_lina: uploaded 2 notebooks ({ASSIGNMENT}.ipynb, notes.ipynb); {ASSIGNMENT}.ipynb is graded" \
        in collected.stdout
    collected = run(course, "collect-lms", str(flat), "--due", "2026-11-20T23:59+00:00")
    assert "1 students' submissions" in collected.stdout and "(moodle-flat layout)" in collected.stdout
    assert "late: s_tomas" in collected.stdout
    run(course, "grade")
    assert code_scores(course) == {"s_noah": (FULL, 0), "s_tomas": (12, pytest.approx(0.2 * 12)), "s_lina": (0, 0)}


@integration
def test_a_zip_that_is_not_one_and_a_missing_roster_are_refused(course, tmp_path):
    not_zip = tmp_path / "x.zip"
    not_zip.write_text("hello")
    result = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(not_zip), "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "is not a zip file that can be read" in result.stderr
    (course / "roster.csv").unlink()
    with zipfile.ZipFile(tmp_path / "empty.zip", "w"):
        pass
    result = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(tmp_path / "empty.zip"),
                             "--course-dir", str(course)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "roster.csv is missing" in result.stderr


# ------------------------------------------------------------------ every student an attacker
EARLIER = (2026, 11, 19, 9, 0, 0)  # what submitted/ holds before the hostile zip


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder``: path -> SHA-256 (or "folder")."""
    return {str(path.relative_to(folder)): "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))} if folder.exists() else {}


def seed(course: Path, *students: str) -> dict[str, dict[str, str]]:
    """An earlier submission for each student, as collect-lms writes it; returns their trees."""
    for student in students:
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{ASSIGNMENT}.ipynb").write_bytes(notebook(release_of(course), f"# earlier, {student}\n{ZEROS}"))
        (folder / "timestamp.txt").write_text("2026-11-19 09:00:00.000000 UTC")
    return {student: tree(course / "submitted" / student) for student in students}


def submitted_trees(course: Path) -> dict[str, dict[str, str]]:
    return {folder.name: tree(folder) for folder in sorted((course / "submitted").iterdir())}


def assert_every_upload_accounted_for(course: Path, zip_path: Path, out: str) -> None:
    """Each upload is in submitted/ (its bytes), or in lms-unmatched/ and named on the
    terminal, or named on the terminal as SKIPPED."""
    def contents(folder: Path) -> set[str]:
        return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}
    collected, kept = contents(course / "submitted"), contents(course / "lms-unmatched")
    lines = {line.strip().split(": ", 1)[0]: line for line in out.splitlines() if ": " in line}
    with zipfile.ZipFile(zip_path) as archive:
        for entry in archive.infolist():
            line = lines.get(shown(entry.filename), "")
            if "SKIPPED" in line:
                continue
            digest = hashlib.sha256(archive.read(entry)).hexdigest()
            assert digest in collected or (digest in kept and "copied to lms-unmatched/" in line), \
                f"{entry.filename!r} is lost or not named:\n{out}"


def canvas_entry(name: str, lms_id: int, file: str) -> str:
    return f"{name}_{lms_id}_{9000 + lms_id}_{file}"


@integration
def test_an_upload_named_like_another_student_stays_with_its_uploader_in_canvas(course, tmp_path):
    before = seed(course, "s_vera")
    release, zip_path = release_of(course), tmp_path / "canvas.zip"
    impostor = f"Vera Kowalski_104_assignsubmission_file_{ASSIGNMENT}.ipynb"  # a Moodle name, inside Canvas's
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("haddadlina", 101, impostor), b"lina's upload")
        add(archive, canvas_entry("smithjohn", 199, impostor), b"a stranger's upload")
        add(archive, canvas_entry("nguyentara", 103, f"{ASSIGNMENT}.ipynb"), notebook(release, LOOP_CORRECT))
    out = run(course, "collect-lms", str(zip_path)).stdout
    assert "(canvas layout)" in out
    assert submitted_trees(course)["s_vera"] == before["s_vera"]  # Vera uploaded nothing: nothing changes
    assert (course / "submitted" / "s_lina" / ASSIGNMENT / impostor).read_bytes() == b"lina's upload"
    assert "no student in roster.csv is 'smithjohn' (LMS id 199)" in out
    assert (course / "lms-unmatched" / "canvas" / canvas_entry("smithjohn", 199, impostor)).exists()
    assert f"s_lina: uploaded one notebook, {impostor}, not named {ASSIGNMENT}.ipynb: it is graded in its place" \
        in out  # as hers: the glue grades a lone notebook of another name in place of the expected one
    assert_every_upload_accounted_for(course, zip_path, out)

    lone = tmp_path / "lone.zip"  # only the impostor: the names fit Canvas and Moodle equally
    with zipfile.ZipFile(lone, "w") as archive:
        add(archive, canvas_entry("haddadlina", 101, impostor), b"lina's upload")
    refused = run(course, "collect-lms", str(lone), status=2)
    assert "pass --lms canvas" in refused.stderr and submitted_trees(course)["s_vera"] == before["s_vera"]
    assert "(canvas layout)" in run(course, "collect-lms", str(lone), "--lms", "canvas").stdout
    assert submitted_trees(course)["s_vera"] == before["s_vera"]


@integration
def test_an_upload_named_like_another_student_stays_with_its_uploader_in_moodle(course, tmp_path):
    (course / "roster.csv").write_text(MOODLE_ROSTER)
    before = seed(course, "s_vera")
    zip_path = tmp_path / "moodle.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:  # Lina's own sub-folder, named as Vera's folder
        add(archive, f"Lina Haddad_55503_assignsubmission_file/Vera Kowalski_104_assignsubmission_file/{ASSIGNMENT}"
                     ".ipynb", b"lina's upload")
        add(archive, f"Noah Fischer_55501_assignsubmission_file/Vera Kowalski_104_assignsubmission_file_{ASSIGNMENT}"
                     ".ipynb", b"noah's upload")
    out = run(course, "collect-lms", str(zip_path)).stdout
    assert "(moodle-folders layout)" in out and "2 students' submissions" in out
    assert submitted_trees(course)["s_vera"] == before["s_vera"]
    assert (course / "submitted" / "s_lina" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"lina's upload"
    assert f"s_lina's file, saved as submitted/s_lina/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" in out  # named: it moved
    assert (course / "submitted" / "s_noah" / ASSIGNMENT / f"Vera Kowalski_104_assignsubmission_file_{ASSIGNMENT}"
            ".ipynb").read_bytes() == b"noah's upload"
    assert_every_upload_accounted_for(course, zip_path, out)

    flat = tmp_path / "moodle-flat.zip"
    with zipfile.ZipFile(flat, "w") as archive:
        add(archive, f"Lina Haddad_55503_assignsubmission_file_Vera Kowalski_104_assignsubmission_file_{ASSIGNMENT}"
                     ".ipynb", b"lina again")
        add(archive, f"Noah Fischer_55501_assignsubmission_file_{ASSIGNMENT}.ipynb", b"noah again")
    out = run(course, "collect-lms", str(flat)).stdout
    assert "(moodle-flat layout)" in out and submitted_trees(course)["s_vera"] == before["s_vera"]
    # her full name, which Moodle lets her edit, could hold the marker too: whose file it is cannot be told
    assert "'_<id>_assignsubmission_file_' is in its name twice" in out
    assert (course / "lms-unmatched" / "moodle-flat" / f"Lina Haddad_55503_assignsubmission_file_Vera Kowalski_104_"
            f"assignsubmission_file_{ASSIGNMENT}.ipynb").read_bytes() == b"lina again"
    assert_every_upload_accounted_for(course, flat, out)


UNICODE_ROSTER = ROSTER + """s_vera_k,Вера,Ковальская,vk@example.edu,
s_wang,伟,王,wang@example.edu,
s_li,娜,李,li@example.edu,
s_nameless,,,nameless@example.edu,
"""


@integration
def test_names_in_any_script_match_their_student_and_an_empty_name_matches_nobody(course, tmp_path):
    (course / "roster.csv").write_text(UNICODE_ROSTER)
    zip_path = tmp_path / "unicode.zip"
    uploads = {"s_vera_k": canvas_entry("ковальскаявера", 301, f"{ASSIGNMENT}.ipynb"),
               "s_wang": canvas_entry("王伟", 302, f"{ASSIGNMENT}.ipynb"),
               "s_li": canvas_entry("李娜", 303, f"{ASSIGNMENT}.ipynb")}
    with zipfile.ZipFile(zip_path, "w") as archive:
        for student, name in uploads.items():
            add(archive, name, f"{student}'s work".encode())
        add(archive, canvas_entry("", 304, f"{ASSIGNMENT}.ipynb"), b"a user whose name has no letters")
        add(archive, canvas_entry("", 305, f"{ASSIGNMENT}.ipynb"), b"another one")
    out = run(course, "collect-lms", str(zip_path)).stdout
    for student in uploads:
        assert (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == \
            f"{student}'s work".encode()
    assert not (course / "submitted" / "s_nameless").exists()
    assert out.count("the name has no letters or digits to match by") == 2
    assert sorted(p.name for p in (course / "lms-unmatched" / "unicode").iterdir()) == \
        [canvas_entry("", 304, f"{ASSIGNMENT}.ipynb"), canvas_entry("", 305, f"{ASSIGNMENT}.ipynb")]
    state = (course / ".maxpool-grader" / "lms.json").read_text()
    assert '"s_nameless"' not in state and '"lms_id": "302"' in state
    assert_every_upload_accounted_for(course, zip_path, out)


def set_header_field(path: Path, name: str, local_offset: int, central_offset: int, change) -> None:
    """Change one field of ``name``'s local and central headers in the zip at ``path``:
    ``change(bytearray, offset)`` is called at each."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(name).header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    change(data, local + local_offset)
    central = data.find(b"PK\x01\x02")
    while central != -1:
        length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46:central + 46 + length] == name.encode():
            change(data, central + central_offset)
        central = data.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(data))


def encrypt_flag(data: bytearray, at: int) -> None:
    data[at] |= 0x1  # general purpose flag, bit 0: encrypted


def wrong_crc(data: bytearray, at: int) -> None:
    struct.pack_into("<I", data, at, struct.unpack_from("<I", data, at)[0] ^ 0xDEADBEEF)


@integration
def test_unreadable_or_huge_entries_are_skipped_and_named_and_change_nothing(course, tmp_path):
    before = seed(course, "s_vera", "s_lina", "s_tara", "s_felix", "s_noah")
    release, zip_path = release_of(course), tmp_path / "bad.zip"
    names = {student: canvas_entry(name, lms_id, f"{ASSIGNMENT}.ipynb") for student, name, lms_id in (
        ("s_vera", "kowalskivera", 104), ("s_lina", "haddadlina", 101), ("s_tara", "nguyentara", 103),
        ("s_felix", "brandtfelix", 105), ("s_farah", "okaforfarah", 102), ("s_noah", "fischernoah", 106))}
    felix_extra = canvas_entry("brandtfelix", 105, "data.npz")
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for student, name in names.items():
            data = b"{" + b" " * 300_000 + b"}" if student == "s_tara" else notebook(release, f"# {student}\n{ZEROS}")
            add(archive, name, data)
        add(archive, felix_extra, b"numbers")
    set_header_field(zip_path, names["s_vera"], 6, 8, encrypt_flag)
    set_header_field(zip_path, names["s_lina"], 14, 16, wrong_crc)
    set_header_field(zip_path, felix_extra, 6, 8, encrypt_flag)  # his notebook is fine: he is kept whole
    set_header_field(zip_path, names["s_noah"], 22, 24, lambda data, at: struct.pack_into("<I", data, at, 100))
    # the release notebook (about 90 KiB) fits under the limit, Tara's 300 KB file does not
    out = run(course, "collect-lms", str(zip_path), "--max-file-size", "192KiB", status=1).stdout
    after = submitted_trees(course)
    for student in ("s_vera", "s_lina", "s_tara", "s_felix", "s_noah"):
        assert after[student] == before[student], student
    assert (course / "submitted" / "s_farah" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()  # the good one
    assert "1 students' submissions" in out and not list(course.rglob(".*lms-*"))
    lines = {line.strip().split(": ", 1)[0]: line for line in out.splitlines()}
    assert "SKIPPED, encrypted" in lines[names["s_vera"]] and "SKIPPED, encrypted" in lines[felix_extra]
    assert "SKIPPED, damaged: Bad CRC-32" in lines[names["s_lina"]]
    assert "SKIPPED, unpacks to 293 KiB, more than 192 KiB (--max-file-size)" in lines[names["s_tara"]]
    assert "SKIPPED, damaged" in lines[names["s_noah"]]  # its header says 100 bytes: it is read as that, and fails
    assert "kept out" in lines[names["s_felix"]] and "copied to lms-unmatched/bad/" in lines[names["s_felix"]]
    assert '"s_farah"' in (course / ".maxpool-grader" / "lms.json").read_text()
    assert_every_upload_accounted_for(course, zip_path, out)


@integration
def test_the_zip_may_unpack_only_so_far_in_all(course, tmp_path):
    before = seed(course, "s_lina", "s_tara")
    zip_path = tmp_path / "big.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, lms_id in (("kowalskivera", 104), ("haddadlina", 101), ("nguyentara", 103)):
            add(archive, canvas_entry(name, lms_id, f"{ASSIGNMENT}.ipynb"), name.encode() * 5000)
    out = run(course, "collect-lms", str(zip_path), "--max-total-size", "100k", status=1).stdout
    assert (course / "submitted" / "s_vera" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    assert out.count("SKIPPED, the zip unpacks to more than 100 KiB in all") == 2
    assert {student: tree for student, tree in submitted_trees(course).items() if student != "s_vera"} == before


@integration
def test_unmatched_files_keep_their_whole_path_and_never_overwrite_each_other(course, tmp_path):
    zip_path, again = tmp_path / "subs.zip", tmp_path / "other" / "subs.zip"
    again.parent.mkdir()
    with zipfile.ZipFile(zip_path, "w") as archive:  # not Canvas-named: kept under their own paths
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina")
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera")
        add(archive, f"ghost one/{ASSIGNMENT}.ipynb", b"first ghost")
        add(archive, f"ghost two/{ASSIGNMENT}.ipynb", b"second ghost")
        add(archive, f"ghost one\\{ASSIGNMENT}.ipynb", b"a third, with a backslash")
        add(archive, f"smithjohn_199_9099_{ASSIGNMENT}.ipynb", b"john")
    with zipfile.ZipFile(again, "w") as archive:
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina")
        add(archive, f"smithjohn_199_9099_{ASSIGNMENT}.ipynb", b"john, changed")
    out = run(course, "collect-lms", str(zip_path)).stdout
    kept = course / "lms-unmatched" / "subs"
    assert (kept / "ghost one" / f"{ASSIGNMENT}.ipynb").read_bytes() == b"first ghost"
    assert (kept / "ghost two" / f"{ASSIGNMENT}.ipynb").read_bytes() == b"second ghost"
    assert (kept / "ghost one" / f"{ASSIGNMENT}~2.ipynb").read_bytes() == b"a third, with a backslash"
    assert_every_upload_accounted_for(course, zip_path, out)
    assert run(course, "collect-lms", str(zip_path)).stdout == out  # the same zip again: the same files, once
    run(course, "collect-lms", str(again))
    assert (kept / f"smithjohn_199_9099_{ASSIGNMENT}.ipynb").read_bytes() == b"john"
    assert (kept / f"smithjohn_199_9099_{ASSIGNMENT}~2.ipynb").read_bytes() == b"john, changed"


@integration
def test_paths_that_climb_out_or_are_too_long_stay_inside_and_are_named(course, tmp_path):
    zip_path, long = tmp_path / "paths.zip", "ж" * 150 + ".ipynb"  # 306 bytes of UTF-8
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera")
        add(archive, canvas_entry("kowalskivera", 104, "..\\..\\win.ipynb"), b"climbing")
        add(archive, canvas_entry("kowalskivera", 104, long), b"long")
        add(archive, canvas_entry("haddadlina", 101, "timestamp.txt"), b"2099-01-01 00:00:00 UTC")
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina")
        add(archive, f"../../../{long}/..\\..\\evil.ipynb", b"nobody's")
        add(archive, f"/tmp/{long}", b"absolute")
    outside = {path for path in tmp_path.rglob("*") if "course" not in path.parts}
    out = run(course, "collect-lms", str(zip_path)).stdout
    vera = course / "submitted" / "s_vera" / ASSIGNMENT
    assert (vera / "win.ipynb").read_bytes() == b"climbing" and (vera / f"{ASSIGNMENT}.ipynb").read_bytes() == b"vera"
    assert [p.read_bytes() for p in vera.iterdir() if p.name == shorten(long)] == [b"long"]
    assert "s_vera: uploaded 3 notebooks" in out and f"{ASSIGNMENT}.ipynb is graded" in out
    assert "saved as submitted/s_vera/max_pool_backward/win.ipynb" in out
    lina = course / "submitted" / "s_lina" / ASSIGNMENT
    assert (lina / "_timestamp.txt").read_bytes() == b"2099-01-01 00:00:00 UTC"
    assert (lina / "timestamp.txt").read_text().startswith("2026-11-20 18:00:00")
    kept = course / "lms-unmatched" / "paths"
    assert (kept / shorten(long) / "evil.ipynb").read_bytes() == b"nobody's"
    assert (kept / "tmp" / shorten(long)).read_bytes() == b"absolute"
    assert {path for path in tmp_path.rglob("*") if "course" not in path.parts} == outside
    assert all(len(part.encode()) <= 255 for path in course.rglob("*") for part in path.parts)
    assert_every_upload_accounted_for(course, zip_path, out)


@integration
def test_an_older_zip_does_not_replace_a_newer_submission_unless_told(course, tmp_path):
    newer, older = tmp_path / "newer.zip", tmp_path / "older.zip"
    with zipfile.ZipFile(newer, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera, second try", TWO_DAYS_LATE)
    with zipfile.ZipFile(older, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera, first try", ON_TIME)
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina", ON_TIME)
    run(course, "collect-lms", str(newer))
    assert run(course, "collect-lms", str(newer)).returncode == 0  # the same zip again: the same times
    vera = tree(course / "submitted" / "s_vera")
    out = run(course, "collect-lms", str(older), status=1).stdout
    assert tree(course / "submitted" / "s_vera") == vera
    assert (course / "submitted" / "s_lina" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"lina"
    assert ("kept out: submitted/s_vera holds a newer submission (2026-11-22 12:00:00 UTC) than this zip's "
            "(2026-11-20 18:00:00 UTC); --replace-newer replaces it") in out
    assert (course / "lms-unmatched" / "older" / canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb")).exists()
    assert_every_upload_accounted_for(course, older, out)
    run(course, "collect-lms", str(older), "--replace-newer")
    assert (course / "submitted" / "s_vera" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"vera, first try"


@integration
def test_two_lms_users_who_fit_one_student_are_both_left_for_the_instructor(course, tmp_path):
    before = seed(course, "s_farah")  # no lms_id in the roster: matched by name
    zip_path = tmp_path / "namesakes.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("okaforfarah", 102, f"{ASSIGNMENT}.ipynb"), b"one farah")
        add(archive, canvas_entry("okaforfarah", 666, f"{ASSIGNMENT}.ipynb"), b"another farah")
        add(archive, canvas_entry("kowalskivera", 777, f"{ASSIGNMENT}.ipynb"), b"not the vera of roster.csv")
    out = run(course, "collect-lms", str(zip_path), status=1).stdout  # refused by name: not a silent 0
    assert submitted_trees(course) == before
    assert out.count("2 LMS users (ids 102, 666) fit s_farah") == 2
    assert "no student in roster.csv is 'kowalskivera' (LMS id 777)" in out  # Vera is known by her lms_id
    assert_every_upload_accounted_for(course, zip_path, out)


# ------------------------------------------------------------------ a term of collections
NO_IDS_ROSTER = """id,first_name,last_name,email
s_vera,Vera,Kowalski,vera@example.edu
s_eve,Eve,Mallory,eve@example.edu
s_lina,Lina,Haddad,lina@example.edu
"""


def moodle(name: str, participant: int) -> str:
    return f"{name}_{participant}_assignsubmission_file/{ASSIGNMENT}.ipynb"


@integration
def test_a_moodle_display_name_never_decides_against_another_entry_or_an_earlier_collection(course, tmp_path):
    (course / "roster.csv").write_text(NO_IDS_ROSTER)  # no lms_id column: names are all there is at first
    first, impostor, newcomer, renamed = (tmp_path / f"{name}.zip" for name in ("first", "impostor", "new", "renamed"))
    with zipfile.ZipFile(first, "w") as archive:  # Eve renamed herself "Vera Kowalski", beside the real Vera
        add(archive, moodle("Vera Kowalski", 501), b"the real vera")
        add(archive, moodle("Vera Kowalski", 502), b"eve, as vera")
        add(archive, moodle("Lina Haddad", 503), b"lina")
    out = run(course, "collect-lms", str(first), status=1).stdout
    assert not (course / "submitted" / "s_vera").exists()  # neither entry is taken for her: both named
    assert out.count("2 LMS users (ids 501, 502) fit s_vera") == 2
    assert (course / "submitted" / "s_lina" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"lina"
    assert_every_upload_accounted_for(course, first, out)

    with zipfile.ZipFile(first, "w") as archive:  # the names as they were: each recorded with its LMS user
        add(archive, moodle("Vera Kowalski", 501), b"the real vera")
        add(archive, moodle("Eve Mallory", 502), b"eve")
    run(course, "collect-lms", str(first), "--replace-newer")
    vera = tree(course / "submitted" / "s_vera")
    with zipfile.ZipFile(impostor, "w") as archive:  # later Eve, renamed, alone: her id is hers, not Vera's
        add(archive, moodle("Vera Kowalski", 502), b"eve, renamed as vera", TWO_DAYS_LATE)
    out = run(course, "collect-lms", str(impostor)).stdout
    assert tree(course / "submitted" / "s_vera") == vera
    assert (course / "submitted" / "s_eve" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == \
        b"eve, renamed as vera"  # a change of display name for the same LMS user is followed
    with zipfile.ZipFile(newcomer, "w") as archive:  # a new LMS user claims a collected name
        add(archive, moodle("Vera Kowalski", 777), b"someone new", TWO_DAYS_LATE)
    out = run(course, "collect-lms", str(newcomer), status=1).stdout
    assert tree(course / "submitted" / "s_vera") == vera
    assert "LMS user 777 is named 'Vera Kowalski', like s_vera, who was collected before as LMS user 501" in out
    assert_every_upload_accounted_for(course, newcomer, out)
    with zipfile.ZipFile(renamed, "w") as archive:  # Vera renamed herself: still Vera
        add(archive, moodle("V. K.", 501), b"vera, renamed", TWO_DAYS_LATE)
    run(course, "collect-lms", str(renamed))
    assert (course / "submitted" / "s_vera" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"vera, renamed"


@integration
def test_too_many_files_are_refused_and_each_unmatched_file_is_named_by_its_own_entry(course, tmp_path):
    before = seed(course, "s_vera")
    crowd = tmp_path / "crowd.zip"
    with zipfile.ZipFile(crowd, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for number in range(20_002):  # a small zip of many entries
            add(archive, canvas_entry("kowalskivera", 104, f"f{number}.txt"), b"x")
    refused = run(course, "collect-lms", str(crowd), status=2)
    assert "holds 20002 files, more than 10000 (--max-files)" in refused.stderr
    assert submitted_trees(course) == before and not (course / "lms-unmatched").exists()
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as archive:
        for number in range(150):
            add(archive, canvas_entry("kowalskivera", 104, f"f{number}.txt"), b"%d" % number)
        for name in ("smithjohn", "doejane"):  # one unknown LMS user, two names
            add(archive, canvas_entry(name, 199, f"{name}.ipynb"), name.encode())
    out = run(course, "collect-lms", str(many), status=1).stdout
    assert submitted_trees(course) == before
    assert "kept out: 150 files, more than 100 for one student, so submitted/s_vera is left as it was" in out
    assert "no student in roster.csv is 'smithjohn' (LMS id 199)" in out
    assert "no student in roster.csv is 'doejane' (LMS id 199)" in out
    assert_every_upload_accounted_for(course, many, out)


@integration
def test_a_folder_without_a_timestamp_counts_as_newer_than_any_zip(course, tmp_path):
    folder = course / "submitted" / "s_vera" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{ASSIGNMENT}.ipynb").write_bytes(b"put there by hand")
    zip_path = tmp_path / "older.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"from the zip")
    out = run(course, "collect-lms", str(zip_path), status=1).stdout
    assert (folder / f"{ASSIGNMENT}.ipynb").read_bytes() == b"put there by hand"
    assert "submitted/s_vera holds a submission without a timestamp.txt" in out
    run(course, "collect-lms", str(zip_path), "--replace-newer")
    assert (folder / f"{ASSIGNMENT}.ipynb").read_bytes() == b"from the zip"


def litter(course: Path) -> list[str]:
    """What a collect-lms leaves only when it was interrupted."""
    found = [p for p in (course / "submitted").rglob(".*lms-*")] if (course / "submitted").exists() else []
    found += list((course / ".maxpool-grader").glob("lms-staging-*"))
    found += [p for p in (course / "lms-unmatched").rglob(".lms-part-*")] if (course / "lms-unmatched").exists() \
        else []
    return [str(path.relative_to(course)) for path in found]


@integration
@pytest.mark.parametrize("step", ["staging", "unmatched-copy", "swap", "between-renames"])
def test_a_collection_killed_at_any_step_loses_nothing_and_the_next_run_cleans_up(course, tmp_path, step):
    before = seed(course, "s_vera", "s_lina")
    zip_path, big = tmp_path / "term.zip", bytes(range(256)) * 8192  # 2 MiB, unmatched
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera, new", TWO_DAYS_LATE)
        add(archive, canvas_entry("smithjohn", 199, "data.bin"), big, TWO_DAYS_LATE)
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina, new", TWO_DAYS_LATE)
    killed = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(zip_path), "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "MAXPOOL_GRADER_TEST_KILL_AT": step})
    assert killed.returncode == -9, killed.stdout + killed.stderr
    old = {student: (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
           if (course / "submitted" / student / ASSIGNMENT).exists() else None for student in before}
    for student, notebook_now in old.items():  # each submission is whole: in its folder, or kept aside
        kept = [p.read_bytes() for p in (course / "submitted" / student).glob(f".{ASSIGNMENT}.lms-old-*/*.ipynb")]
        assert notebook_now in (b"vera, new", b"lina, new") or notebook_now is not None or len(kept) == 1, step
    for path in (course / "lms-unmatched").rglob("*") if (course / "lms-unmatched").exists() else []:
        assert path.is_dir() or path.name.startswith(".lms-part-") or path.read_bytes() == big  # never truncated
    (tmp_path / "again").mkdir()
    again = tmp_path / "again" / "term.zip"  # the next collection, without Lina, whose swap was cut short
    with zipfile.ZipFile(again, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera, new", TWO_DAYS_LATE)
        add(archive, canvas_entry("smithjohn", 199, "data.bin"), big, TWO_DAYS_LATE)
    out = run(course, "collect-lms", str(again)).stdout
    assert litter(course) == [], (step, litter(course))
    assert tree(course / "submitted" / "s_lina") == before["s_lina"], step  # restored, or never moved
    assert (course / "submitted" / "s_vera" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"vera, new"
    assert [p.read_bytes() == big for p in (course / "lms-unmatched").rglob("*") if p.is_file()] == [True]
    if step == "between-renames":
        assert "s_lina: submitted/s_lina/max_pool_backward restored as it was before an interrupted" in out
    assert_every_upload_accounted_for(course, again, out)


# ------------------------------------------------------------------ a term: crashes, deep paths, look-alikes
def records(course: Path) -> dict:
    state = course / ".maxpool-grader" / "lms.json"
    return json.loads(state.read_text()) if state.exists() else {}


@integration
@pytest.mark.parametrize("step", ["recorded:1", "swapped:1", "swapped:2", "swapped:3"])
def test_a_run_killed_after_any_student_s_swap_has_recorded_them_and_an_impostor_is_refused_next(
        course, tmp_path, step):
    """Farah has no lms_id: the zip's user 102 is matched to her by name. Whatever student the
    run is killed after, everyone whose folder was swapped in is recorded; the next zip's new
    user 77 named "Farah Okafor" never takes her place."""
    zip_path = tmp_path / "term.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:  # collected in this order: s_farah, s_lina, s_vera
        add(archive, canvas_entry("okaforfarah", 102, f"{ASSIGNMENT}.ipynb"), b"farah's own")
        add(archive, canvas_entry("haddadlina", 101, f"{ASSIGNMENT}.ipynb"), b"lina's own")
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera's own")
    killed = subprocess.run([str(BIN / "maxpool-grader"), "collect-lms", str(zip_path), "--course-dir", str(course)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, KILL_AT: step})
    assert killed.returncode == -9, killed.stdout + killed.stderr
    swapped = {student for student in ("s_farah", "s_lina", "s_vera")
               if (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()}
    assert swapped <= set(records(course)), (step, swapped)  # every student swapped in is recorded
    assert "s_farah" in records(course) and records(course)["s_farah"]["lms_id"] == "102"
    staged = list((course / ".maxpool-grader").glob("lms-staging-*/*"))
    if "s_farah" in swapped and staged:  # linked from staging, not copied: the zip's bytes are on disk once
        farah = (course / "submitted" / "s_farah" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").stat()
        assert farah.st_nlink == 2 and farah.st_ino in {path.stat().st_ino for path in staged}
    impostor = tmp_path / "impostor.zip"
    with zipfile.ZipFile(impostor, "w") as archive:
        add(archive, canvas_entry("okaforfarah", 77, f"{ASSIGNMENT}.ipynb"), b"mallory, as farah", TWO_DAYS_LATE)
    before = tree(course / "submitted" / "s_farah" / ASSIGNMENT)  # her folder (empty: killed before its rename)
    out = run(course, "collect-lms", str(impostor), status=1).stdout
    assert tree(course / "submitted" / "s_farah" / ASSIGNMENT) == before and litter(course) == []
    assert "LMS user 77 is named 'okaforfarah', like s_farah" in out and "the suspect is LMS user 102" in out
    assert records(course)["s_farah"]["lms_id"] == "102"
    assert_every_upload_accounted_for(course, impostor, out)


@integration
def test_a_display_name_match_is_a_note_and_the_later_refusal_names_the_impostor(course, tmp_path):
    (course / "roster.csv").write_text(NO_IDS_ROSTER)  # an empty course, names only
    first, real = tmp_path / "first.zip", tmp_path / "real.zip"
    with zipfile.ZipFile(first, "w") as archive:  # Mallory, LMS user 77, renamed herself "Vera Kowalski"
        add(archive, moodle("Vera Kowalski", 77), b"mallory, as vera")
    out = run(course, "collect-lms", str(first)).stdout
    assert "s_vera: matched by display name alone ('Vera Kowalski', moodle user 77)" in out
    assert records(course)["s_vera"]["matched_by"] == "name"
    with zipfile.ZipFile(real, "w") as archive:  # the real Vera
        add(archive, moodle("Vera Kowalski", 104), b"the real vera", TWO_DAYS_LATE)
    out = run(course, "collect-lms", str(real), status=1).stdout
    assert "the suspect is LMS user 77, whom nothing but a name ever tied to s_vera" in out
    assert "put their new lms_id" not in out
    assert_every_upload_accounted_for(course, real, out)


@integration
def test_a_name_of_look_alike_letters_is_refused_by_name(course, tmp_path):
    (course / "roster.csv").write_text(NO_IDS_ROSTER)
    zip_path = tmp_path / "lookalike.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, moodle("V\u0435ra Kowalski", 77), b"a cyrillic e")  # looks exactly like Vera Kowalski
        add(archive, moodle("Lina Haddad", 503), b"lina")
    out = run(course, "collect-lms", str(zip_path), status=1).stdout
    assert not (course / "submitted" / "s_vera").exists()
    assert "U+0435 CYRILLIC SMALL LETTER IE, like 'e'" in out and "it looks like the name of s_vera but is not" in out
    assert (course / "submitted" / "s_lina" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"lina"
    assert_every_upload_accounted_for(course, zip_path, out)


@integration
def test_macos_litter_and_names_that_clean_up_alike_are_named_with_status_1(course, tmp_path):
    (course / "roster.csv").write_text(MOODLE_ROSTER)
    before = seed(course, "s_lina")
    zip_path = tmp_path / "mac.zip"
    folder = "Lina Haddad_55503_assignsubmission_file"
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, f"Noah Fischer_55501_assignsubmission_file/{ASSIGNMENT}.ipynb", b"noah")
        add(archive, f"__MACOSX/Noah Fischer_55501_assignsubmission_file/._{ASSIGNMENT}.ipynb", b"resource fork")
        add(archive, f"{folder}/{ASSIGNMENT}\x01.ipynb", b"one")  # both are max_pool_backward_.ipynb once cleaned
        add(archive, f"{folder}/{ASSIGNMENT}\x02.ipynb", b"another")
    out = run(course, "collect-lms", str(zip_path), status=1).stdout
    lines = {line.strip().split(": ", 1)[0]: line for line in out.splitlines()}
    assert "the __MACOSX/ folder macOS's zip adds" in lines[f"__MACOSX/Noah Fischer_55501_assignsubmission_file/._"
                                                            f"{ASSIGNMENT}.ipynb"]
    assert "are both saved as 'max_pool_backward_.ipynb'" in out and "superseded" not in out
    assert submitted_trees(course)["s_lina"] == before["s_lina"]
    assert (course / "submitted" / "s_noah" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"noah"
    assert_every_upload_accounted_for(course, zip_path, out)


def deep_tree(root: Path, depth: int, leaf: str, data: bytes = b"x") -> None:
    """A folder ``depth`` levels deep under ``root`` (made relative to its parent: the whole
    path is far longer than the kernel takes), with a file ``leaf`` at the bottom."""
    root.mkdir(parents=True, exist_ok=True)
    here = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d" * 20, dir_fd=here)
        below = os.open("d" * 20, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = below
    with open(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here), "wb") as handle:
        handle.write(data)
    os.close(here)


@integration
def test_deep_and_long_paths_are_bounded_and_a_poisoned_course_recovers(course, tmp_path):
    poisoned = course / "lms-unmatched" / "earlier"  # what an earlier collect-lms left: 1,000 folders deep
    deep_tree(poisoned, 1000, ".lms-part-0badc0de")  # a partial copy it was killed writing
    zip_path = tmp_path / "deep.zip"
    deep, long = "/".join(["a"] * 1000) + "/deep.ipynb", "/".join(["b" * 150] * 30) + "/long.ipynb"  # 4.5 KB
    with zipfile.ZipFile(zip_path, "w") as archive:
        add(archive, canvas_entry("kowalskivera", 104, f"{ASSIGNMENT}.ipynb"), b"vera")
        add(archive, deep, b"a thousand folders down")
        add(archive, long, b"a path longer than the kernel takes")
    out = run(course, "collect-lms", str(zip_path)).stdout  # the poisoned course recovers: no RecursionError
    assert (course / "submitted" / "s_vera" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == b"vera"
    kept = course / "lms-unmatched" / "deep"
    files = {path.read_bytes(): path for path in kept.rglob("*") if path.is_file()}
    assert set(files) == {b"a thousand folders down", b"a path longer than the kernel takes"}
    for path in files.values():
        relative = path.relative_to(course)
        assert len(relative.parts) <= 2 + 8 and len(str(relative).encode()) < 2048, relative
    assert not [name for _, name in walk(poisoned) if name.startswith(".lms-part-")]  # its partial copy removed
    remove_tree(poisoned)  # and it can be removed, however deep (rglob and rmtree cannot: RecursionError)
    assert not poisoned.exists() and litter(course) == []
    assert_every_upload_accounted_for(course, zip_path, out)


@integration
def test_folders_count_against_the_total_size(course, tmp_path):
    zip_path = tmp_path / "folders.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for number in range(300):  # a small zip: each tiny file in four folders of its own, of nobody
            add(archive, f"ghost{number}/a/b/c/x.txt", b"x")
    out = run(course, "collect-lms", str(zip_path), "--max-total-size", "4MiB", status=1).stdout
    kept = course / "lms-unmatched" / "folders"
    folders = sum(1 for path in kept.rglob("*") if path.is_dir())
    files = sum(1 for path in kept.rglob("*") if path.is_file())
    assert (folders + files) * 4096 <= 4 << 20 and 0 < files < 300  # what fits, each folder a 4 KiB block
    assert out.count("SKIPPED, the zip unpacks to more than 4 MiB in all") == 300 - files
    assert_every_upload_accounted_for(course, zip_path, out)


def disk_use(folder: Path) -> int:
    """The bytes ``folder`` takes on disk: every file and folder under it, each inode once (the
    staged copies are hard links into the course: a file seen twice costs once)."""
    seen, total = set(), 0
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            try:
                info = os.lstat(os.path.join(parent, name))
            except OSError:  # removed meanwhile
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


# What a run writes besides what its budget counts: the staging folder, the folders of the
# students' submissions and their timestamp.txt, lms.json and its lock, a few blocks each.
DISK_SLACK = 256 << 10


@integration
def test_a_run_s_disk_use_peaks_at_about_its_total_size(course, tmp_path):
    """A zip that unpacks to three times ``--max-total-size``: the bytes under the course,
    sampled while collect-lms runs, never grow by more than the budget and DISK_SLACK
    (a run once used twice the budget: staged copies copied again into the course)."""
    budget = 8 << 20
    zip_path, chunk = tmp_path / "large.zip", bytes(range(256)) * 1024  # 256 KiB, deflated to almost nothing
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, lms_id in (("kowalskivera", 104), ("haddadlina", 101), ("nguyentara", 103)):
            add(archive, canvas_entry(name, lms_id, f"{ASSIGNMENT}.ipynb"), chunk * 4)  # 1 MiB each
        for number in range(84):  # 21 MiB of files of nobody, kept in lms-unmatched/ while the budget lasts
            add(archive, canvas_entry("smithjohn", 199, f"data{number}.bin"), chunk)
    before = disk_use(course)
    samples = []
    process = subprocess.Popen([str(BIN / "maxpool-grader"), "collect-lms", str(zip_path), "--course-dir",
                                str(course), "--max-total-size", "8MiB"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    while process.poll() is None:
        samples.append(disk_use(course))
        time.sleep(0.005)  # leave the run a core
    out = process.communicate(timeout=300)[0]
    samples.append(disk_use(course))
    assert process.returncode == 1, out[-3000:]
    assert "SKIPPED, the zip unpacks to more than 8 MiB in all" in out
    grown = max(samples) - before
    print(f"collect-lms --max-total-size 8MiB: peak {grown / (1 << 20):.2f} MiB over the course's "
          f"{before / (1 << 20):.2f} MiB, {len(samples)} samples")
    assert len(samples) > 20, "the run ended before it could be watched"
    assert budget // 2 < grown <= budget + DISK_SLACK, grown  # near the budget, never past it
    assert all((course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == chunk * 4
               for student in ("s_vera", "s_lina", "s_tara"))
    assert_every_upload_accounted_for(course, zip_path, out)


# ------------------------------------------------------------------ names that are formulas
FORMULAS = {"s_link": ('=HYPERLINK("http://x","y")', "Link"), "s_cmd": ("Cmd", "+cmd|' /C calc'!A0"),
            "s_minus": ("-1+1", "Minus"), "s_at": ("At", "@SUM(1)")}


@integration
def test_exported_text_cannot_become_a_formula_and_numbers_stay_numbers(course):
    from nbgrader.api import Gradebook
    roster = "id,first_name,last_name,email,lms_id\n" + "".join(
        f'{student},"{first.replace(chr(34), chr(34) * 2)}","{last}",{student}@example.edu,=1+2\n'
        for student, (first, last) in FORMULAS.items()) + 's_ctl,"\0=3+4","\n-5",ctl@example.edu,\n'
    (course / "roster.csv").write_text(roster)  # and a roster whose cells start with a NUL or a line feed
    run(course, "roster", str(course / "roster.csv"))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as book:
        book.update_or_create_student("s_tab", first_name="\tTab", last_name="\rReturn", email="@tab")  # formgrader
        book.update_or_create_student("s_nul", first_name="\0=1+2", last_name="\n@SUM(1)", email="x")
        for student in [*FORMULAS, "s_tab", "s_nul", "s_ctl"]:
            submission = book.add_submission(ASSIGNMENT, student)
            for notebook_ in submission.notebooks:
                for grade in notebook_.grades:
                    grade.manual_score, grade.needs_manual_grade = 1, False
            submission.notebooks[0].late_submission_penalty = -2.5 if student == "s_minus" else 0  # an early bonus
        book.db.commit()
    run(course, "export-lms", "--canvas-column", "-Max pooling (1)")
    nbgrader(course, "export", "--to", "grades.csv")  # nbgrader's own command; maxpool-grader grade runs it too
    for name in ("canvas_grades.csv", "lms_grades.csv", "grades.csv"):
        with open(course / name, newline="") as handle:
            for row in csv.reader(handle):
                for value in row:
                    try:
                        float(value)
                    except ValueError:
                        assert not value.startswith(("=", "+", "-", "@", "\t", "\r", "\n", "\0")), (name, value)
    with open(course / "lms_grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert rows["s_link"]["first_name"] == '\'=HYPERLINK("http://x","y")'
    assert rows["s_cmd"]["last_name"] == "'+cmd|' /C calc'!A0" and rows["s_at"]["last_name"] == "'@SUM(1)"
    assert rows["s_minus"]["first_name"] == "'-1+1" and rows["s_tab"]["first_name"] == "'\tTab"
    assert rows["s_tab"]["last_name"] == "'\rReturn" and rows["s_tab"]["email"] == "'@tab"
    assert rows["s_link"]["lms_id"] == "'=1+2"
    assert rows["s_nul"]["first_name"] == "'\0=1+2" and rows["s_nul"]["last_name"] == "'\n@SUM(1)"
    assert rows["s_ctl"]["first_name"] == "'=3+4" and rows["s_ctl"]["last_name"] == "'-5"  # the roster reader
    assert rows["s_minus"]["late_penalty"] == "-2.5"  # a number we wrote: still a number
    assert float(rows["s_minus"]["total"]) == float(rows["s_link"]["total"]) + 2.5
    with open(course / "grades.csv", newline="") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert exported["s_link"]["first_name"] == '\'=HYPERLINK("http://x","y")'  # one cell: quoted, not split
    assert exported["s_cmd"]["last_name"] == "'+cmd|' /C calc'!A0" and exported["s_tab"]["email"] == "'@tab"
    assert exported["s_minus"]["late_submission_penalty"] == "-2.5" and float(exported["s_link"]["raw_score"]) > 0
    with open(course / "canvas_grades.csv", newline="") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[0][5] == "'-Max pooling (1)"
    names = {row[2]: row[0] for row in canvas[2:]}
    assert names["s_cmd"] == "'+cmd|' /C calc'!A0, Cmd" and names["s_link"] == 'Link, =HYPERLINK("http://x","y")'
    assert all(float(row[5]) >= 0 for row in canvas[1:])


# ------------------------------------------------------------------ the rules, without nbgrader
def test_match_keys_keep_every_script_and_never_collapse_to_nothing():
    assert match_key("Tomás Álvarez") == match_key("Tomas Alvarez") == "tomasalvarez"
    assert match_key("Вера Ковальская") == "вераковальская" and match_key("王 伟") == "王伟"
    assert match_key("ＡＢＣ") == "abc" and match_key("Straße") == "strasse"
    assert match_key("-- !!") == "" and match_key("") == ""


def zip_names(*names: str) -> list[zipfile.ZipInfo]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, b"")
    return zipfile.ZipFile(buffer).infolist()


def test_the_layout_is_told_by_the_whole_zip_and_a_tie_is_refused():
    impostor = "haddadlina_101_9001_Vera Kowalski_104_assignsubmission_file_x.ipynb"
    assert detect_layout(zip_names(impostor, "nguyentara_103_9003_x.ipynb")) == "canvas"
    assert detect_layout(zip_names("A B_1_assignsubmission_file/x", "C_2_assignsubmission_file_/y")) == \
        "moodle-folders"
    assert detect_layout(zip_names("A B_1_assignsubmission_file_x", "readme.txt")) == "moodle-flat"
    twice = zip_names("Eve_9_assignsubmission_file_Vera_104_assignsubmission_file_x")[0]
    assert ambiguous(twice, "moodle-flat") and parse(twice, "moodle-flat") is None
    assert detect_layout(zip_names("readme.txt")) is None
    with pytest.raises(LmsError, match="--lms"):
        detect_layout(zip_names(impostor))
    assert detect_layout(zip_names(impostor), "canvas") == "canvas"


def test_paths_are_made_safe():
    assert safe_parts("..\\..\\win.ipynb") == ["win.ipynb"]
    assert safe_parts("/etc/../.ssh/key\x1b[2K") == ["etc", "_.ssh", "key_[2K"]
    assert safe_parts("../..") == ["_"]
    long = shorten("ж" * 300 + ".ipynb")
    assert len(long.encode()) <= 200 and long.endswith(".ipynb") and long != shorten("ж" * 301 + ".ipynb")
    assert shown("a\nb\u202e") == "a\\nb\\u202e"


def test_sizes_read_as_an_instructor_writes_them():
    assert parse_size("50MiB") == parse_size("50M") == 50 << 20 and parse_size("64k") == 65536
    assert parse_size("1000") == 1000 and parse_size("2GiB") == 2 << 30
    with pytest.raises(LmsError):
        parse_size("lots")


def test_a_csv_cell_is_a_number_or_text_that_is_not_a_formula():
    assert csv_cell(-2.5) == "-2.5" and csv_cell(3) == 3 and csv_cell(20.0) == "20"
    assert [csv_cell(text) for text in ("=1", "+1", "-1", "@a", "\t1", "\r1", "\n1", "\0=1", "plain", "", None)] == \
        ["'=1", "'+1", "'-1", "'@a", "'\t1", "'\r1", "'\n1", "'\0=1", "plain", "", ""]


def test_staging_reads_with_a_bound_and_names_each_entry_it_skips(tmp_path):
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in (("good", b"x" * 100), ("encrypted", b"secret"), ("crc", b"data"), ("huge", b" " * 50_000),
                           ("liar", b" " * 50_000), ("undated", b"when?"), ("over-total", b"y" * 901)):
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 0, 0, 0, 0, 0) if name == "undated" else ON_TIME),
                             data)
    set_header_field(path, "encrypted", 6, 8, encrypt_flag)
    set_header_field(path, "crc", 14, 16, wrong_crc)
    set_header_field(path, "liar", 22, 24, lambda data, at: struct.pack_into("<I", data, at, 10))  # "10 bytes"
    (tmp_path / "staged").mkdir()
    with zipfile.ZipFile(path) as archive:
        # 100 bytes on disk cost a whole 4 KiB block: the second file past "good" no longer fits
        limits = ZipLimits(per_file=1000, total=2 * 4096)
        read, skipped = stage(archive, archive.infolist(), tmp_path / "staged", limits)
    assert {entry.filename: staged.read_bytes() for entry, staged in read.items()} == {"good": b"x" * 100}
    reasons = {entry.filename: reason for entry, reason in skipped.items()}
    assert reasons["encrypted"].startswith("encrypted") and reasons["crc"].startswith("damaged: Bad CRC-32")
    assert reasons["huge"] == "unpacks to 48.83 KiB, more than 1000 bytes (--max-file-size)"
    assert reasons["liar"].startswith("damaged") and reasons["undated"].startswith("damaged: its time")
    assert reasons["over-total"] == "the zip unpacks to more than 8 KiB in all (--max-total-size)"
    assert sorted(p.name for p in (tmp_path / "staged").iterdir()) == ["0"]  # nothing half-read is left
    with zipfile.ZipFile(path) as archive, pytest.raises(LmsError, match="holds 7 files, more than 6"):
        stage(archive, archive.infolist(), tmp_path / "staged", ZipLimits(files=6))
